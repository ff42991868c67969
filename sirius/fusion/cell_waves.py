"""Waves of cells: a loop over steps whose body repeats a layer pattern, one launch per wave.

``analysis.repetition`` reads such a body as a second loop: the launches of copy ``l``
at step ``s`` are *cell* (s, l). In TVM's LSTM cell (s, l) needs cell (s, l-1) (the
layer below, this step) and cell (s-1, l) (this layer, the step before), so the cells
on one anti-diagonal ``s + l = w`` are independent: this pass runs each anti-diagonal
as one cooperative launch. The groups the schedule formed within one copy are the
*phases* of a cell (``fusion.cooperative``: a grid barrier between phases, each phase a
loop over virtual blocks), and the launch of wave ``w`` runs every cell of the wave side
by side in each phase, each with the arguments of its (step, layer) computed in the
kernel from the pattern (private temporaries in a scratch area per layer,
``fusion.privatisation``).

What ``plan_cell_waves`` proves, else it refuses with the reason:

* every launch of the pattern can be a fragment; the representative copy's part of the
  schedule's groups (``_cell_groups`` says why they are legal for every cell) can be
  phases of one cooperative kernel (``fusion.cooperative``);
* the copies' pointers into one allocation that is not private all advance by the same
  stride per layer (so the launches of a cell depend on each other as in every other);
* a grid that changes with the step (an elimination's trailing block shrinking with the
  pivot) is a function of the loop's iterator alone, which the kernel computes in each
  wave, in a loop of one layer (a wave is then a step), and one the launch as written can
  run in at every step (``_step_grids``);
* isl's scheduler, given the dependences between cells, returns one permutable band
  over (step, layer) (the precondition of the skew), and every dependence between two
  different cells goes to a strictly later anti-diagonal: through allocations that are
  not private (bytes from isl, an inexact access counting as every byte), device globals
  (every byte); a pointer of unknown origin is refused. Private temporaries
  link different cells only through one layer's scratch area, from a step to a later
  one, so always to a later anti-diagonal; within a cell the phases keep the order.

At run time the host first runs the loop without launching and compares every launch's
shape and arguments with what the pattern gives its cell (taking the allocations' base
pointers from them); where they differ, or the device cannot launch cooperatively, the
loop runs as written.

The wave loop is isl's AST over the skewed schedule ``[s, l] -> [s + l, l]``: on the host,
one launch per wave; or, ``persistent``, in the kernel, one launch in all with a grid
barrier between two waves (each wave's cells read what the waves before wrote, in any
block).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import islpy as isl

from sirius.analysis.program_model import LaunchInstance, ProgramModel
from sirius.analysis.repetition import LAYER, Repetition, byte_footprint
from sirius.analysis.symbolic import Expr
from sirius.core.target import MAX_GRID
from sirius.fusion.cooperative import cooperative_threads, phases_problem
from sirius.fusion.kernel_ir import LaneBarrier
from sirius.fusion.fragments import fragment_problem
from sirius.fusion.privatisation import ScratchPlan, plan_scratch
from sirius.fusion.schedule import FusionGroup, GroupLane, Refusal, RefusalKind, Schedule
from sirius.fusion.wavefront import permutable_band, wave_loop


@dataclass(frozen=True)
class CellWaves:
    """The plan: the repetition, where its private temporaries live, the phases of one
    cell, and the wave loop."""

    repetition: Repetition
    scratch: ScratchPlan
    phases: tuple[int, ...]  # group ids of the representative copy, in execution order
    threads: int  # the cooperative kernel's block
    wave_for: str  # C text of the wave loop header, iterator sirius_w
    lo: str  # C expressions of the first and last layer of wave sirius_w
    hi: str
    waves: int
    allocations: tuple[str, ...]  # allocations whose base pointers the kernel needs
    regions: tuple[int, ...]  # the schedule's regions the loop body holds
    groups: tuple[FusionGroup, ...] = ()  # the phases' groups (the representative copy's part of the schedule's)
    persistent: bool = False  # all waves in one launch, a grid barrier between two waves
    independent: bool = False  # no cell depends on another: no grid barrier between two waves either
    # launches whose grid changes with the step (one layer only), as a function of the loop's
    # iterator the kernel computes in each wave; and the most blocks a phase has in any wave
    grids: tuple[tuple[int, tuple[Expr, Expr, Expr]], ...] = ()
    most_blocks: int = 0

    @property
    def name(self) -> str:
        return f"sirius_cells_{self.regions[0]}"

    @property
    def launches(self) -> int:
        """Launches per run of the program: one per wave, or one in all."""
        return 1 if self.persistent else self.waves


def representative(rep: Repetition) -> tuple[int, ...]:
    """The copy whose fused groups are the phases: the second (the first may read a loop
    input instead), or the only one of a body read as one copy of itself."""
    return rep.statements[1 if rep.copies > 1 else 0]


def _cell_groups(schedule: Schedule, rep: Repetition) -> list[FusionGroup]:
    """The representative copy's part of the schedule's groups, in execution order.

    A group that reaches into another copy keeps the copy's part of each lane: a
    contiguous piece of a legal lane is legal, unless a fragment of it was re-indexed onto
    the lane's first launch and the piece starts later (then the piece's launches become
    groups of their own). They are legal for every cell: the copies' launches are alike,
    the arguments into an allocation that is not private all advance by one stride (so
    two launches of a copy depend on each other as in every other copy), a loop input the
    first copy reads instead is never written, and the private temporaries leave a cell's
    launches fewer dependences than the original's storage reuse gave the representative."""
    own = representative(rep)
    next_id = max((g.id for g in schedule.groups), default=-1) + 1
    out: list[FusionGroup] = []
    for g in schedule.groups:
        if not set(g.launches) & set(own):
            continue
        if set(g.launches) <= set(own):
            out.append(g)
            continue
        pieces: list[tuple[GroupLane, ...]] = []
        for lane in g.lanes:
            keep = [n for n, i in enumerate(lane.launches) if i in own]
            if not keep:
                continue
            reindexed = lane.reindex and any(lane.reindex[n] is not None for n in keep)
            if keep[0] == 0 or not reindexed:
                pieces.append((GroupLane(tuple(lane.launches[n] for n in keep),
                                    tuple(lane.reindex[n] for n in keep) if keep[0] == 0 and lane.reindex else (),
                                    tuple(lane.reindex_barrier[n] for n in keep)
                                    if keep[0] == 0 and lane.reindex_barrier else ()),))
            else:
                pieces += [(GroupLane((lane.launches[n],)),) for n in keep]
        if len(g.lanes) > 1:  # side by side: each piece alone (a lane's blocks were placed among the others')
            pieces = [(GroupLane((i,)),) for piece in pieces for lane in piece for i in lane.launches]
        for lanes in pieces:
            out.append(FusionGroup(next_id, g.region, lanes, g.step))
            next_id += 1
    return out


