#!/usr/bin/env python3
"""Differential fuzzing of fusion over a range of seeds (see sirius.testing.fuzz).

Usage: scripts/fuzz_fusion.py [--seeds A:B] [--jobs N] [--arrangement auto|vertical|horizontal]
                              [--cooperative] [--keep DIR] [--json OUT]

Exit status 1 when any seed fails; each failure prints its seed, the newer
generator constructs its program holds (what to suspect first) and the output
of the stage that failed.
"""

from __future__ import annotations

import argparse
import statistics
import json
import sys
import time
from pathlib import Path

from sirius.testing.fuzz import fuzz


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0:50", help="half-open range A:B (default 0:50)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--arrangement", default="auto", choices=("auto", "vertical", "horizontal"))
    ap.add_argument("--cooperative", action="store_true",
                    help="optimize with --cooperative (regions as one cooperative launch, waves of cells)")
    ap.add_argument("--keep", type=Path, help="keep the programs in this folder")
    ap.add_argument("--json", type=Path, help="write per-seed results here")
    args = ap.parse_args()
    a, b = (int(x) for x in args.seeds.split(":"))
    start = time.perf_counter()
    def show(r: dict) -> None:
        state = "ok" if r["ok"] else f"FAILED ({r['stage']})"
        print(f"seed {r['seed']}: {state} launches {r.get('launches_before')} -> {r.get('launches_after')}"
              f" constructs: {', '.join(r.get('constructs') or []) or 'none'}", flush=True)

    flags = ("--cooperative",) if args.cooperative else ()
    results = fuzz(range(a, b), args.jobs, args.arrangement, args.keep, progress=show, flags=flags)
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
          f"median verify {statistics.median([r['verify_s'] for r in ok] or [0]):.2f} s; wall {wall:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
