"""The fusion schedule of a program: which legal merges are made, in which order.

Works region by region (``fusion.regions``); inside a region launches may be reordered
as long as every same-iteration dependence of the UAR keeps its direction, because
dependences carried by host loops are untouched.

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

Legality and choice are apart. The checks (``fusion.merge_legality``) answer whether
one merge may be made, with a ``Problem`` (a ``RefusalKind`` and the text the
report shows) when it may not; the scheduler (``_RegionScheduler``) proposes the
merges in a fixed order and asks the fusion policy (``fusion.policies``) about
each legal one; a merge the policy declines is a refusal of kind ``POLICY``.
The default policy, greedy, takes every legal merge: first fit in program order.
The policy is asked, too, about the wavefronts and waves of cells the later stages
prove legal (``wavefront_declined``, ``waves_declined``), and a late fact splits a
group again (``split_group``).
"""

from __future__ import annotations

from dataclasses import replace

import networkx as nx

from sirius.analysis.program_model import ProgramModel
from sirius.analysis.uar import UAR
from sirius.fusion.global_schedule import time_steps
from sirius.fusion.merge_legality import DEPENDENCE_PATH, DraftGroup, RegionLegality, VerticalMerge
from sirius.fusion.policies import (FusionPolicy, Greedy, Merge, MergeKind, accepts, begin_program, declined,
                                    priority_of)
from sirius.fusion.regions import find_regions
from sirius.fusion.schedule import ARRANGEMENTS, FusionGroup, GroupLane, Problem, Refusal, RefusalKind, Region, Schedule


class _RegionScheduler:
    """The merges of one region, in a fixed order, each made when it is legal
    (``RegionLegality``) and the policy accepts it."""

    def __init__(self, model: ProgramModel, uar: UAR, region: Region, arrangement: str, policy: FusionPolicy):
        self.legal = RegionLegality(model, uar, region)
        self.region = region
        self.arrangement = arrangement
        self.policy = policy
        self.groups = [DraftGroup([[i]]) for i in region.launches]
        self.notes: dict[tuple[int, int], Refusal] = {}  # pair of first launches -> latest reason

    def _graph(self) -> nx.DiGraph:
        return self.legal.graph(self.groups)

    def _proposal(self, kind: MergeKind, lanes: list[list[int]], joining: list[int], dependent: bool,
                  reindexed: bool = False) -> Problem | float | None:
        """The policy's answer on the legal merge of ``joining`` into ``lanes``: the refusal's
        problem when it declines it, else its priority (None: make it now, first fit)."""
        launch = self.legal.model.launch
        merge = Merge.of(kind, [[launch(i) for i in lane] for lane in lanes], [launch(i) for i in joining],
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
            merged = DraftGroup([verdict.lane], {**ga.reindex, **gb.reindex}, ga.barrier_for | gb.barrier_for)
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
            self.groups[host] = DraftGroup(sorted(grp.lanes + other.lanes, key=min),  # lanes in program order
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
                problem = self.legal.vertical_problem(ga, gb) or DEPENDENCE_PATH
            elif self.arrangement == "vertical":
                problem = Problem(RefusalKind.ARRANGEMENT,
                                  "independent launches are not fused side by side in the vertical arrangement")
            else:
                problem = self.legal.horizontal_problem(ga, gb) or Problem(
                    RefusalKind.DIFFERENT_STEPS,
                    f"isl's global schedule puts them on different steps ({steps[id(ga)]} and {steps[id(gb)]})")
            out.append(Refusal.of((a, b), problem))
        return out

    def _note(self, ga: DraftGroup, gb: DraftGroup, problem: Problem) -> None:
        """Why two groups stay apart, once per pair of groups (named by their first
        launches; the last reason seen wins)."""
        key = (min(ga.members), min(gb.members))
        self.notes.pop(key, None)  # the latest reason goes last, as it was found last
        self.notes[key] = Refusal.of(key, problem)

    def ordered_groups(self) -> list[tuple[int, DraftGroup]]:
        """The groups with their time steps, in the order of isl's global schedule
        (ties in program order)."""
        steps = self._steps()
        order = sorted(range(len(self.groups)), key=lambda n: (steps[n], min(self.groups[n].members)))
        return [(steps[i], self.groups[i]) for i in order]


def build_schedule(model: ProgramModel, uar: UAR, arrangement: str = "auto",
                   policy: FusionPolicy | None = None) -> Schedule:
    """Group the launches of ``model`` (see the module docstring); ``policy`` chooses among
    the legal merges (greedy, every one, when None)."""
    if arrangement not in ARRANGEMENTS:
        raise ValueError(f"unknown arrangement {arrangement!r}; choose one of {', '.join(ARRANGEMENTS)}")
    policy = Greedy() if policy is None else policy
    begin_program(policy, model)
    regions, refusals = find_regions(model)
    groups: list[FusionGroup] = []
    refusals = list(refusals)
    for region in regions:
        rs = _RegionScheduler(model, uar, region, arrangement, policy)
        if arrangement in ("auto", "vertical"):
            rs.merge_vertical()
        if arrangement in ("auto", "horizontal"):
            rs.merge_horizontal()
        for step, grp in rs.ordered_groups():
            lanes = tuple(GroupLane(tuple(lane), tuple(str(grp.reindex[i]) if i in grp.reindex else None for i in lane),
                               tuple(i in grp.barrier_for for i in lane))
                          for lane in grp.lanes)
            groups.append(FusionGroup(len(groups), region.id, lanes, step))
        group_of = {i: g for g in groups for i in g.launches}
        kept = [note for note in rs.notes.values()
                if group_of.get(note.launches[0]) is not group_of.get(note.launches[1])]
        refusals += kept + rs.unexplained_pairs(kept)
    return Schedule(tuple(regions), tuple(groups), tuple(refusals))


def split_group(schedule: Schedule, group: FusionGroup, reason: str) -> Schedule:
    """``schedule`` with ``group``'s launches unfused, each a group of its own at the group's
    place (the group's members ran in program order among themselves, so this order is
    legal), and ``reason`` as the refusal: a late fact (``pipeline.LateFact``) honoured by
    the schedule."""
    at = schedule.groups.index(group)
    next_id = max(g.id for g in schedule.groups) + 1
    singles = tuple(FusionGroup(next_id + k, group.region, (GroupLane((i,)),), group.step)
                    for k, i in enumerate(sorted(group.launches)))
    return replace(schedule, groups=schedule.groups[:at] + singles + schedule.groups[at + 1:]).refused(
        Refusal(tuple(sorted(group.launches)), reason))


def wavefront_declined(model: ProgramModel, policy: FusionPolicy, group: FusionGroup) -> Refusal | None:
    """None when ``policy`` takes the legal wavefront of ``group``; the refusal when it declines it."""
    return waves_declined(model, policy, [list(lane.launches) for lane in group.lanes])


def waves_declined(model: ProgramModel, policy: FusionPolicy, lanes: list[list[int]]) -> Refusal | None:
    """None when ``policy`` takes legal waves over ``lanes`` (a wavefront's lane, or the
    copies of a repeated layer pattern, one lane each); the refusal when it declines them."""
    merge = Merge.of(MergeKind.WAVEFRONT, [[model.launch(i) for i in lane] for lane in lanes], [], True)
    if accepts(policy, merge):
        return None
    launches = tuple(i for lane in lanes for i in lane)
    return Refusal((launches[0], launches[-1]) if len(lanes) > 1 else launches, declined(policy, merge),
                   RefusalKind.POLICY)
