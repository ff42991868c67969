"""The cost-model fusion policy: legality explains, profitability orders.

``Profitable`` accepts a legal merge when the cost model (``sirius.tuning.cost_model``)
predicts the merged launch faster than the two launches it replaces, each replayed as a
node of a CUDA Graph (the honest baseline: what fusion saves there is one node and what
the merged launch does better or worse: a fragment re-indexed onto fewer threads runs
several instances per thread, fragments side by side share the GPU), and ranks the merges
by the time they save, so the scheduler makes the most profitable first (XLA's priority
fusion). Wavefronts and waves of cells are taken as greedy takes them.

``POLICIES`` is every policy the commands know by name: the fusion layer's ``SHIPPED``
and this one.
"""

from __future__ import annotations

from sirius.core.target import H100, Target
from sirius.fusion.policies import SHIPPED, FusionPolicy, Merge, MergeKind
from sirius.tuning.cost_model import LaunchShape, StatementCosts, execution_us, fused_shape, statement_costs


class Profitable(FusionPolicy):
    name = "profitable"
    summary = "merges the cost model predicts faster, the largest saving first (priority fusion)"

    def __init__(self, gpu: Target = H100, margin_us: float = 0.0):
        self.gpu = gpu
        self.margin_us = margin_us  # a merge must save more than this
        self.costs: StatementCosts | None = None

    def begin(self, model) -> None:
        self.costs = statement_costs(model)

    def _launch_us(self, lanes: list[list[LaunchShape]]) -> float:
        return self.gpu.graph_node_us + execution_us(fused_shape("merge", lanes), self.gpu)

    def saving_us(self, merge: Merge) -> float:
        """Predicted time of the two sides as launches of their own, less the merged launch's."""
        if self.costs is None:
            raise RuntimeError("begin(model) was not called before the first merge")
        shapes = self.costs.shapes
        joining = {launch.statement for launch in merge.joining}
        lanes = [[shapes[launch.statement] for launch in lane] for lane in merge.lanes]
        if merge.kind == MergeKind.VERTICAL:
            (lane,) = merge.lanes
            first = [[shapes[launch.statement] for launch in lane if launch.statement not in joining]]
            second = [[shapes[launch.statement] for launch in lane if launch.statement in joining]]
        else:
            first = [[shapes[x.statement] for x in lane] for lane in merge.lanes
                     if not any(x.statement in joining for x in lane)]
            second = [[shapes[x.statement] for x in lane] for lane in merge.lanes
                      if any(x.statement in joining for x in lane)]
        return self._launch_us(first) + self._launch_us(second) - self._launch_us(lanes)

    def accept(self, merge: Merge) -> bool:
        if merge.kind == MergeKind.WAVEFRONT:
            return True
        return self.saving_us(merge) > self.margin_us

    def priority(self, merge: Merge) -> float | None:
        return self.saving_us(merge)


POLICIES: dict[str, type] = {**SHIPPED, Profitable.name: Profitable}
