"""How fast the CPU backend runs a launch of a few hundred blocks of 256 threads
with barriers (the size the test suite relies on). Measured and reported, not
asserted: run with ``-s`` to see the median of three runs."""

from __future__ import annotations

import re
import statistics

import pytest

from conftest import requires_clang, run_cpu

pytestmark = [pytest.mark.toolchain, requires_clang]

PROGRAM = r"""
#include <cstdio>
#define BLOCKS 300
#define THREADS 256
// Each block sums its 256-element slice eight times over with a shared-memory
// tree (8 x 9 barriers per thread) and scales its slice by the sum.
__global__ void blocks(const float* x, float* y) {
  __shared__ float s[THREADS];
  int i = blockIdx.x * THREADS + threadIdx.x;
  float acc = 0.0f;
  for (int r = 0; r < 8; ++r) {
    s[threadIdx.x] = x[i] + r;
    __syncthreads();
    for (int w = THREADS / 2; w > 0; w >>= 1) {
      if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
      __syncthreads();
    }
    acc += s[0];
    __syncthreads();
  }
  y[i] = x[i] * acc;
}
int main() {
  const int n = BLOCKS * THREADS;
  float* h = new float[n];
  for (int i = 0; i < n; ++i) h[i] = (float)(i % 7);
  float *dx, *dy;
  cudaMalloc(&dx, n * sizeof(float));
  cudaMalloc(&dy, n * sizeof(float));
  cudaMemcpy(dx, h, n * sizeof(float), cudaMemcpyHostToDevice);
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaEventRecord(a);
  blocks<<<BLOCKS, THREADS>>>(dx, dy);
  cudaEventRecord(b);
  cudaEventSynchronize(b);
  float ms = 0.0f;
  cudaEventElapsedTime(&ms, a, b);
  float* y = new float[n];
  cudaMemcpy(y, dy, n * sizeof(float), cudaMemcpyDeviceToHost);
  int bad = 0;
  for (int blk = 0; blk < BLOCKS; ++blk) {
    float sum = 0.0f;
    for (int t = 0; t < THREADS; ++t) sum += h[blk * THREADS + t];
    float acc = 0.0f;
    for (int r = 0; r < 8; ++r) acc += sum + THREADS * r;  // integers: exact
    for (int t = 0; t < THREADS; ++t) bad += y[blk * THREADS + t] != h[blk * THREADS + t] * acc;
  }
  printf("launch: %.3f ms\n%s\n", ms, bad ? "MISMATCH" : "OK");
  return bad ? 1 : 0;
}
"""


def test_few_hundred_blocks_of_256_threads(tmp_path, record_property):
    src = tmp_path / "speed.cu"
    src.write_text(PROGRAM)
    times = []
    for _ in range(3):
        proc = run_cpu(src)
        assert proc.returncode == 0 and "OK" in proc.stdout, proc.stdout + proc.stderr
        times.append(float(re.search(r"launch: ([\d.]+) ms", proc.stdout).group(1)))
    median = statistics.median(times)
    record_property("launch_300x256_ms_median", median)
    print(f"\nCPU backend: 300 blocks x 256 threads, 72 barriers per thread: "
          f"median {median:.1f} ms over {len(times)} runs {times}")
