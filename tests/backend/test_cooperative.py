"""Cooperative launches on the CPU backend: ``cudaLaunchCooperativeKernel``
runs every block of the grid at once, ``this_grid().sync()`` waits for all of
them, a grid larger than can be co-resident is refused as on a GPU
(``cudaErrorCooperativeLaunchTooLarge``), and misuse of a grid barrier ends the
run with exit status 2 and a message naming kernel, block and line.

The programs are written here; expected values are computed here too.
"""

from __future__ import annotations

import pytest

from conftest import assert_clean_error, requires_clang, run_cpu, sirius
from sirius.backend.rewrite import rewrite_preprocessed
from sirius.core.errors import UnsupportedError



def runs_programs(test):
    """Marks a test that builds and runs CUDA programs (needs clang-22)."""
    return pytest.mark.toolchain(requires_clang(test))


VIRTUAL_BLOCKS = 100
SLICE = 256

# Three dependent steps, each reading what other blocks wrote in the step
# before: fill a slice per block; sum the slice of the next block; add the sum
# of the previous block. ORIGINAL launches one kernel per step; COOPERATIVE
# runs them as phases of one persistent kernel separated by grid barriers,
# with the original launches as its fallback (the optimizer's shape).
KERNELS = r"""
#include <cstdio>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
#define VBLOCKS 100u
#define SLICE 256u

__device__ void fill_slice(float* slices, unsigned vb) {
  slices[vb * SLICE + threadIdx.x] = (float)(vb * 100u + threadIdx.x);
}
__device__ void sum_next_slice(const float* slices, float* sums, unsigned vb) {
  __shared__ float partial[SLICE];
  partial[threadIdx.x] = slices[(vb + 1u) % VBLOCKS * SLICE + threadIdx.x];
  __syncthreads();
  for (unsigned s = SLICE / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) sums[vb] = partial[0];
}
__device__ void add_previous_sum(const float* sums, float* out, unsigned vb) {
  if (threadIdx.x == 0) out[vb] = sums[vb] + sums[(vb + VBLOCKS - 1u) % VBLOCKS];
}

__global__ void fill(float* slices) { fill_slice(slices, blockIdx.x); }
__global__ void sum_next(const float* slices, float* sums) {
  sum_next_slice(slices, sums, blockIdx.x);
}
__global__ void add_previous(const float* sums, float* out) {
  add_previous_sum(sums, out, blockIdx.x);
}
"""

PHASES = r"""
__global__ void __launch_bounds__(256) phases(float* slices, float* sums, float* out) {
  for (unsigned vb = blockIdx.x; vb < VBLOCKS; vb += gridDim.x) {
    fill_slice(slices, vb);
    __syncthreads();
  }
  cg::this_grid().sync();
  for (unsigned vb = blockIdx.x; vb < VBLOCKS; vb += gridDim.x) {
    sum_next_slice(slices, sums, vb);
    __syncthreads();
  }
  cg::grid_group grid = cg::this_grid();
  cg::sync(grid);
  for (unsigned vb = blockIdx.x; vb < VBLOCKS; vb += gridDim.x) {
    add_previous_sum(sums, out, vb);
    __syncthreads();
  }
}
"""

HOST = r"""
int main(int argc, char** argv) {
  float *slices, *sums, *out;
  cudaMalloc(&slices, sizeof(float) * VBLOCKS * SLICE);
  cudaMalloc(&sums, sizeof(float) * VBLOCKS);
  cudaMalloc(&out, sizeof(float) * VBLOCKS);
  LAUNCH
  float h[VBLOCKS];
  cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
  for (unsigned i = 0; i < VBLOCKS; ++i) printf("%.0f\n", h[i]);
  return 0;
}
"""

ORIGINAL_LAUNCHES = """
  fill<<<VBLOCKS, SLICE>>>(slices);
  sum_next<<<VBLOCKS, SLICE>>>(slices, sums);
  add_previous<<<VBLOCKS, SLICE>>>(sums, out);
"""

