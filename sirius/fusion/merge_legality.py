"""Whether two groups of launches of one region may be merged, and why not.

Every answer is a proof or a ``Problem`` (a ``RefusalKind`` and the text the report
shows); nothing here chooses among legal merges (``fusion.scheduler`` does, asking the
fusion policy). A *vertical* merge runs the groups' launches one after another in the
same threads: same launch shape and only thread- or block-level dependences between
them, or a consumer of another shape re-indexed onto the producer's threads (isl proves
the re-indexing one-to-one and every dependence then within a thread or a block); no
early exit before a barrier; no dependence path through a group between them. A
*horizontal* merge runs them side by side in different blocks of one launch: no
dependence between them (proven for every grid where the host computes one at run time:
the fused kernel is then passed each such grid and adds it up), constant blocks, a block
the device allows, barriers and warp
operations only where every thread of the block takes part. Both need shared memory
that fits (``fusion.shared_limits``) and kernels whose helpers read no built-in index
when they would run in other blocks or threads (``fusion.fragments``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl
import networkx as nx

from sirius.analysis.host_model import HostStatement
from sirius.analysis.program_model import ProgramModel, instance_maps
from sirius.analysis.uar import REINDEX_OPERATION_BUDGET, UAR, Dependence, is_mapping_kernel, isl_budget
from sirius.core.target import target_for
from sirius.fusion.fragments import helper_problem, index_helpers, part_warp_problem
from sirius.fusion.schedule import Problem, RefusalKind, Region
from sirius.fusion.shared_limits import shared_limit_problem

_BLOCK_AND_THREAD_DIMS = ("bx", "by", "bz", "tx", "ty", "tz")


def _config(stmt: HostStatement) -> tuple | None:
    """The launch's (grid, block) when both are constants."""
    g = stmt.grid.constant() if stmt.grid else None
    b = stmt.block.constant() if stmt.block else None
    return None if g is None or b is None else (g, b)


def _dims(d: tuple) -> str:
    return "x".join(map(str, d))


def _block(stmt: HostStatement) -> tuple | None:
    """The launch's block when it is a constant."""
    return stmt.block.constant() if stmt.block else None


@dataclass
class DraftGroup:
    """A group while the scheduler builds it: its lanes, the re-indexing of members of
    another shape, and the re-indexed members that need a barrier before them."""

    lanes: list[list[int]]
    reindex: dict[int, isl.Map] = field(default_factory=dict)  # member -> (anchor -> member instance)
    barrier_for: set[int] = field(default_factory=set)  # re-indexed members needing a barrier before

    @property
    def members(self) -> list[int]:
        return [i for lane in self.lanes for i in lane]


@dataclass(frozen=True)
class ProvenReindexing:
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
    reindexing: ProvenReindexing | None = None


