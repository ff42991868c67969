"""The IR verifier (sirius/fusion/verify_ir.py, ``--verify-each``): a well-formed program has
no violation; each kind of damage a pass could do to a kernel or a fused launch is named;
the optimizer stops with an internal error when a stage leaves the IR broken."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from sirius.analysis.frontend import CompileJob
from sirius.core.config import CompileFlags, resolve_toolchain
from sirius.core.errors import SiriusError
from sirius.fusion.cooperative import CooperativeRegion
from sirius.fusion.kernel_ir import (LaneBarrier, CooperativeLaunch, Fragment, FusedKernelLaunch, FusedProgram, KernelRole,
                                     Ordering)
from sirius.fusion.verify_ir import ir_violations
from sirius.pipeline import OptimizeState, run_pipeline

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def softmax() -> OptimizeState:
    job = CompileJob(ROOT / "cuda_inputs" / "softmax.cu", CompileFlags(), resolve_toolchain())
    return run_pipeline(OptimizeState(job, verify_each=True))


def _with_body(k, body):
    lane = dataclasses.replace(k.lanes[0], body=tuple(body))
    return dataclasses.replace(k, lanes=(lane, *k.lanes[1:]))


def test_the_optimized_kernels_are_well_formed(softmax):
    assert softmax.kernels and ir_violations(softmax.program) == []


def test_each_kind_of_damage_is_named(softmax):
    k = softmax.kernels[0]
    fragments = [s for s in k.lanes[0].body if isinstance(s, Fragment)]
    barrier = LaneBarrier((Ordering("block dependence", fragments[0].launch, fragments[1].launch, "x"),))
    cases = {
        "two barriers in a row": _with_body(k, [fragments[0], barrier, barrier, *fragments[1:]]),
        "orders nothing": _with_body(k, [fragments[0], LaneBarrier(()), *fragments[1:]]),
        "are not the group's launches": _with_body(k, fragments[1:]),
        "not its parameters": _with_body(k, [dataclasses.replace(fragments[0], args=fragments[0].args[::-1]),
                                             *fragments[1:]]),
        "parameter names repeat": dataclasses.replace(k, params=k.params + k.params[:1]),
        "restrict but not a pointer": dataclasses.replace(k, params=tuple(
            dataclasses.replace(p, restrict=True) if not p.pointer else p for p in k.params)),
        "does not declare it": dataclasses.replace(k, params=tuple(
            dataclasses.replace(p, restrict=True, ctype=p.ctype.replace("__restrict__", "")) if p.pointer else p
            for p in k.params)),
        "more than the kernel's": dataclasses.replace(k, threads=k.lanes[0].threads // 2),
        "kernel names repeat": None,
    }
    for expected, broken in cases.items():
        kernels = [k, k] if broken is None else [broken]
        found = ir_violations(FusedProgram(tuple(FusedKernelLaunch(x) for x in kernels)))
        assert any(expected in v for v in found), (expected, found)


def test_each_kind_of_damage_to_a_fused_launch_is_named(softmax):
    k = softmax.kernels[0]
    phase = dataclasses.replace(k, role=KernelRole.PHASE)
    plan = CooperativeRegion(k.group.region, (k.group.id,), k.threads)
    assert ir_violations(FusedProgram((CooperativeLaunch(plan, (phase,)),))) == []
    cases = {
        "a kernel of role fused in a cooperative phase launch": CooperativeLaunch(plan, (k,)),
        "a kernel of role cooperative phase in a fused launch": FusedKernelLaunch(phase),
        "not the plan's": CooperativeLaunch(dataclasses.replace(plan, phases=(k.group.id, 99)), (phase,)),
    }
    for expected, broken in cases.items():
        found = ir_violations(FusedProgram((broken,)))
        assert any(expected in v for v in found), (expected, found)


def test_a_stage_that_breaks_the_ir_stops_the_optimizer(monkeypatch):
    import sirius.pipeline as pipeline

    def keep_and_duplicate(kernels, model):
        return [dataclasses.replace(k, params=k.params + k.params[:1]) for k in kernels], {}, []

    monkeypatch.setattr(pipeline, "keep_promises", keep_and_duplicate)
    job = CompileJob(ROOT / "cuda_inputs" / "softmax.cu", CompileFlags(), resolve_toolchain())
    with pytest.raises(SiriusError, match="after the promises stage breaks its invariants: .*names repeat"):
        run_pipeline(OptimizeState(job, verify_each=True))


def test_a_guard_that_does_not_check_a_folded_value_is_named(softmax):
    """Host constant propagation folds COLS into the kernel: the region's guard must compare it."""
    (region,) = softmax.program.regions
    assert any(p.constant is not None for p in softmax.kernels[0].params)
    broken = dataclasses.replace(softmax.program, regions=(dataclasses.replace(region, guard=region.guard[:1]),))
    found = ir_violations(broken)
    assert any("guard does not check the values folded into it" in v for v in found), found
