"""Full-size verification on a GPU (scripts/verify_full_size.py): every corpus and model
program, optimized at its default size, gives bit-identical results to the original on
the GPU. Runs where nvidia-smi lists a GPU; skipped elsewhere (the CPU backend cannot
judge what only nvcc exploits, see sirius/fusion/check.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sirius.backend import gpu

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "verify_full_size.py"

pytestmark = [pytest.mark.toolchain, pytest.mark.gpu,
              pytest.mark.skipif(gpu.gpu_unavailable_reason() is not None, reason="no CUDA GPU")]


def test_every_program_at_full_size_verifies_on_the_gpu(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "all", str(tmp_path / "full"),
                           "--json", str(tmp_path / "rows.json")], capture_output=True, text=True, timeout=7200)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "DIFFERENT" not in proc.stdout and "ERROR" not in proc.stdout
