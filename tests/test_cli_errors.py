"""Bad inputs get one clear message and exit code 2, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SIRIUS = str(Path(sys.executable).parent / "sirius")
ROOT = Path(__file__).resolve().parents[1]


def sirius(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([SIRIUS, *args], capture_output=True, text=True, cwd=cwd)


def assert_clean_failure(proc: subprocess.CompletedProcess, *needles: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    for n in needles:
        assert n in proc.stderr, proc.stderr


def test_missing_file():
    assert_clean_failure(sirius("analyze", "no/such/program.cu"), "no such file: no/such/program.cu")


@pytest.mark.toolchain
def test_syntax_error_reports_clang_diagnostic_with_file_and_line(tmp_path):
    bad = tmp_path / "broken.cu"
    bad.write_text("__global__ void k(float* a) {\n  a[threadIdx.x] = 1.0f\n}\nint main() { return 0; }\n")
    assert_clean_failure(sirius("analyze", str(bad)), "broken.cu:2:", "expected ';'")


@pytest.mark.toolchain
def test_program_without_launches(tmp_path):
    p = tmp_path / "idle.cu"
    p.write_text("__global__ void k(float* a) { a[threadIdx.x] = 1.0f; }\nint main() { return 0; }\n")
    assert_clean_failure(sirius("analyze", str(p)), "no kernel launches found in 'main'")


def test_missing_clang_names_the_fix():
    proc = sirius("analyze", str(ROOT / "cuda_inputs" / "elementwise_chain.cu"), "--clang", "/nonexistent/clang-22")
    assert_clean_failure(proc, "clang not found", "apt-get install clang-22")


def test_missing_cuda_tree_names_the_flag():
    proc = sirius("analyze", str(ROOT / "cuda_inputs" / "elementwise_chain.cu"), "--cuda-path", "/nonexistent/cuda")
    assert_clean_failure(proc, "CUDA toolkit not found at /nonexistent/cuda", "--cuda-path")


@pytest.mark.toolchain
def test_unknown_entry_function():
    proc = sirius("analyze", str(ROOT / "cuda_inputs" / "elementwise_chain.cu"), "--entry", "nowhere")
    assert_clean_failure(proc, "entry function 'nowhere' is not defined")


@pytest.mark.toolchain
def test_json_has_the_documented_keys(tmp_path):
    out = tmp_path / "a.json"
    proc = sirius("analyze", str(ROOT / "cuda_inputs" / "aliasing.cu"), "--json", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert {"kernels", "launches", "buffers"} <= set(data)
    assert [b["name"] for b in data["buffers"]] == ["d_buf", "d_out"]
    offsets = [(a["buffer"], a["offset_bytes"]) for a in data["launches"][1]["args"] if a["kind"] == "buffer"]
    assert offsets == [("d_buf", 16384), ("d_buf", 32768)]


def test_help_lists_commands():
    proc = sirius("--help")
    assert proc.returncode == 0 and "analyze" in proc.stdout
