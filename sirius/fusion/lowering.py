"""Lowering: the schedule's decisions as the fused-kernel IR (``fusion.kernel_ir``).

``lower`` builds one ``KernelIR`` per fused group (of more than one launch, or a phase
of a cooperative launch or of waves of cells), without barriers, and wraps them in the
fused launch of their kind: a fused kernel, a wavefront (``Schedule.wavefronts``), a
cooperative launch (``Schedule.cooperative``) or waves of cells (``Schedule.cell_waves``).
After lowering, nothing downstream reads those decisions from the schedule again.
"""

from __future__ import annotations

from functools import lru_cache

import islpy as isl

from sirius.analysis.program_model import LaunchInstance, ProgramModel
from sirius.core.errors import SiriusError
from sirius.fusion.kernel_ir import (CellWavesLaunch, CooperativeLaunch, Fragment, FusedKernelLaunch, FusedLaunch,
                                     FusedProgram, HostRegion, Issue, KernelIR, KernelRole, Lane, FusedParam, Reindexing,
                                     BlockSharedArray, WavefrontLaunch, host_grid, lane_ranges)
from sirius.fusion.promises import fused_param_name
from sirius.fusion.schedule import FusionGroup, Schedule
from sirius.fusion.shared_limits import static_shared_bytes


def _params(inst: LaunchInstance, decl) -> tuple[FusedParam, ...]:
    bindings = dict(inst.bindings)
    out = []
    for j, (pname, ptype) in enumerate(decl.params):
        kernel_param = inst.kernel.params[j] if j < len(inst.kernel.params) else None
        arg = bindings.get(kernel_param.name) if kernel_param is not None else None
        buffer = arg is not None and arg.kind == "buffer"
        out.append(FusedParam(fused_param_name(inst.statement.index, j, pname), ptype, inst.statement.index, j,
                         bool(kernel_param and kernel_param.is_pointer),
                         arg.buffer if buffer else None,
                         arg.offset.to_c() if buffer and arg.offset is not None else None))
    return tuple(out)


# a pure function of the map's text, and isl's AST build is slow: every arrangement and
# pass selection of one program lowers the same fragments again
@lru_cache(maxsize=4096)
def reindexing(sigma_text: str) -> Reindexing:
    """The re-indexing of a fragment as C (``Reindexing``), from the isl map anchor ->
    instance: an isl AST of the map's domain and of each coordinate of its image."""
    sigma = isl.Map(sigma_text)
    names = [f"sirius_p{k}" for k in range(6)]
    for k, nm in enumerate(names):
        sigma = sigma.set_dim_name(isl.dim_type.in_, k, nm)
    as_params = sigma.move_dims(isl.dim_type.param, 0, isl.dim_type.in_, 0, 6)
    domain = as_params.domain().params()
    build = isl.AstBuild.from_context(domain)
    pma = isl.PwMultiAff.from_map(as_params)
    coords = [build.expr_from_pw_aff(pma.get_pw_aff(k).project_domain_on_params()).to_C_str() for k in range(6)]
    universe = isl.AstBuild.from_context(isl.Set.universe(domain.get_space()))
    condition = universe.expr_from_set(domain).to_C_str()

    def fix(text: str) -> str:
        return text.replace("floord(", "sirius_floord(")
    return Reindexing(sigma_text, fix(condition), tuple(fix(c) for c in coords))


def _fragment(inst: LaunchInstance, names: tuple[str, ...], sigma: str | None, barrier: bool) -> Fragment:
    s = inst.statement
    return Fragment(s.index, inst.kernel.name, s.grid.constant() if s.grid else None, s.block.constant(), names,
                    reindexing(sigma) if sigma is not None else None, barrier,
                    tuple(dict.fromkeys("extern" if a.dynamic else a.symbol for a in inst.kernel.shared)))


def _shared_arrays(lanes: tuple[Lane, ...], insts) -> tuple[BlockSharedArray, ...]:
    arrays: dict[str, BlockSharedArray] = {}
    for lane in lanes:
        for f in lane.fragments:
            for a in insts[f.launch].kernel.shared:
                key = "extern" if a.dynamic else a.symbol
                old = arrays.get(key)
                users = (old.users if old else ()) + (f.launch,)
                arrays[key] = BlockSharedArray(key, a.bytes or 0, a.dynamic, users)
    return tuple(arrays.values())


def _cell_plan(schedule: Schedule, group: FusionGroup):
    return next((plan for plan in schedule.cell_waves.values() if group.id in plan.phases), None)