# The grid is sized as the optimizer's host code sizes it; a program argument
# overrides it (to run few blocks over many virtual blocks).
COOPERATIVE_LAUNCH = """
  int dev = 0, coop = 0, sms = 0, per_sm = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, phases, 256, 0);
  unsigned grid = min(VBLOCKS, (unsigned)(per_sm * sms));
#ifdef SIRIUS_COOPERATIVE_MAX_BLOCKS
  grid = min(grid, (unsigned)SIRIUS_COOPERATIVE_MAX_BLOCKS);
#endif
  if (argc > 1) grid = (unsigned)atoi(argv[1]);
  fprintf(stderr, "coop %d, %d SMs, %d blocks per SM: grid %u\\n", coop, sms, per_sm, grid);
  void* args[] = {&slices, &sums, &out};
  if (coop && per_sm > 0 &&
      cudaLaunchCooperativeKernel(phases, dim3(grid), dim3(256), args, 0, 0) == cudaSuccess) {
  } else {
    cudaGetLastError();
""" + ORIGINAL_LAUNCHES + """
  }
"""

ORIGINAL = KERNELS + HOST.replace("LAUNCH", ORIGINAL_LAUNCHES)
COOPERATIVE = KERNELS + PHASES + HOST.replace("LAUNCH", COOPERATIVE_LAUNCH)


def expected_outputs() -> list[str]:
    def sums(vb: int) -> int:
        nxt = (vb + 1) % VIRTUAL_BLOCKS
        return sum(nxt * 100 + t for t in range(SLICE))

    return [str(sums(vb) + sums((vb - 1) % VIRTUAL_BLOCKS)) for vb in range(VIRTUAL_BLOCKS)]


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# ------------------------------------------------------------------ the rewrite


def test_rewrite_keeps_grid_groups_refuses_multi_grid_and_registers_launch_bounds():
    src = ('# 1 "prog.cu"\n'
           "__global__ void __launch_bounds__(256) k(float* p) {\n"
           "  cooperative_groups::grid_group g = cooperative_groups::this_grid();\n"
           "  g.sync();\n"
           "}\n")
    out = rewrite_preprocessed(src).text
    assert "cooperative_groups::this_grid()" in out
    lines = out.splitlines()
    assert lines[3].strip() == "g.sync();"  # registrations come after the program
    assert lines[-1] == 'static ::__sirius::LaunchBoundsRegistration __sirius_bounds_0("k", 256);'
    with pytest.raises(UnsupportedError, match=r"prog.cu:2: error: multi-device cooperative"):
        rewrite_preprocessed('# 1 "prog.cu"\n\nauto g = cooperative_groups::this_multi_grid();\n')


# ------------------------------------------------------------------ running


