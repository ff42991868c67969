"""The fused-kernel IR: lowering builds it from the schedule without barriers, the barrier
pass adds what each lane needs with what it orders, and the printout says so line by line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sirius.analysis.frontend import CompileJob
from sirius.core.config import CompileFlags, resolve_toolchain
from sirius.fusion.ir_text import format_kernel, format_program
from sirius.fusion.kernel_ir import CellWavesLaunch, CooperativeLaunch, KernelRole
from sirius.pipeline import PIPELINE, OptimizeState

pytestmark = pytest.mark.toolchain

# rotate -> scale is a block-level dependence; square runs beside them in wider blocks
BLOCK_DEPENDENCE = (Path(__file__).parents[1] / "filecheck" / "optimize_barrier_narrow_lane.cu").read_text()

SHARED_TWICE = """#include <cstdio>
__global__ void smooth(float* a) {
  __shared__ float tile[256];
  int i = blockIdx.x * 256 + threadIdx.x;
  tile[threadIdx.x] = a[i];
  __syncthreads();
  a[i] = 0.5f * (tile[threadIdx.x] + tile[255 - threadIdx.x]);
}
int main() {
  float* a; cudaMalloc(&a, 4096); cudaMemset(a, 0, 4096);
  float* b; cudaMalloc(&b, 4096); cudaMemset(b, 0, 4096);
  smooth<<<4, 256>>>(a);
  smooth<<<4, 256>>>(b);
  float h[4]; cudaMemcpy(h, a, 16, cudaMemcpyDeviceToHost);
  printf("%f\\n", h[0]);
  return 0;
}
"""


def _after(tmp_path: Path, source: str, *stages: str, arrangement: str = "auto") -> dict[str, str]:
    """The kernels' IR printout after each of ``stages``."""
    program = tmp_path / "program.cu"
    program.write_text(source)
    state = OptimizeState(CompileJob(program, CompileFlags(), resolve_toolchain()), arrangement=arrangement)
    out = {}
    for stage in PIPELINE:
        stage.run(state)
        if stage.name in stages:
            out[stage.name] = "".join(format_kernel(k) for k in state.kernels)
    return out


def test_lowering_places_no_barrier_and_the_barrier_pass_orders_the_block_dependence(tmp_path):
    ir = _after(tmp_path, BLOCK_DEPENDENCE, "lower", "barriers")
    lanes_before = """\
  lane blocks [0, 8): grid 8x1x1 block 128x1x1
    S6 rotate grid 8x1x1 block 128x1x1 (s6_x, s6_a)
    S7 scale grid 8x1x1 block 128x1x1 (s7_a, s7_b)
  lane blocks [8, 12): grid 4x1x1 block 256x1x1
    S8 square grid 4x1x1 block 256x1x1 (s8_c)
"""
    assert ir["lower"] == """\
kernel sirius_fused_0 (group 0, hybrid): 256 threads, shared 0 static + 0 dynamic bytes
  group: region 0, step 0, lanes S6 -> S7 | S8
  launched as <<<dim3(12), dim3(256)>>>
  param s6_x: const float * -> x + 0
  param s6_a: float * -> a + 0
  param s7_a: const float * -> a + 0
  param s7_b: float * -> b + 0
  param s8_c: float * -> c + 0
""" + lanes_before
    assert ir["barriers"].splitlines()[8:] == """\
  lane blocks [0, 8): grid 8x1x1 block 128x1x1
    S6 rotate grid 8x1x1 block 128x1x1 (s6_x, s6_a)
    barrier: block dependence S6 -> S7 on a
    S7 scale grid 8x1x1 block 128x1x1 (s7_a, s7_b)
  lane blocks [8, 12): grid 4x1x1 block 256x1x1
    S8 square grid 4x1x1 block 256x1x1 (s8_c)""".splitlines()


def test_a_shared_array_used_again_in_one_lane_is_ordered_by_a_barrier(tmp_path):
    ir = _after(tmp_path, SHARED_TWICE, "lower", "barriers", arrangement="vertical")
    assert "barrier" not in ir["lower"]
    shared = "  shared _ZZ6smoothPfE4tile: 1024 bytes, used by S4, S5\n"
    assert shared in ir["lower"] and shared in ir["barriers"]
    assert ir["barriers"].endswith("""\
    S4 smooth grid 4x1x1 block 256x1x1 (s4_a)
    barrier: shared array reuse S4 -> S5 on _ZZ6smoothPfE4tile
    S5 smooth grid 4x1x1 block 256x1x1 (s5_a)
""")


def _lowered(path: Path, *stages: str, **options) -> tuple[dict[str, str], OptimizeState]:
    """The printed fused program after each of ``stages`` of one run, and the final state."""
    state = OptimizeState(CompileJob(path, CompileFlags(), resolve_toolchain()), verify_each=True, **options)
    out = {}
    for stage in PIPELINE:
        stage.run(state)
        if stage.name in stages:
            out[stage.name] = format_program(state.program)
    return out, state


def test_a_cooperative_region_is_one_launch_of_its_phases():
    ir, state = _lowered(Path(__file__).parents[1] / "filecheck" / "optimize_cooperative.cu", "lower",
                         cooperative=True)
    (launch,) = state.program.launches
    assert isinstance(launch, CooperativeLaunch) and [k.role for k in launch.phases] == [KernelRole.PHASE] * 2
    assert ir["lower"].startswith("cooperative sirius_coop_0 (region 0): 256 threads, 2 phases, 1 grid barriers\n"
                                  "kernel sirius_fused_0 (group 0, vertical, cooperative phase)")


def test_waves_of_cells_narrow_their_block_in_the_ir_not_in_the_schedule(tmp_path):
    """gate's 32-thread blocks synchronize; update and relu, fused, may have (their barrier
    is placed after the plan) but do not: the cell-block stage gives the launch 32-thread
    blocks, update's threads in turns. The schedule keeps its decision."""
    source = (Path(__file__).parents[1] / "filecheck" / "optimize_layer_waves.cu").read_text()
    source = source.replace("  t[i] = acc;\n", "  __shared__ float s[32];\n  s[threadIdx.x] = acc;\n"
                            "  __syncthreads();\n  t[i] = s[31 - threadIdx.x];\n")
    source = re.sub(r"(update<<<1, H>>>\((h_next[^,]*), t\d\);)", r"\1 relu<<<1, H>>>(\2);", source)
    source = source.replace("int main() {", "__global__ void relu(float* v) { v[threadIdx.x] = fmaxf(v[threadIdx.x], "
                            "0.0f); }\n\nint main() {")
    program = tmp_path / "waves.cu"
    program.write_text(source)
    ir, state = _lowered(program, "barriers", "cell-block", cooperative=True)
    (launch,) = state.program.of_kind(CellWavesLaunch)
    (decided,) = state.schedule.cell_waves.values()
    assert all(k.role is KernelRole.CELL_PHASE for k in launch.phases)
    assert (decided.threads, launch.plan.threads) == (64, 32)
    assert ir["barriers"].startswith(f"cell waves {decided.name}: 64 threads")
    assert ir["cell-block"].startswith(f"cell waves {decided.name}: 32 threads")
