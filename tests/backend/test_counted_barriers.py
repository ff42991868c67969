"""Named and counted barriers on the CPU backend: ``__barrier_sync_count(id,
n)`` releases once n threads wait at barrier ``id``, ``__barrier_sync(id)``
once every live thread does; threads at different barrier ids wait
independently, so the first threads of a block can synchronize among
themselves while the others wait at a ``__syncthreads()`` (the shape of the
optimizer's fused cooperative kernels). Misuse (a bad count, a barrier that
cannot complete, one barrier waited at from two sites) ends the run with exit
status 2 and a message naming kernel, block and line.

The programs are written here; expected values are computed here too.
"""

from __future__ import annotations

import pytest

from conftest import assert_clean_error, requires_clang, run_cpu, sirius
from sirius.backend.rewrite import rewrite_preprocessed


def runs_programs(test):
    """Marks a test that builds and runs CUDA programs (needs clang-22)."""
    return pytest.mark.toolchain(requires_clang(test))


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def input_values(n: int) -> list[int]:
    return [(i * 37) % 1000 - 300 for i in range(n)]


# ------------------------------------------------------------------ the rewrite


def test_rewrite_keeps_named_barriers():
    src = ('# 1 "prog.cu"\n'
           "__global__ void k() {\n"
           "  if (threadIdx.x < 128u) __barrier_sync_count(1, 128);\n"
           "  __barrier_sync(2);\n"
           "}\n")
    lines = rewrite_preprocessed(src).text.splitlines()
    assert lines[2].strip() == "if (threadIdx.x < 128u) __barrier_sync_count(1, 128);"
    assert lines[3].strip() == "__barrier_sync(2);"


# ------------------------------------------------------------------ part of a block

BLOCKS = 6
HALF = 128

# first_half_sums: the first 128 threads of each 256-thread block sum 128
# values by a tree over barrier 1; the others go straight to the final
# __syncthreads(), after which one of them reads the sum. two_groups: both
# halves reduce at once, a sum on barrier 1 and a maximum on barrier 2.
PARTIAL_BLOCK = r"""
#include <cstdio>
#include <sm_30_intrinsics.h>
#define BLOCKS 6
#define HALF 128u

__global__ void first_half_sums(const int* in, int* sums, int* marks) {
  __shared__ int s[HALF];
  unsigned t = threadIdx.x;
  if (t < HALF) {
    s[t] = in[blockIdx.x * HALF + t];
    __barrier_sync_count(1, HALF);
    for (unsigned h = HALF / 2; h > 0; h >>= 1) {
      if (t < h) s[t] += s[t + h];
#ifndef DROP_COUNTED_BARRIER
      __barrier_sync_count(1, HALF);
#endif
    }
  } else {
    marks[blockIdx.x * HALF + t - HALF] = (int)t;
  }
  __syncthreads();
  if (t == HALF) sums[blockIdx.x] = s[0];
}

__global__ void two_groups(const int* in, int* out) {
  __shared__ int s[2 * HALF];
  unsigned t = threadIdx.x;
  s[t] = in[blockIdx.x * 2 * HALF + t];
  if (t < HALF) {
    __barrier_sync_count(1, HALF);
    for (unsigned h = HALF / 2; h > 0; h >>= 1) {
      if (t < h) s[t] += s[t + h];
      __barrier_sync_count(1, HALF);
    }
  } else {
    unsigned u = t - HALF;
    __barrier_sync_count(2, HALF);
    for (unsigned h = HALF / 2; h > 0; h >>= 1) {
      if (u < h) s[t] = max(s[t], s[t + h]);
      __barrier_sync_count(2, HALF);
    }
  }
  __barrier_sync(3);
  if (t == 0) out[blockIdx.x] = s[0] * 1000 + s[HALF];
}

int main() {
  static int h[BLOCKS * 2 * HALF];
  for (int i = 0; i < BLOCKS * 2 * (int)HALF; ++i) h[i] = (i * 37) % 1000 - 300;
  int *in, *sums, *marks, *out;
  cudaMalloc(&in, sizeof h);
  cudaMalloc(&sums, BLOCKS * sizeof(int));
  cudaMalloc(&marks, BLOCKS * HALF * sizeof(int));
  cudaMalloc(&out, BLOCKS * sizeof(int));
  cudaMemcpy(in, h, sizeof h, cudaMemcpyHostToDevice);
  first_half_sums<<<BLOCKS, 2 * HALF>>>(in, sums, marks);
  two_groups<<<BLOCKS, 2 * HALF>>>(in, out);
  int r[BLOCKS], o[BLOCKS];
  static int m[BLOCKS * HALF];
  cudaMemcpy(r, sums, sizeof r, cudaMemcpyDeviceToHost);
  cudaMemcpy(m, marks, sizeof m, cudaMemcpyDeviceToHost);
  cudaMemcpy(o, out, sizeof o, cudaMemcpyDeviceToHost);
  int marks_ok = 1;
  for (int i = 0; i < BLOCKS * (int)HALF; ++i) marks_ok &= m[i] == (int)(HALF + i % HALF);
  printf("marks %s\n", marks_ok ? "ok" : "WRONG");
  for (int b = 0; b < BLOCKS; ++b) printf("sum %d\n", r[b]);
  for (int b = 0; b < BLOCKS; ++b) printf("groups %d\n", o[b]);
  return 0;
}
"""


