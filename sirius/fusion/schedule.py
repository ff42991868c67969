"""Fusion schedule: which launches become one launch, and how they are arranged.

Works region by region. A region is a run of launch statements in one host
loop body with nothing but straight-line host code between them (no other
CUDA runtime call but synchronizations the host observes nothing through, see
``analysis.host_observation``; no control flow); inside a region launches may be
reordered as long as every same-iteration dependence of the UAR keeps its
direction, because dependences carried by host loops are untouched.

1. *Vertical* (local fusion, P1): launches with the same grid and block
   joined by thread- or block-level dependences, or independent, run one
   after another in the same thread (``fusion.barriers`` then places the
   ``__syncthreads()`` a block-level dependence between two of them needs).
2. *Global schedule* (P2): isl's scheduler places the groups left after
   local fusion in time steps, with their dependences as validity and
   proximity constraints (``fusion.global_schedule``); groups run in the order
   of their steps.
3. *Horizontal* (P3): groups on the same time step, which have no dependence
   path between them, run in different blocks of one launch (grid = sum of
   grids, dispatch on the block index).

A global dependence is never fused across (P2). Every launch left alone, or
group split, is reported with its reason; what cannot be proven safe is not
fused.

Legality and choice are apart. The checks (``_RegionLegality``) answer whether
one merge may be made, with a ``Problem`` (a ``RefusalKind`` and the text the
report shows) when it may not; the scheduler (``_RegionScheduler``) proposes the
merges in a fixed order and asks the fusion policy (``fusion.policies``) about
each legal one; a merge the policy declines is a refusal of kind ``POLICY``.
The default policy, greedy, takes every legal merge: first fit in program order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

import islpy as isl
import networkx as nx

from sirius.analysis.host_model import HostStatement
from sirius.analysis.host_observation import WAITING_SYNCS, Observer, observes_nothing, sync_observers
from sirius.analysis.program_model import LaunchInstance, ProgramModel
from sirius.analysis.program_model import instance_maps
from sirius.analysis.uar import REINDEX_OPERATION_BUDGET, UAR, Dependence, is_mapping_kernel, isl_budget
from sirius.core.target import target_for
from sirius.fusion.global_schedule import time_steps
from sirius.fusion.policies import (FusionPolicy, Greedy, Merge, MergeKind, accepts, begin_program, declined,
                                    priority_of)

SIX = ("bx", "by", "bz", "tx", "ty", "tz")

ARRANGEMENTS = ("auto", "vertical", "horizontal")


@dataclass(frozen=True)
class Lane:
    """Fragments one block runs in order (barriers between them are placed later, by
    ``fusion.barriers``).

    ``reindex[i]``, when set, is an isl map from the lane's first launch's
    (block, thread) coordinates to the instance of fragment i that such a
    thread runs (a mapping kernel re-indexed onto the first launch's shape);
    ``reindex_barrier[i]`` says a dependence of that fragment on an earlier one
    stays within a block, not within a thread, after re-indexing.
    """

    launches: tuple[int, ...]  # statement indices
    reindex: tuple[str | None, ...] = ()
    reindex_barrier: tuple[bool, ...] = ()


@dataclass(frozen=True)
class FusionGroup:
    id: int
    region: int
    lanes: tuple[Lane, ...]
    step: int = 0  # time step in the region's global schedule (P2)

    @property
    def launches(self) -> tuple[int, ...]:
        return tuple(i for lane in self.lanes for i in lane.launches)

    @property
    def arrangement(self) -> str:
        if len(self.launches) == 1:
            return "single"
        if len(self.lanes) == 1:
            return "vertical"
        if all(len(lane.launches) == 1 for lane in self.lanes):
            return "horizontal"
        return "hybrid"


class RefusalKind(Enum):
    """What kind of reason keeps launches apart: code decides on the kind, the report shows the
    text that goes with it."""

    # a launch cannot be a fragment of a fused kernel at all
    NOT_A_FRAGMENT = "not-a-fragment"
    # a region ends between two launches
    HOST_STATEMENT = "host-statement"
    UNREWRITABLE_LAUNCH = "unrewritable-launch"
    LOOP_NEST = "loop-nest"
    HOST_FUNCTION = "host-function"
    CONTROL_FLOW = "control-flow"
    # one merge is not legal
    HORIZONTAL_GROUP = "horizontal-group"  # vertical: a side already runs lanes side by side
    SHAPE_UNKNOWN = "shape-unknown"
    SHAPE_DIFFERS = "shape-differs"
    NOT_REINDEXABLE = "not-reindexable"
    WIDE_DEPENDENCE = "wide-dependence"  # neither thread- nor block-level
    DEPENDENCE_PATH = "dependence-path"  # through a launch between them: merging would make a cycle
    EARLY_EXIT = "early-exit"
    DYNAMIC_SHARED = "dynamic-shared"
    SHARED_MEMORY = "shared-memory"
    DEPENDENT = "dependent"  # horizontal: a dependence joins them
    BLOCK_TOO_LARGE = "block-too-large"
    BLOCK_SIZES_DIFFER = "block-sizes-differ"
    PARTIAL_WARPS = "partial-warps"
    INDEX_HELPERS = "index-helpers"
    # the merge is legal and was not made
    DIFFERENT_STEPS = "different-steps"  # isl's global schedule puts them apart
    ARRANGEMENT = "arrangement"  # --arrangement vertical does not place launches side by side
    POLICY = "policy"  # the fusion policy declined it
    # refused after the schedule (wavefront, cooperative launch, promise check)
    LATER_STAGE = "later-stage"
    NO_WAVES = "no-waves"  # a loop body's copies of one pattern are not run as waves of cells

    @property
    def legal(self) -> bool:
        """The merge was legal; a choice (schedule, arrangement, policy) left it out."""
        return self in (RefusalKind.DIFFERENT_STEPS, RefusalKind.ARRANGEMENT, RefusalKind.POLICY)


@dataclass(frozen=True)
class Problem:
    """Why a merge is not made: its kind, and the text the report shows."""

    kind: RefusalKind
    text: str


@dataclass(frozen=True)
class Refusal:
    """Launches kept apart (two that follow one another, a region, or one launch that cannot
    be a fragment), why, and the kind of that reason (``LATER_STAGE`` for refusals the
    stages after the schedule make, which give text only)."""

    launches: tuple[int, ...]
    reason: str
    kind: RefusalKind = RefusalKind.LATER_STAGE

    @classmethod
    def of(cls, launches, problem: Problem) -> "Refusal":
        return cls(tuple(launches), problem.text, problem.kind)


@dataclass(frozen=True)
class Region:
    id: int
    launches: tuple[int, ...]
    loops: tuple[str, ...]
    crossed: tuple[int, ...] = ()  # synchronizations between its launches that observe nothing


@dataclass
class Schedule:
    regions: list[Region] = field(default_factory=list)
    groups: list[FusionGroup] = field(default_factory=list)  # in execution order
    refusals: list[Refusal] = field(default_factory=list)
    wavefronts: dict = field(default_factory=dict)  # group id -> fusion.wavefront.Wavefront
    cooperative: dict = field(default_factory=dict)  # region id -> fusion.cooperative.CooperativeRegion
    cell_waves: dict = field(default_factory=dict)  # region id -> fusion.cell_waves.CellWaves

    def group_of(self, launch: int) -> FusionGroup | None:
        return next((g for g in self.groups if launch in g.launches), None)


# ------------------------------------------------------------ eligibility

def static_shared_bytes(kernels) -> int:
    """Bytes of static shared memory a block of the fused kernel holds: each array once
    (an array of a helper is one array, whichever fragments call the helper)."""
    arrays = {s.symbol: s.bytes or 0 for k in kernels for s in k.shared if not s.dynamic}
    return sum(arrays.values())


def dynamic_shared_bytes(inst: LaunchInstance) -> int:
    """The dynamic shared memory a launch asks for (0 when none or not a constant)."""
    return (inst.statement.shmem.constant_value() if inst.statement.shmem else None) or 0


def block_shared_bytes(launches: list[LaunchInstance]) -> tuple[int, int]:
    """(static, dynamic) shared bytes of a block of one kernel running ``launches``: the
    static arrays of all of them (they live for the whole kernel) and the largest dynamic size."""
    return (static_shared_bytes([i.kernel for i in launches]),
            max((dynamic_shared_bytes(i) for i in launches), default=0))


def shared_limit_problem(model: ProgramModel, launches: list[LaunchInstance]) -> str | None:
    """Why one kernel running ``launches`` cannot have the shared memory they need (None: it
    can). Every block holds the static shared arrays of all of them (static arrays live for
    the whole kernel) and the largest dynamic size: over 48 KB in all the launch needs the
    opt-in code generation emits, and past the device's opt-in limit it cannot run."""
    static, dynamic = block_shared_bytes(launches)
    target = target_for(model.arch)
    if static > target.static_shared_limit:
        return f"static shared memory of the fragments ({static} bytes) exceeds {target.static_shared_limit}"
    limit = target.shared_opt_in_limit
    if static + dynamic > limit:
        return (f"shared memory of the fused kernel ({static} bytes static + {dynamic} dynamic) exceeds "
                f"the {limit} bytes a block of {model.arch} can have")
    return None


def _config(stmt: HostStatement) -> tuple | None:
    g = stmt.grid.constant() if stmt.grid else None
    b = stmt.block.constant() if stmt.block else None
    return None if g is None or b is None else (g, b)


def fragment_problem(model: ProgramModel, inst: LaunchInstance) -> Problem | None:
    """Why this launch cannot become a fragment of a fused kernel, if it cannot."""
    why = _not_a_fragment(model, inst)
    return None if why is None else Problem(RefusalKind.NOT_A_FRAGMENT, why)


def _not_a_fragment(model: ProgramModel, inst: LaunchInstance) -> str | None:
    k, site, stmt = inst.kernel, inst.site, inst.statement
    if site is None and stmt.call is not None:
        return (f"launched by {stmt.call} with an argument array, not <<<>>>: only <<<>>> launches are "
                "rewritten into fused kernels")
    if site is None and inst.unplaced:
        return f"its launch expression cannot be rewritten: {inst.unplaced}"
    if site is None and model.source.renumbered:
        return (f"launch expression not found at line {stmt.line} of the file: the program's #line directives "
                "renumber its lines, and clang reports the numbers they give")
    if site is None:
        return "launch expression not found in the source" + (
            f" (it is in {stmt.inlined_from}, which the compiler inlined at line {stmt.line})"
            if stmt.inlined_from else "")
    if any(a.rstrip().endswith("...") for a in site.args):
        return "an argument is a parameter pack expansion"
    written = [a for a in site.args if a.strip()]  # libclang lists default arguments with no text
    if len(written) < len(k.params):
        return (f"the launch writes {len(written)} of the kernel's {len(k.params)} arguments (the others are "
                "default arguments of its declaration)")
    decl = model.kernel_decls.get(k.mangled)
    if decl is None:
        return "the kernel's definition is not in the program's source or a header of its own"
    if decl.unwritable is not None:
        return f"the kernel cannot be written as a fragment: {decl.unwritable}"
    if model.source.visible_from(decl) is None:
        return f"the kernel is defined in {decl.range.file}, whose #include was not found in the program"
    if site.macro is not None:
        return (f"launch is written through the macro {site.macro}; its expansion cannot be rewritten "
                "in the source")
    if not site.statement:
        return "launch is not a statement of its own inside braces"
    if k.unsupported:
        return "kernel uses " + "; ".join(k.unsupported)
    if k.prints:  # a kernel's output follows the previous kernel's; fused, threads would interleave them
        return (f"kernel prints (device printf at line {k.prints[0]}): fused, its lines could interleave with "
                "those of the launches around it")
    if stmt.stream != "default":
        return "launch on a non-default stream"
    if stmt.shmem is None or stmt.shmem.constant_value() is None:
        return "dynamic shared memory size is not a constant"
    return None


def index_helpers(model: ProgramModel, inst: LaunchInstance) -> tuple[str, ...]:
    """``__device__`` functions the launch's kernel calls (transitively) that read
    ``blockIdx``, ``threadIdx``, ``blockDim`` or ``gridDim``: inside a fused kernel they
    read the fused kernel's indices, not the fragment's remapped ones."""
    decl = model.kernel_decls.get(inst.kernel.mangled)
    return decl.callees_read_indices if decl is not None else ()


def helper_reason(model: ProgramModel, inst: LaunchInstance) -> str:
    return (f"{inst.kernel.name} calls {', '.join(index_helpers(model, inst))}, which reads the built-in "
            "block and thread indices; a fragment placed in other blocks or threads would see the fused "
            "kernel's indices there")


def _helper_problem(model: ProgramModel, inst: LaunchInstance) -> Problem:
    return Problem(RefusalKind.INDEX_HELPERS, helper_reason(model, inst))


_CONTROL = re.compile(r"[{}]|\b(?:if|else|for|while|do|switch|case|return|break|continue|goto)\b")
_LEAVES_PROGRAM = re.compile(r"(?:std\s*::\s*)?(?:exit|_Exit|quick_exit|abort)\s*\(.*\)", re.S)


def _balanced(text: str, at: int, open_: str, close: str) -> int | None:
    """The index just after the bracket closing the one at ``at`` (None: unbalanced)."""
    depth = 0
    for k in range(at, len(text)):
        depth += (text[k] == open_) - (text[k] == close)
        if depth == 0:
            return k + 1
    return None


def _leaving_branch(text: str, at: int, in_main: bool) -> int | None:
    """Where the ``if`` at ``at`` ends, when it is an error check: no ``else``, and a body
    of plain statements whose last leaves the program (``exit``, ``abort``, or ``return``
    in ``main``). None otherwise."""
    cond = text.find("(", at)
    end = _balanced(text, cond, "(", ")") if cond >= 0 and not text[at + 2:cond].strip() else None
    if end is None:
        return None
    rest = text[end:]
    body_at = end + len(rest) - len(rest.lstrip())
    if text.startswith("{", body_at):
        close = _balanced(text, body_at, "{", "}")
        if close is None:
            return None
        body, after = text[body_at + 1:close - 1], close
    else:
        semi = text.find(";", body_at)
        if semi < 0:
            return None
        body, after = text[body_at:semi + 1], semi + 1
    statements = [st.strip() for st in body.split(";") if st.strip()]
    if not statements or re.match(r"\s*else\b", text[after:]):
        return None
    last = statements[-1]
    leaves = _LEAVES_PROGRAM.fullmatch(last) or (in_main and re.fullmatch(r"return\b.*", last, re.S))
    if not leaves or any(_CONTROL.search(st) for st in statements[:-1]) or \
            (not last.startswith("return") and _CONTROL.search(last)):
        return None
    return after


def _control_between(source: str, a: LaunchInstance, b: LaunchInstance) -> bool:
    """Control flow lies between the two launch sites in the source, other than error checks
    that leave the program (on that path no later statement observes what the first launch
    did, so deferring it to the fused launch is invisible)."""
    text = source[a.site.range.end_offset:b.site.range.start_offset]
    text = re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r""""(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'""", '""', text)  # braces in literals are text
    at = 0
    while (m := _CONTROL.search(text, at)) is not None:
        end = _leaving_branch(text, m.start(), a.site.function == "main") if m.group() == "if" else None
        if end is None:
            return True
        at = end
    return False


