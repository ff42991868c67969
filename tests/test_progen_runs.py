"""Generated random programs run on the CPU backend: they finish, print one
checksum per written buffer, give the same results on every run whatever the
number of worker threads (atomics and block scheduling vary), and
``sirius verify P P`` finds each equal to itself (also programs holding every
newer construct: host statements between launches, a host helper, overloads,
device globals, barrier variants, device helpers, a loop nest, and issue 26's sub-word
views of shared memory, promises in noinline helpers, large dynamic shared memory, macros)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sirius.testing import generate_program

ROOT = Path(__file__).resolve().parent.parent
VERIFY_SEEDS = range(100, 110)
# together they hold every newer construct (tests/test_progen.py checks it)
COVER_SEEDS = (5, 19, 27, 86, 131, 142, 164)

pytestmark = [
    pytest.mark.toolchain,
    pytest.mark.skipif(shutil.which("clang-22") is None, reason="clang-22 is not installed"),
]


def _sirius(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.setdefault("SIRIUS_CACHE", str(ROOT / ".sirius-cache"))
    return subprocess.run([sys.executable, "-m", "sirius.cli", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=timeout, env=env)


def _write(tmp_path: Path, seed: int) -> Path:
    path = tmp_path / f"prog_{seed}.cu"
    path.write_text(generate_program(seed).source)
    return path


def test_generated_programs_verify_against_themselves(tmp_path):
    paths = {s: _write(tmp_path, s) for s in (*VERIFY_SEEDS, *COVER_SEEDS)}
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        procs = dict(zip(paths, pool.map(lambda p: _sirius("verify", str(p), str(p)), paths.values())))
    for seed, proc in procs.items():
        assert proc.returncode == 0, f"seed {seed}:\n{proc.stdout}{proc.stderr}"
        assert "result: all equal" in proc.stdout, f"seed {seed}:\n{proc.stdout}"


def _seed_with(pattern: str) -> int:
    for s in range(1000):
        if any(l.pattern == pattern for l in generate_program(s).launches):
            return s
    raise AssertionError(f"no seed below 1000 uses {pattern}")


@pytest.mark.parametrize("pattern", ["atomic_hist", "transpose", "loop_swap", "tail_barrier",
                                     "helper_reduce", "loop_nest", "byte_neighbor", "big_shared"])
def test_results_do_not_depend_on_worker_threads(tmp_path, pattern):
    if pattern.startswith("loop"):
        seed = next(s for s in range(1000)
                    if any(l.structure == pattern for l in generate_program(s).launches))
    else:
        seed = _seed_with(pattern)
    prog = generate_program(seed)
    path = _write(tmp_path, seed)
    outs = []
    for threads in ("1", "4"):
        proc = _sirius("run", str(path), "--backend", "cpu", "--threads", threads)
        assert proc.returncode == 0, f"seed {seed}:\n{proc.stdout}{proc.stderr}"
        outs.append(proc.stdout)
    assert outs[0] == outs[1], f"seed {seed} differs between 1 and 4 worker threads"
    names = re.findall(r"^checksum (\w+): -?\d+\.\d{6}$", outs[0], re.M)
    assert names == list(prog.outputs)
    assert "nan" not in outs[0] and "inf" not in outs[0]


def test_programs_with_newer_constructs_run(tmp_path):
    """Each prints its checksums (and the probe of its mid-program reads),
    finite, and exits 0."""
    paths = {s: _write(tmp_path, s) for s in COVER_SEEDS}
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        procs = dict(zip(paths, pool.map(lambda p: _sirius("run", str(p), "--backend", "cpu"),
                                         paths.values())))
    for seed, proc in procs.items():
        prog = generate_program(seed)
        assert proc.returncode == 0, f"seed {seed}:\n{proc.stdout}{proc.stderr}"
        names = re.findall(r"^checksum (\w+): -?\d+\.\d{6}$", proc.stdout, re.M)
        assert names == list(prog.outputs), f"seed {seed}:\n{proc.stdout}"
        probes = re.findall(r"^probe checksum: -?\d+\.\d{6}$", proc.stdout, re.M)
        assert len(probes) == any(o.kind == "readback" for o in prog.host_ops)
        assert "nan" not in proc.stdout and "inf" not in proc.stdout