def _role(schedule: Schedule, group: FusionGroup) -> KernelRole:
    if group.id in schedule.wavefronts:
        return KernelRole.WAVEFRONT
    if _cell_plan(schedule, group) is not None:
        return KernelRole.CELL_PHASE
    if group.region in schedule.cooperative:
        return KernelRole.PHASE
    return KernelRole.FUSED


def lower_group(model: ProgramModel, schedule: Schedule, group: FusionGroup) -> KernelIR:
    """The fused kernel of ``group``, without barriers."""
    insts = model.instances()
    params: list[FusedParam] = []
    for idx in group.launches:
        params += _params(insts[idx], model.kernel_decls[insts[idx].kernel.mangled])
    names = {idx: tuple(p.name for p in params if p.launch == idx) for idx in group.launches}
    lanes, start = [], 0
    for lane in group.lanes:
        first = insts[lane.launches[0]].statement
        body = tuple(_fragment(insts[idx], names[idx], lane.reindex[pos] if lane.reindex else None,
                               bool(lane.reindex_barrier and lane.reindex_barrier[pos]))
                     for pos, idx in enumerate(lane.launches))
        lanes.append(Lane(start, first.grid.constant() if first.grid else None, first.block.constant(), body))
        start += lanes[-1].blocks or 0  # None: a grid computed at run time, whose blocks the kernel adds
    role = _role(schedule, group)
    first = insts[group.launches[0]].statement
    threads = max(lane.threads for lane in lanes)
    kernels = [insts[i].kernel for i in group.launches]
    dynamic = max(insts[i].statement.shmem.constant_value() for i in group.launches)
    if role is KernelRole.WAVEFRONT:
        name, grid, block = f"sirius_wave_{group.id}", "", ""
    elif role is KernelRole.CELL_PHASE:
        name, grid, block = _cell_plan(schedule, group).name, "", ""
    elif len(lanes) == 1:
        name, grid, block = f"sirius_fused_{group.id}", f"sirius_g{first.index}", f"sirius_b{first.index}"
    else:  # the lanes' blocks one after another: a run-time grid's as the host computed it
        name, block = f"sirius_fused_{group.id}", f"dim3({threads})"
        grid = f"dim3({start})"
        if any(lane.grid is None for lane in lanes):
            ends = lane_ranges(KernelIR(name, group, (), tuple(lanes), threads), host_grid)
            grid = f"dim3({ends[-1][1]})"
    return KernelIR(name, group, tuple(params), tuple(lanes), threads, _shared_arrays(tuple(lanes), insts),
                    static_shared_bytes(kernels), dynamic, grid, block, role)


def lower(model: ProgramModel, schedule: Schedule) -> FusedProgram:
    """One fused kernel per group of more than one launch, and per group of a region run as
    one cooperative launch or of a loop run as waves of cells (each such group is a phase),
    in the schedule's order; each in the fused launch of its kind."""
    kernels = [lower_group(model, schedule, g) for g in schedule.groups
               if len(g.launches) > 1 or g.region in schedule.cooperative or _cell_plan(schedule, g) is not None]
    launches: list[FusedLaunch] = []
    placed: set[int] = set()
    for k in kernels:
        if k.group.id in placed:
            continue
        if k.role is KernelRole.WAVEFRONT:
            launches.append(WavefrontLaunch(k, schedule.wavefronts[k.group.id]))
        elif k.role is KernelRole.CELL_PHASE:
            plan = _cell_plan(schedule, k.group)
            launches.append(CellWavesLaunch(plan, tuple(p for p in kernels if p.group.id in plan.phases)))
        elif k.role is KernelRole.PHASE:
            plan = schedule.cooperative[k.group.region]
            launches.append(CooperativeLaunch(plan, tuple(p for p in kernels if p.group.id in plan.phases)))
        else:
            launches.append(FusedKernelLaunch(k))
        placed |= {p.group.id for p in launches[-1].kernels}
    rewritten = {k.group.region for k in kernels if not k.role.per_cell}
    regions = tuple(HostRegion(r.id, tuple(r.launches),
                               tuple(Issue(g.id, g.launches[0] if len(g.launches) == 1 else None)
                                     for g in schedule.groups if g.region == r.id))
                    for r in schedule.regions if r.id in rewritten)
    program = FusedProgram(tuple(launches), regions)
    if [k.group.id for k in program.kernels()] != [k.group.id for k in kernels]:
        raise SiriusError("internal error: a fused launch's kernels are not consecutive in the schedule")
    return program
