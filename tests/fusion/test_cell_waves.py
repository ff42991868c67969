"""Waves of cells (sirius/analysis/repetition.py, sirius/fusion/cell_waves.py): a step loop whose body is
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
from sirius.analysis.repetition import NotALoop, PrivateWrite, Repetition, find_repetition, format_repetition
from sirius.core.config import CompileFlags, resolve_toolchain
from sirius.pipeline import PIPELINE, OptimizeState, report, run_pipeline
from sirius.tuning.cost_model import predict_program
from tests.report_schema import assert_follows_schema

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
    assert found.private == ("t0", "t1")
    # gate writes t (bytes 0..255 from its pointer), in t0, t1, t0 by layer; update reads what it wrote
    assert found.writes == (PrivateWrite((0, 0), 0, 255, (("t0", 0), ("t1", 0), ("t0", 0))),)
    assert [(a.write, a.distance) for a in (found.arguments[0][0], found.arguments[1][1])] == [((0, 0), 0)] * 2
    printed = format_repetition(found, state.model).splitlines()
    assert printed[0] == "loop at line 75: 3 copies (layers) of 2 launches, 5 steps: for step < 5, for layer < 3:"
    assert printed[1] == ("  gate<<<(2, 1, 1), (32, 1, 1)>>>(t = private: gate's t + 0 bytes, "
                          "w = w + 16384layer bytes, below = layer == 0 ? x + 256step bytes : "
                          "h + 256layer + 768step + 512 bytes, prev = h + 256layer + 768step bytes)")
    assert printed[2] == "  update<<<(1, 1, 1), (64, 1, 1)>>>(out = h + 256layer + 768step + 768 bytes, " \
                         "t = private: gate's t + 0 bytes)"
    rep = report(state)
    assert (rep["launches_before"], rep["launches_after"]) == (30, 7)
    [cells] = rep["cell_waves"]
    assert (cells["waves"], cells["grid_barriers_per_wave"], cells["layers"]) == (7, 1, 3)
    assert not rep["apart_without_reason"] and rep["promise_check"]["kernels_checked"] == 1
    assert_follows_schema(rep)
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
    assert "region 0 (waves, optimize_layer_waves.cu:" in verify.stdout and "): waves of cells 1\n" in verify.stdout, verify.stdout


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


def _gate_variant(tmp_path: Path, name: str, body: str, extra_param: str = "", host: str = "") -> Path:
    """The program with gate's store replaced by ``body`` (and a device array ``lens`` of
    per-row lengths as an extra argument when ``extra_param`` is given)."""
    text = PROGRAM.read_text().replace("  t[i] = acc;", body)
    if extra_param:
        text = text.replace("const float* prev) {", f"const float* prev, {extra_param}) {{")
        text = text.replace("  cudaMemset(h, 0,", host + "  cudaMemset(h, 0,")
        text = "\n".join(line.replace(");", ", lens);") if "gate<<<" in line else line for line in text.splitlines())
    path = tmp_path / f"{name}.cu"
    path.write_text(text)
    return path


LENS = ("  int* lens;\n  cudaMalloc(&lens, sizeof(int) * H);\n  int hl[H];\n"
        "  for (int i = 0; i < H; ++i) hl[i] = (i * 7) % 5;\n"
        "  cudaMemcpy(lens, hl, sizeof(int) * H, cudaMemcpyHostToDevice);\n")


@pytest.mark.parametrize("name, body, extra", [
    # a write under a condition on data: the other rows keep the previous layer's values
    ("guarded_write", "  if (below[i % 7] + prev[i % 5] > 0.4f) t[i] = acc;", ""),
    # variable-length sequences: a row past its length leaves before the write
    ("early_exit", "  if (2 * lens[i] < 3) return;\n  t[i] = acc;", "const int* lens"),
    # a loop whose bound comes from the data (isl has no bounded range for it)
    ("data_bound", "  for (int r = 0; r < lens[i]; ++r) t[(i + 64 * r) % 64] = acc + r;", "const int* lens"),
])
def test_a_temporary_written_only_for_some_data_is_not_private(tmp_path, name, body, extra):
    # the write does not cover every byte for every value of the data: privatising the
    # temporary would have a later read see a stale scratch slot instead of the values
    # another layer left in the shared storage
    path = _gate_variant(tmp_path, name, body, extra, LENS if extra else "")
    state = planned(path)
    found = find_repetition(state.model)
    assert isinstance(found, NotALoop), found
    assert "is not private" in found.reason and "is not exact" in found.reason, found.reason
    out = tmp_path / f"{name}.opt.cu"
    proc = subprocess.run([SIRIUS, "optimize", str(path), "--cooperative", "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    verify = subprocess.run([SIRIUS, "verify", str(path), str(out)], capture_output=True, text=True)
    assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr


def test_a_float_argument_the_cell_kernel_bakes_in_is_exact_and_checked(tmp_path):
    # 0.1f has no short decimal: clang prints it as the bits of the double of the same
    # value; the cell kernel must write that value, and the host compares the argument's
    # bits before the waves run (a rebuild with -DALPHA=0.7f runs the loop as written)
    text = PROGRAM.read_text().replace("const float* prev) {", "const float* prev, float alpha) {")
    text = text.replace("  t[i] = acc;", "  t[i] = alpha * acc;")
    text = text.replace("#define LAYERS 3", "#define LAYERS 3\n#ifndef ALPHA\n#define ALPHA 0.1f\n#endif")
    text = "\n".join(line.replace(");", ", ALPHA);") if "gate<<<" in line else line for line in text.splitlines())
    path, out = tmp_path / "alpha.cu", tmp_path / "alpha.opt.cu"
    path.write_text(text)
    proc = subprocess.run([SIRIUS, "optimize", str(path), "--cooperative", "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "waves of cells" in proc.stdout, proc.stdout + proc.stderr
    emitted = out.read_text()
    assert "_alpha = 0.10000000149011612;" in emitted and "sirius_same_bits(" in emitted
    for defines, launched in (((), ["sirius_cells_0"] * 7), (("-DALPHA=0.7f",), ["gate", "update"] * 15)):
        log = tmp_path / f"launches{len(defines)}.txt"
        verify = subprocess.run([SIRIUS, "verify", str(path), str(out), *defines], capture_output=True, text=True,
                                env={**os.environ, "SIRIUS_LAUNCH_LOG": str(log)})
        assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr
        assert log.read_text().split() == launched
        # a float the cells bake in: a rebuild with another value is reported as not what was optimized
        assert ("warning: no fused code ran" in verify.stdout) == bool(defines), verify.stdout
    assert 'guard failed 1x on: ALPHA expands to "0.1f" as when optimized' in verify.stdout, verify.stdout


@pytest.mark.parametrize("declaration", [
    "    int visits = (cursor += 1) - 1;",   # a compound assignment inside a declaration
    "    int visits = NEXT_VISIT;",          # the same through a macro
])
def test_a_declaration_with_a_side_effect_keeps_the_loop_as_written(tmp_path, declaration):
    # the waves' pre-pass runs the loop without launching and, when a check fails, the loop
    # runs again as written: a declaration that changes a variable outside the body would
    # change it twice. clang's AST (not the text) says it is not pure: no waves
    text = PROGRAM.read_text().replace("int main() {", "#define NEXT_VISIT (cursor += 1) - 1\nint main() {\n  int cursor = 0;")
    text = text.replace("    float* in = x + step * H;", declaration + "\n    float* in = x + (step + visits - cursor + 1) * H;")
    text = text.replace('  printf("checksum %.6f\\n", check);', '  printf("checksum %.6f %d\\n", check, cursor);')
    path, out = tmp_path / "visits.cu", tmp_path / "visits.opt.cu"
    path.write_text(text)
    state = planned(path)
    assert not state.schedule.cell_waves
    proc = subprocess.run([SIRIUS, "optimize", str(path), "--cooperative", "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # no cooperative launches: the path on which the loop ran twice
    verify = subprocess.run([SIRIUS, "verify", str(path), str(out), "-DSIRIUS_COOPERATIVE_MAX_BLOCKS=0"],
                            capture_output=True, text=True)
    assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr
    assert "original code: no cooperative launch on this device 5" in verify.stdout, verify.stdout


@pytest.mark.parametrize("edit", [
    # the loop header counts something besides its iterator
    ("for (int step = 0; step < STEPS; ++step) {", "for (int step = 0; step < STEPS; ++step, ++cursor) {"),
    # a launch argument with a side effect (the check before the loop evaluates it too)
    ("update<<<1, H>>>(h_next, t0);", "update<<<1, H>>>(h_next + 0 * (cursor++), t0);"),
])
def test_effects_in_the_loop_header_or_a_launch_argument_keep_the_loop_as_written(tmp_path, edit):
    text = PROGRAM.read_text().replace("int main() {", "int main() {\n  int cursor = 0;")
    text = text.replace(*edit).replace('  printf("checksum %.6f\\n", check);',
                                       '  printf("checksum %.6f %d\\n", check, cursor);')
    path = tmp_path / "effects.cu"
    path.write_text(text)
    state = planned(path)
    assert not state.schedule.cell_waves
