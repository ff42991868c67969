"""Predict what the launches of one run cost on a GPU, before and after fusion.

The model uses only what the analysis knows. Per launch statement of the original
program: how often it runs, its grid and block, the bytes of global memory one launch
touches (the footprint of its access maps, each element once) and the work of its
busiest thread (its dynamic global and shared accesses and barriers). From these:

    execution      = max(block waves x thread chain, bytes / bandwidth)
    direct launch  = max(host launch cost, execution)     the host enqueues while the GPU runs
    graph launch   = graph node cost + execution          a CUDA Graph replays the same kernels

where block waves = max(1, blocks / (SMs x blocks resident per SM)), residency limited by
threads, static shared memory and registers (``ptxas -v``, through the promise check), and a thread's chain is its global accesses times their
latency over the loads one thread keeps in flight, plus its shared accesses and barriers.

A fused launch is composed from the statements it runs: a lane runs its fragments one
after another (chains add), lanes run side by side in their own blocks (blocks add,
the longest chain counts), and a wavefront (or waves of cells, a cooperative launch
of phases) runs each anti-diagonal of cells as one launch. Not seen: arithmetic
(nothing counts FLOPs), reuse in caches (each launch pays its footprint at the
bandwidth below), divergence, atomic contention, bank conflicts,
and host work between launches (the same in both programs; the timing harness does not
measure it either). A loop the analysis cannot bound counts ``UNBOUNDED_TRIPS`` trips.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import islpy as isl

from sirius.analysis.kernel_model import BLOCK_SYMBOLS, THREAD_SYMBOLS
from sirius.analysis.program_model import host_domain, statement_runs
from sirius.core.target import H100, Target
from sirius.fusion.check import emitted_figures
from sirius.fusion.kernel_ir import CellWavesLaunch, CooperativeLaunch, phases_shared
from sirius.fusion.shared_limits import block_shared_bytes

UNBOUNDED_TRIPS = 8  # trips assumed for a kernel loop the analysis cannot bound (a tree reduction's log2)


@dataclass(frozen=True)
class ThreadWork:
    """The busiest thread's dynamic work in one launch."""

    global_accesses: float = 0.0
    shared_accesses: float = 0.0
    barriers: float = 0.0

    def __add__(self, other: "ThreadWork") -> "ThreadWork":
        return ThreadWork(self.global_accesses + other.global_accesses,
                          self.shared_accesses + other.shared_accesses, self.barriers + other.barriers)

    def longest(self, other: "ThreadWork") -> "ThreadWork":
        return self if self.global_accesses >= other.global_accesses else other

    def chain_us(self, gpu: Target) -> float:
        return (self.global_accesses * gpu.global_latency_us / gpu.loads_in_flight
                + self.shared_accesses * gpu.shared_access_us + self.barriers * gpu.barrier_us)


@dataclass(frozen=True)
class LaunchShape:
    """One launch as the model sees it: shape, footprint, the busiest thread's work."""

    label: str
    blocks: int
    threads: int
    shared_bytes: int
    global_bytes: float
    work: ThreadWork
    grid_syncs: int = 0  # grid-wide barriers inside (cooperative launch)
    registers: int | None = None  # per thread, from ptxas when it could compile the program
    phases: tuple["LaunchShape", ...] = ()  # a cooperative launch: what runs between its grid barriers


@dataclass(frozen=True)
class PlannedLaunch:
    """``count`` launches of one shape in a run."""

    shape: LaunchShape
    count: int
    direct_us: float  # per launch
    graph_us: float


@dataclass(frozen=True)
class Prediction:
    """The predicted time of one run's launches, launched directly and as a CUDA Graph."""

    launches: int
    direct_us: float
    graph_us: float
    items: tuple[PlannedLaunch, ...]
    notes: tuple[str, ...] = ()


@dataclass
class StatementCosts:
    """Per launch statement of the original program: runs per program run and the shape of one run."""

    runs: dict[int, int] = field(default_factory=dict)
    shapes: dict[int, LaunchShape] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


# ------------------------------------------------------------------ the GPU side

def blocks_per_sm(shape: LaunchShape, gpu: Target) -> int:
    """Blocks of this shape one multiprocessor holds at once (at least one): limited by
    threads, static shared memory and, with ptxas figures, registers."""

    limits = [gpu.max_blocks_per_sm, gpu.max_threads_per_sm // max(shape.threads, 1)]
    if shape.shared_bytes:
        limits.append(gpu.shared_per_sm // shape.shared_bytes)
    if shape.registers:
        limits.append(gpu.registers_per_sm // gpu.block_registers(shape.registers, max(shape.threads, 1)))
    return max(1, min(limits))


def execution_us(shape: LaunchShape, gpu: Target) -> float:
    """Device time of one launch of ``shape``, without the cost of launching it: a
    cooperative launch's phases one after another, with a grid barrier between each two."""
    if shape.phases:
        return sum(execution_us(p, gpu) for p in shape.phases) + shape.grid_syncs * gpu.grid_sync_us
    capacity = gpu.sm_count * blocks_per_sm(shape, gpu)
    # blocks do not run in lock-step waves: a partial wave costs its share (at least one whole)
    waves = max(1.0, shape.blocks / capacity) if shape.blocks else 0.0
    latency_bound = waves * shape.work.chain_us(gpu)
    bandwidth_bound = shape.global_bytes / (gpu.bandwidth_gbs * 1e3)  # GB/s -> bytes per us
    return max(latency_bound, bandwidth_bound) + shape.grid_syncs * gpu.grid_sync_us


def predict(launches: list[tuple[LaunchShape, int]], gpu: Target = H100, notes: tuple[str, ...] = ()) -> Prediction:
    """Direct and CUDA-Graph times of a run made of ``count`` launches of each shape."""
    items = []
    for shape, count in launches:
        run = execution_us(shape, gpu)
        launch = gpu.cooperative_launch_us if shape.grid_syncs or shape.phases else gpu.launch_direct_us
        items.append(PlannedLaunch(shape, count, max(launch, run), gpu.graph_node_us + run))
    return Prediction(sum(i.count for i in items), sum(i.count * i.direct_us for i in items),
                      sum(i.count * i.graph_us for i in items), tuple(items), notes)


# ------------------------------------------------------------------ the program side

def _fix_host_iterators(text: str, host_point: dict[str, int]):
    """The map at one launch instance: host loop iterators (parameters of the map) fixed to
    one point of the statement's domain; other parameters stay free (counted over all values)."""
    m = isl.Map(text)
    space = m.get_space()
    for k in reversed(range(space.dim(isl.dim_type.param))):
        name = space.get_dim_name(isl.dim_type.param, k)
        if name in host_point:
            m = m.fix_val(isl.dim_type.param, k, host_point[name])
        m = m.project_out(isl.dim_type.param, k, 1)
    return m


def _count(s) -> int | None:
    return s.count_val().to_python() if s.is_bounded() else None


def _box_elements(s) -> int | None:
    """Points of the smallest box around ``s``: a footprint counted exactly is too slow for
    TVM's index arithmetic (quotients and remainders); a strided footprint is over-counted,
    which the callers cap by the accesses made and the allocation's size."""
    if s.is_empty():
        return 0
    total = 1
    for k in range(s.dim(isl.dim_type.set)):
        lo, hi = s.dim_min_val(k), s.dim_max_val(k)
        if not (lo.is_int() and hi.is_int()):
            return None
        total *= hi.to_python() - lo.to_python() + 1
    return total


def _bounded(s, dims: int):
    """Unbounded loop dimensions cut at ``UNBOUNDED_TRIPS`` trips."""
    for k in range(dims):
        if s.is_bounded():
            break
        if s.dim_max_val(k).is_infty():
            lo = s.dim_min_val(k)
            start = lo.to_python() if lo.is_int() else 0
            s = s.intersect(isl.Set.universe(s.get_space()).upper_bound_val(
                isl.dim_type.set, k, isl.Val.int_from_si(s.get_ctx(), start + UNBOUNDED_TRIPS - 1)))
    return s


def _host_point(stmt) -> dict[str, int]:
    """The first instance of a statement in a host loop nest (iterator -> value)."""
    dom = host_domain(stmt)
    if dom is None or dom.is_empty():
        return {}
    point = dom.lexmin().sample_point()
    return {name: point.get_coordinate_val(isl.dim_type.set, k).to_python() for k, name in enumerate(stmt.loops)}


def _dim_value(expr) -> int | None:
    if expr is None:
        return None
    value = expr.constant_value()
    return value if value is not None and value > 0 else None


def _product(dims) -> int | None:
    values = [_dim_value(d) for d in (dims.x, dims.y, dims.z)] if dims is not None else [None]
    return None if any(v is None for v in values) else math.prod(values)


def statement_costs(model, registers: dict[str, int] | None = None) -> StatementCosts:
    """Runs per program run and the shape of one launch, for every launch statement of
    ``model`` (``registers``: per thread, by the kernel's mangled name). A statement whose
    grid or block the analysis cannot evaluate gets one block of 256 threads, with a note."""
    costs = StatementCosts()
    thread_dims = set(BLOCK_SYMBOLS + THREAD_SYMBOLS)
    sizes = _allocation_sizes(model)
    for inst in model.launches:
        stmt = inst.statement
        idx = stmt.index
        runs = statement_runs(stmt)
        if runs is None:
            runs = 1
            costs.notes.append(f"launch at line {stmt.line}: its host loop trip count is unknown; counted once")
        blocks, threads = _product(stmt.grid), _product(stmt.block)
        if blocks is None or threads is None:
            costs.notes.append(f"launch at line {stmt.line}: grid or block not constant; one block of 256 assumed")
            blocks, threads = blocks or 1, threads or 256
        point = _host_point(stmt)
        work = ThreadWork()
        footprints: dict[str, object] = {}
        accesses: dict[str, float] = {}  # buffer -> dynamic accesses of the launch (a cap on its footprint)
        unit_of: dict[str, int] = {}
        fallback_bytes = 0.0
        for amap in inst.maps:
            m = _fix_host_iterators(amap.isl, point)
            dom = m.domain()
            n = dom.dim(isl.dim_type.set)
            names = [dom.get_dim_name(isl.dim_type.set, k) for k in range(n)]
            loops = [name for name in names if name not in thread_dims]
            # the busiest thread runs at most every loop trip some thread runs
            trips = _count(_bounded(dom.project_out_except(loops, [isl.dim_type.set]), len(loops)).coalesce())
            per_thread = float(trips) if trips is not None else 1.0
            if amap.access.space == "shared":
                work = work + ThreadWork(shared_accesses=per_thread)
                continue
            work = work + ThreadWork(global_accesses=per_thread)
            unit = inst.kernel.buffer_unit(amap.access.buffer)
            if amap.exact:
                rng = m.intersect_domain(_bounded(dom, n)).range()
                unit_of[amap.buffer] = unit
                footprints[amap.buffer] = rng if amap.buffer not in footprints else footprints[amap.buffer].union(rng)
                accesses[amap.buffer] = accesses.get(amap.buffer, 0.0) + per_thread * blocks * threads
            else:  # any element: what the threads can reach at most, one access each
                fallback_bytes += per_thread * blocks * threads * unit
        global_bytes = fallback_bytes
        for buffer, rng in footprints.items():
            caps = [accesses[buffer]] + ([sizes[buffer] / unit_of[buffer]] if sizes.get(buffer) else [])
            elements = _box_elements(rng)
            global_bytes += min(caps + ([elements] if elements is not None else [])) * unit_of[buffer]
        barriers = len(inst.kernel.barriers)  # each counted once: a barrier in a loop is undercounted
        shared = sum(block_shared_bytes([inst]))
        costs.runs[idx] = runs
        costs.shapes[idx] = LaunchShape(inst.kernel.name, blocks, threads, shared, global_bytes,
                                        replace(work, barriers=float(barriers)),
                                        registers=(registers or {}).get(inst.kernel.mangled))
    return costs


def original_launches(model, costs: StatementCosts | None = None) -> list[tuple[LaunchShape, int]]:
    """The original program's launches: each statement as often as it runs."""
    costs = costs or statement_costs(model)
    return [(costs.shapes[i.statement.index], costs.runs[i.statement.index]) for i in model.launches]


def _scaled(work: ThreadWork, times: int) -> ThreadWork:
    return ThreadWork(work.global_accesses * times, work.shared_accesses * times, work.barriers * times)


def fused_shape(label: str, lanes: list[list[LaunchShape]], threads: int | None = None,
                shared_bytes: int | None = None, registers: int | None = None) -> LaunchShape:
    """One launch running ``lanes`` side by side in their own blocks, each lane's fragments
    one after another on its first fragment's grid (a fragment with more threads in all than
    that grid is re-indexed onto it: each thread runs several of its instances). ``threads``
    ``shared_bytes`` and ``registers`` are the fused kernel's, when known (without ptxas
    figures, the most any fragment needs)."""
    blocks = 0
    global_bytes = 0.0
    work = ThreadWork()
    for lane in lanes:
        anchor = lane[0].blocks * lane[0].threads
        lane_work = ThreadWork()
        for shape in lane:
            lane_work = lane_work + _scaled(shape.work, max(1, math.ceil(shape.blocks * shape.threads / anchor)))
            global_bytes += shape.global_bytes
        blocks += lane[0].blocks
        work = work.longest(lane_work)
    all_shapes = [s for lane in lanes for s in lane]
    return LaunchShape(label, blocks, threads or max(s.threads for s in all_shapes),
                       max(s.shared_bytes for s in all_shapes) if shared_bytes is None else shared_bytes,
                       global_bytes, work,
                       registers=registers or max((s.registers or 0 for s in all_shapes), default=0) or None)


def registers_of(state) -> dict[str, int]:
    """Registers per thread of the original kernels (by mangled name) and of the fused ones
    (by name), from ptxas's figures of the emitted program: the promise check's, or asked
    here where no limit needed them there; empty without nvcc."""
    figures = state.check.figures if state.check is not None else {}
    if state.check is not None and state.check.bounded:
        figures = emitted_figures(state.job, state.output)
    out = {mangled: f.registers for mangled, f in figures.items()}
    names = {k.name for k in state.fused} | {plan.name for plan in state.schedule.cooperative.values()}
    names |= {plan.name for plan in state.schedule.cell_waves.values()}
    for name in names:  # generated kernels are C++ functions: _Z<length><name>...
        key = next((m for m in figures if m.startswith(f"_Z{len(name)}{name}")), None)
        if key is not None:
            out[name] = figures[key].registers
    return out


def _cooperative_shape(name: str, threads: int, phases: tuple[LaunchShape, ...], shared_bytes: int,
                       registers: dict[str, int]) -> LaunchShape:
    """One cooperative launch running ``phases`` in order, a grid barrier between each two.
    Each phase runs its virtual blocks on the blocks of the one kernel: as many as the kernel's
    block size, its shared memory (every phase's static arrays at once, one pool for all phases:
    ``kernel_ir.phases_shared``) and its registers (the kernel's from ptxas, else the most any
    phase's kernel uses) let a multiprocessor hold,
    which is fewer than a phase's own kernel held where the others' arrays or registers crowd
    it out; a phase of larger blocks than the kernel's runs its threads in turns."""
    kernel_registers = registers.get(name) or max((p.registers or 0 for p in phases), default=0) or None
    resident = tuple(replace(p, threads=threads, shared_bytes=shared_bytes, registers=kernel_registers,
                             work=_scaled(p.work, math.ceil(p.threads / threads)) if p.threads > threads else p.work)
                     for p in phases)
    return LaunchShape(name, max(p.blocks for p in phases), threads, shared_bytes,
                       sum(p.global_bytes for p in phases), ThreadWork(), grid_syncs=len(phases) - 1,
                       registers=kernel_registers, phases=resident)


def optimized_launches(state, costs: StatementCosts | None = None) -> list[tuple[LaunchShape, int]]:
    """The launches of the optimized program, composed from the schedule of ``state``: each
    fusion group one launch per run of its first statement, a wavefront one launch per wave
    (each running its share of the cells side by side), a cooperative region one launch of
    its groups as phases, unfused statements as they were."""
    registers = registers_of(state)
    costs = costs or statement_costs(state.model, registers)
    sched = state.schedule
    grouped = {i for g in sched.groups for i in g.launches}
    grouped |= {i for plan in sched.cell_waves.values() for row in plan.repetition.statements for i in row}
    fused = {fk.group.id: fk for fk in state.fused}
    out: list[tuple[LaunchShape, int]] = []
    shapes: dict[int, tuple[LaunchShape, int]] = {}
    for g in sched.groups:
        lanes = [[costs.shapes[i] for i in lane.launches] for lane in g.lanes]
        kernel = fused.get(g.id)
        cell = fused_shape(costs.shapes[g.launches[0]].label, lanes) if kernel is None else \
            fused_shape(kernel.name, lanes, kernel.threads, kernel.static_shared + kernel.dynamic_shared,
                        registers.get(kernel.name))
        wave = sched.wavefronts.get(g.id)
        if wave is None:
            shapes[g.id] = (cell, costs.runs[g.launches[0]])
            continue
        cells = costs.runs[g.launches[0]]
        per_wave = cells / max(wave.waves, 1)
        shapes[g.id] = (replace(cell, blocks=math.ceil(cell.blocks * per_wave),
                                global_bytes=cell.global_bytes * per_wave), wave.waves)
    for launch in state.program.of_kind(CellWavesLaunch):  # each wave one launch: its share of the cells
        # side by side
        plan, rep = launch.plan, launch.plan.repetition
        per_wave = rep.steps * rep.copies / plan.waves
        phases = tuple(replace(shapes[p][0], blocks=math.ceil(shapes[p][0].blocks * per_wave),
                               global_bytes=shapes[p][0].global_bytes * per_wave) for p in plan.phases)
        if plan.persistent:  # one launch: every wave's phases, a grid barrier between each two
            phases = phases * plan.waves
        shared = sum(phases_shared(list(launch.phases)))
        out.append((_cooperative_shape(plan.name, plan.threads, phases, shared, registers), plan.launches))
    in_cells = {p for plan in sched.cell_waves.values() for p in plan.phases}
    cooperative_shared = {launch.plan.region: sum(phases_shared(list(launch.phases)))
                          for launch in state.program.of_kind(CooperativeLaunch)}
    for g in sched.groups:
        plan = sched.cooperative.get(g.region)
        if g.id in in_cells:
            continue
        if plan is None:
            out.append(shapes[g.id])
        elif g.id == plan.phases[0]:  # the region's one cooperative launch, as often as its first phase ran
            phases = tuple(shapes[p][0] for p in plan.phases)
            out.append((_cooperative_shape(plan.name, plan.threads, phases, cooperative_shared[g.region], registers),
                        shapes[g.id][1]))
    for inst in state.model.launches:
        if inst.statement.index not in grouped:
            out.append((costs.shapes[inst.statement.index], costs.runs[inst.statement.index]))
    return out


def compulsory_bytes(model) -> int | None:
    """Bytes of global memory every run must move at least: each element any launch
    touches, once (inputs read, outputs written, intermediates written once). None when an
    access the analysis cannot place (a data-dependent index) reaches a buffer whose size
    is not known."""
    footprints: dict[str, object] = {}
    units: dict[str, int] = {}
    whole: set[str] = set()
    for inst in model.launches:
        stmt = inst.statement
        host = _host_domain_params(stmt)
        for amap in inst.maps:
            if amap.access.space == "shared":
                continue
            if not amap.exact:
                whole.add(amap.buffer)
                continue
            m = isl.Map(amap.isl)
            rng = m.range()
            if host is not None:
                rng = rng.intersect_params(host.align_params(rng.get_space()))
            rng = rng.project_out(isl.dim_type.param, 0, rng.dim(isl.dim_type.param))
            rng = _bounded(rng, rng.dim(isl.dim_type.set))
            units[amap.buffer] = inst.kernel.buffer_unit(amap.access.buffer)
            footprints[amap.buffer] = rng if amap.buffer not in footprints else footprints[amap.buffer].union(rng)
    sizes = _allocation_sizes(model)
    total = 0
    for buffer in whole:
        if sizes.get(buffer) is None:
            return None
        total += sizes[buffer]
    for buffer, rng in footprints.items():
        if buffer in whole:
            continue
        count = _box_elements(rng)
        if count is None:
            if sizes.get(buffer) is None:
                return None
            total += sizes[buffer]
            continue
        bytes_ = count * units[buffer]
        total += min(bytes_, sizes[buffer]) if sizes.get(buffer) else bytes_
    return total


def _allocation_sizes(model) -> dict[str, int | None]:
    return {a.name: _dim_value(a.bytes) for a in model.host.allocations}


def _host_domain_params(stmt):
    """The statement's host loop domain as a parameter set (the maps' host iterators are parameters)."""
    if host_domain(stmt) is None:
        return None
    return isl.Set(f"[{', '.join(stmt.loops)}] -> {{ : {stmt.domain.to_isl()} }}")


def predict_program(state, gpu: Target = H100) -> tuple[Prediction, Prediction]:
    """(original, optimized) predictions for an optimizer state after the pipeline ran."""
    costs = statement_costs(state.model, registers_of(state))
    notes = tuple(costs.notes)
    return (predict(original_launches(state.model, costs), gpu, notes),
            predict(optimized_launches(state, costs), gpu, notes))
