"""Guards: the run-time conditions under which each fused launch computes what the
original launches did, as data in the fused-kernel IR (``fusion.kernel_ir``).

What the analysis took as fixed when it proved a fusion legal, the emitted program
checks before it takes the fused path, and runs the original launches otherwise:

- a rewritten region (``HostRegion``): the program's macros expand as when optimized
  (``analysis.build_macros``), the launch shapes, integer arguments and distances between
  pointers into one allocation are those analysed, the allocations told apart are apart,
  and the values host constant propagation folded into a kernel are those folded;
- a loop run as a wavefront or as waves of cells (``LoopGuard``): the build conditions,
  then the loop run once without launching, each launch's shape and arguments compared
  with what the wave kernel computes for its cell, and the launches counted.

``guard_program`` fills these in after the kernel passes (the folded values are theirs);
code generation prints them and counts each failing condition (``fusion.region_paths``).
"""

from __future__ import annotations

import dataclasses

from sirius.analysis.build_macros import macro_conditions
from sirius.analysis.program_model import LaunchInstance, ProgramModel
from sirius.analysis.symbolic import Expr
from sirius.core.target import MAX_GRID
from sirius.fusion.kernel_ir import (CellWavesLaunch, FusedProgram, KernelIR, LaunchCheck, LoopGuard, base_pointer,
                                     WavefrontLaunch, host_grid)


def shape_conditions(inst: LaunchInstance) -> list[str]:
    """The launch's grid, block and dynamic shared memory as the analysis took them."""
    idx, stmt = inst.statement.index, inst.statement
    conds = []
    for name, dims in (("g", stmt.grid), ("b", stmt.block)):
        known = dims.constant() if dims else None
        if known is not None:
            conds += [f"sirius_{name}{idx}.{axis} == {v}u" for axis, v in zip("xyz", known)]
    if len(inst.site.config) > 2 and stmt.shmem is not None and stmt.shmem.constant_value() is not None:
        conds.append(f"sirius_s{idx} == {stmt.shmem.constant_value()}u")
    return conds


def assumptions(launches, insts, sizes: dict[str, int | None]) -> list[str]:
    """C conditions under which the fused region computes what the original launches did:
    the values the analysis took as constants (launch shapes, integer scalars, distances
    between pointers into one allocation, allocations apart: ``sizes`` in bytes), as the
    host evaluates them at run time. A program rebuilt with other sizes, or whose pointers
    land in other allocations, falls back to the original launches."""
    conds: list[str] = []
    reference: dict[str, tuple[int, int, object]] = {}
    for idx in launches:
        inst = insts[idx]
        conds += shape_conditions(inst)
        for j, (_, arg) in enumerate(inst.bindings[:len(inst.site.args)]):
            if arg.kind == "scalar" and arg.value is not None and arg.value.constant_value() is not None:
                conds.append(f"(long long)(sirius_a{idx}_{j}) == {arg.value.constant_value()}LL")
            elif arg.kind == "buffer" and arg.offset is not None:
                ref = reference.setdefault(arg.buffer, (idx, j, arg.offset))
                delta = (arg.offset - ref[2]).constant_value()
                if ref[:2] != (idx, j) and delta is not None:
                    conds.append(f"(const char*)(sirius_a{idx}_{j}) - (const char*)(sirius_a{ref[0]}_{ref[1]}) "
                                 f"== {delta}")
    starts = {alloc: f"(const char*)(sirius_a{i}_{j}) - {offset.constant_value()}"
              for alloc, (i, j, offset) in reference.items() if offset.constant_value() is not None}
    return conds + apart_conditions(starts, sizes, _written(launches, insts))


def _written(launches, insts) -> set[str]:
    """The allocations a write of ``launches`` reaches."""
    return {m.buffer for i in launches for m in insts[i].maps if m.access.kind != "load"}


def apart_conditions(starts: dict[str, str], sizes: dict[str, int | None], written: set[str]) -> list[str]:
    """C conditions that allocations the analysis told apart are apart at run time (a
    rebuild may pass one allocation for another: ``out = INPLACE ? x : y``): for each
    written allocation and each other one, their byte ranges (``starts``: C expressions
    of their first byte; ``sizes``) do not overlap."""
    known = sorted(a for a in starts if sizes.get(a))
    conds = []
    for k, a in enumerate(known):
        for b in known[k + 1:]:
            if a in written or b in written:
                ua, ub = f"(unsigned long long)({starts[a]})", f"(unsigned long long)({starts[b]})"
                conds.append(f"({ua} + {sizes[a]}ULL <= {ub} || {ub} + {sizes[b]}ULL <= {ua})")
    return conds


