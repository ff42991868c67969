"""The shared memory a launch may have, on the CPU backend as on a GPU: 48 KB per block
(static plus dynamic) unless the program raised the kernel's limit with
cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes). A launch
over it, a kernel with dynamic shared memory only included, stops the run with exit status
2 and the kernel and sizes named (a GPU fails the launch; a program that swallows the error,
as a cooperative launch's fallback does, must not hide it from `sirius verify`)."""

from __future__ import annotations

import pytest

from conftest import assert_clean_error, requires_clang, run_cpu

pytestmark = [pytest.mark.toolchain, requires_clang]

# 56 KB of dynamic shared memory and no static array; OPT_IN adds the program's opt-in,
# LAUNCH_KERNEL launches through cudaLaunchKernel, whose kernel pointer carries no name
PROGRAM = r"""
#include <cstdio>
#include <cuda_runtime.h>
__global__ void big_window(float* out) {
  extern __shared__ float window[];
  window[threadIdx.x] = (float)threadIdx.x;
  __syncthreads();
  out[blockIdx.x * 256 + threadIdx.x] = window[255 - threadIdx.x];
}
int main() {
  float* d;
  cudaMalloc(&d, 512 * sizeof(float));
#ifdef OPT_IN
  cudaFuncSetAttribute(big_window, cudaFuncAttributeMaxDynamicSharedMemorySize, 57344);
#endif
#ifdef LAUNCH_KERNEL
  void* args[] = {(void*)&d};
  cudaLaunchKernel(big_window, dim3(2), dim3(256), args, 57344, 0);
#else
  big_window<<<2, 256, 57344>>>(d);
#endif
  printf("launch: %s\n", cudaGetErrorName(cudaGetLastError()));
  float h[512];
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  printf("%.1f %.1f\n", h[0], h[511]);
  return 0;
}
"""


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "big_window.cu"
    path.write_text(PROGRAM)
    return path


def test_a_dynamic_only_launch_over_48_kb_without_the_opt_in_is_rejected(program):
    proc = run_cpu(program)
    assert_clean_error(proc, "kernel 'big_window' needs 57344 bytes of dynamic shared memory per block: "
                             "a GPU rejects this launch (cudaErrorInvalidValue): 48 KB in all without "
                             "cudaFuncSetAttribute(big_window, cudaFuncAttributeMaxDynamicSharedMemorySize, ...)")
    assert "launch:" not in proc.stdout  # no block ran, the program went no further


@pytest.mark.parametrize("how", [(), ("-DLAUNCH_KERNEL",)], ids=["triple-chevron", "cudaLaunchKernel"])
def test_the_same_launch_runs_after_the_programs_opt_in(program, how):
    proc = run_cpu(program, "-DOPT_IN", *how)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == ["launch: cudaSuccess", "255.0 0.0"]