@runs_programs
def test_phases_read_what_other_blocks_wrote_before_the_grid_barrier(tmp_path):
    program = write(tmp_path, "coop.cu", COOPERATIVE)
    log = tmp_path / "launches.txt"
    # the grid the host code sizes: 64 blocks (the CPU's default limit) over
    # 100 virtual blocks; then 3 blocks over 100
    proc = sirius("run", program, env={"SIRIUS_LAUNCH_LOG": str(log)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "coop 1, 132 SMs, 8 blocks per SM: grid 64" in proc.stderr
    assert proc.stdout.split() == expected_outputs()
    assert log.read_text().split() == ["phases"]  # not the fallback
    proc = sirius("run", program, "--", "3", env={"SIRIUS_LAUNCH_LOG": str(log)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.split() == expected_outputs()
    assert log.read_text().split() == ["phases"]


@runs_programs
def test_verify_cooperative_program_against_separate_launches(tmp_path):
    original = write(tmp_path, "original.cu", ORIGINAL)
    cooperative = write(tmp_path, "coop.cu", COOPERATIVE)
    proc = sirius("verify", original, cooperative)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "result: all equal" in proc.stdout


TOO_LARGE = r"""
#include <cstdio>
#include <cooperative_groups.h>
__global__ void __launch_bounds__(128) bounded(int* flags) {
  flags[blockIdx.x] = 1;
  cooperative_groups::this_grid().sync();
  if (threadIdx.x == 0) printf("block %u sees %d\n", blockIdx.x, flags[(blockIdx.x + 1) % 4]);
}
__global__ void wide(int* flags) { cooperative_groups::this_grid().sync(); }
int main() {
  int* flags;
  cudaMalloc(&flags, 128 * sizeof(int));
  int per_sm = -1;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, bounded, 128, 0);
  printf("blocks per SM of 128 threads: %d\n", per_sm);
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, bounded, 256, 0);
  printf("blocks per SM of 256 threads: %d\n", per_sm);
  void* args[] = {&flags};
  cudaError_t e = cudaLaunchCooperativeKernel(bounded, dim3(SIRIUS_COOPERATIVE_MAX_BLOCKS + 1),
                                              dim3(128), args);
  printf("too many blocks: %s\n", cudaGetErrorString(e));
  printf("last error: %s\n", cudaGetErrorName(cudaGetLastError()));
  e = cudaLaunchCooperativeKernel(wide, dim3(20), dim3(1024), args);
  printf("too many threads: %s\n", cudaGetErrorString(e));
  cudaGetLastError();
  e = cudaLaunchCooperativeKernel(bounded, dim3(4), dim3(128), args);
  printf("4 blocks: %s\n", cudaGetErrorString(e));
  return 0;
}
"""


@runs_programs
def test_grid_too_large_to_be_resident_is_an_error_the_program_sees(tmp_path):
    program = write(tmp_path, "too_large.cu", TOO_LARGE)
    proc = run_cpu(program)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [
        "blocks per SM of 128 threads: 16",
        "blocks per SM of 256 threads: 0",  # beyond its __launch_bounds__
        "too many blocks: too many blocks in cooperative launch",
        "last error: cudaErrorCooperativeLaunchTooLarge",
        "too many threads: too many blocks in cooperative launch",
        # printf of a cooperative grid comes out in block order
        *[f"block {b} sees 1" for b in range(4)],
        "4 blocks: no error",
    ]
    assert "65 blocks of 128 threads, at most 64 can be resident" in proc.stderr
    # the CPU's limit is a setting of the run
    proc = sirius("run", program, env={"SIRIUS_CPU_COOP_BLOCKS": "3"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 blocks: too many blocks in cooperative launch" in proc.stdout


MISUSE = {
    # a block returns before the grid barrier the others wait at
    "early_block": (
        "#include <cooperative_groups.h>\n"
        "__global__ void early(int* flags) {\n"
        "  if (blockIdx.x == 3) return;\n"
        "  flags[blockIdx.x] = 1;\n"
        "  cooperative_groups::this_grid().sync();\n"
        "}\n"
        "int main() {\n"
        "  int* flags;\n"
        "  cudaMalloc(&flags, 8 * sizeof(int));\n"
        "  void* args[] = {&flags};\n"
        "  cudaLaunchCooperativeKernel(early, dim3(8), dim3(64), args);\n"
        "  return 0;\n"
        "}\n",
        ["not all blocks reach the grid barrier at ", "early_block.cu:5 in kernel 'early'",
         "block (3,0,0) finished while 7 blocks wait there"],
    ),
    # one thread of every block returns before it
    "early_thread": (
        "#include <cooperative_groups.h>\n"
        "__global__ void early(int* flags) {\n"
        "  if (threadIdx.x == 5) return;\n"
        "  cooperative_groups::this_grid().sync();\n"
        "}\n"
        "int main() {\n"
        "  int* flags = nullptr;\n"
        "  void* args[] = {&flags};\n"
        "  cudaLaunchCooperativeKernel(early, dim3(4), dim3(64), args);\n"
        "  return 0;\n"
        "}\n",
        ["not all threads of block (", "early_thread.cu:4 in kernel 'early'",
         "thread (5,0,0) finished"],
    ),
    "not_cooperative": (
        "#include <cooperative_groups.h>\n"
        "__global__ void plain(int* flags) {\n"
        "  flags[blockIdx.x] = 1;\n"
        "  cooperative_groups::this_grid().sync();\n"
        "}\n"
        "int main() {\n"
        "  int* flags;\n"
        "  cudaMalloc(&flags, 8 * sizeof(int));\n"
        "  plain<<<8, 64>>>(flags);\n"
        "  return 0;\n"
        "}\n",
        ["this_grid().sync() at ", "not_cooperative.cu:4 in kernel 'plain', which was not "
         "launched with cudaLaunchCooperativeKernel"],
    ),
    "untyped_kernel": (  # (void*)kernel works (a cast of the kernel's name); this pointer is no such cast
        "__global__ void k() {}\n"
        "int main() {\n"
        "  void (*typed)() = k;\n"
        "  cudaLaunchCooperativeKernel((void*)typed, dim3(1), dim3(1), nullptr);\n"
        "  return 0;\n"
        "}\n",
        ["cudaLaunchCooperativeKernel with an untyped (void*) kernel pointer",
         "unsupported by the CPU backend"],
    ),
}


@runs_programs
@pytest.mark.parametrize("name", sorted(MISUSE))
def test_misused_grid_barrier_exits_2_naming_kernel_block_and_line(tmp_path, name):
    source, needles = MISUSE[name]
    proc = run_cpu(write(tmp_path, f"{name}.cu", source), timeout=60)
    assert_clean_error(proc, *needles)


MANY_LAUNCHES = r"""
#include <cstdio>
#include <cooperative_groups.h>
#define BLOCKS 32
#define THREADS 256
__global__ void __launch_bounds__(THREADS) step(unsigned* counts, unsigned* seen, unsigned launch) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  counts[i] = launch + 1;
  cooperative_groups::this_grid().sync();
  // written by the next block, in this launch
  if (counts[(i + THREADS) % (BLOCKS * THREADS)] == launch + 1) seen[i] += 1;
}
int main() {
  unsigned *counts, *seen;
  cudaMalloc(&counts, BLOCKS * THREADS * sizeof(unsigned));
  cudaMalloc(&seen, BLOCKS * THREADS * sizeof(unsigned));
  cudaMemset(seen, 0, BLOCKS * THREADS * sizeof(unsigned));
  unsigned launch = 0;
  void* args[] = {&counts, &seen, &launch};
  for (; launch < 200; ++launch)
    if (cudaLaunchCooperativeKernel(step, dim3(BLOCKS), dim3(THREADS), args) != cudaSuccess)
      return 1;
  static unsigned h[BLOCKS * THREADS];
  cudaMemcpy(h, seen, sizeof h, cudaMemcpyDeviceToHost);
  unsigned all = 0;
  for (unsigned i = 0; i < BLOCKS * THREADS; ++i) all += h[i] == 200;
  int mappings = 0;
  if (FILE* maps = fopen("/proc/self/maps", "r")) {
    for (int c; (c = fgetc(maps)) != EOF;) mappings += c == '\n';
    fclose(maps);
  }
  printf("threads that saw every launch: %u\n", all);
  printf("mappings: %d\n", mappings);
  return 0;
}
"""


@runs_programs
def test_many_cooperative_launches_reuse_threads_and_stacks(tmp_path):
    proc = run_cpu(write(tmp_path, "many.cu", MANY_LAUNCHES), timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"threads that saw every launch: {32 * 256}"
    # a stack and its guard page per CUDA thread of one grid, plus the
    # program's own: nothing grows with the number of launches
    mappings = int(lines[1].split()[1])
    assert mappings < 2 * 32 * 256 + 2000, mappings
