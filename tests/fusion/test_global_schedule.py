"""isl's scheduler in the fusion schedule: time steps of groups (P2) and the
permutable band a wavefront needs."""

from __future__ import annotations

import islpy as isl
import networkx as nx
import pytest

from sirius.fusion.global_schedule import time_steps
from sirius.fusion.wavefront import permutable_band


def test_steps_follow_dependence_chains():
    # 0 -> 1 -> 2, 3 -> 4, 0 -> 5: the roots share step 0, their successors step 1
    assert time_steps(6, [(0, 1), (1, 2), (3, 4), (0, 5)]) == [0, 1, 2, 0, 1, 1]


def test_independent_groups_share_one_step():
    assert time_steps(3, []) == [0, 0, 0]
    assert time_steps(1, []) == [0]
    assert time_steps(0, []) == []


def test_join_waits_for_every_input():
    assert time_steps(4, [(0, 3), (1, 3), (2, 3)]) == [0, 0, 0, 1]
    assert time_steps(4, [(0, 1), (1, 3), (2, 3)]) == [0, 1, 0, 2]


@pytest.mark.parametrize("seed", range(8))
def test_random_dags_are_ordered_and_steps_hold_no_path(seed):
    graph = nx.gnp_random_graph(14, 0.15, seed=seed, directed=True)
    dag = nx.DiGraph((a, b) for a, b in graph.edges() if a < b)
    dag.add_nodes_from(range(14))
    steps = time_steps(14, dag.edges())
    assert all(steps[a] < steps[b] for a, b in dag.edges())
    for a in range(14):
        for b in range(14):
            if a != b and steps[a] == steps[b]:
                assert not nx.has_path(dag, a, b)


def _deps(*texts: str) -> list[isl.Map]:
    return [isl.Map(t) for t in texts]


LOOPS = isl.UnionSet("{ S[s, c] : 0 <= s < 6 and 0 <= c < 4 }")


def test_lstm_band_is_permutable():
    carried = _deps("{ [s, c] -> [s, c + 1] : 0 <= s < 6 and 0 <= c < 3 }",
                    "{ [s, c] -> [s + 1, c] : 0 <= s < 5 and 0 <= c < 4 }")
    assert permutable_band(LOOPS, carried)


def test_all_to_all_step_dependence_has_nopermutable_band():
    # every cell of step s+1 reads every cell of step s, and cells of a step are chained:
    # the inner member cannot be non-negative on every dependence
    carried = _deps("{ [s, c] -> [s + 1, c2] : 0 <= s < 5 and 0 <= c < 4 and 0 <= c2 < 4 }",
                    "{ [s, c] -> [s, c + 1] : 0 <= s < 6 and 0 <= c < 3 }")
    assert not permutable_band(LOOPS, carried)
