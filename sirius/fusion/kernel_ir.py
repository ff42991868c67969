"""The fused-kernel IR: what the optimized program launches in place of the original
launches, between the schedule and the text.

A ``FusedProgram`` is a sequence of fused launches, one typed value per kind:

- ``FusedKernelLaunch``: one fused kernel launched where the region's launches stood;
- ``WavefrontLaunch``: one kernel launched once per anti-diagonal of a host loop nest;
- ``CooperativeLaunch``: one cooperative kernel running the fused kernels of a region as
  phases, a grid barrier between them;
- ``CellWavesLaunch``: one cooperative kernel per wave of (step, layer) cells of a host
  loop (or one for every wave), the cell's fused kernels as its phases.

Each holds its fused kernels (``KernelIR``): parameters (each bound to one parameter of
one fragment, with the allocation and offset the alias facts give), lanes (a range of
the fused grid's blocks running a sequence of fragments, each with its own launch shape
and, when re-indexed onto the lane's threads, the isl map that does it) and the shared
arrays its fragments use. ``fusion.lowering`` builds the program without barriers; the
passes after it (``fusion.barriers``, the promises, the kernel passes) add and remove
what they prove, and code generation prints the result. ``fusion.ir_text`` prints the
IR itself (for tests and ``--print-after``) and reads the kernels back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from enum import Enum
from typing import TYPE_CHECKING, Callable, Union

from sirius.analysis.program_model import LaunchInstance
from sirius.core.target import needs_shared_opt_in
from sirius.fusion.fragment_text import strip_restrict
from sirius.fusion.schedule import FusionGroup

if TYPE_CHECKING:
    from sirius.fusion.cell_waves import CellWaves
    from sirius.fusion.cooperative import CooperativeRegion
    from sirius.fusion.wavefront import Wavefront

Dim3 = tuple[int, int, int]


@dataclass(frozen=True)
class FusedParam:
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
class Reindexing:
    """How a fragment re-indexed onto its lane's threads runs: ``sigma``, the isl map from
    the lane anchor's (block, thread) to this launch's instance, and as C over the anchor's
    six coordinates (``sirius_p0`` .. ``sirius_p5``, block x, y, z then thread x, y, z) the
    ``condition`` under which a thread runs an instance and that instance's ``coordinates``."""

    sigma: str
    condition: str
    coordinates: tuple[str, ...]


@dataclass(frozen=True)
class Fragment:
    """One launch's kernel run inside the fused kernel."""

    launch: int
    kernel: str  # the kernel's readable name
    grid: Dim3 | None  # the launch's own shape, which the fragment sees as gridDim/blockDim
    block: Dim3  # (grid None: the host computes it at run time)
    args: tuple[str, ...]  # the fused kernel's parameters it is called with
    reindex: Reindexing | None = None  # how it runs on the lane's threads, when re-indexed onto them
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
class LaneBarrier:
    """``__syncthreads()`` between two fragments of a lane, and why it is there."""

    orders: tuple[Ordering, ...]


@dataclass(frozen=True)
class Lane:
    """Blocks ``first_block`` .. ``first_block + blocks - 1`` of the fused grid, each running
    the sequence ``body`` as a block of ``grid`` x ``block`` (the first fragment's shape).
    ``grid`` None: the host computes the first fragment's grid at run time, and the guard
    checks every fragment's grid equal to it (``fusion.guards.lane_grid_conditions``). A
    fused kernel of one such lane is launched in that grid; beside other lanes or in a
    phase, the kernel reads it from ``grid_parameter`` (passed by the host; computed from
    the step in a phase of cells) and the lane's blocks follow those before it:
    ``first_block`` counts the blocks of the constant lanes before it, and the kernel adds
    those of the run-time lanes before it (``KernelIR.run_time_lanes``)."""

    first_block: int
    grid: Dim3 | None
    block: Dim3
    body: tuple[Fragment | LaneBarrier, ...]

    @property
    def blocks(self) -> int | None:
        return None if self.grid is None else self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def fragments(self) -> tuple[Fragment, ...]:
        return tuple(s for s in self.body if isinstance(s, Fragment))

    @property
    def grid_parameter(self) -> str:
        """The fused kernel's parameter holding the grid of a lane computed at run time,
        beside other lanes; the host passes its first fragment's grid temporary."""
        return grid_parameter(self.fragments[0].launch)


@dataclass(frozen=True)
class BlockSharedArray:
    """A shared array a block of the fused kernel holds, and which fragments use it."""

    symbol: str
    bytes: int
    dynamic: bool
    users: tuple[int, ...]  # launches, in lane order