def find_regions(model: ProgramModel, source: str) -> tuple[list[Region], list[Refusal]]:
    """Runs of launches that may be fused, and why each pair of launches that follow
    one another is kept apart where a region ends between them: a host statement
    (copy, memset, synchronization the host may observe device work through, a call
    the model does not see into, ...), a different host loop nest or host function,
    or control flow in the source. A synchronization that observes nothing
    (``analysis.host_observation``) stays where it is and does not end a region."""
    stmts = model.host.statements
    inst = model.instances()
    observers = sync_observers(model)
    regions: list[Region] = []
    refusals: list[Refusal] = []
    current: list[int] = []
    crossed: list[int] = []  # waiting synchronizations inside the current region
    previous: int | None = None  # the last launch statement seen
    between: list[HostStatement] = []  # the statements since that launch
    waits: list[int] = []  # the waiting synchronizations since that launch

    def close():
        if current:
            regions.append(Region(len(regions), tuple(current), stmts[current[0]].loops, tuple(crossed)))
        current.clear()
        crossed.clear()

    for s in stmts:
        if observes_nothing(s, observers):
            waits.append(s.index)
            continue
        if s.kind != "launch" or s.index not in inst:
            close()
            between.append(s)
            continue
        problem = fragment_problem(model, inst[s.index])
        separator = _separator(source, stmts, inst, previous, s, between, observers)
        if separator is not None:
            refusals.append(Refusal.of((previous, s.index), separator))
        if current and separator is None and problem is None:
            crossed.extend(waits)
        previous, between, waits = s.index, [], []
        if problem is not None:
            close()
            refusals.append(Refusal.of((s.index,), problem))
            continue
        if separator is not None:
            close()
        current.append(s.index)
    close()
    return regions, refusals


