"""Cooperative fusion: a region's launches as one launch, with grid-wide barriers.

The schedule fuses what P1-P3 allow and stops at global dependences: a region of
launches becomes several launches, one per fusion group, in the order of their time
steps. A cooperative launch goes past that: every group of the region is a *phase* of
one kernel, phases are separated by ``cooperative_groups::this_grid().sync()`` (which
orders every block's memory operations before the barrier before every block's after
it), and each phase runs its own blocks in a loop over a virtual block index, so the
launch's grid (sized at run time from the occupancy API, so that all its blocks are
resident at once, as a grid barrier needs) does not have to equal any phase's grid.

``plan_cooperative`` proves, per region, what that needs and records a refusal (data,
with the reason) for a region it leaves alone:

* every launch of the region has a constant block and the same (default) stream; a grid
  the host computes at run time is passed to the kernel, and its phase's loop counts its
  blocks from it (the guard checks each such grid is one its launch could run in);
* the kernel's block is the largest of the phases that synchronize their blocks (their
  own ``__syncthreads``, or barriers placed between fragments); a smaller one runs in the
  first threads of the block, the others skip its fragments, so its own barriers must
  count only its threads: whole warps, each barrier a ``__syncthreads()`` in the kernel's
  body, which the printer turns into ``__barrier_sync_count`` over those threads;
* a phase of larger blocks than the kernel's runs its threads in turns, so they must not
  share data (no shared memory, no warp operations, no barriers); a phase of smaller
  blocks, not whole warps, with warp operations shares its last warp with lanes running
  other code: each operation must name only the block's lanes (a constant mask within
  them, or ``__activemask()`` asked in the kernel's body, which the fragment answers with
  the block's lanes: ``fragments.part_warp_problem``);
* no kernel loads through the read-only data cache (``__ldg``): within one kernel that
  cache is not coherent with the stores of an earlier phase;
* no kernel is a template instance (the host passes arguments by address, and must name
  each parameter's type);
* no kernel calls a helper that reads the built-in block or thread indices (a phase's
  blocks are virtual blocks of the grid: the helper would see the physical ones);
* no wavefront runs in the region (its waves are launches of their own);
* a block holds the static shared arrays of every phase (they live for the whole kernel)
  and the largest dynamic size of the phases: over 48 KB the launch needs the kernel's own
  opt-in (``cudaFuncSetAttribute``, which code generation emits before the occupancy query
  and the launch, both with that dynamic size); past the architecture's limit it is refused.

Early exits: each fragment is a function that returns to its phase's loop, and every
thread of the block reaches the barriers of the loop and the grid barrier; but a kernel
whose threads return early in part of a block, before a barrier of its own, is refused:
the returning threads would reach the loop's next barrier while the others wait at the
kernel's, and the two would pair up. The promises: the cooperative kernel declares no ``__restrict__`` at all
(a phase reads what another wrote, through another pointer, within one kernel).
"""

from __future__ import annotations

from dataclasses import dataclass

from sirius.analysis.program_model import ProgramModel
from sirius.core.target import WARP_SIZE, target_for
from sirius.fusion.fragment_text import BARRIER_CALL
from sirius.fusion.fragments import helper_reason, index_helpers, part_warp_problem
from sirius.fusion.schedule import FusionGroup, Refusal, Schedule
from sirius.fusion.shared_limits import shared_limit_problem


@dataclass(frozen=True)
class CooperativeRegion:
    """The groups of one region, in execution order, run as phases of one cooperative launch."""

    region: int
    phases: tuple[int, ...]  # group ids
    threads: int  # the block size of the cooperative kernel: the largest phase's

    @property
    def name(self) -> str:
        return f"sirius_coop_{self.region}"


def _threads(model: ProgramModel, group: FusionGroup) -> int:
    return max(_product(model.launch(lane.launches[0]).statement.block.constant()) for lane in group.lanes)


def _product(d) -> int:
    return d[0] * d[1] * d[2]


