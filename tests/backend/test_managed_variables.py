"""``__managed__`` variables on the CPU backend: a plain global shared by kernels and host,
registered as managed memory (kernels may be given its address) and dumped at exit, so that
``sirius verify`` compares what the host reads of it without a copy."""

from __future__ import annotations

import pytest

from conftest import requires_clang, run_cpu, sirius

pytestmark = [pytest.mark.toolchain, requires_clang]

# count adds one per block into *hits (given the variable's address) and fills acc; the host
# reads both directly after the synchronization and prints only `done`, so that what it
# read reaches verify through the managed dump alone.
PROGRAM = r"""
#include <cstdio>
__managed__ float acc[256];
namespace stats { __device__ __managed__ int hits = 0; }

__global__ void count(int* hits, float scale) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  acc[i] = i * scale;
  if (threadIdx.x == 0) atomicAdd(hits, 1);
}
int main() {
  count<<<2, 128>>>(&stats::hits, SCALE);
  cudaDeviceSynchronize();
  if (stats::hits != 2 || acc[255] != 255 * SCALE) return 1;
  printf("done\n");
  return 0;
}
"""


def write(tmp_path, name: str, scale: str):
    path = tmp_path / name
    path.write_text(PROGRAM.replace("SCALE", scale))
    return path


def test_kernels_use_managed_variables_and_the_host_reads_them(tmp_path):
    proc = run_cpu(write(tmp_path, "managed.cu", "0.5f"))
    assert proc.returncode == 0 and proc.stdout == "done\n", proc.stdout + proc.stderr


def test_verify_compares_managed_variables_the_host_reads(tmp_path):
    original = write(tmp_path, "original.cu", "0.5f")
    same = sirius("verify", str(original), str(write(tmp_path, "same.cu", "0.5f")), "--backend", "cpu")
    assert same.returncode == 0, same.stdout + same.stderr
    rows = {line.split()[1]: line.split()[-1] for line in same.stdout.splitlines() if line.startswith("  ")}
    assert rows.get("acc") == "equal" and rows.get("hits") == "equal", same.stdout
    differs = sirius("verify", str(original), str(write(tmp_path, "differs.cu", "0.25f")), "--backend", "cpu")
    assert differs.returncode == 1, differs.stdout + differs.stderr
    assert "buffer #1 acc: 255 of 256 elements differ" in differs.stdout, differs.stdout
    assert "printed output: equal" in differs.stdout, differs.stdout