class KernelRole(Enum):
    """How the optimized program runs a fused kernel."""

    FUSED = "fused"  # launched as it is, where its region's launches stood
    PHASE = "cooperative phase"  # a phase of a cooperative kernel
    WAVEFRONT = "wavefront"  # once per cell of an anti-diagonal of a loop nest
    CELL_PHASE = "cell phase"  # a phase of the cells of a wave of cells

    @property
    def per_cell(self) -> bool:
        """The kernel runs once per cell of a wave: its arguments are computed from the
        wave's iterators, and its fragments run for every launch of the loop, not one."""
        return self in (KernelRole.WAVEFRONT, KernelRole.CELL_PHASE)


@dataclass(frozen=True)
class KernelIR:
    name: str
    group: FusionGroup
    params: tuple[FusedParam, ...]
    lanes: tuple[Lane, ...]
    threads: int  # threads per block: the kernel's __launch_bounds__
    shared: tuple[BlockSharedArray, ...] = ()
    static_shared: int = 0  # bytes per block
    dynamic_shared: int = 0
    grid_text: str = ""  # launch configuration as the host writes it
    block_text: str = ""
    role: KernelRole = KernelRole.FUSED
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
        return sum(isinstance(s, LaneBarrier) for lane in self.lanes for s in lane.body)

    @property
    def shared_opt_in(self) -> bool:
        """The launch needs cudaFuncSetAttribute(MaxDynamicSharedMemorySize) first."""
        return needs_shared_opt_in(self.static_shared, self.dynamic_shared)

    def params_of(self, launch: int) -> tuple[FusedParam, ...]:
        return tuple(p for p in self.params if p.launch == launch)

    @property
    def run_time_lanes(self) -> tuple[Lane, ...]:
        """The lanes whose grid the kernel reads from ``Lane.grid_parameter``: those computed
        at run time, where the kernel has more than one lane or is a phase (the host passes
        the grid; a phase of cells computes it from the step in each wave). A fused kernel
        of one lane is launched in its grid, which it reads as ``gridDim``."""
        passed = len(self.lanes) > 1 or self.role in (KernelRole.PHASE, KernelRole.CELL_PHASE)
        return tuple(lane for lane in self.lanes if lane.grid is None) if passed else ()


@dataclass(frozen=True)
class LaunchCheck:
    """What the checking run of a loop compares at one of its launches: ``declare`` (C
    declarations first: the wave's iterators as the loop names them), then ``conditions``."""

    launch: int
    declare: str
    conditions: tuple[str, ...]


@dataclass(frozen=True)
class LoopGuard:
    """The run-time test of a loop run as waves (``fusion.guards``): the ``build``
    conditions, then the loop once without launching, each launch's ``checks``, and
    ``expected`` launches issued."""

    build: tuple[str, ...]
    checks: tuple[LaunchCheck, ...]
    expected: int

    @property
    def conditions(self) -> tuple[str, ...]:
        return self.build + tuple(c for check in self.checks for c in check.conditions)


@dataclass(frozen=True)
class Issue:
    """What a rewritten region issues for one group of the schedule: its fused kernel, or
    for a group of one launch statement (``alone``), that launch as written."""

    group: int
    alone: int | None = None


@dataclass(frozen=True)
class HostRegion:
    """A region of the original program whose launches the optimized program rewrites:
    each launch's arguments and configuration evaluated where it stood; at the last, when
    ``guard`` holds (``fusion.guards``), ``issued`` in order (or the region's cooperative
    launch), else the original launches."""

    region: int
    launches: tuple[int, ...]  # launch statements, in program order
    issued: tuple[Issue, ...]  # the schedule's groups of the region, in order
    guard: tuple[str, ...] = ()


@dataclass(frozen=True)
class FusedKernelLaunch:
    """A fused kernel launched where its region's launches stood."""

    kernel: KernelIR

    @property
    def kernels(self) -> tuple[KernelIR, ...]:
        return (self.kernel,)


@dataclass(frozen=True)
class WavefrontLaunch:
    """The kernel of a loop nest's cells, launched once per anti-diagonal (``plan``)."""

    kernel: KernelIR
    plan: Wavefront
    guard: LoopGuard | None = None

    @property
    def kernels(self) -> tuple[KernelIR, ...]:
        return (self.kernel,)


@dataclass(frozen=True)
class CooperativeLaunch:
    """One cooperative kernel running a region's fused kernels as ``phases``, in order."""

    plan: CooperativeRegion
    phases: tuple[KernelIR, ...]

    @property
    def kernels(self) -> tuple[KernelIR, ...]:
        return self.phases


@dataclass(frozen=True)
class CellWavesLaunch:
    """The cooperative kernel of a loop run as waves of cells (``plan``: the repetition,
    the wave loop, the block), a cell's fused kernels as its ``phases``."""

    plan: CellWaves
    phases: tuple[KernelIR, ...]
    guard: LoopGuard | None = None

    @property
    def kernels(self) -> tuple[KernelIR, ...]:
        return self.phases


