"""Blocks narrower than a warp that use warp operations, run in the first threads of a
larger block (a cooperative phase, a lane of a horizontal fusion): legal when each
operation names only the block's lanes, a constant within them or ``__activemask()``
asked in the kernel's body, which the fragment answers with the block's lanes only
(fragments.part_warp_problem); refused with the reason otherwise. The programs verify on
the CPU backend, whose ``__activemask()`` answers every live lane of the warp: without the
limit the fused warp would wait for lanes running other code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sirius.analysis.frontend import CompileJob
from sirius.core.config import CompileFlags, resolve_toolchain
from sirius.pipeline import OptimizeState, report, run_pipeline
from tests.fusion.cooperative_builds import assert_equal_in_three_builds

pytestmark = pytest.mark.toolchain

ROOT = Path(__file__).resolve().parents[2]
PHASES = ROOT / "tests" / "fusion" / "programs" / "part_warp_phases.cu"
LANES = ROOT / "tests" / "fusion" / "programs" / "part_warp_lanes.cu"
SIRIUS = str(Path(sys.executable).parent / "sirius")
LIMITED = "return ::__activemask() & (sirius_left >= 32u ? 0xffffffffu : (1u << sirius_left) - 1u);"


def sirius(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([SIRIUS, *args], capture_output=True, text=True, timeout=600)


def optimized(path: Path, cooperative: bool) -> OptimizeState:
    return run_pipeline(OptimizeState(CompileJob(path, CompileFlags(), resolve_toolchain()), cooperative=cooperative))


def fragment(text: str, kernel: str) -> str:
    start = text.index(f"void sirius_frag_{kernel}(")
    return text[start:text.index("\n}\n", start)]


def test_a_half_warp_reduction_is_a_phase_of_the_cooperative_launch(tmp_path):
    """The 16-thread reduction between two 128-thread kernels: one cooperative launch of
    three phases; its fragment's __activemask() answers its block's lanes; equal on the CPU
    backend with every block resident, with three (many virtual blocks each) and with the
    fallback."""
    out = tmp_path / "phases.cu"
    proc = sirius("optimize", str(PHASES), "--cooperative", "-o", str(out))
    assert proc.returncode == 0 and "one cooperative launch, 3 phases, 2 grid barriers" in proc.stdout, proc.stdout
    assert "launches per run: 3 -> 1" in proc.stdout
    text = out.read_text()
    assert LIMITED in fragment(text, "head_kernel") and LIMITED not in fragment(text, "gates_kernel")
    assert_equal_in_three_builds(PHASES, out, "cooperative launch")


def test_a_half_warp_reduction_is_a_lane_of_a_horizontal_fusion(tmp_path):
    out = tmp_path / "lanes.cu"
    proc = sirius("optimize", str(LANES), "-o", str(out))
    assert proc.returncode == 0 and "horizontal, 0 barriers inserted: row_sums (line 34) | scale (line 35)" \
        in proc.stdout, proc.stdout
    assert LIMITED in fragment(out.read_text(), "row_sums")
    verify = sirius("verify", str(LANES), str(out))
    assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr


MASK = "  mask[0] = __activemask();"
HELPER = ("__device__ __forceinline__ unsigned lanes_here() { return __activemask(); }\n\n"
          'extern "C" __global__ void __launch_bounds__(16) head_kernel(')


@pytest.mark.parametrize("old, new, reason", [
    (MASK, "  mask[0] = 0xffffffffu;", "and the one at line 30 names lanes outside the block"),
    (MASK, MASK + "\n  __syncwarp();", "and the one at line 30 names lanes outside the block"),  # all 32
    ('extern "C" __global__ void __launch_bounds__(16) head_kernel(', HELPER,
     "asks __activemask() at line 31 other than as a plain call in its own body"),  # lanes_here() there
    # found by the blind red team: a thread that returns before a warp operation has exited
    # in the original, and is not waited for; in the fused kernel it waits at the phase's
    # barrier while the operation waits for it (a hang on a GPU too)
    (MASK, MASK + "\n  if (threadIdx.y >= 12) return;", "and a thread may return before the one at line 31"),
    (MASK, "  mask[0] = ::__activemask();", "asks __activemask() at line 29 other than as a plain call"),
    (MASK, "  mask[0] = __ballot_sync(0xffffu, acc[0] > 0.f) | 1u;",
     "and the one at line 30 has a mask the analysis cannot bound to the block's lanes"),
])
def test_a_half_warp_phase_naming_other_lanes_stays_apart_with_the_reason(tmp_path, old, new, reason):
    text = PHASES.read_text()
    assert old in text
    path = tmp_path / "variant.cu"
    path.write_text(text.replace(old, new).replace(MASK, "  mask[0] = lanes_here();") if new == HELPER
                    else text.replace(old, new))
    rep = report(optimized(path, cooperative=True))
    assert not rep["cooperative"]
    reasons = [r["reason"] for r in rep["refused"]]
    assert any("not one cooperative launch: head_kernel (line" in r and reason in r for r in reasons), reasons
    assert not rep["apart_without_reason"]


def test_a_constant_mask_within_the_block_is_a_phase_too(tmp_path):
    """Also a __syncwarp over the block's lanes: a warp barrier, not a block barrier."""
    path, out = tmp_path / "constant.cu", tmp_path / "constant.opt.cu"
    path.write_text(PHASES.read_text().replace(MASK, "  mask[0] = 0xffffu;\n  __syncwarp(0xffffu);"))
    state = optimized(path, cooperative=True)
    assert report(state)["launches_after"] == 1
    assert LIMITED not in fragment(state.output, "head_kernel")  # it never asks which lanes are active
    out.write_text(state.output)
    verify = sirius("verify", str(path), str(out), "-DSIRIUS_COOPERATIVE_MAX_BLOCKS=3")
    assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr
