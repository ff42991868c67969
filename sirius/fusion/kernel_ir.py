"""The fused-kernel IR: what a fused kernel is, between the schedule and the text.

``lower`` builds one ``KernelIR`` per fused group of the schedule: its
parameters (each bound to one parameter of one fragment, with the allocation
and offset the alias facts give), its lanes (a range of the fused grid's
blocks running a sequence of fragments, each with its own launch shape and, when
re-indexed onto the lane's threads, the isl map that does it), the shared
arrays its fragments use, and for a wavefront the plan of its waves. Lowering
places no barriers: the passes after it (``fusion.barriers``, the promises) add
and remove what they prove, and code generation prints the result.
``format_kernel`` prints the IR itself, for tests and ``--print-after``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from sirius.analysis.program_model import LaunchInstance, ProgramModel
from sirius.fusion.promises import fused_param_name, strip_restrict
from sirius.core.target import needs_shared_opt_in
from sirius.fusion.schedule import FusionGroup, Schedule, static_shared_bytes

Dim3 = tuple[int, int, int]


@dataclass(frozen=True)
class Param:
    """A parameter of the fused kernel: parameter ``position`` of the fragment of ``launch``."""

    name: str
    ctype: str  # as the fragment's kernel declares it (its __restrict__ included)
    launch: int
    position: int
    pointer: bool
    allocation: str | None = None  # the allocation the argument points into (alias facts)
    offset: str | None = None  # its byte offset there, as C in the host loop iterators
    restrict: bool = False  # keeps the kernel's __restrict__ (set by the promises pass)
    # set by host constant propagation: the kernel defines the parameter itself, as this
    # integer, or as ``base`` (another parameter, into the same allocation) plus ``delta`` bytes
    constant: int | None = None
    base: str | None = None
    delta: int = 0

    @property
    def declared(self) -> str:
        """The declaration in the fused kernel's parameter list."""
        return f"{self.ctype if self.restrict else strip_restrict(self.ctype)} {self.name}"

    @property
    def passed(self) -> bool:
        """The host passes it (it is not defined inside the kernel)."""
        return self.constant is None and self.base is None

    @property
    def definition(self) -> str | None:
        """The statement that defines it inside the kernel, if the host does not pass it."""
        if self.constant is not None:
            value = self.constant if -2**31 <= self.constant < 2**31 else f"{self.constant}LL"
            return f"constexpr {strip_restrict(self.ctype)} {self.name} = {value};"
        if self.base is not None:
            # never restrict: it is based on ``base``, whose promise (if any) covers its accesses,
            # and a local's promise is one the check of the emitted program could not see
            t = strip_restrict(self.ctype)
            return f"{t} {self.name} = ({t})((const char*){self.base} + {self.delta});"
        return None


@dataclass(frozen=True)
class Fragment:
    """One launch's kernel run inside the fused kernel."""

    launch: int
    kernel: str  # the kernel's readable name
    grid: Dim3  # the launch's own shape, which the fragment sees as gridDim/blockDim
    block: Dim3
    args: tuple[str, ...]  # the fused kernel's parameters it is called with
    reindex: str | None = None  # isl map: lane anchor's (block, thread) -> this launch's instance
    reindex_needs_barrier: bool = False  # a same-block dependence remains after re-indexing
    shared: tuple[str, ...] = ()  # shared arrays it uses (symbols; "extern" for dynamic)
    removed_barriers: tuple[int, ...] = ()  # source lines of its own barriers left out (they order nothing)
    pooled: bool = False  # its static shared arrays lie in the kernel's pool (fusion.shared_overlay)
    pool_offset: int = 0  # from this byte of the pool


@dataclass(frozen=True)
class Ordering:
    """What a barrier orders: ``after`` must see what ``before`` did to ``what``."""

    kind: str  # "block dependence", "re-indexed dependence" or "shared array reuse"
    before: int  # launches
    after: int
    what: str  # the buffer or shared array


@dataclass(frozen=True)
class Barrier:
    """``__syncthreads()`` between two fragments of a lane, and why it is there."""

    orders: tuple[Ordering, ...]


@dataclass(frozen=True)
class Lane:
    """Blocks ``first_block`` .. ``first_block + blocks - 1`` of the fused grid, each running
    the sequence ``body`` as a block of ``grid`` x ``block`` (the first fragment's shape)."""

    first_block: int
    grid: Dim3
    block: Dim3
    body: tuple[Fragment | Barrier, ...]

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def fragments(self) -> tuple[Fragment, ...]:
        return tuple(s for s in self.body if isinstance(s, Fragment))


@dataclass(frozen=True)
class SharedArray:
    """A shared array a block of the fused kernel holds, and which fragments use it."""

    symbol: str
    bytes: int
    dynamic: bool
    users: tuple[int, ...]  # launches, in lane order


@dataclass(frozen=True)
class KernelIR:
    name: str
    group: FusionGroup
    params: tuple[Param, ...]
    lanes: tuple[Lane, ...]
    threads: int  # threads per block: the kernel's __launch_bounds__
    shared: tuple[SharedArray, ...] = ()
    static_shared: int = 0  # bytes per block
    dynamic_shared: int = 0
    grid_text: str = ""  # launch configuration as the host writes it
    block_text: str = ""
    wave: object | None = None  # a wave kernel's Wavefront, or a phase's fusion.cell_waves.CellWaves
    assumptions: tuple[str, ...] = ()  # run-time conditions guarding the fused launches (C)
    constant_shapes: bool = False  # fragments see their launch shape as constants, not blockDim/gridDim
    pool: int = 0  # bytes of the shared pool pooled fragments share (0: none)

    @property
    def restrict(self) -> frozenset[str]:
        """The parameters declared ``__restrict__`` in the emitted kernel (one the kernel
        defines itself never is)."""
        return frozenset(p.name for p in self.params if p.restrict and p.passed)

    @property
    def barriers(self) -> int:
        return sum(isinstance(s, Barrier) for lane in self.lanes for s in lane.body)

    @property
    def shared_opt_in(self) -> bool:
        """The launch needs cudaFuncSetAttribute(MaxDynamicSharedMemorySize) first."""
        return needs_shared_opt_in(self.static_shared, self.dynamic_shared)

    def params_of(self, launch: int) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.launch == launch)


def phases_shared(phases: list[KernelIR]) -> tuple[int, int]:
    """Static and dynamic shared bytes per block of one kernel running ``phases`` one after
    another (a cooperative kernel, waves of cells). Static arrays live for the whole kernel:
    each counts once (a helper's array is one, whichever phase calls it), and each phase's
    pool (``shared_overlay``) is an array of its own, printed per phase. The dynamic area is
    reused by every phase: as large as the largest."""
    arrays: dict = {}
    for k in phases:
        for a in k.shared:
            if not a.dynamic:
                arrays[(k.group.id, a.symbol) if a.symbol == "sirius_pool" else a.symbol] = a.bytes
    return sum(arrays.values()), max(k.dynamic_shared for k in phases)


def argument_of(p: Param, insts: dict[int, LaunchInstance]):
    """What the host passes for ``p`` at its launch (an ``ArgValue``; None where the kernel
    has no such parameter or the host model has no binding for it)."""
    kernel_params = insts[p.launch].kernel.params
    if p.position >= len(kernel_params):
        return None
    return dict(insts[p.launch].bindings).get(kernel_params[p.position].name)


def each_kernel(kernels: list[KernelIR], change: Callable[[KernelIR], tuple[KernelIR, list[str]]]
                ) -> tuple[list[KernelIR], list[str]]:
    """A kernel pass applied to every fused kernel but the wave kernels (whose arguments the
    wave computes from its iterators): ``change(k)`` gives the kernel and what it changed,
    reported as one ``NAME: what; what`` line per changed kernel."""
    out, report = [], []
    for k in kernels:
        if k.wave is not None:
            out.append(k)
            continue
        changed, what = change(k)
        out.append(changed)
        if what:
            report.append(f"{k.name}: " + "; ".join(what))
    return out, report


# ------------------------------------------------------------------ lowering

def _params(inst: LaunchInstance, decl) -> tuple[Param, ...]:
    bindings = dict(inst.bindings)
    out = []
    for j, (pname, ptype) in enumerate(decl.params):
        kernel_param = inst.kernel.params[j] if j < len(inst.kernel.params) else None
        arg = bindings.get(kernel_param.name) if kernel_param is not None else None
        buffer = arg is not None and arg.kind == "buffer"
        out.append(Param(fused_param_name(inst.statement.index, j, pname), ptype, inst.statement.index, j,
                         bool(kernel_param and kernel_param.is_pointer),
                         arg.buffer if buffer else None,
                         arg.offset.to_c() if buffer and arg.offset is not None else None))
    return tuple(out)


def _fragment(inst: LaunchInstance, names: tuple[str, ...], reindex: str | None, barrier: bool) -> Fragment:
    s = inst.statement
    return Fragment(s.index, inst.kernel.name, s.grid.constant(), s.block.constant(), names, reindex, barrier,
                    tuple(dict.fromkeys("extern" if a.dynamic else a.symbol for a in inst.kernel.shared)))


def _shared_arrays(lanes: tuple[Lane, ...], insts) -> tuple[SharedArray, ...]:
    arrays: dict[str, SharedArray] = {}
    for lane in lanes:
        for f in lane.fragments:
            for a in insts[f.launch].kernel.shared:
                key = "extern" if a.dynamic else a.symbol
                old = arrays.get(key)
                users = (old.users if old else ()) + (f.launch,)
                arrays[key] = SharedArray(key, a.bytes or 0, a.dynamic, users)
    return tuple(arrays.values())