FusedLaunch = Union[FusedKernelLaunch, WavefrontLaunch, CooperativeLaunch, CellWavesLaunch]


@dataclass(frozen=True)
class FusedProgram:
    """The fused launches of the optimized program, in the schedule's order of their
    first kernels, and the regions of the original program where they replace launches
    (a wavefront and waves of cells replace their loop)."""

    launches: tuple[FusedLaunch, ...] = ()
    regions: tuple[HostRegion, ...] = ()

    def kernels(self) -> list[KernelIR]:
        """Every fused kernel, in the schedule's order: what kernel passes transform."""
        return [k for launch in self.launches for k in launch.kernels]

    def with_kernels(self, kernels: list[KernelIR]) -> FusedProgram:
        """The program with each kernel replaced by the one of ``kernels`` of its group; a
        launch one of whose kernels is missing (a group taken back) is left out."""
        by_group = {k.group.id: k for k in kernels}
        out: list[FusedLaunch] = []
        for launch in self.launches:
            new = tuple(by_group.get(k.group.id) for k in launch.kernels)
            if any(k is None for k in new):
                continue
            if isinstance(launch, (FusedKernelLaunch, WavefrontLaunch)):
                out.append(replace(launch, kernel=new[0]))
            else:
                out.append(replace(launch, phases=new))
        return FusedProgram(tuple(out), self.regions)

    def of_kind(self, kind: type) -> list:
        return [launch for launch in self.launches if isinstance(launch, kind)]


def grid_parameter(launch: int) -> str:
    """The name under which a kernel reads the grid of ``launch`` computed at run time (a
    parameter the host passes, or what a phase of cells computes for its step)."""
    return f"sirius_grid{launch}"


def passed_in_order(kernels: list[KernelIR]) -> list[FusedParam | Lane]:
    """What the host passes to the kernel running ``kernels`` (a fused kernel, or the phases
    of a cooperative one), in the order of its parameters: the fragments' arguments, then
    the grids of the lanes computed at run time (``KernelIR.run_time_lanes``)."""
    return [p for k in kernels for p in k.params if p.passed] + [lane for k in kernels for lane in k.run_time_lanes]


def host_grid(lane: Lane) -> str:
    """The host's temporary holding a lane's grid: its first launch's, evaluated where that
    launch stood (``fusion.host_text``)."""
    return f"sirius_g{lane.fragments[0].launch}"


def lane_ranges(k: KernelIR, grid_of: Callable[[Lane], str]) -> list[tuple[str, str]]:
    """Each lane's first block in the fused grid and the block after its last, as C:
    constants until a lane of a run-time grid, then sums with the block counts of those
    grids (``grid_of(lane)``: the C name of the ``dim3`` holding a run-time lane's grid)."""
    added: list[str] = []
    ranges = []
    def total(constant: int) -> str:
        return " + ".join(([f"{constant}u"] if constant or not added else []) + added)

    for lane in k.lanes:
        start = total(lane.first_block)
        if lane.grid is None:
            g = grid_of(lane)
            added.append(f"{g}.x * {g}.y * {g}.z")
        ranges.append((start, total(lane.first_block + (lane.blocks or 0))))
    return ranges


def base_pointer(buffer: str) -> str:
    """The name generated code gives the base pointer of allocation ``buffer``."""
    return "sirius_base_" + re.sub(r"\W", "_", buffer)


def phases_pool(phases: list[KernelIR]) -> int:
    """Bytes of the one shared pool of a kernel running ``phases`` one after another (a
    cooperative kernel, waves of cells; a plain fused kernel is one phase): the largest
    phase's. No phase reads what another left there: every block passes a barrier after
    each virtual block a phase runs and a grid barrier between two phases, and a fragment
    never reads pooled bytes it did not write (``shared_overlay``)."""
    return max((k.pool for k in phases), default=0)


def phases_shared(phases: list[KernelIR]) -> tuple[int, int]:
    """Static and dynamic shared bytes per block of one kernel running ``phases`` one after
    another (a cooperative kernel, waves of cells). Static arrays live for the whole kernel:
    each counts once (a helper's array is one, whichever phase calls it), and the pool once,
    as large as the largest phase needs (``phases_pool``). The dynamic area is reused by
    every phase: as large as the largest."""
    arrays = {a.symbol: a.bytes for k in phases for a in k.shared if not a.dynamic and a.symbol != "sirius_pool"}
    return sum(arrays.values()) + phases_pool(phases), max(k.dynamic_shared for k in phases)


def argument_of(p: FusedParam, insts: dict[int, LaunchInstance]):
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
        if k.role.per_cell:
            out.append(k)
            continue
        changed, what = change(k)
        out.append(changed)
        if what:
            report.append(f"{k.name}: " + "; ".join(what))
    return out, report
