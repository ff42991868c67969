"""The fusion schedule as data: which launches become one launch, and why others do not.

A ``Schedule`` holds the regions of launches that may be fused (``fusion.regions``), the
groups its launches form (``FusionGroup``: lanes of fragments, each group one launch) in
execution order, and a ``Refusal`` for every two launches left apart, whose
``RefusalKind`` code decides on and whose text the report shows. The stages after the
schedule (wavefront, cell waves, cooperative regions) record their decisions in it too.

Who fills it: ``fusion.scheduler`` (``build_schedule``), from the legality of each merge
(``fusion.merge_legality``), what may be a fragment at all (``fusion.fragments``) and the
fusion policy (``fusion.policies``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Mapping

ARRANGEMENTS = ("auto", "vertical", "horizontal")


@dataclass(frozen=True)
class GroupLane:
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
    lanes: tuple[GroupLane, ...]
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
    STATUS_QUERY = "status-query"  # a launch-status query reads what a launch before it did
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
    # successive iterations of a host loop (fusion.loop_iterations)
    LOOP_CARRIED = "loop-carried"  # a global dependence joins one iteration's last launch to the next's first
    LOOP_ITERATIONS = "loop-iterations"  # one launch could run them: only waves of cells (--persistent) do

    @property
    def legal(self) -> bool:
        """The merge was legal; a choice (schedule, arrangement, policy, mode) left it out."""
        return self in (RefusalKind.DIFFERENT_STEPS, RefusalKind.ARRANGEMENT, RefusalKind.POLICY,
                        RefusalKind.LOOP_ITERATIONS)


@dataclass(frozen=True)
class Problem:
    """Why a merge is not made: its kind, and the text the report shows."""

    kind: RefusalKind
    text: str


@dataclass(frozen=True)
class Refusal:
    """Launches kept apart (two that follow one another, a region, or one launch that cannot
    be a fragment), why, and the kind of that reason (``LATER_STAGE`` for refusals the
    stages after the schedule make, which give text only).

    ``loop``, when set, is a host loop's iterator (``LoopInfo.iterator``): the refusal keeps
    that loop's successive iterations apart, ``launches`` being the last launch statement of
    an iteration and the first of the next (one statement twice, for a loop around one
    launch); it says nothing of the two launches within one iteration."""

    launches: tuple[int, ...]
    reason: str
    kind: RefusalKind = RefusalKind.LATER_STAGE
    loop: str | None = None

    @classmethod
    def of(cls, launches, problem: Problem, loop: str | None = None) -> "Refusal":
        return cls(tuple(launches), problem.text, problem.kind, loop)


@dataclass(frozen=True)
class Region:
    id: int
    launches: tuple[int, ...]
    loops: tuple[str, ...]
    crossed: tuple[int, ...] = ()  # synchronizations between its launches that observe nothing


@dataclass(frozen=True)
class Schedule:
    """The schedule as the stages leave it: a value, each stage after the scheduler returns a
    new one (``refused``, ``dataclasses.replace``)."""

    regions: tuple[Region, ...] = ()
    groups: tuple[FusionGroup, ...] = ()  # in execution order
    refusals: tuple[Refusal, ...] = ()
    wavefronts: Mapping[int, Any] = field(default_factory=dict)  # group id -> fusion.wavefront.Wavefront
    cooperative: Mapping[int, Any] = field(default_factory=dict)  # region id -> fusion.cooperative.CooperativeRegion
    cell_waves: Mapping[int, Any] = field(default_factory=dict)  # region id -> fusion.cell_waves.CellWaves

    def group_of(self, launch: int) -> FusionGroup | None:
        return next((g for g in self.groups if launch in g.launches), None)

    def refused(self, *refusals: Refusal) -> "Schedule":
        """This schedule with ``refusals`` recorded too."""
        return replace(self, refusals=self.refusals + refusals)

