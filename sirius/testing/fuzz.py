"""Differential fuzzing of fusion: generate, optimize, verify on the CPU backend.

For a seed, a random program (:mod:`sirius.testing.progen`) is written,
optimized with ``sirius optimize``, and the original and optimized programs
are run on identical inputs with ``sirius verify --backend cpu`` (bit-exact).
A difference or failure is a bug; the seed reproduces it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sirius.testing.progen import generate_program

SIRIUS = str(Path(sys.executable).parent / "sirius")


def run_seed(seed: int, workdir: Path, arrangement: str) -> dict:
    prog = generate_program(seed)
    src = workdir / f"seed_{seed}.cu"
    out = workdir / f"seed_{seed}_opt.cu"
    rep = workdir / f"seed_{seed}.json"
    src.write_text(prog.source)
    start = time.perf_counter()
    opt = subprocess.run([SIRIUS, "optimize", str(src), "-o", str(out), "--arrangement", arrangement,
                          "--report", str(rep)], capture_output=True, text=True)
    t_opt = time.perf_counter() - start
    if opt.returncode != 0:
        return {"seed": seed, "ok": False, "stage": "optimize", "detail": opt.stderr.strip()[-2000:]}
    report = json.loads(rep.read_text())
    start = time.perf_counter()
    ver = subprocess.run([SIRIUS, "verify", str(src), str(out), "--backend", "cpu"], capture_output=True, text=True)
    t_ver = time.perf_counter() - start
    return {"seed": seed, "ok": ver.returncode == 0, "stage": "verify",
            "detail": "" if ver.returncode == 0 else (ver.stdout + ver.stderr)[-2000:],
            "launches_before": report["launches_before"], "launches_after": report["launches_after"],
            "optimize_s": round(t_opt, 3), "verify_s": round(t_ver, 3)}


def fuzz(seeds: range, jobs: int = 2, arrangement: str = "auto", keep: Path | None = None,
         progress=None) -> list[dict]:
    """Run every seed; ``progress(result)`` is called as each one finishes."""
    with tempfile.TemporaryDirectory(prefix="sirius-fuzz-") as tmp:
        workdir = keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)

        def one(seed: int) -> dict:
            result = run_seed(seed, workdir, arrangement)
            if progress is not None:
                progress(result)
            return result

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(one, seeds))