def _separator(source: str, stmts, inst, previous: int | None, launch: HostStatement,
               between: list[HostStatement], observers: list[Observer]) -> Problem | None:
    """Why ``launch`` cannot join the region of the launch before it (None: it can)."""
    if previous is None:
        return None
    if between:
        shown = "; ".join(s.describe() for s in between[:3]) + ("; ..." if len(between) > 3 else "")
        if observers and any(s.kind == "sync" and s.detail in WAITING_SYNCS for s in between):
            shown += f" (the host may observe device work there: {observers[0].describe()})"
        return Problem(RefusalKind.HOST_STATEMENT, f"host statements between the launches order them: {shown}")
    a, b = inst[previous], inst[launch.index]
    if a.site is None or b.site is None:
        unplaced = a if a.site is None else b
        stmt = unplaced.statement
        if stmt.call is not None:  # the program's own cudaLaunchKernel: no <<<>>> to rewrite
            where, why = "", f"it is a {stmt.call} call, not <<<>>>"
        elif unplaced.unplaced:
            where, why = "", unplaced.unplaced
        else:
            where = f" in {stmt.inlined_from}" if stmt.inlined_from else ""
            why = "its launch expression is not in the source"
        return Problem(RefusalKind.UNREWRITABLE_LAUNCH,
                       f"the launch of {unplaced.kernel.name}{where} at line {stmt.line} cannot be rewritten ({why})")
    if stmts[previous].loops != launch.loops:
        return Problem(RefusalKind.LOOP_NEST, "they are in different host loop nests")
    if a.site.function != b.site.function:
        return Problem(RefusalKind.HOST_FUNCTION,
                       f"they are in different host functions ({a.site.function}, {b.site.function})")
    if _control_between(source, a, b):
        return Problem(RefusalKind.CONTROL_FLOW, "control flow between them in the source")
    return None