def _step_grids(model: ProgramModel, rep: Repetition,
                groups: list[FusionGroup]) -> tuple[tuple[tuple[int, tuple[Expr, Expr, Expr]], ...], int] | str:
    """The launches whose grid is not a constant, each with its grid as a function of the
    step, and the most blocks any phase has in any step; or why a kernel could not run such
    a grid in each wave: a loop of several layers (the cells of one wave would each need
    their own grid), a grid not a function of the loop's iterator alone, a step whose grid
    the launch as written could not run in (its failure would be another program's), a
    phase of more blocks than a grid may have (the kernel counts them in 32 bits), or two
    launches of one lane whose grids differ at some step (a lane runs in its first
    launch's grid: outside a persistent kernel the guard compares them at each launch)."""
    formulas: dict[int, tuple[Expr, Expr, Expr]] = {}
    for idx in (i for g in groups for i in g.launches):
        inst = model.launch(idx)
        grid = inst.statement.grid
        if grid.constant() is not None:
            continue
        name = f"{inst.kernel.name} ({inst.where})"
        if rep.copies > 1:
            return f"the grid of {name} is computed at run time, and the cells of one wave would need grids of their own"
        dims = (grid.x, grid.y, grid.z)
        if any(d is None or not d.symbols() <= {rep.iterator} or d.to_c_floored() is None for d in dims):
            return f"the grid of {name} is not a function of the loop's iterator that the kernel can compute"
        for step in range(rep.steps):
            values = [d.subs({rep.iterator: step}).constant_value() for d in dims]
            if any(v is None or not 1 <= v <= most for v, most in zip(values, MAX_GRID)):
                return f"at step {step} the grid of {name} is {tuple(values)}: the launch fails as written"
        formulas[idx] = dims
    if not formulas:
        return (), 0

    def grid_at(idx: int, step: int) -> tuple[int, int, int]:
        dims = formulas.get(idx)
        if dims is None:
            return model.launch(idx).statement.grid.constant()
        return tuple(d.subs({rep.iterator: step}).constant_value() for d in dims)

    most = 0
    for step in range(rep.steps):
        for g in groups:
            for lane in g.lanes:
                first, *rest = lane.launches
                other = next((i for i in rest if grid_at(i, step) != grid_at(first, step)), None)
                if other is not None:
                    a, b = model.launch(first), model.launch(other)
                    return (f"at step {step} {a.kernel.name} ({a.where}) and {b.kernel.name} ({b.where}), one lane, "
                            f"have the grids {grid_at(first, step)} and {grid_at(other, step)}: a lane runs in one grid")
            blocks = sum(math.prod(grid_at(lane.launches[0], step)) for lane in g.lanes)
            if blocks > MAX_GRID[0]:
                return f"at step {step} a phase has {blocks} blocks, more than one grid may have"
            most = max(most, blocks)
    return tuple(formulas.items()), most


