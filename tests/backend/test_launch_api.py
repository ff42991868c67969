"""Launches through CUDA's untyped API (``cudaLaunchKernel`` and
``cudaLaunchCooperativeKernel`` given ``(void*)kernel`` and ``void* args[]``) and host
callbacks (``CUDART_CB``, ``cudaStreamAddCallback``, ``cudaLaunchHostFunc``): the CPU
backend runs them, the analysis models them, fusion leaves them apart with the reason, and
the optimized program verifies equal."""

from __future__ import annotations

import json

import pytest

from conftest import INPUTS, assert_clean_error, requires_clang, run_cpu, sirius

pytestmark = [pytest.mark.toolchain, requires_clang]

PROGRAM = INPUTS / "launch_api.cu"


def test_untyped_launches_and_callbacks_run_on_the_cpu_backend():
    proc = run_cpu(PROGRAM)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "launch api: OK" in proc.stdout


def test_optimized_with_reasons_and_verified_equal(tmp_path):
    out, rep = tmp_path / "launch_api.cu", tmp_path / "report.json"
    opt = sirius("optimize", str(PROGRAM), "-o", str(out), "--report", str(rep))
    assert opt.returncode == 0, opt.stdout + opt.stderr
    report = json.loads(rep.read_text())
    assert report["launches_before"] == report["launches_after"] == 4
    assert not report["apart_without_reason"]
    reasons = [r["reason"] for r in report["refused"]]
    assert any(r.startswith("launched by cudaLaunchKernel with an argument array") for r in reasons), reasons
    assert any(r.startswith("launched by cudaLaunchCooperativeKernel") for r in reasons), reasons
    assert any("call of cudaStreamAddCallback" in r for r in reasons), reasons
    ver = sirius("verify", str(PROGRAM), str(out), "--backend", "cpu")
    assert ver.returncode == 0, ver.stdout + ver.stderr


def test_a_pointer_no_cast_of_a_kernel_gave_is_a_clean_error(tmp_path):
    src = tmp_path / "pointer.cu"
    src.write_text(
        "__global__ void k(int* x) { x[threadIdx.x] = 1; }\n"
        "int main() {\n"
        "  int* x;\n"
        "  cudaMalloc(&x, 32 * sizeof(int));\n"
        "  void* args[] = {&x};\n"
        "  void (*typed)(int*) = k;\n"
        "  cudaLaunchKernel((const void*)typed, dim3(1), dim3(32), args, 0, 0);\n"
        "  return 0;\n"
        "}\n")
    assert_clean_error(run_cpu(src), "cudaLaunchKernel with an untyped (void*) kernel pointer",
                       "unsupported by the CPU backend")
