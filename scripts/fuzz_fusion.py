#!/usr/bin/env python3
"""Differential fuzzing of fusion over a range of seeds (see sirius.testing.fuzz).

Usage: scripts/fuzz_fusion.py [--seeds A:B] [--workers N | --scheduler ADDRESS]
                              [--arrangement auto|vertical|horizontal] [--cooperative [--persistent]]
                              [--layouts] [--keep DIR [--fresh]] [--json OUT]

Each seed is one task (see sirius.campaign): on a local Dask cluster of --workers processes
(default 2; 0 or 1: one after another in this process, without Dask), or on the workers of
an existing cluster (--scheduler tcp://HOST:PORT; they must see --keep's folder when it is
given). With --keep each seed's result is cached in DIR/.sirius-tasks: the same campaign run
again does only the seeds it has not done (--fresh: all of them).

Exit status 1 when any seed fails; each failure prints its seed, the newer
generator constructs its program holds (what to suspect first) and the output
of the stage that failed.
"""

from __future__ import annotations

import argparse
import statistics
import json
import shutil
import sys
import time
from pathlib import Path

from sirius.campaign import add_engine_options, engine_from_args
from sirius.commands.progress import item_progress
from sirius.core.errors import SiriusError
from sirius.testing.fuzz import TASKS_FOLDER, fuzz


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0:50", help="half-open range A:B (default 0:50)")
    add_engine_options(ap, default_workers=2)
    ap.add_argument("--jobs", dest="workers", help="the same as --workers (its earlier name)")
    ap.add_argument("--fresh", action="store_true", help="with --keep: run every seed again, replacing the cache")
    ap.add_argument("--arrangement", default="auto", choices=("auto", "vertical", "horizontal"))
    ap.add_argument("--cooperative", action="store_true",
                    help="optimize with --cooperative (regions as one cooperative launch, waves of cells)")
    ap.add_argument("--persistent", action="store_true",
                    help="with --cooperative: also --persistent (a host loop as one cooperative launch)")
    ap.add_argument("--layouts", action="store_true",
                    help="lay some programs out as application code is: an array of device pointers, kernels in "
                         "an included file, launches in host helpers, CRLF line ends (sirius.testing.progen.layouts)")
    ap.add_argument("--keep", type=Path, help="keep the programs in this folder")
    ap.add_argument("--json", type=Path, help="write per-seed results here")
    ap.add_argument("--quiet", action="store_true",
                    help="no progress and no line per seed (a bar is drawn only on a terminal)")
    args = ap.parse_args()
    try:
        engine = engine_from_args(args)
        a, b = (int(x) for x in args.seeds.split(":"))
    except ValueError:
        print(f"error: --seeds {args.seeds}: expected a half-open range A:B of whole numbers", file=sys.stderr)
        return 2
    except SiriusError as err:
        print(err, file=sys.stderr)
        return err.exit_code
    start = time.perf_counter()
    if args.persistent and not args.cooperative:
        ap.error("--persistent needs --cooperative")
    flags = (("--cooperative",) if args.cooperative else ()) + (("--persistent",) if args.persistent else ())
    if args.keep is not None and args.fresh:
        shutil.rmtree(args.keep / TASKS_FOLDER, ignore_errors=True)
    try:
        with item_progress("fuzz", b - a, args.quiet) as done:
            def show(r: dict) -> None:
                state = "ok" if r["ok"] else f"FAILED ({r['stage']})"
                done(f"seed {r['seed']}", f"seed {r['seed']}: {state} launches {r.get('launches_before')} -> "
                     f"{r.get('launches_after')} constructs: {', '.join(r.get('constructs') or []) or 'none'}")

            results = fuzz(range(a, b), arrangement=args.arrangement, keep=args.keep, progress=show, flags=flags,
                           engine=engine, layouts=args.layouts)
    except SiriusError as err:
        print(err, file=sys.stderr)
        return err.exit_code
    wall = time.perf_counter() - start
    bad = [r for r in results if not r["ok"]]
    for r in bad:
        news = ", ".join(r.get("constructs") or []) or "none"
        print(f"seed {r['seed']}: FAILED at {r['stage']} (constructs: {news})\n{r['detail']}\n")
    ok = [r for r in results if r["ok"]]
    fused = sum(1 for r in ok if r["launches_after"] is not None and r["launches_after"] < r["launches_before"])
    before = sum(r["launches_before"] or 0 for r in ok)
    after = sum(r["launches_after"] or 0 for r in ok)
    print(f"{len(results)} programs, {len(ok)} verified, {len(bad)} failed; "
          f"{fused} had launches fused; launches {before} -> {after}; "
          f"median optimize {statistics.median([r['optimize_s'] for r in ok] or [0]):.2f} s, "
          f"median verify {statistics.median([r['verify_s'] for r in ok] or [0]):.2f} s; wall {wall:.0f} s "
          f"in {engine.describe()}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
