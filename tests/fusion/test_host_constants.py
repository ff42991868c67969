"""Host constant propagation (fusion/host_constants.py): the values the run-time guard checks
become constants of the fused kernel, the guard checks each of them, the program verifies
at the sizes optimized for and falls back at others; passes are switched from the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fusion.pass_ir import ir_before_and_after

pytestmark = pytest.mark.toolchain

PROGRAM = Path(__file__).parents[1] / "filecheck" / "optimize_host_constants.cu"
SIRIUS = str(Path(sys.executable).parent / "sirius")


def sirius(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([SIRIUS, *args], capture_output=True, text=True, timeout=600)


def test_ir_before_and_after_the_pass():
    before, after, state = ir_before_and_after(PROGRAM, passes=("host-constants",))
    assert before[1:10] == [
        "  param s6_W: const float * -> W + 0", "  param s6_x: const float * -> x + 0",
        "  param s6_y: float * -> y + 0", "  param s6_rows: int",
        "  param s7_W: const float * -> W + (65536)", "  param s7_x: const float * -> x + 0",
        "  param s7_y: float * -> y + (1024)", "  param s7_rows: int", "  param s8_a: const float * -> y + 0"]
    assert after[1:14] == [
        "  param s6_W: const float * -> W + 0", "  param s6_x: const float * -> x + 0",
        "  param s6_y: float * -> y + 0", "  param s6_rows: int = 256",
        "  param s7_W: const float * -> W + (65536) = s6_W + 65536 bytes",
        "  param s7_x: const float * -> x + 0 = s6_x + 0 bytes",
        "  param s7_y: float * -> y + (1024) = s6_y + 1024 bytes", "  param s7_rows: int = 256",
        "  param s8_a: const float * -> y + 0 = s6_y + 0 bytes",
        "  param s8_b: const float * -> y + (1024) = s6_y + 1024 bytes",
        "  param s8_out: float * -> out + 0", "  param s8_n: int = 256", "  shapes: constants"]
    assert before[13:] == after[14:]  # the lane is untouched
    assert state.pass_changes["host-constants"] == [
        "sirius_fused_0: 3 integer arguments constant; 5 pointers an offset from another; launch shape constant"]


def test_folded_program_verifies_and_other_sizes_fall_back(tmp_path):
    out, rep = tmp_path / "folded.cu", tmp_path / "report.json"
    proc = sirius("optimize", str(PROGRAM), "-o", str(out), "--report", str(rep))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "pass host-constants: sirius_fused_0: 3 integer arguments constant" in proc.stdout
    report = json.loads(rep.read_text())
    assert {p["name"]: p["enabled"] for p in report["passes"]}["host-constants"]
    assumes = report["groups"][0]["assumes"]
    assert any(c.endswith("== 65536") for c in assumes) and any(c.endswith("== 256LL") for c in assumes)
    for flags in ((), ("-DROWS_PER_MATRIX=128",)):
        proc = sirius("verify", str(PROGRAM), str(out), *flags)
        assert proc.returncode == 0 and "result: all equal" in proc.stdout, proc.stdout + proc.stderr


def test_passes_are_switched_from_the_command_line(tmp_path):
    out = tmp_path / "alone.cu"
    proc = sirius("optimize", str(PROGRAM), "-o", str(out), "--passes", "none")
    assert proc.returncode == 0 and "pass host-constants: switched off" in proc.stdout, proc.stdout + proc.stderr
    assert "  constexpr int s" not in out.read_text() and "blockIdx, threadIdx, blockDim, gridDim" in out.read_text()
    proc = sirius("optimize", str(PROGRAM), "-o", str(out), "--disable-pass", "host-constants")
    assert proc.returncode == 0 and "  constexpr int s" not in out.read_text()
    for flags in (("--passes", "host-constants,fold-everything"), ("--disable-pass", "nope")):
        proc = sirius("optimize", str(PROGRAM), "-o", str(out), *flags)
        assert proc.returncode == 2 and "unknown pass" in proc.stderr and "host-constants" in proc.stderr, \
            proc.stderr