def folded_conditions(k: KernelIR) -> list[str]:
    """Guard conditions for the values host constant propagation folded into ``k``."""
    arg = {p.name: f"sirius_a{p.launch}_{p.position}" for p in k.params}
    conds = []
    for p in k.params:
        if p.constant is not None:
            conds.append(f"(long long)({arg[p.name]}) == {p.constant}LL")
        elif p.base is not None:
            conds.append(f"(const char*)({arg[p.name]}) - (const char*)({arg[p.base]}) == {p.delta}")
    return conds


def lane_grid_conditions(k: KernelIR) -> list[str]:
    """Guard conditions on the grids the host computes at run time. Every fragment of a lane
    runs in the grid the lane is launched in (``merge_legality.grids_equal_at_run_time``):
    each compared, axis by axis, with the lane's first fragment's. A lane beside others
    (``KernelIR.run_time_lanes``) has a grid its original launch could run in (every axis
    at least 1 and within the device's limits: the original launch of a grid of 0 blocks
    fails, the lane would run no block), and the fused grid, every lane's blocks one after
    another, stays within the limit of its x axis."""
    conds = []
    for lane in k.lanes:
        first, *rest = lane.fragments
        if lane.grid is None or any(f.grid is None for f in rest):
            conds += [f"sirius_g{f.launch}.{axis} == sirius_g{first.launch}.{axis}" for f in rest for axis in "xyz"]
    constant = sum(lane.blocks or 0 for lane in k.lanes)
    total = [f"{constant}ULL"] if constant else []
    for lane in k.run_time_lanes:
        g = host_grid(lane)
        conds += [f"{g}.{axis} >= 1u && {g}.{axis} <= {most}u" for axis, most in zip("xyz", MAX_GRID)]
        total.append(f"(unsigned long long){g}.x * {g}.y * {g}.z")
    if k.run_time_lanes:
        conds.append(f"{' + '.join(total)} <= {MAX_GRID[0]}ULL")
    return conds


def build_conditions(model: ProgramModel, launches, macros: dict[str, str]) -> list[str]:
    """Conditions that the program's macros used by ``launches`` (their statements, their
    kernels, the device functions) expand as they did when it was optimized
    (analysis.build_macros): a rebuild with other ``-D`` values takes the original path."""
    insts = [model.launch(i) for i in launches]
    ranges = [inst.site.range for inst in insts if inst.site is not None]
    ranges += [d.range for d in (model.kernel_decls.get(inst.kernel.mangled) for inst in insts) if d is not None]
    return macro_conditions(model.source.macros_in(ranges + model.source.device_function_ranges), macros)


def _wavefront_cell(inst: LaunchInstance, wave) -> list[str]:
    """C conditions, in the loop nest's iterators, under which one launch of a wavefront
    cell is what the wave kernel computes for that cell: its shape, its integer arguments
    and its pointers (allocation base plus the affine offset the kernel adds)."""
    idx = inst.statement.index
    (outer, inner), (n_outer, n_inner) = (wave.outer, wave.inner), wave.extents
    conds = [f"{outer} >= 0", f"{outer} < {n_outer}", f"{inner} >= 0", f"{inner} < {n_inner}"]
    conds += shape_conditions(inst)
    for j, (_, arg) in enumerate(inst.bindings[:len(inst.site.args)]):
        if arg.kind == "buffer":
            conds.append(f"(const char*)(sirius_a{idx}_{j}) == (const char*)({arg.buffer}) + "
                         f"({arg.offset.to_c()})")
        elif arg.kind == "scalar" and arg.value is not None and arg.value.to_c() is not None:
            conds.append(f"(long long)(sirius_a{idx}_{j}) == (long long)({arg.value.to_c()})")
        elif arg.kind == "scalar" and arg.text:  # a floating-point constant the wave kernel bakes in
            conds.append(f"sirius_same_bits(sirius_a{idx}_{j}, {arg.text})")
    return conds


