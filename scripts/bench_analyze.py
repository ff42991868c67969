#!/usr/bin/env python3
"""Median wall time of `sirius analyze` (with the UAR) per program.

Usage: scripts/bench_analyze.py [--runs N] [--json OUT] PROGRAM.cu [PROGRAM.cu ...] [-- -DNAME=V ...]

Each program is analyzed N times in a fresh process (compile to IR, libclang
index, kernel and host models, UAR); the median and the spread are printed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path


def main() -> int:
    argv = sys.argv[1:]
    extra: list[str] = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("programs", nargs="+")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args(argv)
    sirius = str(Path(sys.executable).parent / "sirius")
    rows = []
    for prog in args.programs:
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            proc = subprocess.run([sirius, "analyze", prog, "--quiet", "--json", "/dev/null", *extra],
                                  capture_output=True, text=True)
            times.append(time.perf_counter() - start)
            if proc.returncode != 0:
                print(f"{prog}: failed: {proc.stderr.strip()}", file=sys.stderr)
                return 1
        rows.append({"program": prog, "runs": args.runs, "median_s": round(statistics.median(times), 3),
                     "min_s": round(min(times), 3), "max_s": round(max(times), 3)})
        print(f"{prog:45s} median {statistics.median(times):7.3f} s  (min {min(times):.3f}, max {max(times):.3f}, "
              f"{args.runs} runs)")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
