"""Successive iterations of a host loop (sirius/fusion/loop_iterations.py): the last launch
of iteration k and the first of iteration k + 1 are two launches left apart like any two,
with the reason: independent slices (one launch could run them: waves of cells with
--cooperative --persistent do), a stencil's time loop (a global dependence carried by the
loop), host statements in the body; none where the loop is one persistent launch. The
check that every pair left apart has a reason covers these pairs."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import pytest

from sirius.analysis.frontend import CompileJob
from sirius.core.config import CompileFlags, resolve_toolchain
from sirius.fusion.schedule import RefusalKind
from sirius.pipeline import OptimizeState, pairs_without_reason, rearrange, report, run_pipeline
from tests.report_schema import assert_follows_schema

pytestmark = pytest.mark.toolchain

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "tests" / "fusion" / "programs"
SLICES = PROGRAMS / "slice_loop.cu"  # blur_slice at line 27, in the loop at line 24
PING_PONG = PROGRAMS / "stencil_ping_pong.cu"  # step at line 26, in the loop at line 25
TWO_KERNELS = ROOT / "tests" / "filecheck" / "optimize_loop_kernel.cu"  # relax (54), commit (55), loop at 53


def optimize(path: Path) -> OptimizeState:
    return run_pipeline(OptimizeState(CompileJob(path, CompileFlags(), resolve_toolchain())))


@functools.lru_cache(maxsize=None)
def optimized(path: Path) -> OptimizeState:
    return optimize(path)


def loop_refusals(state: OptimizeState):
    return [r for r in state.schedule.refusals if r.loop is not None]


def test_independent_slices_could_be_one_launch_with_persistent_waves():
    state = optimized(SLICES)
    [refusal] = loop_refusals(state)
    [launch] = state.model.launches
    assert refusal.launches == (launch.statement.index,) * 2
    assert refusal.kind is RefusalKind.LOOP_ITERATIONS and refusal.kind.legal
    assert refusal.reason.startswith("blur_slice (line 27) in successive iterations of the host loop at line 24: "
                                     "no dependence joins them, so one launch could run both")
    assert "--cooperative --persistent" in refusal.reason
    rep = report(state)
    assert [[m["line"] for m in r["launches"]] for r in rep["refused"]] == [[27, 27]]
    assert rep["apart_without_reason"] == [] and pairs_without_reason(state) == []
    assert_follows_schema(rep)


def test_a_loop_run_as_one_persistent_launch_needs_no_reason():
    state = rearrange(optimized(SLICES), "auto", cooperative=True, persistent=True)
    assert report(state)["launches_after"] == 1
    assert loop_refusals(state) == [] and pairs_without_reason(state) == []


def test_a_ping_pong_stencil_carries_a_global_dependence():
    state = optimized(PING_PONG)
    [refusal] = loop_refusals(state)
    assert refusal.kind is RefusalKind.LOOP_CARRIED and not refusal.kind.legal
    assert refusal.reason.startswith("step (line 26) in successive iterations of the host loop at line 25: a "
                                     "global dependence on a and b joins them, carried by the loop: only a grid-wide "
                                     "barrier orders them")
    assert pairs_without_reason(state) == []
    # the pointer swap keeps the loop from waves of cells: the reason says so
    persistent = rearrange(state, "auto", cooperative=True, persistent=True)
    [refusal] = loop_refusals(persistent)
    assert "the loop is not one launch with --cooperative --persistent: no waves over (step, layer)" in refusal.reason
    assert pairs_without_reason(persistent) == []


def test_the_last_launch_of_an_iteration_and_the_first_of_the_next():
    state = optimized(TWO_KERNELS)
    relax, commit = sorted(i.statement.index for i in state.model.launches)
    [refusal] = loop_refusals(state)
    assert refusal.launches == (commit, relax) and refusal.kind is RefusalKind.LOOP_CARRIED
    assert refusal.reason.startswith("commit (line 55) ending an iteration of the host loop at line 53 and relax "
                                     "(line 54) beginning the next: a global dependence on u joins them")
    # the refusal of the two launches within an iteration is another one
    assert any(r.launches == (relax, commit) and r.loop is None for r in state.schedule.refusals)


def test_pairs_without_reason_reports_iterations_left_apart_unexplained():
    state = optimized(TWO_KERNELS)
    relax, commit = sorted(i.statement.index for i in state.model.launches)
    bare = dataclasses.replace(state, schedule=dataclasses.replace(
        state.schedule, refusals=tuple(r for r in state.schedule.refusals if r.loop is None)))
    assert pairs_without_reason(bare) == [(commit, relax)]
    # nor does a refusal of the loop's iterations explain the two launches of one iteration
    bare = dataclasses.replace(state, schedule=dataclasses.replace(
        state.schedule, refusals=tuple(r for r in state.schedule.refusals if r.loop is not None)))
    assert pairs_without_reason(bare) == [(relax, commit)]


@pytest.mark.parametrize("old, new, kind, text", [
    # a copy in the loop body orders one iteration's launch before the next one's
    ("    blur_slice<<<dim3(NX / 32, NY), dim3(32)>>>(dst, src, 1.0f / 3.0f);\n",
     "    blur_slice<<<dim3(NX / 32, NY), dim3(32)>>>(dst, src, 1.0f / 3.0f);\n    cudaMemcpy(h, out, 4, "
     "cudaMemcpyDeviceToHost);\n", RefusalKind.HOST_STATEMENT, "host statements between them order them: cudaMemcpy"),
    # one slice: the loop runs once, no two iterations
    ("#define NZ 12", "#define NZ 1", None, ""),
])
def test_variants_of_the_slice_loop(tmp_path, old, new, kind, text):
    source = SLICES.read_text()
    assert old in source
    path = tmp_path / "variant.cu"
    path.write_text(source.replace(old, new))
    state = optimize(path)
    refusals = loop_refusals(state)
    if kind is None:
        assert refusals == []
    else:
        [refusal] = refusals
        assert refusal.kind is kind and text in refusal.reason, refusal.reason
    assert pairs_without_reason(state) == []