def _stride_problem(rep: Repetition) -> str | None:
    strides: dict[str, set[int]] = {}
    for row in rep.arguments:
        for a in row:
            # a peeled argument's formula serves copies 1.. only: with two copies, one, and any stride
            if a.kind == "affine" or (a.kind == "peeled" and rep.copies > 2):
                strides.setdefault(a.buffer, set()).add(a.offset.coefficient(LAYER))
    uneven = next((b for b, s in sorted(strides.items()) if len(s) > 1), None)
    return None if uneven is None else f"the copies' pointers into {uneven} advance by different strides"


def _footprints(model: ProgramModel, rep: Repetition) -> tuple[dict[str, isl.Map], dict[str, isl.Map]] | str:
    """Reads and writes of the cells in memory other than the private temporaries, per
    allocation (and device global): ``{ [s, l] -> [byte] }``."""
    insts = model.instances()
    everything = isl.Map(f"{{ [s, l] -> [b] : 0 <= s < {rep.steps} and 0 <= l < {rep.copies} }}")
    reads: dict[str, isl.Map] = {}
    writes: dict[str, isl.Map] = {}

    def add(into: dict, buffer: str, got: isl.Map) -> None:
        into[buffer] = got if buffer not in into else into[buffer].union(got)

    for c, row in enumerate(rep.statements):
        for idx in row:
            inst: LaunchInstance = insts[idx]
            binding = dict(inst.bindings)
            for a in inst.kernel.accesses:
                if a.space == "shared":
                    continue
                kinds = ("read", "write") if a.kind == "atomic" else (("read",) if a.kind == "load" else ("write",))
                arg = binding.get(a.buffer)
                if a.buffer in model.device_globals:
                    buffer, got = a.buffer, None
                elif arg is None or arg.kind != "buffer":
                    return (f"{inst.kernel.name} ({inst.where}) accesses memory through a pointer "
                            "of unknown origin")
                elif arg.buffer in rep.private:
                    continue
                else:
                    buffer = arg.buffer
                for kind in kinds:
                    sets = None if a.buffer in model.device_globals else \
                        byte_footprint(inst, a.buffer, kind, rep.iterator)
                    if sets is None:
                        got = everything.intersect_domain(isl.Set(f"{{ [s, l] : l = {c} }}"))
                    else:
                        # { [s, b] } -> { [s, l] -> [b] } at l = c
                        got = isl.Map.from_range(sets).move_dims(isl.dim_type.in_, 0, isl.dim_type.out, 0, 1)
                        layer = isl.Val.int_from_si(isl.DEFAULT_CONTEXT, c)
                        got = got.insert_dims(isl.dim_type.in_, 1, 1).fix_val(isl.dim_type.in_, 1, layer)
                        got = got.intersect_domain(isl.Set(f"{{ [s, l] : 0 <= s < {rep.steps} }}"))
                    add(reads if kind == "read" else writes, buffer, got)
    return reads, writes


def no_waves(launches, reason: str) -> Refusal:
    """The refusal naming the first and last of a loop body's ``launches``: no waves, and why."""
    return Refusal((launches[0], launches[-1]), f"no waves over (step, layer): {reason}", RefusalKind.NO_WAVES)


