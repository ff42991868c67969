#!/usr/bin/env python3
"""Median wall time of `sirius analyze` (with the UAR), or of `sirius optimize`, per program.

Usage: scripts/bench_analyze.py [--runs N] [--command analyze|optimize] [--json OUT] PROGRAM.cu ... [-- -DNAME=V ...]

Each program is analyzed N times in a fresh process (compile to IR, libclang
index, kernel and host models, UAR); the median wall time, the median CPU time
of the process and its children (steadier on a shared machine), and the spread
are printed. With `--command optimize` the last run's report also gives the
launches before and after, the fused groups and the refusal reasons, counted.
`--json` writes the rows with the date, the commit, the command and the machine.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _reason_class(reason: str) -> str:
    """A refusal reason without the buffer it names, so that reasons can be counted."""
    return re.sub(r"dependence on \S+", "dependence on <buffer>", reason)


def _report_summary(path: Path) -> dict:
    rep = json.loads(path.read_text())
    return {"launches_before": rep["launches_before"], "launches_after": rep["launches_after"],
            "launch_statements": [rep["launch_statements_before"], rep["launch_statements_after"]],
            "groups": collections.Counter(g["arrangement"] for g in rep["groups"]),
            "refused": collections.Counter(_reason_class(r["reason"]) for r in rep["refused"])}


def _metadata(argv: list[str]) -> dict:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    return {"date": datetime.date.today().isoformat(), "commit": commit,
            "command": "scripts/bench_analyze.py " + " ".join(argv),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.system()} (no GPU used)"}


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
    ap.add_argument("--command", choices=("analyze", "optimize"), default="analyze",
                    help="time `sirius analyze` (default) or `sirius optimize` (output to a temporary file)")
    args = ap.parse_args(argv)
    sirius = str(Path(sys.executable).parent / "sirius")
    rows = []
    report = Path(tempfile.mkdtemp()) / "report.json"
    for prog in args.programs:
        times, cpu = [], []
        for _ in range(args.runs):
            start = time.perf_counter()
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            if args.command == "analyze":
                cmd = [sirius, "analyze", prog, "--quiet", "--json", "/dev/null", *extra]
            else:
                cmd = [sirius, "optimize", prog, "-o", "/dev/null", "--report", str(report), *extra]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            times.append(time.perf_counter() - start)
            cpu.append((after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime))
            if proc.returncode != 0:
                print(f"{prog}: failed: {proc.stderr.strip()}", file=sys.stderr)
                return 1
        row = {"program": prog, "runs": args.runs, "median_s": round(statistics.median(times), 3),
               "min_s": round(min(times), 3), "max_s": round(max(times), 3),
               "median_cpu_s": round(statistics.median(cpu), 3)}
        counts = ""
        if args.command == "optimize":
            row.update(_report_summary(report))
            counts = f"; launches {row['launches_before']} -> {row['launches_after']}"
        rows.append(row)
        print(f"{prog:45s} median {statistics.median(times):7.3f} s wall, {statistics.median(cpu):7.3f} s CPU "
              f"(min wall {min(times):.3f}, max {max(times):.3f}, {args.runs} runs){counts}", flush=True)
    if args.json:
        out = {**_metadata(sys.argv[1:]), "what": f"sirius {args.command} time per program", "rows": rows}
        if args.command == "optimize":
            total = collections.Counter()
            for row in rows:
                total.update(row["refused"])
            out["refused_total"] = dict(total.most_common())
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