class RegionLegality:
    """Whether two groups of one region may be merged, and why not: every answer is a
    ``Problem`` or a proven merge. Nothing here chooses among legal merges."""

    def __init__(self, model: ProgramModel, uar: UAR, region: Region):
        self.model = model
        self.region = region
        members = set(region.launches)
        self.deps = [d for d in uar.dependences if d.src in members and d.dst in members and d.same_iteration
                     and d.src != d.dst]
        self.deps_of: dict[int, list[Dependence]] = {}  # launch -> dependences with it at one end
        for d in self.deps:
            self.deps_of.setdefault(d.src, []).append(d)
            self.deps_of.setdefault(d.dst, []).append(d)
        self._active_cache: dict[int, isl.Set] = {}
        self._reindex_cache: dict[tuple, ProvenReindexing | Problem | None] = {}

    # group graph: an edge when some dependence goes from one group to the other
    def graph(self, groups: list[DraftGroup]) -> nx.DiGraph:
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

    def edges_between(self, ga: DraftGroup, gb: DraftGroup):
        sb = set(gb.members)
        return [d for m in ga.members for d in self.deps_of.get(m, ())
                if (d.src == m and d.dst in sb) or (d.dst == m and d.src in sb)]

    def lane_config(self, lane: list[int]):
        return _config(self.model.launch(lane[0]).statement)

    # ---------------------------------------------------------- vertical
    def vertical(self, ga: DraftGroup, gb: DraftGroup, connected: bool, graph: nx.DiGraph, ia: int,
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
            if isinstance(attempt, ProvenReindexing):
                reindexing, problem = attempt, None
            elif isinstance(attempt, Problem):
                problem = Problem(RefusalKind.NOT_REINDEXABLE, f"different launch configurations, and {attempt.text}")
        if problem is None and not self.mergeable_without_cycle(graph, ia, ib):
            problem = DEPENDENCE_PATH
        if problem is not None:
            return problem
        lane = ga.lanes[0] + gb.members if reindexing is not None else self.lane_order(ga.members + gb.members)
        return self.lane_hazard(lane) or VerticalMerge(lane, reindexing)

    def vertical_problem(self, ga: DraftGroup, gb: DraftGroup) -> Problem | None:
        """Why the two groups cannot run in one lane as launched (None: they can)."""
        if len(ga.lanes) != 1 or len(gb.lanes) != 1:
            return Problem(RefusalKind.HORIZONTAL_GROUP, "one side is already arranged horizontally")
        if not self.same_configuration(ga, gb) and not self.grids_equal_at_run_time(ga, gb):
            unknown = [g for g in (ga, gb) if self.lane_config(g.lanes[0]) is None]
            blocks = [_block(self.model.launch(g.lanes[0][0]).statement) for g in (ga, gb)]
            if unknown and None not in blocks and blocks[0] != blocks[1]:
                inst = self.model.launch(unknown[0].lanes[0][0])
                return Problem(RefusalKind.SHAPE_DIFFERS,
                               f"different blocks ({_dims(blocks[0])} and {_dims(blocks[1])}), and the grid at "
                               f"{inst.where} is computed at run time: a launch of another shape is re-indexed "
                               "onto a lane's threads only where both shapes are constants")
            if unknown:  # a shape from argv or data: fusing would assume one value for all runs
                inst = self.model.launch(unknown[0].lanes[0][0])
                stmt = inst.statement
                return Problem(RefusalKind.SHAPE_UNKNOWN,
                               f"launch configuration at {inst.where} is not known when optimizing "
                               f"(grid {stmt.grid}, block {stmt.block}); a fused kernel would hold for one "
                               "shape only")
            return Problem(RefusalKind.SHAPE_DIFFERS, "different launch configurations")
        return self.width_problem(ga, gb)

    def same_configuration(self, ga: DraftGroup, gb: DraftGroup) -> bool:
        ca, cb = self.lane_config(ga.lanes[0]), self.lane_config(gb.lanes[0])
        return ca is not None and ca == cb

    def grids_equal_at_run_time(self, ga: DraftGroup, gb: DraftGroup) -> bool:
        """One lane each, the same constant block, and a grid the host computes at run time
        on one side at least (``(n + 255) / 256`` with ``n`` from argv): the lane may run
        in the first launch's grid for every value, since its dependences hold between the
        same (block, thread) whatever the grid; the emitted guard takes the fused path only
        when the grids are equal (``fusion.guards.lane_grid_conditions``). No re-indexed
        member: each member's grid is the lane's first launch's."""
        if len(ga.lanes) != 1 or len(gb.lanes) != 1 or ga.reindex or gb.reindex:
            return False
        first, other = (self.model.launch(g.lanes[0][0]).statement for g in (ga, gb))
        block = _block(first)
        return block is not None and block == _block(other) and \
            (self.lane_config(ga.lanes[0]) is None or self.lane_config(gb.lanes[0]) is None)

    def width_problem(self, ga: DraftGroup, gb: DraftGroup) -> Problem | None:
        for d in self.edges_between(ga, gb):
            if d.iteration_width not in ("thread", "block"):
                return Problem(RefusalKind.WIDE_DEPENDENCE, f"{d.iteration_width} dependence on {d.buffer}")
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
            exits = [e for e in self.model.launch(idx).kernel.early_exits if e.reaches_barrier]
            if exits:
                return Problem(RefusalKind.EARLY_EXIT,
                               f"{self.model.launch(idx).kernel.name} returns early (line {exits[0].line}) before a "
                               "barrier; inside a fused kernel the returning threads would not exit and later "
                               "barriers would pair up differently")
        dynamic = [i for i in lane if any(s.dynamic for s in self.model.launch(i).kernel.shared)]
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
        inst = self.model.launch(idx)
        dom = None
        for m in instance_maps(inst.statement, inst.kernel, inst.bindings, dims=list(_BLOCK_AND_THREAD_DIMS)):
            d = isl.Map(m.isl).domain()
            d = d.project_out(isl.dim_type.set, 6, d.dim(isl.dim_type.set) - 6).reset_tuple_id()
            d = d.project_out(isl.dim_type.param, 0, d.dim(isl.dim_type.param)) if d.dim(isl.dim_type.param) else d
            dom = d if dom is None else dom.union(d)
        return dom

    def try_reindex(self, ga: DraftGroup, gb: DraftGroup) -> ProvenReindexing | Problem | None:
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

    def _compute_reindex(self, ga: DraftGroup, gb: DraftGroup) -> ProvenReindexing | Problem | None:
        if len(ga.lanes) != 1 or len(gb.members) != 1 or len(ga.members) == 0:
            return None
        m, lane = gb.members[0], ga.lanes[0]
        anchor = lane[0]
        if self.lane_config(lane) is None or self.lane_config([m]) is None:
            return None
        if not is_mapping_kernel(self.model.launch(m).kernel):
            return None
        if index_helpers(self.model, self.model.launch(m)):
            return helper_problem(self.model, self.model.launch(m))
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
        return ProvenReindexing(sigma, needs_barrier)

    # -------------------------------------------------------- horizontal
    def horizontal_problem(self, ga: DraftGroup, gb: DraftGroup) -> Problem | None:
        """Why the lanes of the two groups cannot run side by side in different blocks of
        one launch (None: they can): a dependence between them, a block computed at run time,
        a block too large, barriers or warp operations in lanes of fewer threads, more than one
        dynamic shared array, helpers reading the built-in indices, shared memory."""
        if self.edges_between(ga, gb):
            return Problem(RefusalKind.DEPENDENT, "dependent")
        lanes = ga.lanes + gb.lanes
        blocks = [_block(self.model.launch(lane[0]).statement) for lane in lanes]
        if any(b is None for b in blocks):  # a grid may be computed at run time: the host passes it
            return Problem(RefusalKind.SHAPE_UNKNOWN, "a block is computed at run time")
        threads = [b[0] * b[1] * b[2] for b in blocks]
        widest = max(threads)
        if widest > target_for(self.model.arch).max_block_threads:
            return Problem(RefusalKind.BLOCK_TOO_LARGE, "block too large")
        for lane, t in zip(lanes, threads):
            if t != widest and any(b.kind == "block" for i in lane for b in self.model.launch(i).kernel.barriers):
                return Problem(RefusalKind.BLOCK_SIZES_DIFFER,
                               "fragments with barriers need every thread of the block; their block sizes differ "
                               f"({t} vs {widest})")
            partial = next(filter(None, (part_warp_problem(self.model, self.model.launch(i), t) for i in lane)),
                           None) if t != widest else None
            if partial is not None:
                return Problem(RefusalKind.PARTIAL_WARPS, partial)
        dyn = [i for lane in lanes for i in lane if any(s.dynamic for s in self.model.launch(i).kernel.shared)]
        if len(dyn) > 1:
            return _DYNAMIC_SHARED
        launch = self.model.launch
        remapped = next((launch(i) for lane in lanes for i in lane if index_helpers(self.model, launch(i))),
                        None)
        if remapped is not None:
            return helper_problem(self.model, remapped)
        return self.shared_problem([i for lane in lanes for i in lane])

    def shared_problem(self, launches: list[int]) -> Problem | None:
        why = shared_limit_problem(self.model, [self.model.launch(i) for i in launches])
        return None if why is None else Problem(RefusalKind.SHARED_MEMORY, why)


DEPENDENCE_PATH = Problem(RefusalKind.DEPENDENCE_PATH, "a launch between them depends on one and feeds the other")
_DYNAMIC_SHARED = Problem(RefusalKind.DYNAMIC_SHARED, "more than one fragment uses dynamic shared memory")


def _not_reindexable(why: str) -> Problem:
    return Problem(RefusalKind.NOT_REINDEXABLE, why)

