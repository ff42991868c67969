"""The profitability seam (sirius/fusion/policies.py ``priority``, sirius/tuning/profitability.py):
a policy that ranks merges gets the one it ranks first among all that are legal and
accepted, not the first in program order; the cost-model policy accepts a merge the model
predicts faster and ranks merges by the time they save."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from sirius.analysis.frontend import CompileJob
from sirius.core.config import CompileFlags, resolve_toolchain
from sirius.core.target import H100
from sirius.fusion.policies import CandidateLaunch, FusionPolicy, Merge, MergeKind
from sirius.pipeline import OptimizeState, rearrange, run_pipeline
from sirius.tuning.cost_model import LaunchShape, StatementCosts, ThreadWork
from sirius.tuning.profitability import POLICIES, Profitable

ROOT = Path(__file__).resolve().parents[2]


class PairsPreferringRelu(FusionPolicy):
    """Lanes of two launches at most; of the merges open, the one that brings in relu first."""

    name = "pairs-preferring-relu"
    summary = "lanes of two, relu first"

    def accept(self, merge: Merge) -> bool:
        return merge.kind == MergeKind.VERTICAL and len(merge.launches) <= 2

    def priority(self, merge: Merge) -> float:
        return 1.0 if any(x.kernel == "relu" for x in merge.joining) else 0.0


class PairsFirstFit(PairsPreferringRelu):
    name = "pairs-first-fit"

    def priority(self, merge: Merge) -> None:
        return None


def _lanes(state: OptimizeState) -> list[list[str]]:
    insts = {i.statement.index: i for i in state.model.launches}
    return [[insts[i].kernel.name for i in lane.launches] for g in state.schedule.groups for lane in g.lanes]


def test_a_ranking_policy_gets_its_first_choice_not_the_first_pair():
    job = CompileJob(ROOT / "cuda_inputs" / "elementwise_chain.cu", CompileFlags(), resolve_toolchain())
    greedy = run_pipeline(OptimizeState(job))
    first_fit = rearrange(greedy, "auto", policy=PairsFirstFit())
    ranked = rearrange(greedy, "auto", policy=PairsPreferringRelu())
    assert _lanes(greedy) == [["scale2", "add", "relu", "square_plus_one"]]
    assert _lanes(first_fit) == [["scale2", "add"], ["relu", "square_plus_one"]]
    assert _lanes(ranked) == [["scale2"], ["add", "relu"], ["square_plus_one"]]


def _shape(label: str, blocks: int, threads: int, accesses: float) -> LaunchShape:
    return LaunchShape(label, blocks, threads, 0, blocks * threads * accesses * 4.0, ThreadWork(accesses))


def _merge(kind: MergeKind, lanes: list[list[int]], joining: list[int]) -> Merge:
    launch = lambda i: CandidateLaunch(SimpleNamespace(statement=SimpleNamespace(index=i)))  # noqa: E731
    return Merge(kind, tuple(tuple(launch(i) for i in lane) for lane in lanes), tuple(launch(i) for i in joining),
                 dependent=True)


def test_the_cost_model_policy_declines_a_merge_predicted_slower_and_ranks_by_saving():
    policy = Profitable()
    policy.costs = StatementCosts(shapes={
        0: _shape("narrow", 1, 256, 4),  # one block
        1: _shape("wide", 4096, 256, 4),  # would run 4096 instances per thread of the narrow grid
        2: _shape("same", 1, 256, 4),
        3: _shape("small", 132, 256, 1),
        4: _shape("small too", 132, 256, 1),
    })
    slower = _merge(MergeKind.VERTICAL, [[0, 1]], [1])
    faster = _merge(MergeKind.VERTICAL, [[0, 2]], [2])
    side_by_side = _merge(MergeKind.HORIZONTAL, [[3], [4]], [4])
    assert policy.saving_us(slower) < 0 and not policy.accept(slower)
    assert policy.saving_us(faster) > 0 and policy.accept(faster)
    # two launches that fit the GPU at once: one graph node saved and both run together
    assert policy.accept(side_by_side)
    assert policy.priority(side_by_side) > H100.graph_node_us * 0.99
    assert policy.accept(_merge(MergeKind.WAVEFRONT, [[0, 1]], []))


def test_the_commands_know_the_cost_model_policy_by_name():
    assert POLICIES["profitable"] is Profitable
    assert list(POLICIES)[:4] == ["greedy", "none", "horizontal", "patterns"]
