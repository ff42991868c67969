#!/usr/bin/env python3
"""Digests of what the optimizer emits for a fixed set of inputs: a refactoring that
claims to change no output shows it by two equal digest files.

    python scripts/emitted_digest.py --json before.json [--jobs 2] [--sets corpus,models,fuzz]
    python scripts/emitted_digest.py --compare before.json after.json

The inputs: every program of ``cuda_inputs/`` in each arrangement (auto, vertical,
horizontal) with and without ``--cooperative``, and with ``--cooperative --persistent``;
the TVM models of ``cuda_inputs/models/`` at full and small size (``-DSIRIUS_SMALL``),
default, ``--cooperative`` and ``--cooperative --persistent``; the generated programs of
``--fuzz A:B`` (default 100:300). Each program is analysed once and scheduled again for
each variant (``pipeline.rearrange``), with the kernel IR's invariants checked after every
stage and pass (``--verify-each``). For each variant the file holds the SHA-256 of the
emitted program and of the report, or the error the optimizer gave.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ARRANGEMENTS = ("auto", "vertical", "horizontal")
MODES = {"default": (False, False), "cooperative": (True, False), "persistent": (True, True)}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _cases() -> dict[str, list]:
    corpus = [(p, (), [(a, m) for a in ARRANGEMENTS for m in MODES])
              for p in sorted((ROOT / "cuda_inputs").glob("*.cu"))]
    models = [(p, flags, [("auto", m) for m in MODES]) for p in sorted((ROOT / "cuda_inputs/models").glob("*.cu"))
              for flags in ((), ("-DSIRIUS_SMALL",))]
    return {"corpus": corpus, "models": models}


def digest_program(path: str, defines: tuple[str, ...], variants: list[tuple[str, str]]) -> dict[str, dict]:
    """The digests of ``path`` built with ``defines``, one entry per (arrangement, mode)."""
    from sirius.analysis.frontend import CompileJob
    from sirius.core.config import CompileFlags
    from sirius.core.config import resolve_toolchain
    from sirius.core.errors import SiriusError
    from sirius.pipeline import OptimizeState, rearrange, report, run_pipeline

    name = str(Path(path).relative_to(ROOT)) if Path(path).is_relative_to(ROOT) else Path(path).name
    tag = name + "".join(f" {d}" for d in defines)
    out: dict[str, dict] = {}
    try:
        job = CompileJob(Path(path), CompileFlags(defines=tuple(d.removeprefix("-D") for d in defines)),
                         resolve_toolchain(None, None))
        analysed = run_pipeline(OptimizeState(job, verify_each=True), start="analyze")
    except SiriusError as err:
        return {f"{tag} [{a} {m}]": {"error": str(err)} for a, m in variants}
    for arrangement, mode in variants:
        cooperative, persistent = MODES[mode]
        key = f"{tag} [{arrangement} {mode}]"
        try:
            state = analysed if (arrangement, mode) == ("auto", "default") else rearrange(
                analysed, arrangement, cooperative=cooperative, persistent=persistent)
            written = {k: v for k, v in report(state).items() if k != "program"}  # the path differs by checkout
            out[key] = {"output": _digest(state.output),
                        "report": _digest(json.dumps(written, sort_keys=True, default=str)),
                        "launches": [written["launches_before"], written["launches_after"]]}
        except SiriusError as err:
            out[key] = {"error": str(err)}
    return out


def _fuzz_program(seed: int, folder: str) -> str:
    from sirius.testing.progen import generate_program

    path = Path(folder) / f"seed_{seed}.cu"
    path.write_text(generate_program(seed).source)
    return str(path)


def collect(sets: list[str], seeds: range, jobs: int) -> dict[str, dict]:
    cases = _cases()
    work = [(str(p), flags, variants) for s in sets if s in cases for p, flags, variants in cases[s]]
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as folder, ProcessPoolExecutor(jobs) as pool:
        if "fuzz" in sets:
            work += [(p, (), [("auto", "default")]) for p in pool.map(_fuzz_program, seeds, [folder] * len(seeds))]
        done = 0
        for got in pool.map(digest_program, *zip(*work)):
            results.update(got)
            done += 1
            print(f"\r{done}/{len(work)} programs", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return dict(sorted(results.items()))


def compare(before: dict, after: dict) -> int:
    """0 when every variant emits the same bytes; else the differences, and 1."""
    def compared(entry: dict | None) -> dict | None:
        return None if entry is None else {k: entry.get(k) for k in ("output", "report", "error")}

    before = {k: compared(v) for k, v in before.items()}
    after = {k: compared(v) for k, v in after.items()}
    differ = 0
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key), after.get(key)
        if a == b:
            continue
        what = ("only before" if b is None else "only after" if a is None else
                "output" if a.get("output") != b.get("output") else
                "error" if a.get("error") or b.get("error") else "report only")
        print(f"{key}: {what}")
        differ += what != "report only"
    same = sum(before.get(k) == after.get(k) for k in after)
    print(f"{same} of {len(set(before) | set(after))} variants identical; {differ} emit other bytes")
    return 1 if differ else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="write the digests here")
    ap.add_argument("--sets", default="corpus,models,fuzz", help="comma-separated: corpus, models, fuzz")
    ap.add_argument("--fuzz", default="100:300", metavar="A:B", help="generated programs of seeds A..B-1")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args()
    if args.compare:
        return compare(*(json.loads(p.read_text())["digests"] for p in args.compare))
    a, b = (int(x) for x in args.fuzz.split(":"))
    start = time.perf_counter()
    digests = collect(args.sets.split(","), range(a, b), args.jobs)
    record = {"sets": args.sets, "fuzz": args.fuzz, "seconds": round(time.perf_counter() - start, 1),
              "digests": digests}
    errors = sum("error" in d for d in digests.values())
    print(f"{len(digests)} variants, {errors} with an optimizer error, {record['seconds']} s", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