def lower_group(model: ProgramModel, schedule: Schedule, group: FusionGroup) -> KernelIR:
    """The fused kernel of ``group``, without barriers."""
    insts = model.instances()
    params: list[Param] = []
    for idx in group.launches:
        params += _params(insts[idx], model.kernel_decls[insts[idx].kernel.mangled])
    names = {idx: tuple(p.name for p in params if p.launch == idx) for idx in group.launches}
    lanes, start = [], 0
    for lane in group.lanes:
        first = insts[lane.launches[0]].statement
        body = tuple(_fragment(insts[idx], names[idx], lane.reindex[pos] if lane.reindex else None,
                               bool(lane.reindex_barrier and lane.reindex_barrier[pos]))
                     for pos, idx in enumerate(lane.launches))
        lanes.append(Lane(start, first.grid.constant(), first.block.constant(), body))
        start += lanes[-1].blocks
    wave = schedule.wavefronts.get(group.id) or next(
        (plan for plan in schedule.cell_waves.values() if group.id in plan.phases), None)
    first = insts[group.launches[0]].statement
    threads = max(lane.threads for lane in lanes)
    kernels = [insts[i].kernel for i in group.launches]
    dynamic = max(insts[i].statement.shmem.constant_value() for i in group.launches)
    if wave is not None:
        name, grid, block = f"sirius_wave_{group.id}" if group.id in schedule.wavefronts else wave.name, "", ""
    elif len(lanes) == 1:
        name, grid, block = f"sirius_fused_{group.id}", f"sirius_g{first.index}", f"sirius_b{first.index}"
    else:
        name, grid, block = f"sirius_fused_{group.id}", f"dim3({start})", f"dim3({threads})"
    return KernelIR(name, group, tuple(params), tuple(lanes), threads, _shared_arrays(tuple(lanes), insts),
                    static_shared_bytes(kernels), dynamic, grid, block, wave)


def lower(model: ProgramModel, schedule: Schedule) -> list[KernelIR]:
    """One fused kernel per group of more than one launch, and per group of a region run as
    one cooperative launch (each such group is a phase of it), in the schedule's order."""
    return [lower_group(model, schedule, g) for g in schedule.groups
            if len(g.launches) > 1 or g.region in schedule.cooperative
            or any(g.id in plan.phases for plan in schedule.cell_waves.values())]


# ------------------------------------------------------------------ printing the IR

def _dims(d: Dim3) -> str:
    return "x".join(str(v) for v in d)


def format_kernel(k: KernelIR) -> str:
    """The IR of one fused kernel as text: one line per parameter, lane, fragment, barrier."""
    lines = [f"kernel {k.name} (group {k.group.id}, {k.group.arrangement}"
             + (", wavefront" if k.wave is not None else "") + f"): {k.threads} threads, "
             f"shared {k.static_shared} static + {k.dynamic_shared} dynamic bytes"]
    for p in k.params:
        where = f" -> {p.allocation} + {p.offset}" if p.allocation else ""
        folded = (f" = {p.constant}" if p.constant is not None else
                  f" = {p.base} + {p.delta} bytes" if p.base is not None else "")
        lines.append(f"  param {p.name}: {strip_restrict(p.ctype)}" + (" restrict" if p.restrict else "")
                     + where + folded)
    if k.constant_shapes:
        lines.append("  shapes: constants")
    for a in k.shared:
        lines.append(f"  shared {a.symbol}: {a.bytes} bytes" + (" dynamic" if a.dynamic else "")
                     + f", used by {', '.join(f'S{u}' for u in a.users)}")
    for lane in k.lanes:
        lines.append(f"  lane blocks [{lane.first_block}, {lane.first_block + lane.blocks}): "
                     f"grid {_dims(lane.grid)} block {_dims(lane.block)}")
        for s in lane.body:
            if isinstance(s, Barrier):
                why = "; ".join(f"{o.kind} S{o.before} -> S{o.after}" + (f" on {o.what}" if o.what else "")
                                for o in s.orders)
                lines.append(f"    barrier: {why}")
            else:
                how = (" re-indexed" if s.reindex else "") + (f" pooled at {s.pool_offset}" if s.pooled else "")
                lines.append(f"    S{s.launch} {s.kernel}{how} grid {_dims(s.grid)} block {_dims(s.block)}"
                             f" ({', '.join(s.args)})")
                if s.removed_barriers:
                    lines.append(f"      own barriers removed at lines {', '.join(map(str, s.removed_barriers))}")
    return "\n".join(lines) + "\n"
