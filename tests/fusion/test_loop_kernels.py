"""A host loop as one persistent cooperative kernel (``--cooperative --persistent``): a
loop body of launches that is not copies of a shorter pattern is read as one copy of
itself (``analysis.repetition``, ``whole_body``), a loop of one layer whose cells are its
steps; the waves of cells then run it in one launch, the body's fused groups as phases, a
grid barrier between phases and between two steps. A time loop of a stencil, a loop of
independent per-slice launches, a recurrence with a head and a tail; near misses refused
with the reason. Verified on the CPU
backend with every block resident, with three, and with the fallback (the loop as
written)."""

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
PROGRAMS = ROOT / "tests" / "fusion" / "programs"
STENCIL = ROOT / "tests" / "filecheck" / "optimize_loop_kernel.cu"  # its FileCheck checks the emitted loop
SIRIUS = str(Path(sys.executable).parent / "sirius")


def sirius(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([SIRIUS, *args], capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("program, launches, summary", [
    (STENCIL, "80 -> 1", "the loop of 40 steps in one cooperative launch, its 2 launches per step as "
                                        "phases, a grid barrier between two steps and 1 within each"),
    ("slice_loop.cu", "12 -> 1", "the loop of 12 steps in one cooperative launch, its 1 launches per step as phases, "
                                 "no grid barrier between two steps (no step touches what another writes)"),
    # a recurrence with a head (the input projection) and a tail (the output projection)
    ("recurrence_head_tail.cu", "24 -> 1", "the loop of 6 steps in one cooperative launch, its 4 launches per step"),
])
def test_a_host_loop_runs_as_one_cooperative_launch(tmp_path, program, launches, summary):
    source = PROGRAMS / program
    out = tmp_path / source.name
    proc = sirius("optimize", str(source), "--cooperative", "--persistent", "-o", str(out))
    assert proc.returncode == 0 and f"launches per run: {launches}" in proc.stdout and summary in proc.stdout, \
        proc.stdout + proc.stderr
    assert_equal_in_three_builds(source, out, "waves of cells")


def _one_launch_verified(path: Path, out: Path, launches: str) -> None:
    """``path`` optimized with --cooperative --persistent into ``out``: its loop one launch
    (``launches`` per run), verified equal with three resident blocks, the waves' path taken."""
    proc = sirius("optimize", str(path), "--cooperative", "--persistent", "-o", str(out))
    assert proc.returncode == 0 and f"launches per run: {launches}" in proc.stdout, proc.stdout + proc.stderr
    verify = sirius("verify", str(path), str(out), "-DSIRIUS_COOPERATIVE_MAX_BLOCKS=3")
    assert verify.returncode == 0 and "result: all equal" in verify.stdout and "waves of cells 1" in verify.stdout, \
        verify.stdout + verify.stderr


def test_a_loop_counting_from_one_runs_its_steps_in_order(tmp_path):
    """Found by the blind red team: the check before the loop took the program's loop
    variable for the kernel's step (0, 1, 2, ...), so a loop from 1 read one step off (or
    never passed its check). The check counts the trips it runs instead."""
    text = (PROGRAMS / "recurrence_head_tail.cu").read_text()
    old = "  for (int t = 0; t < STEPS; ++t) {\n"
    assert old in text
    body = text.split(old, 1)[1].split("\n  }\n", 1)[0]
    # t = 1, 2, ...: the values of trip t - 1 of the original loop
    loop = "  for (int t = 1; t <= STEPS; ++t) {\n" + body.replace("(t + 1)", "t").replace("t *", "(t - 1) *")
    path, out = tmp_path / "from_one.cu", tmp_path / "from_one.opt.cu"
    path.write_text(text.replace(old + body, loop))
    _one_launch_verified(path, out, "24 -> 1")


def test_a_grid_that_changes_with_the_step_alone_is_computed_in_the_kernel(tmp_path):
    """A grid whose only host value is the step (``N / THREADS - t % 2``): the kernel computes
    it each step. Its access maps name the step in the grid's bound only, which once left
    the step out of the maps' parameters (isl could not read them: an internal error)."""
    text = STENCIL.read_text()
    assert RELAX in text
    path, out = tmp_path / "alternating.cu", tmp_path / "alternating.opt.cu"
    path.write_text(text.replace(RELAX, "    relax<<<N / THREADS - t % 2, THREADS>>>(next, u);"))
    _one_launch_verified(path, out, "80 -> 1")


def test_grid_stride_kernels_with_modulo_indexing_are_analysed_in_seconds(tmp_path):
    """Found by the blind red team of whole-loop launches: whether a dependence between two
    grid-stride kernels reading ``in[(i + 777) % n]`` stays within one iteration of the time
    loop was asked of isl as the equality of two relations, which did not finish in minutes;
    asked one loop and one side at a time, it is answered at once."""
    source, out = PROGRAMS / "grid_stride_modulo.cu", tmp_path / "grid_stride_modulo.cu"
    proc = subprocess.run([SIRIUS, "optimize", str(source), "--cooperative", "--persistent", "-o", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "launches per run: 8 -> 1" in proc.stdout, proc.stdout + proc.stderr
    verify = sirius("verify", str(source), str(out), "-DSIRIUS_COOPERATIVE_MAX_BLOCKS=3")
    assert verify.returncode == 0 and "result: all equal" in verify.stdout and "waves of cells 1" in verify.stdout, \
        verify.stdout + verify.stderr


LOOP = "  for (int t = 0; t < STEPS; ++t) {"
RELAX = "    relax<<<N / THREADS, THREADS>>>(next, u);"


@pytest.mark.parametrize("old, new, reason", [
    (LOOP, "  int steps = STEPS;\n  if (argc > 1) steps = atoi(argv[1]);\n  for (int t = 0; t < steps; ++t) {",
     "the loop's domain is not a constant range from 0"),
    (RELAX, RELAX + "\n    float* spare = u; u = next; next = spare;",
     "the loop body holds statements other than declarations and launches"),
    # (a grid that changes with the step is computed in the kernel: tests/fusion/test_run_time_side_by_side.py)
    (RELAX, "    relax<<<N / THREADS, THREADS - t % 2 * 32>>>(next, u);",
     "has a launch shape the analysis cannot evaluate"),
])
def test_a_loop_that_cannot_be_one_launch_stays_with_the_reason(tmp_path, old, new, reason):
    text = STENCIL.read_text().replace("int main() {", "int main(int argc, char** argv) {")
    assert old in text
    path = tmp_path / "near_miss.cu"
    path.write_text("#include <cstdlib>\n" + text.replace(old, new))
    state = run_pipeline(OptimizeState(CompileJob(path, CompileFlags(), resolve_toolchain()), cooperative=True,
                                       persistent=True))
    rep = report(state)
    assert not rep["cell_waves"]
    reasons = [r["reason"] for r in rep["refused"]]
    assert any("no waves over (step, layer)" in r and reason in r for r in reasons), reasons