def plan_cell_waves(model: ProgramModel, schedule: Schedule, rep: Repetition) -> CellWaves | Refusal:
    """The waves of ``rep``'s cells, or why not (see the module docstring)."""
    launches = tuple(idx for row in rep.statements for idx in row)
    why = lambda r: no_waves(launches, r)
    directive = model.source.directive_in(rep.loop.range, conditionals=False)
    if directive is not None:  # (a conditional reads alike in both copies)
        return why(f"a preprocessor directive (line {directive}) stands in the loop, whose text the emitted program "
                   "writes twice (its values checked, then the loop as written): in the second copy its macros would "
                   "be those the first left")
    for idx in representative(rep):
        inst = model.launch(idx)
        problem = fragment_problem(model, inst)
        if problem is not None:
            return why(f"{inst.kernel.name} ({inst.where}) cannot be a fragment: {problem.text}")
    groups = _cell_groups(schedule, rep)
    uneven = _stride_problem(rep)
    if uneven is not None:
        return why(uneven)
    problem = phases_problem(model, schedule, groups)
    if problem is not None:
        return why(f"a cell cannot be one cooperative kernel: {problem}")
    step_grids = _step_grids(model, rep, groups)
    if isinstance(step_grids, str):
        return why(step_grids)
    got = _footprints(model, rep)
    if isinstance(got, str):
        return why(got)
    reads, writes = got
    distinct = isl.Map("{ [s, l] -> [s2, l2] : s2 != s or l2 != l }")
    forward = isl.Map("{ [s, l] -> [s2, l2] : s2 > s or (s2 = s and l2 > l) }")
    later_wave = isl.Map("{ [s, l] -> [s2, l2] : s2 + l2 > s + l }")
    carried: list[isl.Map] = []
    for buffer in sorted(set(reads) | set(writes)):
        w = writes.get(buffer)
        if w is None:
            continue
        conflict = w.apply_range(w.reverse())
        if buffer in reads:
            conflict = conflict.union(w.apply_range(reads[buffer].reverse())).union(
                reads[buffer].apply_range(w.reverse()))
        deps = conflict.intersect(distinct).intersect(forward)  # oriented as the original order runs them
        if deps.is_empty():
            continue
        if not deps.is_subset(later_wave):
            return why(f"a dependence on {buffer} does not go to a later anti-diagonal")
        carried.append(deps)
    domain = isl.UnionSet(f"{{ S[s, l] : 0 <= s < {rep.steps} and 0 <= l < {rep.copies} }}")
    # (one layer: the waves are the steps, and every dependence goes to a later step, as checked)
    if carried and rep.copies > 1 and not permutable_band(domain, carried):
        return why("isl's scheduler finds no permutable band over (step, layer)")
    if rep.copies > 1:
        wave_for, lo, hi = wave_loop("s", "l", f"0 <= s < {rep.steps} and 0 <= l < {rep.copies}")
    else:  # one layer: a wave is a step
        wave_for, lo, hi = f"for (int sirius_w = 0; sirius_w < {rep.steps}; sirius_w += 1)", "0", "0"
    threads = cooperative_threads(model, groups)
    bases = sorted({arg.buffer for idx in launches for _, arg in model.launch(idx).bindings if arg.kind == "buffer"})
    regions = tuple(sorted({g.region for g in schedule.groups if set(g.launches) & set(launches)}))
    if any(not set(r.launches) <= set(launches) for r in schedule.regions if r.id in regions):
        return why("a region of the loop body holds launches outside the pattern")
    # independent cells: no dependence between two of them through memory the analysis sees
    # (every byte of an inexact access) and no private temporary (whose scratch a later step reuses)
    independent = not carried and not rep.private
    return CellWaves(rep, plan_scratch(rep), tuple(g.id for g in groups), threads, wave_for, lo, hi,
                     rep.steps + rep.copies - 1, tuple(bases), regions, tuple(groups), independent=independent,
                     grids=step_grids[0], most_blocks=step_grids[1])


def install_cell_waves(schedule: Schedule, plan: CellWaves) -> Schedule:
    """``schedule`` with the loop's launches run as the waves of ``plan``: the phases'
    groups take the place of the loop's groups."""
    body = {i for row in plan.repetition.statements for i in row}
    first = next(n for n, g in enumerate(schedule.groups) if set(g.launches) & body)
    rest = tuple(g for g in schedule.groups if not set(g.launches) & body)
    return replace(schedule, groups=rest[:first] + tuple(plan.groups) + rest[first:],
                   cell_waves={**schedule.cell_waves, plan.regions[0]: plan})


def narrowest_block(model: ProgramModel, plan: CellWaves, phases: list) -> CellWaves:
    """``plan`` with the smallest block its phases allow, once their barriers are placed
    (``phases``: their kernel IR). The plan takes the largest block of the phases that may
    synchronize, counting a phase of several launches as one (barriers between fragments
    are placed later); a phase that has no barrier after all, no shared memory and no
    warp operations can run its threads in turns in a smaller block (``fusion.cooperative``),
    so that the phases that do synchronize fill their blocks."""
    insts = model.instances()

    def kernels(lane):
        return [insts[f.launch].kernel for f in lane.fragments]

    def synchronizes(lane) -> bool:
        return any(isinstance(step, LaneBarrier) for step in lane.body) or any(m.barriers for m in kernels(lane))

    def talks(lane) -> bool:
        return synchronizes(lane) or any(m.shared or m.warp_ops for m in kernels(lane))

    lanes = [lane for k in phases for lane in k.lanes]
    sizes = {lane.threads for lane in lanes if synchronizes(lane)}
    threads = max(sizes) if sizes else max(lane.threads for lane in lanes)
    if threads >= plan.threads or any(lane.threads > threads and talks(lane) for lane in lanes):
        return plan
    return replace(plan, threads=threads)