# --------------------------------------------------------------- grouping

@dataclass
class _Group:
    lanes: list[list[int]]
    reindex: dict[int, isl.Map] = field(default_factory=dict)  # member -> (anchor -> member instance)
    barrier_for: set[int] = field(default_factory=set)  # re-indexed members needing a barrier before

    @property
    def members(self) -> list[int]:
        return [i for lane in self.lanes for i in lane]


@dataclass(frozen=True)
class Reindexing:
    """A launch of another shape re-indexed onto a lane's threads: ``sigma`` maps the lane's
    first launch's (block, thread) coordinates to the instance each such thread runs;
    ``needs_barrier``: a dependence on an earlier fragment stays within a block."""

    sigma: isl.Map
    needs_barrier: bool


@dataclass(frozen=True)
class VerticalMerge:
    """A proven vertical merge: the lane the two groups become, and the re-indexing of the
    joining launch when it has another shape."""

    lane: list[int]
    reindexing: Reindexing | None = None


class _RegionLegality:
    """Whether two groups of one region may be merged, and why not: every answer is a
    ``Problem`` or a proven merge. Nothing here chooses among legal merges."""

    def __init__(self, model: ProgramModel, uar: UAR, region: Region):
        self.model = model
        self.region = region
        self.inst = model.instances()
        members = set(region.launches)
        self.deps = [d for d in uar.dependences if d.src in members and d.dst in members and d.same_iteration
                     and d.src != d.dst]
        self.deps_of: dict[int, list[Dependence]] = {}  # launch -> dependences with it at one end
        for d in self.deps:
            self.deps_of.setdefault(d.src, []).append(d)
            self.deps_of.setdefault(d.dst, []).append(d)
        self._active_cache: dict[int, isl.Set] = {}
        self._reindex_cache: dict[tuple, Reindexing | Problem | None] = {}

    # group graph: an edge when some dependence goes from one group to the other
    def graph(self, groups: list[_Group]) -> nx.DiGraph:
        g = nx.DiGraph()
        owner = {m: gi for gi, grp in enumerate(groups) for m in grp.members}
        g.add_nodes_from(range(len(groups)))
        for d in self.deps:
            a, b = owner[d.src], owner[d.dst]
            if a != b:
                g.add_edge(a, b)
        return g

    @staticmethod
    def mergeable_without_cycle(graph: nx.DiGraph, a: int, b: int) -> bool:
        """Merging groups ``a`` and ``b`` keeps the group graph acyclic: no path of two
        or more edges leads from one to the other (through a group in between)."""
        for src, dst in ((a, b), (b, a)):
            frontier = [n for n in graph.successors(src) if n != dst]
            seen = set(frontier)
            while frontier:
                n = frontier.pop()
                if n == dst:
                    return False
                for m in graph.successors(n):
                    if m not in seen:
                        seen.add(m)
                        frontier.append(m)
        return True

    def edges_between(self, ga: _Group, gb: _Group):
        sb = set(gb.members)
        return [d for m in ga.members for d in self.deps_of.get(m, ())
                if (d.src == m and d.dst in sb) or (d.dst == m and d.src in sb)]

    def lane_config(self, lane: list[int]):
        return _config(self.inst[lane[0]].statement)

    # ---------------------------------------------------------- vertical
    def vertical(self, ga: _Group, gb: _Group, connected: bool, graph: nx.DiGraph, ia: int,
                 ib: int) -> VerticalMerge | Problem:
        """Whether ``gb`` may run after ``ga`` in one lane (``ia`` and ``ib`` their nodes in
        ``graph``): same shape and thread- or block-level dependences, or a proven
        re-indexing; no dependence path through another group; no early exit before a
        barrier, and shared memory that fits."""
        problem = self.vertical_problem(ga, gb)
        reindexing = None
        single_lanes = len(ga.lanes) == 1 and len(gb.lanes) == 1
        if connected and single_lanes and not self.same_configuration(ga, gb):
            # another shape: the consumer may still run re-indexed on the producer's threads
            attempt = self.try_reindex(ga, gb)
            if isinstance(attempt, Reindexing):
                reindexing, problem = attempt, None
            elif isinstance(attempt, Problem):
                problem = Problem(RefusalKind.NOT_REINDEXABLE, f"different launch configurations, and {attempt.text}")
        if problem is None and not self.mergeable_without_cycle(graph, ia, ib):
            problem = _DEPENDENCE_PATH
        if problem is not None:
            return problem
        lane = ga.lanes[0] + gb.members if reindexing is not None else self.lane_order(ga.members + gb.members)
        return self.lane_hazard(lane) or VerticalMerge(lane, reindexing)

    def vertical_problem(self, ga: _Group, gb: _Group) -> Problem | None:
        """Why the two groups cannot run in one lane as launched (None: they can)."""
        if len(ga.lanes) != 1 or len(gb.lanes) != 1:
            return Problem(RefusalKind.HORIZONTAL_GROUP, "one side is already arranged horizontally")
        if not self.same_configuration(ga, gb):
            unknown = [g for g in (ga, gb) if self.lane_config(g.lanes[0]) is None]
            if unknown:  # a shape from argv or data: fusing would assume one value for all runs
                stmt = self.inst[unknown[0].lanes[0][0]].statement
                return Problem(RefusalKind.SHAPE_UNKNOWN,
                               f"launch configuration at line {stmt.line} is not known when optimizing "
                               f"(grid {stmt.grid}, block {stmt.block}); a fused kernel would hold for one "
                               "shape only")
            return Problem(RefusalKind.SHAPE_DIFFERS, "different launch configurations")
        return self.width_problem(ga, gb)

    def same_configuration(self, ga: _Group, gb: _Group) -> bool:
        ca, cb = self.lane_config(ga.lanes[0]), self.lane_config(gb.lanes[0])
        return ca is not None and ca == cb

    def width_problem(self, ga: _Group, gb: _Group) -> Problem | None:
        for d in self.edges_between(ga, gb):
            if d.width not in ("thread", "block"):
                return Problem(RefusalKind.WIDE_DEPENDENCE, f"{d.width} dependence on {d.buffer}")
        return None

    def lane_order(self, members: list[int]) -> list[int]:
        g = nx.DiGraph()
        g.add_nodes_from(members)
        for d in self.deps:
            if d.src in g and d.dst in g:
                g.add_edge(d.src, d.dst)
        return list(nx.lexicographical_topological_sort(g))

    def lane_hazard(self, lane: list[int]) -> Problem | None:
        for pos, idx in enumerate(lane[:-1]):
            exits = [e for e in self.inst[idx].kernel.early_exits if e.reaches_barrier]
            if exits:
                return Problem(RefusalKind.EARLY_EXIT,
                               f"{self.inst[idx].kernel.name} returns early (line {exits[0].line}) before a "
                               "barrier; inside a fused kernel the returning threads would not exit and later "
                               "barriers would pair up differently")
        dynamic = [i for i in lane if any(s.dynamic for s in self.inst[i].kernel.shared)]
        if len(dynamic) > 1:
            return _DYNAMIC_SHARED
        return self.shared_problem(lane)

    # -------------------------------------------------------- re-indexing
    def _thread_relation(self, d: Dependence) -> isl.Map:
        """The dependence between (block, thread) coordinates in one host iteration."""
        rel = isl.Map(d.relation)
        n = len(self.region.loops)
        for k in range(n):
            rel = rel.equate(isl.dim_type.in_, k, isl.dim_type.out, k)
        rel = rel.project_out(isl.dim_type.in_, 0, n).project_out(isl.dim_type.out, 0, n)
        return rel.reset_tuple_id(isl.dim_type.in_).reset_tuple_id(isl.dim_type.out)

    def _active(self, idx: int) -> isl.Set:
        if idx not in self._active_cache:
            self._active_cache[idx] = self._compute_active(idx)
        return self._active_cache[idx]

    def _compute_active(self, idx: int) -> isl.Set:
        inst = self.inst[idx]
        dom = None
        for m in instance_maps(inst.statement, inst.kernel, inst.bindings, dims=list(SIX)):
            d = isl.Map(m.isl).domain()
            d = d.project_out(isl.dim_type.set, 6, d.dim(isl.dim_type.set) - 6).reset_tuple_id()
            d = d.project_out(isl.dim_type.param, 0, d.dim(isl.dim_type.param)) if d.dim(isl.dim_type.param) else d
            dom = d if dom is None else dom.union(d)
        return dom

    def try_reindex(self, ga: _Group, gb: _Group) -> Reindexing | Problem | None:
        """How ``gb``'s one launch runs re-indexed at the end of ``ga``'s lane, or why it
        cannot, or None when re-indexing does not apply (not a mapping kernel, ...)."""
        key = (tuple(tuple(lane) for lane in ga.lanes), tuple(gb.members))
        if key not in self._reindex_cache:
            try:
                with isl_budget(REINDEX_OPERATION_BUDGET):
                    self._reindex_cache[key] = self._compute_reindex(ga, gb)
            except isl.Error:
                self._reindex_cache[key] = _not_reindexable("re-indexing is too costly to establish")
        return self._reindex_cache[key]

    def _compute_reindex(self, ga: _Group, gb: _Group) -> Reindexing | Problem | None:
        if len(ga.lanes) != 1 or len(gb.members) != 1 or len(ga.members) == 0:
            return None
        m, lane = gb.members[0], ga.lanes[0]
        anchor = lane[0]
        if self.lane_config(lane) is None or self.lane_config([m]) is None:
            return None
        if not is_mapping_kernel(self.inst[m].kernel):
            return None
        if index_helpers(self.model, self.inst[m]):
            return _helper_problem(self.model, self.inst[m])
        if any(d.src == m and d.dst in lane for d in self.deps):
            return _not_reindexable("the launch would have to run before a fragment it feeds")
        to_anchor = [d for d in self.deps if d.src == anchor and d.dst == m]
        if not to_anchor:
            return None
        sigma = None
        for d in to_anchor:
            r = self._thread_relation(d)
            sigma = r if sigma is None else sigma.union(r)
        if sigma.dim(isl.dim_type.param):
            return _not_reindexable("re-indexing needs constant sizes")
        if not (sigma.is_single_valued() and sigma.is_injective()):
            return _not_reindexable("re-indexing is not one-to-one")
        active = self._active(m)
        if active is None or not active.is_subset(sigma.range()):
            return _not_reindexable("some threads of the re-indexed launch have no producer thread to run on")
        needs_barrier = False
        identity = isl.Map("{ [a0, a1, a2, a3, a4, a5] -> [a0, a1, a2, a3, a4, a5] }")
        same_block = isl.Map("{ [a0, a1, a2, a3, a4, a5] -> [a0, a1, a2, b3, b4, b5] }")
        for i in lane:
            for d in self.deps:
                if d.src != i or d.dst != m:
                    continue
                via = ga.reindex.get(i)
                rel = self._thread_relation(d)
                start = via.apply_range(rel) if via is not None else rel
                anchored = start.apply_range(sigma.reverse())
                if anchored.is_subset(identity):
                    continue
                if anchored.is_subset(same_block):
                    needs_barrier = True
                    continue
                return _not_reindexable(f"dependence on {d.buffer} stays global after re-indexing")
        return Reindexing(sigma, needs_barrier)

    # -------------------------------------------------------- horizontal
    def horizontal_problem(self, ga: _Group, gb: _Group) -> Problem | None:
        """Why the lanes of the two groups cannot run side by side in different blocks of
        one launch (None: they can): a dependence between them, shapes not known, a block
        too large, barriers or warp operations in lanes of fewer threads, more than one
        dynamic shared array, helpers reading the built-in indices, shared memory."""
        if self.edges_between(ga, gb):
            return Problem(RefusalKind.DEPENDENT, "dependent")
        lanes = ga.lanes + gb.lanes
        configs = [self.lane_config(lane) for lane in lanes]
        if any(c is None for c in configs):
            return Problem(RefusalKind.SHAPE_UNKNOWN, "launch configuration is not a constant")
        threads = [b[0] * b[1] * b[2] for _, b in configs]
        widest = max(threads)
        if widest > target_for(self.model.arch).max_block_threads:
            return Problem(RefusalKind.BLOCK_TOO_LARGE, "block too large")
        for lane, t in zip(lanes, threads):
            if t != widest and any(self.inst[i].kernel.barriers for i in lane):
                return Problem(RefusalKind.BLOCK_SIZES_DIFFER,
                               "fragments with barriers need every thread of the block; their block sizes differ "
                               f"({t} vs {widest})")
            if t != widest and any(self.inst[i].kernel.warp_ops for i in lane) and t % 32:
                return Problem(RefusalKind.PARTIAL_WARPS,
                               "warp operations in a fragment whose block is not a whole number of warps")
        dyn = [i for lane in lanes for i in lane if any(s.dynamic for s in self.inst[i].kernel.shared)]
        if len(dyn) > 1:
            return _DYNAMIC_SHARED
        remapped = next((self.inst[i] for lane in lanes for i in lane if index_helpers(self.model, self.inst[i])),
                        None)
        if remapped is not None:
            return _helper_problem(self.model, remapped)
        return self.shared_problem([i for lane in lanes for i in lane])

    def shared_problem(self, launches: list[int]) -> Problem | None:
        why = shared_limit_problem(self.model, [self.inst[i] for i in launches])
        return None if why is None else Problem(RefusalKind.SHARED_MEMORY, why)


