"""``__managed__`` variables (clang-22 ignores the attribute in CUDA mode; see
``analysis/managed_variables.py``): accepted, each a device buffer of its own, the host's
loads and stores of it statements of the host model, every synchronization a point where
the host may observe it."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from sirius.analysis.frontend import CompileJob
from sirius.analysis.host_observation import sync_observers
from sirius.core.config import CompileFlags, resolve_toolchain
from sirius.pipeline import OptimizeState, report, run_pipeline

from .conftest import ROOT

pytestmark = pytest.mark.toolchain

PROBES = ROOT / "tests" / "probes"

# The host writes offset between two launches without a synchronization (legal where the
# device has concurrent managed access, as an H100 under Linux), clears acc with memset,
# and sums it in a helper of its own.
HOST_ACCESSES = r"""
#include <cstdio>
#include <cstring>
#define N 256
__managed__ float acc[N];
__managed__ int offset;

__global__ void produce(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i] + 1.0f;
}
__global__ void apply(float* y, const int* by, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += (float)(*by + offset);
}
__attribute__((noinline)) float total() {
  float s = 0.0f;
  for (int i = 0; i < N; ++i) s += acc[i];
  return s;
}
int main() {
  memset(acc, 0, sizeof(acc));
  offset = 1;
  produce<<<2, 128>>>(acc, acc, N);
  offset = 5;
  apply<<<2, 128>>>(acc, &offset, N);
  cudaDeviceSynchronize();
  printf("%f\n", total());
  return 0;
}
"""


@functools.lru_cache(maxsize=None)
def optimized(path: Path) -> OptimizeState:
    """The program analysed and optimized once (its model is ``.model``)."""
    return run_pipeline(OptimizeState(CompileJob(path, CompileFlags(), resolve_toolchain())))


def host_accesses(model) -> list[str]:
    return [s.describe() for s in model.host.statements if s.call and "__managed__" in s.call]


def test_managed_variables_are_device_buffers_the_host_reads_and_writes():
    m = optimized(PROBES / "managed_variable_fused.cu").model
    assert set(m.managed_variables) == {"acc", "hits"}
    assert m.device_globals["acc"] == 512 * 4 and m.device_globals["hits"] == 4
    square = next(i for i in m.launches if i.kernel.name == "square")
    assert {a.buffer for a in square.kernel.accesses} == {"acc"}
    described = host_accesses(m)
    assert any(d.startswith("host write of __managed__ acc (HostToDevice)") for d in described), described
    assert any(d.startswith("host write of __managed__ hits (HostToDevice)") for d in described), described
    assert any(d.startswith("host read of __managed__ acc (DeviceToHost)") for d in described), described
    assert any(d.startswith("host read of __managed__ hits (DeviceToHost)") for d in described), described
    fill = next(s for s in m.host.statements if s.call == "host write of __managed__ acc")
    assert fill.loops and fill.src.kind == "host" and fill.dst.buffer == "acc"  # the loop filling acc
    observers = [o.describe() for o in sync_observers(m)]
    assert "__managed__ variable acc, which the host reads without a copy (line 16)" in observers


def test_two_launches_with_nothing_between_fuse():
    rep = report(optimized(PROBES / "managed_variable_fused.cu"))
    assert [[m["kernel"] for lane in g["lanes"] for m in lane] for g in rep["groups"]] == [["square", "shift"]]


def test_host_accesses_between_launches_order_them(tmp_path):
    path = tmp_path / "host_accesses.cu"
    path.write_text(HOST_ACCESSES)
    m = optimized(path).model
    described = host_accesses(m)
    assert any(d.startswith("host read and write of __managed__ acc in memset") for d in described), described
    assert any(d.startswith("host write of __managed__ offset (HostToDevice) at line 25") for d in described)
    helper = next(s for s in m.host.statements if s.kind == "opaque")
    assert helper.call == "total" and "reads or writes the __managed__ variable acc" in helper.detail
    apply = next(i for i in m.launches if i.kernel.name == "apply")
    assert dict(apply.bindings)["by"].buffer == "offset"  # &offset: the variable's device buffer
    assert dict(apply.bindings)["y"].buffer == "acc"

    rep = report(optimized(path))
    assert not rep["groups"]
    reasons = [r["reason"] for r in rep["refused"] if len(r["launches"]) == 2]
    assert any("host write of __managed__ offset" in r for r in reasons), reasons
