"""``sirius verify`` runs two programs on the same inputs and compares what they
copy back and print: exit 0 when equal, 1 when they differ (naming buffer,
index and values), 2 when a program cannot be run."""

from __future__ import annotations

import pytest

from conftest import INPUTS, assert_clean_error, requires_clang, sirius

pytestmark = [pytest.mark.toolchain, requires_clang]

# A producer and a consumer with a block-level dependence: y[i] reads t[i] and
# t[i ^ 1] (its pair partner, in the same block). ORIGINAL launches both;
# FUSED is the correct fusion (shared memory and a barrier); MISFUSED forgets
# the barrier.
HOST = r"""
int main() {
  const int n = 1024;
  float* hx = (float*)malloc(sizeof(float) * n);
  float* hy = (float*)malloc(sizeof(float) * n);
  for (int i = 0; i < n; ++i) hx[i] = (float)((i * 13) % 29) * 0.25f;
  float *dx, *dt, *dy;
  cudaMalloc(&dx, sizeof(float) * n);
  cudaMalloc(&dt, sizeof(float) * n);
  cudaMalloc(&d_out, sizeof(float) * n);
  dy = d_out;
  cudaMemcpy(dx, hx, sizeof(float) * n, cudaMemcpyHostToDevice);
  LAUNCH;
  cudaMemcpy(hy, d_out, sizeof(float) * n, cudaMemcpyDeviceToHost);
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += hy[i];
  printf("checksum: %.6f\n", sum);
  printf("time: %.3f ms\n", (double)(clock() % 1000));
  return 0;
}
"""

PRELUDE = "#include <cstdio>\n#include <cstdlib>\n#include <ctime>\nfloat* d_out;\n"

ORIGINAL = PRELUDE + r"""
__global__ void produce(const float* x, float* t) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  t[i] = x[i] * 2.0f + 1.0f;
}
__global__ void consume(const float* t, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = t[i] * t[i ^ 1] + EXTRA;
}
""" + HOST.replace("LAUNCH", "produce<<<n / 128, 128>>>(dx, dt); consume<<<n / 128, 128>>>(dt, dy)")

FUSED = PRELUDE + r"""
__global__ void fused(const float* x, float* t, float* y) {
  __shared__ float s[128];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = x[i] * 2.0f + 1.0f;
  t[i] = v;
  s[threadIdx.x] = v;
  BARRIER;
  y[i] = s[threadIdx.x] * s[threadIdx.x ^ 1] + EXTRA;
}
""" + HOST.replace("LAUNCH", "fused<<<n / 128, 128>>>(dx, dt, dy)")


def write(tmp_path, name, text, barrier="__syncthreads()", extra="0.0f"):
    path = tmp_path / name
    path.write_text(text.replace("BARRIER", barrier).replace("EXTRA", extra))
    return str(path)


def test_program_against_itself_is_equal(tmp_path):
    orig = write(tmp_path, "orig.cu", ORIGINAL)
    proc = sirius("verify", orig, orig)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "result: all equal" in proc.stdout
    assert "d_out" in proc.stdout  # the buffer is named by its device pointer
    assert "printed output: equal (1 timing line(s) ignored)" in proc.stdout


def test_correct_fusion_is_bit_exact(tmp_path):
    proc = sirius("verify", write(tmp_path, "orig.cu", ORIGINAL), write(tmp_path, "fused.cu", FUSED))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_fusion_without_barrier_fails_naming_buffer_and_index(tmp_path):
    orig = write(tmp_path, "orig.cu", ORIGINAL)
    bad = write(tmp_path, "misfused.cu", FUSED, barrier="")
    proc = sirius("verify", orig, bad)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout
    assert "result: DIFFERENT" in out
    assert "buffer #1 d_out:" in out and "first at index 0: original" in out
    assert "printed output differs at line 1" in out


def test_tolerances(tmp_path):
    orig = write(tmp_path, "orig.cu", ORIGINAL)
    near = write(tmp_path, "near.cu", ORIGINAL, extra="1e-4f")
    exact = sirius("verify", orig, near)
    assert exact.returncode == 1, exact.stdout + exact.stderr
    assert "max abs diff" in exact.stdout and "DIFFERENT" in exact.stdout
    loose = sirius("verify", orig, near, "--atol", "1e-3", "--rtol", "1e-5")
    assert loose.returncode == 0, loose.stdout + loose.stderr


def test_optimized_program_that_fails_is_a_difference(tmp_path):
    orig = str(INPUTS / "barriers.cu")
    proc = sirius("verify", str(INPUTS / "barriers.cu"), orig, "-DCASE=1", timeout=120)
    # the original itself fails: that is an error, not a difference
    assert_clean_error(proc, "the original program failed", "divergent __syncthreads()")
    # A fusion that turned the early return into a guard: the threads past n
    # now reach the next fragment's barrier instead of exiting.
    source = (INPUTS / "barriers.cu").read_text().replace("#define CASE 1", "#define CASE 2")
    body = ("  if (t >= n) return;\n  s[t] = in[t] * 3;\n  __syncthreads();\n"
            "  out[t] = s[(t + 1) % n];\n")
    assert body in source
    guarded = ("  if (t < n) {\n    s[t] = in[t] * 3;\n    __syncthreads();\n"
               "    out[t] = s[(t + 1) % n];\n  }\n  __syncthreads();\n")
    early = write(tmp_path, "ok.cu", source)
    divergent = write(tmp_path, "div.cu", source.replace(body, guarded))
    proc = sirius("verify", early, divergent, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "the optimized program failed: divergent __syncthreads()" in proc.stdout


def test_verify_errors(tmp_path):
    orig = write(tmp_path, "orig.cu", ORIGINAL)
    assert_clean_error(sirius("verify", orig, str(tmp_path / "none.cu")), "no such file")
    assert_clean_error(sirius("verify", orig, orig, "--rtol", "-1"), "must not be negative")


MANAGED = r"""
#include <cstdio>
__global__ void fill(float* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = i * 0.5f + (i == 70 ? BUMP : 0.0f);
}
int main() {
  float* m;
  cudaMallocManaged(&m, 100 * sizeof(float));
  fill<<<1, 128>>>(m, 100);
  cudaDeviceSynchronize();
  return 0;
}
"""


def test_managed_memory_is_compared(tmp_path):
    a = tmp_path / "a.cu"
    b = tmp_path / "b.cu"
    a.write_text(MANAGED.replace("BUMP", "0.0f"))
    b.write_text(MANAGED.replace("BUMP", "1.0f"))
    proc = sirius("verify", str(a), str(b))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "buffer #1 managed buffer: 1 of 100 elements differ; first at index 70" in proc.stdout