_DEPENDENCE_PATH = Problem(RefusalKind.DEPENDENCE_PATH, "a launch between them depends on one and feeds the other")
_DYNAMIC_SHARED = Problem(RefusalKind.DYNAMIC_SHARED, "more than one fragment uses dynamic shared memory")


def _not_reindexable(why: str) -> Problem:
    return Problem(RefusalKind.NOT_REINDEXABLE, why)


class _RegionScheduler:
    """The merges of one region, in a fixed order, each made when it is legal
    (``_RegionLegality``) and the policy accepts it."""

    def __init__(self, model: ProgramModel, uar: UAR, region: Region, arrangement: str, policy: FusionPolicy):
        self.legal = _RegionLegality(model, uar, region)
        self.region = region
        self.arrangement = arrangement
        self.policy = policy
        self.groups = [_Group([[i]]) for i in region.launches]
        self.notes: dict[tuple[int, int], Refusal] = {}  # pair of first launches -> latest reason

    def _graph(self) -> nx.DiGraph:
        return self.legal.graph(self.groups)

    def _proposal(self, kind: MergeKind, lanes: list[list[int]], joining: list[int], dependent: bool,
                  reindexed: bool = False) -> Problem | float | None:
        """The policy's answer on the legal merge of ``joining`` into ``lanes``: the refusal's
        problem when it declines it, else its priority (None: make it now, first fit)."""
        inst = self.legal.inst
        merge = Merge.of(kind, [[inst[i] for i in lane] for lane in lanes], [inst[i] for i in joining],
                         dependent, reindexed)
        if not accepts(self.policy, merge):
            return Problem(RefusalKind.POLICY, declined(self.policy, merge))
        return priority_of(self.policy, merge)

    # ---------------------------------------------------------- vertical
    def merge_vertical(self) -> None:
        """P1: the first pair of groups, in program order, that may run in one lane and that
        the policy accepts is merged; then the scan starts again. Independent launches are
        left to horizontal fusion unless the arrangement is vertical. A policy that ranks
        merges gets, of every pair the scan finds legal and accepted, the one it ranks first."""
        while (chosen := self._vertical_choice()) is not None:
            ia, ib, verdict = chosen
            ga, gb = self.groups[ia], self.groups[ib]
            merged = _Group([verdict.lane], {**ga.reindex, **gb.reindex}, ga.barrier_for | gb.barrier_for)
            if verdict.reindexing is not None:
                merged.reindex[gb.members[0]] = verdict.reindexing.sigma
                if verdict.reindexing.needs_barrier:
                    merged.barrier_for.add(gb.members[0])
            self.groups[ia] = merged
            del self.groups[ib]

    def _vertical_choice(self) -> tuple[int, int, VerticalMerge] | None:
        """The pair of groups to merge next: the first legal one the policy accepts, or with
        a ranking policy the accepted one of highest priority (None: no pair)."""
        graph = self._graph()
        best: tuple[float, int, int, VerticalMerge] | None = None
        for ia in range(len(self.groups)):
            for ib in range(ia + 1, len(self.groups)):
                ga, gb = self.groups[ia], self.groups[ib]
                connected = bool(self.legal.edges_between(ga, gb))
                if not connected and self.arrangement == "auto" and len(self.groups) > 1:
                    continue  # independent launches are left to horizontal fusion
                verdict = self.legal.vertical(ga, gb, connected, graph, ia, ib)
                if isinstance(verdict, Problem):
                    if connected:
                        self._note(ga, gb, verdict)
                    continue
                answer = self._proposal(MergeKind.VERTICAL, [verdict.lane], gb.members, connected,
                                        verdict.reindexing is not None)
                if isinstance(answer, Problem):
                    self._note(ga, gb, answer)
                    continue
                if answer is None:
                    return ia, ib, verdict
                if best is None or answer > best[0]:
                    best = (answer, ia, ib, verdict)
        return None if best is None else best[1:]

    # -------------------------------------------------------- horizontal
    def _steps(self) -> list[int]:
        """Each group's time step in isl's global schedule (see fusion.global_schedule)."""
        return time_steps(len(self.groups), self._graph().edges())

    def merge_horizontal(self) -> None:
        """P3: groups on the same time step of the global schedule share one launch
        when their shapes and resources allow and the policy accepts (first fit, in
        program order). A group that stays apart may then move to another step within
        its slack (after every group it needs, before every group that needs it) and
        join a group there; dependences then still go from earlier to later steps."""
        ordered = self.ordered_groups()
        step_of = [step for step, _ in ordered]
        self.groups = [grp for _, grp in ordered]
        self._merge_within(step_of, lambda i: (step_of[i], step_of[i]))
        self._merge_within(step_of, lambda i: self._slack(i, step_of))

    def _slack(self, i: int, step_of: list[int]) -> tuple[int, int]:
        graph = self._graph()
        first = max((step_of[p] + 1 for p in graph.predecessors(i)), default=0)
        last = min((step_of[s] - 1 for s in graph.successors(i)), default=max(step_of) + 1)
        return first, last

    def _host_for(self, i: int, first: int, last: int, step_of: list[int]) -> int | None:
        """The first group whose step lies in [first, last] that group ``i`` may join side by
        side and the policy lets it join (each legal one declined is noted)."""
        other = self.groups[i]
        best: tuple[float, int] | None = None
        for j, grp in enumerate(self.groups):
            if j == i or not first <= step_of[j] <= last or self.legal.horizontal_problem(grp, other) is not None:
                continue
            lanes = sorted(grp.lanes + other.lanes, key=min)
            answer = self._proposal(MergeKind.HORIZONTAL, lanes, other.members, False)
            if answer is None:
                return j
            if isinstance(answer, Problem):
                self._note(*sorted((grp, other), key=lambda g: min(g.members)), answer)  # one note either way round
            elif best is None or answer > best[0]:
                best = (answer, j)
        return None if best is None else best[1]

    def _merge_within(self, step_of: list[int], window) -> None:
        """Merge each group into the first compatible group whose step lies in ``window(i)``."""
        i = 0
        while i < len(self.groups):
            host = self._host_for(i, *window(i), step_of)
            if host is None:
                i += 1
                continue
            grp, other = self.groups[host], self.groups[i]
            self.groups[host] = _Group(sorted(grp.lanes + other.lanes, key=min),  # lanes in program order
                                       {**grp.reindex, **other.reindex}, grp.barrier_for | other.barrier_for)
            del self.groups[i], step_of[i]
            i = 0 if host > i else i

    # -------------------------------------------------------- reasons
    def unexplained_pairs(self, notes: list[Refusal]) -> list[Refusal]:
        """A reason for each two launches that follow one another in the region and
        ended in different groups with no note between their groups yet."""
        owner = {m: g for g in self.groups for m in g.members}
        explained = {(id(owner[n.launches[0]]), id(owner[n.launches[1]])) for n in notes}
        explained |= {(b, a) for a, b in explained}
        steps = {id(g): step for step, g in self.ordered_groups()}
        out = []
        for a, b in zip(self.region.launches, self.region.launches[1:]):
            ga, gb = owner[a], owner[b]
            if ga is gb or (id(ga), id(gb)) in explained:
                continue
            explained.add((id(ga), id(gb)))
            if self.legal.edges_between(ga, gb):
                problem = self.legal.vertical_problem(ga, gb) or _DEPENDENCE_PATH
            elif self.arrangement == "vertical":
                problem = Problem(RefusalKind.ARRANGEMENT,
                                  "independent launches are not fused side by side in the vertical arrangement")
            else:
                problem = self.legal.horizontal_problem(ga, gb) or Problem(
                    RefusalKind.DIFFERENT_STEPS,
                    f"isl's global schedule puts them on different steps ({steps[id(ga)]} and {steps[id(gb)]})")
            out.append(Refusal.of((a, b), problem))
        return out

    def _note(self, ga: _Group, gb: _Group, problem: Problem) -> None:
        """Why two groups stay apart, once per pair of groups (named by their first
        launches; the last reason seen wins)."""
        key = (min(ga.members), min(gb.members))
        self.notes.pop(key, None)  # the latest reason goes last, as it was found last
        self.notes[key] = Refusal.of(key, problem)

    def ordered_groups(self) -> list[tuple[int, _Group]]:
        """The groups with their time steps, in the order of isl's global schedule
        (ties in program order)."""
        steps = self._steps()
        order = sorted(range(len(self.groups)), key=lambda n: (steps[n], min(self.groups[n].members)))
        return [(steps[i], self.groups[i]) for i in order]


