"""Shared-memory overlay (fusion/shared_overlay.py): the IR before and after the pass, the
emitted declarations, the case it leaves alone, and the programs verifying."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.fusion.pass_ir import ir_before_and_after

pytestmark = pytest.mark.toolchain

ROOT = Path(__file__).resolve().parents[2]
SOFTMAX = ROOT / "cuda_inputs" / "softmax.cu"
BARRIERS = ROOT / "tests" / "filecheck" / "optimize_redundant_barriers.cu"
SIDE_BY_SIDE = ROOT / "tests" / "filecheck" / "optimize_shared_overlay_horizontal.cu"
SIRIUS = str(Path(sys.executable).parent / "sirius")


def _printed(path: Path):
    before, after, state = ir_before_and_after(path, ("shared-overlay",), keep=lambda line: not line.startswith("  param"))
    return {"promises": before, "passes": after}, state


def test_ir_before_and_after_the_pass():
    """softmax's two reductions each hold a 1 KB array; a barrier stands between them (the
    one before exp_sub), so both start at byte 0 of one pool."""
    printed, state = _printed(SOFTMAX)
    assert printed["promises"] == [
        "kernel sirius_fused_0 (group 0, vertical): 256 threads, shared 2048 static + 0 dynamic bytes",
        "  shared _ZZ7row_maxPKfPfiE5sdata: 1024 bytes, used by S6",
        "  shared _ZZ7row_sumPKfPfiE5sdata: 1024 bytes, used by S8",
        "  lane blocks [0, 128): grid 128x1x1 block 256x1x1",
        "    S6 row_max grid 128x1x1 block 256x1x1 (s6_x, s6_mx, s6_cols)",
        "    barrier: block dependence S6 -> S7 on dmax",
        "    S7 exp_sub grid 128x1x1 block 256x1x1 (s7_x, s7_mx, s7_e, s7_cols)",
        "    S8 row_sum grid 128x1x1 block 256x1x1 (s8_e, s8_sum, s8_cols)",
        "    barrier: block dependence S8 -> S9 on dsum",
        "    S9 normalize grid 128x1x1 block 256x1x1 (s9_e, s9_sum, s9_y, s9_cols)"]
    assert printed["passes"] == [
        "kernel sirius_fused_0 (group 0, vertical): 256 threads, shared 1024 static + 0 dynamic bytes",
        "  pool: 1024 bytes",
        "  shared sirius_pool: 1024 bytes, used by S6, S8",
        "  lane blocks [0, 128): grid 128x1x1 block 256x1x1",
        "    S6 row_max pooled at 0 grid 128x1x1 block 256x1x1 (s6_x, s6_mx, s6_cols)",
        "    barrier: block dependence S6 -> S7 on dmax",
        "    S7 exp_sub grid 128x1x1 block 256x1x1 (s7_x, s7_mx, s7_e, s7_cols)",
        "    S8 row_sum pooled at 0 grid 128x1x1 block 256x1x1 (s8_e, s8_sum, s8_cols)",
        "    barrier: block dependence S8 -> S9 on dsum",
        "    S9 normalize grid 128x1x1 block 256x1x1 (s9_e, s9_sum, s9_y, s9_cols)"]
    assert state.pass_changes == {"shared-overlay": [
        "sirius_fused_0: shared memory 2048 -> 1024 bytes per block (2 arrays in one pool)"]}


def test_without_a_barrier_between_the_pool_would_not_shrink_and_is_not_used():
    """row_max and reverse run with no barrier between them: their arrays would lie one after
    the other in the pool, which is no smaller than the arrays apart, so nothing changes."""
    printed, state = _printed(BARRIERS)
    assert printed["passes"] == printed["promises"] and state.pass_changes == {"shared-overlay": []}


@pytest.mark.parametrize("program, pool", [(SOFTMAX, 1024), (SIDE_BY_SIDE, 2048)], ids=["vertical", "horizontal"])
def test_overlaid_programs_verify(program, pool, tmp_path):
    out = tmp_path / program.name
    proc = subprocess.run([SIRIUS, "optimize", str(program), "-o", str(out)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert f"  __shared__ __align__(128) unsigned char sirius_pool[{pool}];" in out.read_text()
    proc = subprocess.run([SIRIUS, "verify", str(program), str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "result: all equal" in proc.stdout, proc.stdout + proc.stderr