def expected_partial_block() -> list[str]:
    values = input_values(BLOCKS * 2 * HALF)
    sums = [sum(values[b * HALF:(b + 1) * HALF]) for b in range(BLOCKS)]
    groups = []
    for b in range(BLOCKS):
        row = values[b * 2 * HALF:(b + 1) * 2 * HALF]
        groups.append(sum(row[:HALF]) * 1000 + max(row[HALF:]))
    return (["marks ok"] + [f"sum {s}" for s in sums] + [f"groups {g}" for g in groups])


@runs_programs
def test_first_threads_reduce_on_a_counted_barrier_while_the_rest_wait(tmp_path):
    program = write(tmp_path, "partial_block.cu", PARTIAL_BLOCK)
    proc = run_cpu(program, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == expected_partial_block()
    # a counted barrier missing from the tree shows as it does for __syncthreads()
    proc = run_cpu(program, "-DDROP_COUNTED_BARRIER", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sums = [line for line in proc.stdout.splitlines() if line.startswith("sum ")]
    assert sums != [line for line in expected_partial_block() if line.startswith("sum ")]


# ------------------------------------------------------------------ in a cooperative kernel

VIRTUAL_BLOCKS = 20

# Phase 1 (written for blocks of 128 threads) runs in the first 128 threads of
# each 256-thread block, a virtual block at a time; phase 2 reads what other
# blocks' phase 1 wrote, after the grid barrier.
COOPERATIVE = r"""
#include <cstdio>
#include <cooperative_groups.h>
#define VBLOCKS 20u
#define HALF 128u

__global__ void __launch_bounds__(256) phases(const int* in, int* sums, int* out) {
  __shared__ int s[HALF];
  unsigned t = threadIdx.x;
  for (unsigned vb = blockIdx.x; vb < VBLOCKS; vb += gridDim.x) {
    if (t < HALF) {
      s[t] = in[vb * HALF + t];
      __barrier_sync_count(1, HALF);
      for (unsigned h = HALF / 2; h > 0; h >>= 1) {
        if (t < h) s[t] += s[t + h];
        __barrier_sync_count(1, HALF);
      }
      if (t == 0) sums[vb] = s[0];
    }
    __syncthreads();
  }
  cooperative_groups::this_grid().sync();
  for (unsigned vb = blockIdx.x; vb < VBLOCKS; vb += gridDim.x)
    out[vb * 256u + t] = sums[(vb + t) % VBLOCKS] - sums[vb];
}

int main() {
  static int h[VBLOCKS * HALF];
  for (int i = 0; i < (int)(VBLOCKS * HALF); ++i) h[i] = (i * 37) % 1000 - 300;
  int *in, *sums, *out;
  cudaMalloc(&in, sizeof h);
  cudaMalloc(&sums, VBLOCKS * sizeof(int));
  cudaMalloc(&out, VBLOCKS * 256 * sizeof(int));
  cudaMemcpy(in, h, sizeof h, cudaMemcpyHostToDevice);
  void* args[] = {&in, &sums, &out};
  cudaError_t e = cudaLaunchCooperativeKernel(phases, dim3(6), dim3(256), args, 0, 0);
  printf("launch: %s\n", cudaGetErrorString(e));
  static int o[VBLOCKS * 256];
  cudaMemcpy(o, out, sizeof o, cudaMemcpyDeviceToHost);
  for (unsigned i = 0; i < VBLOCKS * 256; ++i) printf("%d\n", o[i]);
  return 0;
}
"""


@runs_programs
def test_counted_barrier_inside_a_phase_of_a_cooperative_kernel(tmp_path):
    proc = run_cpu(write(tmp_path, "coop.cu", COOPERATIVE), timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    values = input_values(VIRTUAL_BLOCKS * HALF)
    sums = [sum(values[v * HALF:(v + 1) * HALF]) for v in range(VIRTUAL_BLOCKS)]
    expected = [str(sums[(v + t) % VIRTUAL_BLOCKS] - sums[v])
                for v in range(VIRTUAL_BLOCKS) for t in range(256)]
    lines = proc.stdout.splitlines()
    assert lines[0] == "launch: no error"
    assert lines[1:] == expected


# ------------------------------------------------------------------ misuse

MISUSE = r"""
__global__ void k(int* out) {
  unsigned t = threadIdx.x;
#if CASE == 1
  if (t < 128u) __barrier_sync_count(1, 100);
#elif CASE == 2
  if (t < 64u) __barrier_sync_count(1, 128);
#else
  if (t < 64u) __barrier_sync_count(1, 128);
  else if (t < 128u) __barrier_sync_count(1, 128);
#endif
  out[t] = 1;
}
int main() {
  int* d;
  cudaMalloc(&d, 256 * sizeof(int));
  k<<<1, 256>>>(d);  // one block: the block the error names does not depend on which worker reports first
  cudaDeviceSynchronize();
  return 0;
}
"""

MISUSE_CASES = {
    "count_not_whole_warps": (1, [
        "__barrier_sync_count(1, 100) at ", "misuse.cu:5 in kernel 'k' (block (0,0,0), thread",
        "the thread count must be a multiple of the warp size (32)"]),
    # 64 threads arrive, the other 192 of the block finish: it never completes
    "deadlock": (2, [
        "deadlock in kernel 'k' (block (0,0,0)): no thread can continue: "
        "__barrier_sync_count(1, 128) waits for 128 threads, 64 are there (64 threads at ",
        "misuse.cu:7); 192 threads have finished"]),
    "two_sites_of_one_barrier": (3, [
        "divergent __barrier_sync_count(1, 128) in kernel 'k' (block (0,0,0))",
        "misuse.cu:9, 64 threads at ", "misuse.cu:10"]),
}


@runs_programs
@pytest.mark.parametrize("name", sorted(MISUSE_CASES))
def test_misused_counted_barrier_exits_2_naming_kernel_block_and_line(tmp_path, name):
    case, needles = MISUSE_CASES[name]
    proc = run_cpu(write(tmp_path, "misuse.cu", MISUSE), f"-DCASE={case}", timeout=60)
    assert_clean_error(proc, *needles)


# ------------------------------------------------------------------ against plain launches

# Two steps: sums of 128-value slices (blocks of 128 threads), then each of
# 256 threads per block scales a slice sum read through shared memory. The
# fused program runs both as phases of one cooperative kernel of 256-thread
# blocks, the optimizer's shape: copies of the steps' device functions with
# the sirius_block_sync helper for their barriers; its fallback is the
# original launches.
STEPS = r"""
#include <cstdio>
#include <cooperative_groups.h>
#define VBLOCKS 20u

__device__ void slice_sum(const float* in, float* sums, unsigned vb) {
  __shared__ float s[128];
  s[threadIdx.x] = in[vb * 128u + threadIdx.x];
  __syncthreads();
  for (unsigned h = 64; h > 0; h >>= 1) {
    if (threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h];
    __syncthreads();
  }
  if (threadIdx.x == 0) sums[vb] = s[0];
}
__device__ void scale(const float* sums, float* out, unsigned vb) {
  __shared__ float near[2];
  if (threadIdx.x < 2) near[threadIdx.x] = sums[(vb + threadIdx.x) % VBLOCKS];
  __syncthreads();
  out[vb * 256u + threadIdx.x] = near[threadIdx.x & 1u] * (float)threadIdx.x;
}

__global__ void slice_sums(const float* in, float* sums) { slice_sum(in, sums, blockIdx.x); }
__global__ void scales(const float* sums, float* out) { scale(sums, out, blockIdx.x); }
"""

BLOCK_SYNC = r"""
static __device__ __forceinline__ void sirius_block_sync(const dim3 sirius_b) {
  const unsigned sirius_n = sirius_b.x * sirius_b.y * sirius_b.z;
  if (sirius_n == blockDim.x * blockDim.y * blockDim.z) __syncthreads(); else __barrier_sync_count(1, sirius_n);
}
"""

FUSED_KERNEL = r"""
__global__ void __launch_bounds__(256) fused(const float* in, float* sums, float* out) {
  for (unsigned vb = blockIdx.x; vb < VBLOCKS; vb += gridDim.x) {
    if (threadIdx.x < 128u) { fused_slice_sum(in, sums, vb); }
    __syncthreads();
  }
  cooperative_groups::this_grid().sync();
  for (unsigned vb = blockIdx.x; vb < VBLOCKS; vb += gridDim.x) {
    { fused_scale(sums, out, vb); }
    __syncthreads();
  }
}
"""

HOST = r"""
int main() {
  static float h[VBLOCKS * 128];
  for (unsigned i = 0; i < VBLOCKS * 128; ++i) h[i] = (float)((i * 7919u) % 1000u) / 8.0f;
  float *in, *sums, *out;
  cudaMalloc(&in, sizeof h);
  cudaMalloc(&sums, VBLOCKS * sizeof(float));
  cudaMalloc(&out, VBLOCKS * 256 * sizeof(float));
  cudaMemcpy(in, h, sizeof h, cudaMemcpyHostToDevice);
  LAUNCH
  static float o[VBLOCKS * 256];
  cudaMemcpy(o, out, sizeof o, cudaMemcpyDeviceToHost);
  float s[VBLOCKS];
  cudaMemcpy(s, sums, sizeof s, cudaMemcpyDeviceToHost);
  return 0;
}
"""

ORIGINAL_LAUNCHES = """
  slice_sums<<<VBLOCKS, 128>>>(in, sums);
  scales<<<VBLOCKS, 256>>>(sums, out);
"""

COOPERATIVE_LAUNCH = """
  void* args[] = {&in, &sums, &out};
  if (cudaLaunchCooperativeKernel(fused, dim3(6), dim3(256), args, 0, 0) != cudaSuccess) {
    cudaGetLastError();
""" + ORIGINAL_LAUNCHES + """
  }
"""


def fused_program() -> str:
    steps = STEPS[STEPS.index("__device__ void slice_sum("):STEPS.index("__global__")]
    fragments = (steps.replace("void slice_sum(", "void fused_slice_sum(")
                 .replace("void scale(", "void fused_scale("))
    # each fragment's barriers count the threads of the block it was written for
    head, tail = fragments.split("__device__ void fused_scale(")
    fragments = (head.replace("__syncthreads()", "sirius_block_sync(dim3(128, 1, 1))")
                 + "__device__ void fused_scale("
                 + tail.replace("__syncthreads()", "sirius_block_sync(dim3(256, 1, 1))"))
    return (STEPS + BLOCK_SYNC + fragments + FUSED_KERNEL
            + HOST.replace("LAUNCH", COOPERATIVE_LAUNCH))


@runs_programs
def test_verify_block_sync_helper_program_against_plain_launches(tmp_path):
    original = write(tmp_path, "original.cu", STEPS + HOST.replace("LAUNCH", ORIGINAL_LAUNCHES))
    fused = write(tmp_path, "fused.cu", fused_program())
    proc = sirius("verify", original, fused, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "result: all equal" in proc.stdout
    # the cooperative kernel ran, not its fallback
    log = tmp_path / "launches.txt"
    proc = sirius("run", fused, env={"SIRIUS_LAUNCH_LOG": str(log)}, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert log.read_text().split() == ["fused"]
