"""Bugs a GPU might hide by luck show reliably on the CPU backend: a missing
barrier gives a wrong result, a divergent barrier or a deadlock is reported
(naming the kernel and the barrier sites), never a hang."""

from __future__ import annotations

import pytest

from conftest import INPUTS, requires_clang, run_cpu

pytestmark = [pytest.mark.toolchain, requires_clang]


@pytest.mark.parametrize("drop", ["DROP_LOAD_BARRIER", "DROP_REUSE_BARRIER"])
def test_tiled_matmul_without_a_barrier_is_wrong(drop):
    proc = run_cpu(INPUTS / "tiled.cu", f"-D{drop}")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "tiled: MISMATCH" in proc.stdout


@pytest.mark.parametrize(
    "drop, broken",
    [(1, "max"), (2, "sum"), (3, "stencil"), (4, "reverse")],
)
def test_each_missing_block_barrier_is_caught(drop, broken):
    # max/sum read higher threads' values, the stencil a lower thread's, the
    # reversal both: every direction must show.
    proc = run_cpu(INPUTS / "reductions.cu", f"-DDROP={drop}")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    for name in ("max", "sum", "stencil", "reverse"):
        assert f"{name}: {'MISMATCH' if name == broken else 'OK'}" in proc.stdout


def test_divergent_barrier_is_reported_not_a_hang():
    proc = run_cpu(INPUTS / "barriers.cu", "-DCASE=1", timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "divergent __syncthreads() in kernel 'divergent'" in proc.stderr
    assert "64 threads at " in proc.stderr and "barriers.cu:18, 64 threads at " in proc.stderr
    assert proc.stderr.rstrip().endswith("barriers.cu:21")
    assert "divergent: finished" not in proc.stdout


def test_deadlock_between_barrier_and_warp_operation_is_reported():
    proc = run_cpu(INPUTS / "barriers.cu", "-DCASE=3", timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "deadlock in kernel 'stuck'" in proc.stderr
    assert "barriers.cu:40" in proc.stderr and "barriers.cu:38" in proc.stderr


def test_out_of_bounds_access_in_a_kernel_names_kernel_and_thread(tmp_path):
    src = tmp_path / "oob.cu"
    src.write_text(
        "__global__ void wild(float* p) { p[(long long)threadIdx.x * 100000000000LL] = 1.0f; }\n"
        "int main() { float* d; cudaMalloc(&d, 64); wild<<<1, 4>>>(d);\n"
        "  cudaDeviceSynchronize(); return 0; }\n")
    proc = run_cpu(src, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "invalid memory access" in proc.stderr
    assert "kernel 'wild'" in proc.stderr and "thread (1,0,0)" in proc.stderr


def test_host_pointer_passed_to_a_kernel_is_reported(tmp_path):
    src = tmp_path / "hostptr.cu"
    src.write_text(
        "__global__ void k(float* p) { p[threadIdx.x] = 1.0f; }\n"
        "int main() { float h[32]; k<<<1, 32>>>(h); cudaDeviceSynchronize(); return 0; }\n")
    proc = run_cpu(src)
    assert proc.returncode == 2
    assert "kernel 'k': argument 1" in proc.stderr and "not device memory" in proc.stderr


def test_block_larger_than_launch_bounds_fails_as_on_a_gpu(tmp_path):
    src = tmp_path / "bounds.cu"
    src.write_text(
        "#include <cstdio>\n"
        'extern "C" __global__ void __launch_bounds__(128) k(int* p) { p[threadIdx.x] = 1; }\n'
        "int main() {\n"
        "  int* d; cudaMalloc(&d, 4096);\n"
        "  k<<<1, 128>>>(d); printf(\"128: %s\\n\", cudaGetErrorString(cudaGetLastError()));\n"
        "  k<<<1, 256>>>(d); printf(\"256: %s\\n\", cudaGetErrorString(cudaGetLastError()));\n"
        "  return 0;\n"
        "}\n")
    proc = run_cpu(src)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == ["128: no error", "256: too many resources requested for launch"]