def build_schedule(model: ProgramModel, uar: UAR, source: str, arrangement: str = "auto",
                   policy: FusionPolicy | None = None) -> Schedule:
    """Group the launches of ``model`` (see the module docstring); ``policy`` chooses among
    the legal merges (greedy, every one, when None)."""
    if arrangement not in ARRANGEMENTS:
        raise ValueError(f"unknown arrangement {arrangement!r}; choose one of {', '.join(ARRANGEMENTS)}")
    policy = Greedy() if policy is None else policy
    begin_program(policy, model)
    regions, refusals = find_regions(model, source)
    schedule = Schedule(regions=regions, refusals=list(refusals))
    for region in regions:
        rs = _RegionScheduler(model, uar, region, arrangement, policy)
        if arrangement in ("auto", "vertical"):
            rs.merge_vertical()
        if arrangement in ("auto", "horizontal"):
            rs.merge_horizontal()
        for step, grp in rs.ordered_groups():
            lanes = tuple(Lane(tuple(lane), tuple(str(grp.reindex[i]) if i in grp.reindex else None for i in lane),
                               tuple(i in grp.barrier_for for i in lane))
                          for lane in grp.lanes)
            schedule.groups.append(FusionGroup(len(schedule.groups), region.id, lanes, step))
        kept = [note for note in rs.notes.values()
                if schedule.group_of(note.launches[0]) is not schedule.group_of(note.launches[1])]
        schedule.refusals += kept + rs.unexplained_pairs(kept)
    return schedule