def phases_problem(model: ProgramModel, schedule: Schedule, groups: list[FusionGroup]) -> str | None:
    """Why this region's groups cannot be phases of one cooperative kernel (None: they can)."""
    if any(g.id in schedule.wavefronts for g in groups):
        return "a wavefront runs in the region (its waves are launches of their own)"
    launches = [model.launch(i) for g in groups for i in g.launches]
    for inst in launches:
        s = inst.statement
        if s.grid is None or s.block is None or s.block.constant() is None:  # a grid may be passed at run time
            return f"{inst.kernel.name} ({inst.where}) has a launch shape the analysis cannot evaluate"
        decl = model.kernel_decls.get(inst.kernel.mangled)
        if decl is not None and decl.template_params:
            return f"{inst.kernel.name} ({inst.where}) is a template instance"
        if index_helpers(model, inst):  # each phase runs its blocks as virtual blocks of the grid
            return helper_reason(model, inst)
        leave = next((e for e in inst.kernel.early_exits if e.reaches_barrier and e.divergent), None)
        if leave is not None:
            return (f"{inst.kernel.name} ({inst.where}) returns early (line {leave.line}) before a barrier, in some "
                    "threads of a block: in a cooperative kernel those threads go on to the phase loop's next "
                    "barrier, which would pair with the one they skipped")
        ldg = inst.kernel.noncoherent_load()
        if ldg is not None:
            return (f"{inst.kernel.name} loads through the read-only data cache (line {ldg.line}), which is not "
                    "coherent with an earlier phase's stores within one kernel")
    too_much = shared_limit_problem(model, launches)
    if too_much is not None:
        return too_much
    threads = cooperative_threads(model, groups)
    if isinstance(threads, str):
        return threads
    for g in groups:
        for lane in g.lanes:
            inst = model.launch(lane.launches[0])
            size = _product(inst.statement.block.constant())
            if size == threads:
                continue
            partial = next(filter(None, (part_warp_problem(model, model.launch(i), size) for i in lane.launches)),
                           None) if size < threads else None
            if partial is not None:
                return partial
            if _synchronizes(model, g, block_only=True):
                problem = _narrow_problem(model, [model.launch(i) for i in lane.launches], size)
                if problem is not None:
                    return problem
            elif size > threads:  # its threads run in turns: they must not talk to each other
                talker = next((t for t in map(model.launch, lane.launches) if t.kernel.warp_ops or t.kernel.shared),
                              None)
                if talker is not None:
                    return (f"{talker.kernel.name} ({talker.where}) runs in blocks of {size} threads, "
                            f"more than the cooperative kernel's {threads}, and its threads share data (shared "
                            "memory or warp operations): they cannot run in turns")
    return None


def _narrow_problem(model: ProgramModel, launches, size: int) -> str | None:
    """Why a phase that synchronizes cannot run in the first ``size`` threads of a larger
    block, its own barriers counting only those threads (``__barrier_sync_count``): the
    count must be whole warps, and every barrier a plain ``__syncthreads()`` in the kernel's
    body, where the printer can see it."""
    inst = launches[0]
    if size % WARP_SIZE:
        return (f"{inst.kernel.name} ({inst.where}) synchronizes blocks of {size} threads, not whole "
                "warps: a barrier over part of a larger block counts warps")
    for inst in launches:
        decl = model.kernel_decls.get(inst.kernel.mangled)
        lines = decl.body_text.split("\n") if decl is not None else []
        for barrier in (b for b in inst.kernel.barriers if b.kind == "block"):
            k = barrier.line - decl.body_line if decl is not None else -1
            if not (0 <= k < len(lines) and BARRIER_CALL.search(lines[k])):
                return (f"{inst.kernel.name} ({inst.where}) synchronizes at line {barrier.line} other "
                        "than by a __syncthreads() in its body (a helper function, a cooperative group or a "
                        "counting barrier), which cannot count part of a block")
    return None


def _synchronizes(model: ProgramModel, group: FusionGroup, block_only: bool = False) -> bool:
    """The group's blocks reach barriers: its kernels' own (with ``block_only``, not counting
    ``__syncwarp``, whose lanes ``fragments.part_warp_problem`` checks), or those placed
    between fragments."""
    return len(group.launches) > 1 or any(b.kind == "block" or not block_only
                                          for i in group.launches for b in model.launch(i).kernel.barriers)


def cooperative_threads(model: ProgramModel, groups: list[FusionGroup]) -> int | str:
    """The cooperative kernel's block size: the largest of the phases whose blocks
    synchronize (a smaller one's barriers count its own threads), else the largest phase's;
    or why there is none."""
    sizes = {_threads(model, g) for g in groups if _synchronizes(model, g)}
    threads = max(sizes) if sizes else max(_threads(model, g) for g in groups)
    limit = target_for(model.arch).max_block_threads
    return threads if threads <= limit else f"the phases need more than {limit} threads per block"


def plan_cooperative(model: ProgramModel, schedule: Schedule) -> tuple[list[CooperativeRegion], list[Refusal]]:
    """The regions of more than one group that can run as one cooperative launch, and a
    refusal naming the region's first and last launch for each that cannot."""
    plans, refusals = [], []
    for region in schedule.regions:
        groups = [g for g in schedule.groups if g.region == region.id]
        if len(groups) < 2 or region.id in schedule.cell_waves:
            continue
        problem = phases_problem(model, schedule, groups)
        if problem is not None:
            refusals.append(Refusal((region.launches[0], region.launches[-1]), f"not one cooperative launch: {problem}"))
            continue
        plans.append(CooperativeRegion(region.id, tuple(g.id for g in groups), cooperative_threads(model, groups)))
    return plans, refusals
