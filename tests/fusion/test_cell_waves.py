"""Waves of cells (analysis/repetition.py, fusion/cell_waves.py): a step loop whose body is
copies of one launch pattern (unrolled layers) is read as a loop over layers, and each
anti-diagonal of (step, layer) runs as one cooperative launch. The program of
tests/filecheck/optimize_layer_waves.cu (3 layers x 2 launches, 5 steps) and variants of
it: copies that differ in launch shape or in stride are not a loop; a cell that reads what
a cell of the same anti-diagonal writes is refused; the waves (one launch per wave, or all
in one persistent launch) verify on the CPU backend."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sirius.analysis.frontend import CompileJob
from sirius.analysis.repetition import NotALoop, Repetition, find_repetition, format_repetition
from sirius.config import CompileFlags, resolve_toolchain
from sirius.pipeline import PIPELINE, OptimizeState, report, run_pipeline
from sirius.tuning.cost_model import predict_program

pytestmark = pytest.mark.toolchain

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "filecheck" / "optimize_layer_waves.cu"
SIRIUS = str(Path(sys.executable).parent / "sirius")


def optimized(path: Path) -> OptimizeState:
    return run_pipeline(OptimizeState(CompileJob(path, CompileFlags(), resolve_toolchain()), cooperative=True))


def planned(path: Path) -> OptimizeState:
    """The pipeline up to the waves (no code generation, no check of the output)."""
    state = OptimizeState(CompileJob(path, CompileFlags(), resolve_toolchain()), cooperative=True)
    for stage in PIPELINE:
        stage.run(state)
        if stage.name == "cell-waves":
            return state
    raise AssertionError("no cell-waves stage")


def variant(tmp_path: Path, *edits: tuple[str, str]) -> Path:
    text = PROGRAM.read_text()
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "variant.cu"
    path.write_text(text)
    return path


def wave_refusals(state: OptimizeState) -> list[str]:
    return [r.reason for r in state.schedule.refusals if "no waves" in r.reason]


def test_the_unrolled_layers_are_a_loop_with_private_temporaries():
    state = optimized(PROGRAM)
    found = find_repetition(state.model)
    assert isinstance(found, Repetition)
    assert (found.steps, found.copies, found.period) == (5, 3, 2)
    kinds = [[a.kind for a in row] for row in found.arguments]
    assert kinds == [["private", "affine", "peeled", "affine"], ["affine", "private"]]
    assert found.private == ("t0", "t1") and found.cell_bytes == 256
    # t1's last value is layer 1's, t0's layer 2's (layer 0's is overwritten)
    assert [(p.buffer, p.slot) for p in found.copy_back] == [("t1", 256), ("t0", 512)]
    printed = format_repetition(found, state.model).splitlines()
    assert printed[0] == "loop at line 72: 3 copies (layers) of 2 launches, 5 steps: for step < 5, for layer < 3:"
    assert printed[1] == ("  gate<<<(2, 1, 1), (32, 1, 1)>>>(t = private slot 0 (+256 bytes per layer), "
                          "w = w + 16384layer bytes, below = layer == 0 ? x + 256step bytes : "
                          "h + 256layer + 768step + 512 bytes, prev = h + 256layer + 768step bytes)")
    assert printed[3:] == ["  after the loop: t1 bytes [0, 256) from scratch byte 256",
                           "  after the loop: t0 bytes [0, 256) from scratch byte 512"]
    rep = report(state)
    assert (rep["launches_before"], rep["launches_after"]) == (30, 7)
    [cells] = rep["cell_waves"]
    assert (cells["waves"], cells["grid_barriers_per_wave"], cells["layers"]) == (7, 1, 3)
    assert not rep["apart_without_reason"] and rep["promise_check"]["kernels_checked"] == 1
    # the cost model: one cooperative launch per wave, its share of the 15 cells in each of the 2 phases
    original, fused = predict_program(state)
    [waves] = [i for i in fused.items if i.shape.phases]
    assert (original.launches, fused.launches, waves.count, waves.shape.grid_syncs) == (30, 7, 7, 1)


def test_the_waves_verify_on_the_cpu_backend(tmp_path):
    out, log = tmp_path / "waves.cu", tmp_path / "launches.txt"
    proc = subprocess.run([SIRIUS, "optimize", str(PROGRAM), "--cooperative", "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "waves of cells" in proc.stdout, proc.stdout + proc.stderr
    verify = subprocess.run([SIRIUS, "verify", str(PROGRAM), str(out)], capture_output=True, text=True,
                            env={**os.environ, "SIRIUS_LAUNCH_LOG": str(log)})
    assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr
    assert log.read_text().split() == ["sirius_cells_0"] * 7


def test_the_waves_in_one_persistent_launch_verify(tmp_path):
    out, log = tmp_path / "persistent.cu", tmp_path / "launches.txt"
    alone = subprocess.run([SIRIUS, "optimize", str(PROGRAM), "--persistent", "-o", str(out)],
                           capture_output=True, text=True)
    assert alone.returncode == 2 and "--persistent needs --cooperative" in alone.stderr
    proc = subprocess.run([SIRIUS, "optimize", str(PROGRAM), "--cooperative", "--persistent", "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "all waves in one cooperative launch" in proc.stdout, proc.stdout + proc.stderr
    assert "for (int sirius_w = 0; sirius_w <= 6; sirius_w += 1) {" in out.read_text().split("sirius_cells_0(")[1]
    verify = subprocess.run([SIRIUS, "verify", str(PROGRAM), str(out)], capture_output=True, text=True,
                            env={**os.environ, "SIRIUS_LAUNCH_LOG": str(log)})
    assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr
    assert log.read_text().split() == ["sirius_cells_0"]


def test_copies_that_differ_in_launch_shape_are_not_a_loop(tmp_path):
    path = variant(tmp_path, ("gate<<<2, 32>>>(t0, w + 2 * H * H", "gate<<<4, 16>>>(t0, w + 2 * H * H"))
    state = planned(path)
    found = find_repetition(state.model)  # only the first two layers are copies of one another
    assert isinstance(found, NotALoop) and "2 copies of 2 launches" in found.reason, found
    assert not state.schedule.cell_waves


def test_copies_that_differ_in_stride_are_not_a_loop(tmp_path):
    path = variant(tmp_path, ("w + 2 * H * H", "w + 3 * H * H"),
                   ("cudaMalloc(&w, sizeof(float) * LAYERS * H * H)", "cudaMalloc(&w, sizeof(float) * 4 * H * H)"))
    state = planned(path)
    found = find_repetition(state.model)
    assert isinstance(found, NotALoop)
    assert "argument w of gate" in found.reason and "does not advance by one stride per copy" in found.reason
    assert not state.schedule.cell_waves
    assert any("not one loop" in r for r in wave_refusals(state))


def test_a_cell_reading_its_own_anti_diagonal_is_refused(tmp_path):
    # layer l reads layer l+1's state of the step before: cell (s-1, l+1), on the same anti-diagonal
    path = variant(tmp_path, ("(t0, w, in, h_prev)", "(t0, w, in, h_prev + H)"),
                   ("h_next, h_prev + H)", "h_next, h_prev + 2 * H)"),
                   ("h_next + H, h_prev + 2 * H)", "h_next + H, h_prev + 3 * H)"))
    state = planned(path)
    assert isinstance(find_repetition(state.model), Repetition)
    assert not state.schedule.cell_waves
    assert any("a dependence on h does not go to a later anti-diagonal" in r for r in wave_refusals(state))


def test_a_temporary_written_up_to_an_unknown_bound_is_not_private(tmp_path):
    # gate writes t only below a bound the host computes at run time: which bytes a copy
    # writes is unknown, so a later read may see another copy's values: not a private temporary
    text = PROGRAM.read_text()
    text = text.replace("const float* prev) {", "const float* prev, int n) {").replace("  t[i] = acc;", "  if (i < n) t[i] = acc;")
    text = text.replace("int main() {", "int main(int argc, char** argv) {\n  int limit = argc > 99 ? 32 : H;")
    text = "\n".join(line.replace(");", ", limit);") if "gate<<<" in line else line for line in text.splitlines())
    path = tmp_path / "bounded.cu"
    path.write_text(text)
    state = planned(path)
    found = find_repetition(state.model)
    assert isinstance(found, NotALoop), found
    assert "t0 is not private: an access of gate" in found.reason and "is not exact" in found.reason
    assert not state.schedule.cell_waves
