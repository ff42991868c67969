"""The fused-kernel IR as text (sirius/fusion/ir_text.py): printed kernels read back are the
kernels printed; every pass runs on IR read from text as on the IR the pipeline built; and
a pass tested on IR written by hand does what it says on IR lowering would not make."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from sirius.analysis.frontend import CompileJob
from sirius.core.config import CompileFlags, resolve_toolchain
from sirius.core.errors import InputError
from sirius.fusion.barriers import place_barriers
from sirius.fusion.guards import guard_program
from sirius.fusion.ir_text import format_kernel, format_program, parse_kernels
from sirius.fusion.promises import keep_promises
from sirius.fusion.redundant_barriers import eliminate_redundant_barriers
from sirius.pipeline import KERNEL_PASSES, PIPELINE, OptimizeState

pytestmark = pytest.mark.toolchain

ROOT = Path(__file__).resolve().parents[2]
FILECHECK = ROOT / "tests" / "filecheck"
PROGRAMS = {
    "softmax": (ROOT / "cuda_inputs" / "softmax.cu", {}),  # pooled shared arrays, folded constants
    "reindexed": (ROOT / "tests" / "probes" / "reindexed_after_barrier.cu", {}),  # re-indexed fragments
    "redundant_barriers": (FILECHECK / "optimize_redundant_barriers.cu", {}),  # own barriers removed
    "read_once": (FILECHECK / "optimize_read_once.cu", {}),
    "code_motion": (FILECHECK / "optimize_code_motion.cu", {}),
    "layer_waves": (FILECHECK / "optimize_layer_waves.cu", {"cooperative": True}),  # cell phases
    "cooperative": (FILECHECK / "optimize_cooperative.cu", {"cooperative": True}),  # cooperative phases
    "run_time_grids": (ROOT / "cuda_inputs" / "run_time_sizes.cu", {}),  # grids "?"
    # run-time grids side by side, and as cooperative phases: lanes "[2 + ?, ...)"
    "run_time_side_by_side": (FILECHECK / "optimize_run_time_side_by_side.cu", {}),
    "run_time_phases": (ROOT / "tests" / "fusion" / "programs" / "run_time_phases.cu", {"cooperative": True}),
}


def _through_text(name: str) -> tuple[OptimizeState, list[tuple[str, str, str]]]:
    """Run the pipeline on a program; before each stage and kernel pass that transforms the
    kernels, run it a second time on the kernels printed and read back. The state, and per
    step (name, what the pipeline's kernels became, what the kernels read back became)."""
    path, options = PROGRAMS[name]
    state = OptimizeState(CompileJob(path, CompileFlags(), resolve_toolchain()), verify_each=True, **options)
    steps: list[tuple[str, str, str]] = []

    def compare(step: str, run) -> None:
        text = "".join(format_kernel(k) for k in state.kernels)
        read = parse_kernels(text, state.model)
        assert "".join(format_kernel(k) for k in read) == text, step
        via_text = run(read)
        via_ir = run(state.kernels)
        steps.append((step, "".join(map(format_kernel, via_ir[0])), "".join(map(format_kernel, via_text[0]))))
        assert via_text[1:] == via_ir[1:], step  # what the pass reports it changed

    for stage in PIPELINE:
        if stage.name == "barriers":
            compare("barriers", lambda kernels: (place_barriers(kernels, state.uar),))
        elif stage.name == "promises":
            compare("promises", lambda kernels: keep_promises(kernels, state.model))
        elif stage.name == "passes":
            for kernel_pass in KERNEL_PASSES:
                compare(kernel_pass.name, lambda kernels, p=kernel_pass: p.run(kernels, state.facts))
                state.change_kernels(lambda kernels, p=kernel_pass: p.run(kernels, state.facts))
            break  # the stages after the passes print and check, and transform no kernel
        stage.run(state)
    return state, steps


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_pass_runs_on_the_ir_read_back_as_on_the_pipelines(name):
    state, steps = _through_text(name)
    assert state.kernels and {s for s, _, _ in steps} >= {"barriers", "promises", *(p.name for p in KERNEL_PASSES)}
    for step, via_ir, via_text in steps:
        assert via_text == via_ir, step
    for k, read in zip(state.kernels, parse_kernels(format_program(state.program), state.model)):
        assert read == dataclasses.replace(k, group=read.group), k.name
        assert (read.group.id, read.group.region, read.group.step, read.group.launches) == \
            (k.group.id, k.group.region, k.group.step, k.group.launches)


@pytest.fixture(scope="module")
def barriers_program() -> OptimizeState:
    """optimize_redundant_barriers.cu after the promises: placement put a barrier before
    shift and before scale; the redundant-barrier pass has not run."""
    path, _ = PROGRAMS["redundant_barriers"]
    state = OptimizeState(CompileJob(path, CompileFlags(), resolve_toolchain()))
    for stage in PIPELINE[:PIPELINE.index(next(s for s in PIPELINE if s.name == "promises")) + 1]:
        stage.run(state)
    return state


def test_a_barrier_moved_by_hand_is_judged_where_it_stands(barriers_program):
    """Placement puts the barrier ordering row_max before shift just before shift; moved by
    hand to just after row_max (where placement would not put it), it is still redundant:
    reverse, run in between, passes a barrier of its own. The pass takes out both placed
    barriers, as on the pipeline's IR."""
    st = barriers_program
    text = format_kernel(st.kernels[0])
    lines = text.splitlines()
    placed = next(line for line in lines if line.strip().startswith("barrier: block dependence S6 -> S8"))
    lines.remove(placed)
    lines.insert(next(n for n, line in enumerate(lines) if " row_max " in line) + 1, placed)
    (edited,) = parse_kernels("\n".join(lines), st.model)
    body = [s.kernel if hasattr(s, "kernel") else "barrier" for s in edited.lanes[0].body]
    assert body == ["row_max", "barrier", "reverse", "shift", "barrier", "scale"]
    (after,), report = eliminate_redundant_barriers([edited], st.model)
    assert after.barriers == 0 and report
    assert "barrier:" not in format_kernel(after)


def test_the_guard_compares_a_value_folded_by_hand(barriers_program):
    """scale's x written as 64 bytes past row_max's x (``= s6_x + 64 bytes``): a distance the
    analysis never found, so only the folded value puts it into the region's guard."""
    st = barriers_program
    text = format_kernel(st.kernels[0])
    line = next(x for x in text.splitlines() if x.startswith("  param s9_x:"))
    (edited,) = parse_kernels(text.replace(line, line + " = s6_x + 64 bytes"), st.model)
    assert next(p for p in edited.params if p.name == "s9_x").delta == 64
    program = guard_program(st.model, st.program.with_kernels([edited]), st.macro_expansions)
    (region,) = program.regions
    assert "(const char*)(sirius_a9_0) - (const char*)(sirius_a6_0) == 64" in region.guard
    unfolded = guard_program(st.model, st.program, st.macro_expansions)
    assert not any(c.endswith("== 64") for c in unfolded.regions[0].guard)


def test_what_is_not_ir_is_named_with_its_line(barriers_program):
    text = format_kernel(barriers_program.kernels[0]).replace("  lane blocks", "  lane bricks", 1)
    with pytest.raises(InputError, match=r"IR line \d+: not a line of a kernel's header: 'lane bricks"):
        parse_kernels(text, barriers_program.model)
    unknown = format_kernel(barriers_program.kernels[0]).replace("(s", "(t", 1)
    with pytest.raises(InputError, match="is no fragment's argument"):
        parse_kernels(unknown, barriers_program.model)
