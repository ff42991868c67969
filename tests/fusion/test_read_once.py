"""Read-once of shared inputs (fusion/read_once.py): an input several fragments read and none
writes is read through one restrict base; an input some fragment writes, or a kernel with a
write the analysis cannot place, gets no promise; the program verifies, and nvcc loads the
shared element once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sirius.core.errors import ToolchainError
from tests.fusion.pass_ir import ir_before_and_after

pytestmark = pytest.mark.toolchain

PROGRAM = Path(__file__).parents[1] / "filecheck" / "optimize_read_once.cu"
SIRIUS = str(Path(sys.executable).parent / "sirius")
PARAMS = lambda line: line.startswith("  param ")


def variant(tmp_path: Path, old: str, new: str) -> Path:
    text = PROGRAM.read_text()
    assert old in text
    path = tmp_path / "variant.cu"
    path.write_text(text.replace(old, new))
    return path


def test_ir_before_and_after_the_pass():
    before, after, state = ir_before_and_after(PROGRAM, passes=("read-once",), keep=PARAMS)
    assert before[:3] == ["  param s6_W: const float * -> W + 0", "  param s6_x: const float * -> x + 0",
                          "  param s6_y: float * -> y + 0"]
    changed = [(b, a) for b, a in zip(before, after) if b != a]
    assert changed == [
        ("  param s6_W: const float * -> W + 0", "  param s6_W: const float * restrict -> W + 0"),
        ("  param s6_x: const float * -> x + 0", "  param s6_x: const float * restrict -> x + 0"),
        ("  param s7_W: const float * -> W + (32768)", "  param s7_W: const float * -> W + (32768) = s6_W + 32768 bytes"),
        ("  param s7_x: const float * -> x + 0", "  param s7_x: const float * -> x + 0 = s6_x + 0 bytes"),
        ("  param s8_x: const float * -> x + 0", "  param s8_x: const float * -> x + 0 = s6_x + 0 bytes")]
    assert state.pass_changes["read-once"] == ["sirius_fused_0: W read by S6, S7 through s6_W; "
                                               "x read by S6, S7, S8 through s6_x"]
    assert state.check.kernels_checked == 1 and not state.check.violations


def test_after_host_constants_the_same_bases_are_promised():
    _, after, state = ir_before_and_after(PROGRAM, passes=("host-constants", "read-once"), keep=PARAMS)
    assert "  param s6_x: const float * restrict -> x + 0" in after
    assert "  param s8_x: const float * -> x + 0 = s6_x + 0 bytes" in after
    assert "  param s7_y: float * -> y + (1024) = s6_y + 1024 bytes" in after  # written: derived, not promised
    assert not any("s6_y" in line and "restrict" in line for line in after)


def test_an_input_a_fragment_writes_gets_no_promise(tmp_path):
    # combine writes the weights each thread of the first layer read (a thread-level dependence:
    # still fused), so W is not read-only in the kernel; x still is
    path = variant(tmp_path, "if (i < n) out[i] = a[i] * b[i] + x[i % 32];",
                   "if (i < n) out[i * 32] = a[i] * b[i] + x[i % 32];")
    path.write_text(path.read_text().replace("(y, y + rows, x, out, rows)", "(y, y + rows, x, W, rows)"))
    _, after, state = ir_before_and_after(path, passes=("read-once",), keep=PARAMS)
    assert not any("_W:" in line and "restrict" in line for line in after)
    assert "  param s6_x: const float * restrict -> x + 0" in after
    assert state.pass_changes["read-once"] == ["sirius_fused_0: x read by S6, S7, S8 through s6_x"]
    assert state.check.kernels_checked == 1 and not state.check.violations


def test_a_write_the_analysis_cannot_place_leaves_every_input_unpromised(tmp_path):
    # combine writes through a pointer it loads from memory: it may point anywhere
    path = variant(tmp_path, "__global__ void combine(const float* a, const float* b, const float* x, float* out, int n) {",
                   "__global__ void combine(const float* a, const float* b, const float* x, float* out, int n) {\n"
                   "  if (n < 0) (*(float**)out)[0] = 0.0f;")
    _, after, state = ir_before_and_after(path, passes=("read-once",), keep=PARAMS)
    assert not any("restrict" in line for line in after)
    assert state.pass_changes["read-once"] == []


def test_promised_program_verifies_and_loads_the_shared_input_once(tmp_path):
    loads = {}
    # with the sizes constant the two layers' guards are one condition, so nvcc can keep x[k]
    for passes in ("host-constants", "host-constants,read-once"):
        out = tmp_path / f"{passes.replace(',', '_')}.cu"
        proc = subprocess.run([SIRIUS, "optimize", str(PROGRAM), "-o", str(out), "--passes", passes],
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        proc = subprocess.run([SIRIUS, "verify", str(PROGRAM), str(out)], capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0 and "result: all equal" in proc.stdout, proc.stdout + proc.stderr
        try:
            from sirius.toolchain import kernel_figures
            figures = kernel_figures(out.read_text(), out.name)
        except ToolchainError as err:
            pytest.skip(f"no CUDA toolkit to count loads: {err}")
        fused = [f for name, f in figures.items() if "sirius_fused_0" in name]
        loads[passes] = sum(f.ldg_plain + f.ldg_constant for f in fused)
    # the layers' loop of 32 reads x[k] twice per thread without the promise, once with it
    assert loads["host-constants,read-once"] <= loads["host-constants"] - 32, loads
