"""Global schedule (P2): time steps for the groups local fusion left apart.

After local fusion (P1) the groups of a region are joined only by
dependences that could not be fused: global ones, or ones whose fusion was
refused. isl's scheduler gets them as validity constraints (so no group runs
before one it depends on) and as proximity constraints (so related groups are
placed close together). Its schedule tree says which groups must run one
after another (sequence nodes) and which may run at the same time (set
nodes); reading the tree gives each group a *time step*: the children of a
sequence take consecutive steps, the children of a set share the steps of
their parent. Groups on the same step have no dependence path between them,
so P3 may run them as one launch, and ordering groups by step is a legal
order for the region.
"""

from __future__ import annotations

from collections.abc import Iterable

import islpy as isl

_T = isl.schedule_node_type


def _statement(group: int) -> str:
    return f"G{group}"


def _leaf_steps(node: isl.ScheduleNode, start: int, steps: dict[int, int]) -> int:
    """Steps for the groups reaching a leaf: one per distinct prefix schedule value, in order."""
    prefix = node.get_prefix_schedule_union_map().intersect_domain(node.get_domain())
    values: dict[int, tuple] = {}
    def record(m: isl.Map) -> None:
        group = int(m.get_tuple_name(isl.dim_type.in_)[1:])
        point = m.range().sample_point()
        values[group] = tuple(point.get_coordinate_val(isl.dim_type.set, k).to_python()
                              for k in range(m.dim(isl.dim_type.out)))
    prefix.foreach_map(record)
    distinct = sorted(set(values.values()))
    for group, value in values.items():
        steps[group] = start + distinct.index(value)
    return len(distinct)


def _walk(node: isl.ScheduleNode, start: int, steps: dict[int, int]) -> int:
    """Assign steps to the groups below ``node`` from ``start`` on; return how many steps they take."""
    kind = node.get_type()
    if kind == _T.sequence:
        at = start
        for k in range(node.n_children()):
            at += _walk(node.child(k), at, steps)
        return at - start
    if kind == _T.set:
        return max(_walk(node.child(k), start, steps) for k in range(node.n_children()))
    if node.n_children() == 0:
        return _leaf_steps(node, start, steps)
    return _walk(node.child(0), start, steps)


def time_steps(groups: int, edges: Iterable[tuple[int, int]]) -> list[int]:
    """The time step of each of ``groups`` groups, given the dependences ``edges`` (a, b): b needs a.

    Raises ``RuntimeError`` if isl's schedule were to violate a dependence
    (it cannot, by construction; the check keeps a bug from miscompiling).
    """
    edges = sorted(set(edges))
    if groups == 0:
        return []
    domain = isl.UnionSet("{ " + "; ".join(f"{_statement(g)}[]" for g in range(groups)) + " }")
    deps = isl.UnionMap("{ " + "; ".join(f"{_statement(a)}[] -> {_statement(b)}[]" for a, b in edges) + " }")
    constraints = isl.ScheduleConstraints.on_domain(domain).set_validity(deps).set_proximity(deps)
    tree = constraints.compute_schedule()
    steps: dict[int, int] = {}
    _walk(tree.get_root(), 0, steps)
    if set(steps) != set(range(groups)) or any(steps[a] >= steps[b] for a, b in edges):
        raise RuntimeError(f"isl schedule does not order the groups by their dependences: {tree}")
    return [steps[g] for g in range(groups)]
