"""Differential fuzzing of fusion: generate, optimize, verify on the CPU backend.

For a seed, a random program (:mod:`sirius.testing.progen`) is written,
optimized with ``sirius optimize``, and the original and optimized programs
are run on identical inputs with ``sirius verify --backend cpu`` (bit-exact).
A difference or failure is a bug; the seed reproduces it. A program whose kernels
use macros the build may redefine (``SHIFT``, ``GAIN``) is verified once more rebuilt
with other values (:mod:`sirius.testing.rebuild`): the optimized program must take the
original launches there.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sirius.campaign import Engine, ResultCache, Task, code_fingerprint, run_tasks, task_key
from sirius.testing.progen import PATTERNS, STRUCTURES, GeneratedProgram, generate_program
from sirius.testing.rebuild import verify_rebuild

TASKS_FOLDER = ".sirius-tasks"  # under --keep: one cached result per seed
SIRIUS = str(Path(sys.executable).parent / "sirius")

_PALETTE = set(PATTERNS[:PATTERNS.index("tail_barrier")]) | set(STRUCTURES[:STRUCTURES.index("helper")])


def constructs(prog: GeneratedProgram) -> list[str]:
    """The newer constructs a program holds (patterns, structures, kernel
    features, host statements beyond the original palette): what to suspect
    first when its seed fails."""
    found = ({l.pattern for l in prog.launches} | {l.structure for l in prog.launches}
             | {f for l in prog.launches for f in l.features} | {o.kind for o in prog.host_ops}
             | set(prog.layouts))
    return sorted(found - _PALETTE)


def run_seed(seed: int, workdir: Path, arrangement: str, argv_values: tuple[str, ...] = (),
             flags: tuple[str, ...] = (), hazards: bool = True, layouts: bool = False) -> dict:
    """Generate, optimize (with ``flags`` for ``sirius optimize`` too: ``--cooperative``) and
    verify one program. With ``argv_values`` the program takes its element-wise block size
    from its first argument, and is verified once per value. ``hazards`` false: the program
    older versions of the generator gave the seed (``generate_program``); ``layouts``: some
    programs laid out as application code is (``progen.layouts``; the files the program
    includes are written beside it)."""
    prog = generate_program(seed, argv_block=bool(argv_values), hazards=hazards, layouts=layouts)
    news = constructs(prog)
    src = workdir / f"seed_{seed}.cu"
    out = workdir / f"seed_{seed}_opt.cu"
    rep = workdir / f"seed_{seed}.json"
    src.write_bytes(prog.source.encode())  # as generated: CRLF line ends stay CRLF
    for name, text in prog.files:
        (workdir / name).write_bytes(text.encode())
    start = time.perf_counter()
    opt = subprocess.run([SIRIUS, "optimize", str(src), "-o", str(out), "--arrangement", arrangement,
                          "--report", str(rep), *flags], capture_output=True, text=True)
    t_opt = time.perf_counter() - start
    if opt.returncode != 0:
        return {"seed": seed, "ok": False, "stage": "optimize", "detail": opt.stderr.strip()[-2000:],
                "constructs": news, "launches_before": len(prog.launches), "launches_after": None}
    report = json.loads(rep.read_text())
    if report["apart_without_reason"]:
        return {"seed": seed, "ok": False, "stage": "reasons",
                "detail": f"launches left apart without a reason: {report['apart_without_reason']}",
                "constructs": news, "launches_before": report["launches_before"],
                "launches_after": report["launches_after"]}
    start = time.perf_counter()
    for value in argv_values or (None,):
        ver = subprocess.run([SIRIUS, "verify", str(src), str(out), "--backend", "cpu"]
                             + (["--", value] if value is not None else []), capture_output=True, text=True)
        if ver.returncode != 0:
            break
    ok, stage = ver.returncode == 0, "verify" + (f" -- {value}" if value else "")
    detail = "" if ok else (ver.stdout + ver.stderr)[-2000:]
    if ok and prog.rebuild_defines:
        failure = verify_rebuild(src, out, report, prog.rebuild_defines, set(prog.macro_kernels))
        if failure:
            ok, stage, detail = False, "rebuild " + " ".join(f"-D{d}" for d in prog.rebuild_defines), failure
    t_ver = time.perf_counter() - start
    return {"seed": seed, "ok": ok, "stage": stage, "detail": detail,
            "launches_before": report["launches_before"], "launches_after": report["launches_after"],
            "optimize_s": round(t_opt, 3), "verify_s": round(t_ver, 3), "constructs": news}


def fuzz(seeds, jobs: int = 2, arrangement: str = "auto", keep: Path | None = None,
         progress=None, argv_values: tuple[str, ...] = (), flags: tuple[str, ...] = (),
         hazards: bool = True, engine: Engine | None = None, layouts: bool = False) -> list[dict]:
    """Run every seed (see ``run_seed``); ``progress(result)`` is called as each one finishes.
    Without ``engine``: ``jobs`` threads of this process. With one: a task per seed
    (``seed_task``) on that engine (this process, a local Dask cluster, an existing one), each
    result cached under ``keep`` when given, so a campaign run again does only the seeds left."""
    if engine is not None:
        return _fuzz_campaign(list(seeds), engine, arrangement, keep, progress, argv_values, flags, hazards,
                              layouts)
    with tempfile.TemporaryDirectory(prefix="sirius-fuzz-") as tmp:
        workdir = keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)

        def one(seed: int) -> dict:
            result = run_seed(seed, workdir, arrangement, argv_values, flags, hazards, layouts)
            if progress is not None:
                progress(result)
            return result

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(one, seeds))


def seed_task(seed: int, keep: str | None, arrangement: str, argv_values: tuple[str, ...],
              flags: tuple[str, ...], hazards: bool, layouts: bool = False) -> dict:
    """One seed as a campaign task: its programs in ``keep`` (absolute), else in a folder of
    its own that is removed after it (a worker on another machine need not see this one's)."""
    if keep is not None:
        Path(keep).mkdir(parents=True, exist_ok=True)
        return run_seed(seed, Path(keep), arrangement, argv_values, flags, hazards, layouts)
    with tempfile.TemporaryDirectory(prefix=f"sirius-fuzz-{seed}-") as tmp:
        return run_seed(seed, Path(tmp), arrangement, argv_values, flags, hazards, layouts)


def _fuzz_campaign(seeds: list[int], engine: Engine, arrangement: str, keep: Path | None, progress,
                   argv_values: tuple[str, ...], flags: tuple[str, ...], hazards: bool,
                   layouts: bool = False) -> list[dict]:
    where = str(keep.resolve()) if keep is not None else None
    # (layouts in the key only when asked for: the keys of campaigns without them stay theirs)
    tasks = [Task(task_key("fuzz", code_fingerprint(), seed, arrangement, list(argv_values), list(flags), hazards,
                           *(("layouts",) if layouts else ())),
                  seed_task, (seed, where, arrangement, tuple(argv_values), tuple(flags), hazards, layouts),
                  label=f"seed_{seed}")
             for seed in seeds]
    cache = ResultCache(keep / TASKS_FOLDER) if keep is not None else None
    return run_tasks(tasks, engine, cache, (lambda i, task, result, cached: progress(result)) if progress else None)
