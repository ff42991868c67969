#!/usr/bin/env python3
"""Every combination of the kernel passes on every corpus program, verified.

For each program of ``cuda_inputs/`` (at the small sizes the end-to-end test uses)
and each subset of the kernel passes (2^N of them, ``none`` included), runs
``sirius optimize --passes SUBSET`` and ``sirius verify --backend cpu`` (once per distinct optimized program: many subsets
print the same one) and prints one line per run; exits 1 if any run fails to optimize or to verify. The test
suite runs none, each pass alone and all of them; this script covers the rest
(about 15 minutes on two cores).

Usage: scripts/pass_combinations.py [--jobs N] [--json OUT]
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import threading
import json
import subprocess
import sys
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sirius.pipeline import pass_names  # noqa: E402
from tests.fusion.test_optimize_corpus import EXPECTED  # noqa: E402  (programs and their small sizes)

SIRIUS = str(Path(sys.executable).parent / "sirius")
_LOCK = threading.Lock()
_VERIFIED: dict[tuple[str, str], Future] = {}  # (program, output digest) -> (ok, detail)


def run(program: str, defines: tuple[str, ...], passes: tuple[str, ...], tmp: Path) -> dict:
    flags = [f"-D{d}" for d in defines]
    label = ",".join(passes) or "none"
    out = tmp / f"{Path(program).stem}.{label.replace(',', '+')}.cu"
    src = str(REPO / "cuda_inputs" / program)
    opt = subprocess.run([SIRIUS, "optimize", src, "-o", str(out), "--passes", label, *flags],
                         capture_output=True, text=True)
    if opt.returncode != 0:
        return {"program": program, "passes": label, "ok": False, "stage": "optimize", "detail": opt.stderr[-1500:]}
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    with _LOCK:  # many subsets print the same program: it is verified once
        first = (program, digest) not in _VERIFIED
        verdict = _VERIFIED.setdefault((program, digest), Future())
    if first:
        ver = subprocess.run([SIRIUS, "verify", src, str(out), *flags], capture_output=True, text=True)
        ok = ver.returncode == 0 and "result: all equal" in ver.stdout
        verdict.set_result((ok, "" if ok else (ver.stdout + ver.stderr)[-1500:]))
    ok, detail = verdict.result()
    return {"program": program, "passes": label, "ok": ok, "stage": "verify", "detail": detail,
            "output": digest[:12], "verified_here": first}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", type=Path, help="write every run's result as JSON")
    args = ap.parse_args(argv)
    names = pass_names()
    subsets = [c for k in range(len(names) + 1) for c in itertools.combinations(names, k)]
    with tempfile.TemporaryDirectory(prefix="sirius-combos-") as tmp, ThreadPoolExecutor(args.jobs) as pool:
        jobs = [pool.submit(run, program, defines, subset, Path(tmp))
                for program, (defines, _, _) in sorted(EXPECTED.items()) for subset in subsets]
        results = []
        for job in jobs:
            r = job.result()
            results.append(r)
            print(f"{'ok  ' if r['ok'] else 'FAIL'} {r['program']:22s} {r['passes']}" +
                  ("" if r["ok"] else f" ({r['stage']})\n{r['detail']}"), flush=True)
    bad = [r for r in results if not r["ok"]]
    distinct = sum(r.get("verified_here", False) for r in results)
    print(f"{len(results) - len(bad)} of {len(results)} runs verified ({len(EXPECTED)} programs x "
          f"{len(subsets)} combinations of {', '.join(names)}; {distinct} distinct optimized programs)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
