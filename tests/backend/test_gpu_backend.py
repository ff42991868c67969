"""The GPU backend: programs build with nvcc and the copy-dump header on any
machine with the CUDA toolkit; running them (and ``verify --backend gpu``)
needs a GPU."""

from __future__ import annotations

import shutil

import pytest

from conftest import INPUTS, sirius
from sirius.backend import gpu
from sirius.core.config import CompileFlags

pytestmark = pytest.mark.toolchain

try:
    NVCC = gpu.find_nvcc()
except Exception:  # no CUDA toolkit on this machine
    NVCC = None

needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
HAS_GPU = shutil.which("nvidia-smi") is not None and gpu.gpu_unavailable_reason() is None


@needs_nvcc
def test_nvcc_builds_a_program_with_the_dump_header(tmp_path, monkeypatch):
    monkeypatch.setenv("SIRIUS_CACHE", str(tmp_path / "cache"))
    built = gpu.build_program(INPUTS / "reductions.cu", CompileFlags(defines=("DROP=0",)))
    assert built.binary.is_file()


@needs_nvcc
def test_nvcc_errors_are_reported_with_location(tmp_path, monkeypatch):
    from sirius.core.errors import InputError

    monkeypatch.setenv("SIRIUS_CACHE", str(tmp_path / "cache"))
    src = tmp_path / "bad.cu"
    src.write_text("int main() { return undefined_name; }\n")
    with pytest.raises(InputError, match="bad.cu"):
        gpu.build_program(src)


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="no CUDA GPU")
def test_verify_on_the_gpu():
    program = str(INPUTS / "tiled.cu")
    proc = sirius("verify", program, program, "--backend", "gpu")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "result: all equal" in proc.stdout
