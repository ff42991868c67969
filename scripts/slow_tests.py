#!/usr/bin/env python3
"""Write tests/slow_tests.txt: the tests a measured run found slow, for ``make test-fast``.

Run the suite with durations first, then this on its output::

    .venv/bin/python -m pytest -q -n 2 --dist loadfile --durations=0 > suite.log
    scripts/slow_tests.py suite.log [--threshold SECONDS]

A test is slow when its setup, call and teardown together took at least the threshold
(default 5 s) in that run. With ``--add`` the tests found join those already listed: run it
on a log of ``make test-fast`` (``-m "not slow"``) to catch what the fast tier still holds
(a module's fixture, built by its first test, lands on the first fast test once the slow
ones are left out). ``tests/conftest.py`` marks the listed tests ``slow``; ``make
test`` (and CI) runs every test, ``make test-fast`` leaves the slow ones out.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from pathlib import Path

LIST = Path(__file__).resolve().parent.parent / "tests" / "slow_tests.txt"
DURATION = re.compile(r"^([\d.]+)s (?:setup|call|teardown)\s+(.+?)\s*$")  # an id may hold spaces


def slow_tests(log: str, threshold: float) -> list[tuple[str, float]]:
    seconds: dict[str, float] = defaultdict(float)
    for line in log.splitlines():
        m = DURATION.match(line)
        if m:
            seconds[m.group(2)] += float(m.group(1))
    return sorted((test, t) for test, t in seconds.items() if t >= threshold)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log", type=Path, help="the output of a pytest run with --durations=0")
    ap.add_argument("--threshold", type=float, default=5.0, help="seconds (default 5)")
    ap.add_argument("--add", action="store_true", help="keep the tests listed already, add those found")
    args = ap.parse_args(argv)
    if not args.log.is_file():
        print(f"error: {args.log}: no such file", file=sys.stderr)
        return 2
    found = slow_tests(args.log.read_text(errors="replace"), args.threshold)
    if not found:
        print(f"error: {args.log} holds no durations (run pytest with --durations=0)", file=sys.stderr)
        return 2
    listed = [line.strip() for line in LIST.read_text().splitlines()
              if line.strip() and not line.startswith("#")] if args.add and LIST.is_file() else []
    tests = sorted(set(listed) | {test for test, _ in found})
    LIST.write_text(f"# tests that took {args.threshold:g} s or more (setup, call and teardown) in a run of the\n"
                    "# suite on 2 cores (and of its fast tier, with --add); written by scripts/slow_tests.py,\n"
                    "# read by tests/conftest.py; an entry without [parameters] marks every parametrization\n"
                    + "".join(f"{test}\n" for test in tests))
    print(f"{len(found)} slow tests ({sum(t for _, t in found):.0f} s of test time) written to {LIST}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