def _wavefront_guard(launch: WavefrontLaunch, insts, build: list[str]) -> LoopGuard:
    """Each launch of the nest compared with what the wave kernel assumes for its cell
    (the wave's iterators named as the loops name them), and every cell counted."""
    wave, group = launch.plan, launch.kernel.group
    names = "".join(f"const int {model_name} = (int)({written}); "
                    for model_name, written in zip((wave.outer, wave.inner), wave.source_iterators)
                    if model_name != written)
    checks = tuple(LaunchCheck(idx, names, tuple(_wavefront_cell(insts[idx], wave))) for idx in group.launches)
    return LoopGuard(tuple(build), checks, wave.extents[0] * wave.extents[1] * len(group.launches))


def _cell_guard(launch: CellWavesLaunch, insts, build: list[str]) -> LoopGuard:
    """Each launch of the loop compared with what the pattern gives its cell (a grid that
    changes with the step, with the grid the kernel computes for the step), the
    allocations' base pointers taken from the first that points into each. The step is
    the trip the check is at, counted by the launches checked before it (the kernel counts
    its steps from 0 by 1, whatever values the program's loop variable takes: from 1, by 2,
    down)."""
    rep = launch.plan.repetition
    per_step = rep.copies * rep.period
    trip = f"const long long sirius_trip = sirius_checked / {per_step}LL; (void)sirius_trip; "
    source_step = {rep.iterator: Expr.sym("sirius_trip")}
    step_grids = dict(launch.plan.grids)
    checks = []
    for idx in (i for row in rep.statements for i in row):
        inst = insts[idx]
        conds = shape_conditions(inst)
        conds += [f"(long long)sirius_g{idx}.{axis} == {d.subs(source_step).to_c_floored()}"
                  for axis, d in zip("xyz", step_grids.get(idx, ()))]
        for j, (_, arg) in enumerate(inst.bindings[:len(inst.site.args)]):
            if arg.kind == "buffer":
                base = base_pointer(arg.buffer)
                at = f"((const char*)(sirius_a{idx}_{j}) - ({arg.offset.subs(source_step).to_c()}))"
                conds.append(f"(({base} ? 0 : ({base} = (char*){at}, 0)), {base} == {at})")
            elif arg.value is not None:
                conds.append(f"(long long)(sirius_a{idx}_{j}) == (long long)({arg.value.subs(source_step).to_c()})")
            elif arg.kind == "scalar" and arg.text:  # a floating-point constant the cell kernel bakes in
                conds.append(f"sirius_same_bits(sirius_a{idx}_{j}, {arg.text})")
        checks.append(LaunchCheck(idx, trip, tuple(conds)))
    return LoopGuard(tuple(build), tuple(checks), rep.steps * rep.copies * rep.period)


def guard_program(model: ProgramModel, program: FusedProgram, macros: dict[str, str]) -> FusedProgram:
    """``program`` with the guard of each rewritten region and of each loop run as waves,
    and each fused kernel's ``assumptions``: the conditions of its guard, for the report."""
    insts = model.instances()
    sizes = {a.name: a.bytes.constant_value() if a.bytes is not None else None for a in model.host.allocations}
    described: dict[int, tuple[str, ...]] = {}  # group -> its guard's conditions
    launches = []
    for launch in program.launches:
        if isinstance(launch, WavefrontLaunch):
            guard = _wavefront_guard(launch, insts, build_conditions(model, launch.kernel.group.launches, macros))
            launch = dataclasses.replace(launch, guard=guard)
        elif isinstance(launch, CellWavesLaunch):
            rows = [i for row in launch.plan.repetition.statements for i in row]
            guard = _cell_guard(launch, insts, build_conditions(model, rows, macros))
            launch = dataclasses.replace(launch, guard=guard)
        if isinstance(launch, (WavefrontLaunch, CellWavesLaunch)):
            described.update({k.group.id: launch.guard.conditions for k in launch.kernels})
        launches.append(launch)
    by_group = {k.group.id: k for k in program.kernels()}
    regions = []
    for region in program.regions:
        guard = build_conditions(model, region.launches, macros) + assumptions(region.launches, insts, sizes)
        groups = [issue.group for issue in region.issued if issue.group in by_group]
        guard += [c for g in groups for c in lane_grid_conditions(by_group[g]) + folded_conditions(by_group[g])
                  if c not in guard]
        described.update({g: tuple(guard) for g in groups})
        regions.append(dataclasses.replace(region, guard=tuple(guard)))
    guarded = FusedProgram(tuple(launches), tuple(regions))
    return guarded.with_kernels([dataclasses.replace(k, assumptions=described.get(k.group.id, ()))
                                 for k in guarded.kernels()])