def split_group(schedule: Schedule, group: FusionGroup, reason: str) -> None:
    """Leave ``group``'s launches unfused, each a group of its own at the group's place (the
    group's members ran in program order among themselves, so this order is legal), with
    ``reason`` as the refusal: a late fact (``pipeline.LateFact``) honoured by the schedule."""
    at = schedule.groups.index(group)
    next_id = max(g.id for g in schedule.groups) + 1
    singles = [FusionGroup(next_id + k, group.region, (Lane((i,)),), group.step)
               for k, i in enumerate(sorted(group.launches))]
    schedule.groups[at:at + 1] = singles
    schedule.refusals.append(Refusal(tuple(sorted(group.launches)), reason))


def wavefront_declined(model: ProgramModel, policy: FusionPolicy, group: FusionGroup) -> Refusal | None:
    """None when ``policy`` takes the legal wavefront of ``group``; the refusal when it declines it."""
    return waves_declined(model, policy, [list(lane.launches) for lane in group.lanes])


def waves_declined(model: ProgramModel, policy: FusionPolicy, lanes: list[list[int]]) -> Refusal | None:
    """None when ``policy`` takes legal waves over ``lanes`` (a wavefront's lane, or the
    copies of a repeated layer pattern, one lane each); the refusal when it declines them."""
    inst = model.instances()
    merge = Merge.of(MergeKind.WAVEFRONT, [[inst[i] for i in lane] for lane in lanes], [], True)
    if accepts(policy, merge):
        return None
    launches = tuple(i for lane in lanes for i in lane)
    return Refusal((launches[0], launches[-1]) if len(lanes) > 1 else launches, declined(policy, merge),
                   RefusalKind.POLICY)
