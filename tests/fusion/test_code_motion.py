"""Code motion between fragments (fusion/code_motion.py): the IR before and after the pass,
a lane whose order every dependence fixes, and the moved program verifying."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.fusion.pass_ir import ir_before_and_after

pytestmark = pytest.mark.toolchain

PROGRAM = Path(__file__).parents[1] / "filecheck" / "optimize_code_motion.cu"
SIRIUS = str(Path(sys.executable).parent / "sirius")


def _lanes(path: Path):
    before, after, state = ir_before_and_after(path, ("code-motion",), "vertical", lambda line: line.startswith("    "))
    return {"promises": before, "passes": after}, state


def test_ir_before_and_after_the_pass():
    printed, state = _lanes(PROGRAM)
    assert printed["promises"] == [
        "    S8 row_total grid 64x1x1 block 256x1x1 (s8_x, s8_total)",
        "    barrier: block dependence S8 -> S9 on ta",
        "    S9 scale_by grid 64x1x1 block 256x1x1 (s9_x, s9_total, s9_y)",
        "    S10 row_total grid 64x1x1 block 256x1x1 (s10_x, s10_total)",
        "    barrier: block dependence S10 -> S11 on tb",
        "    S11 scale_by grid 64x1x1 block 256x1x1 (s11_x, s11_total, s11_y)"]
    assert printed["passes"] == [
        "    S8 row_total grid 64x1x1 block 256x1x1 (s8_x, s8_total)",
        "    S10 row_total grid 64x1x1 block 256x1x1 (s10_x, s10_total)",
        "    barrier: block dependence S8 -> S9 on ta; block dependence S10 -> S11 on tb",
        "    S9 scale_by grid 64x1x1 block 256x1x1 (s9_x, s9_total, s9_y)",
        "    S11 scale_by grid 64x1x1 block 256x1x1 (s11_x, s11_total, s11_y)"]
    assert state.pass_changes == {"code-motion": [
        "sirius_fused_0: fragments reordered, 2 -> 1 barriers placed (S8 S10 S9 S11)"]}


def test_a_chain_the_dependences_order_is_left_as_written(tmp_path):
    """The second total reads what the first division wrote: every fragment depends on the
    one before, so no order needs fewer barriers and the lane stays as written."""
    text = PROGRAM.read_text()
    old = "row_total<<<ROWS, COLS>>>(b, tb);"
    assert old in text
    path = tmp_path / "chain.cu"
    path.write_text(text.replace(old, "row_total<<<ROWS, COLS>>>(ya, tb);"))
    printed, state = _lanes(path)
    assert printed["passes"] == printed["promises"] and state.pass_changes == {"code-motion": []}
    assert [line.split()[0] for line in printed["passes"]] == ["S8", "barrier:", "S9", "barrier:", "S10",
                                                               "barrier:", "S11"]


def test_the_moved_program_verifies(tmp_path):
    out = tmp_path / "moved.cu"
    proc = subprocess.run([SIRIUS, "optimize", str(PROGRAM), "--arrangement", "vertical", "-o", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "pass code-motion: sirius_fused_0: fragments reordered, 2 -> 1 barriers placed" in proc.stdout
    proc = subprocess.run([SIRIUS, "verify", str(PROGRAM), str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "result: all equal" in proc.stdout, proc.stdout + proc.stderr
