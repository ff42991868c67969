"""Helpers for the execution backend tests: run the ``sirius`` CLI on CUDA
programs and keep their builds in the repository's build cache."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INPUTS = Path(__file__).resolve().parent / "inputs"
CORPUS = ROOT / "cuda_inputs"

requires_clang = pytest.mark.skipif(shutil.which("clang-22") is None,
                                    reason="clang-22 is not installed")


def sirius(*args: str, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``sirius ARGS`` from the repository root (one build cache for all tests)."""
    environ = dict(os.environ)
    environ.setdefault("SIRIUS_CACHE", str(ROOT / ".sirius-cache"))
    environ.update(env or {})
    return subprocess.run([sys.executable, "-m", "sirius.cli", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=timeout, env=environ)


def run_cpu(program: str | Path, *flags: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return sirius("run", str(program), "--backend", "cpu", *flags, timeout=timeout)


def assert_clean_error(proc: subprocess.CompletedProcess, *needles: str) -> None:
    """Exit status 2, a message naming each of ``needles``, no traceback."""
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "Traceback" not in out, out
    for n in needles:
        assert n in out, out
