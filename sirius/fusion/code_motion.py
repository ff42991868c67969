"""Code motion between fragments (paper section 5.2, at the granularity of fragments):
independent fragments of a lane are reordered so that they share barriers.

A lane runs its fragments one after another in every thread; placement puts a
barrier before a fragment that depends at block level on an earlier one. Two
independent chains ``A1 -> A2`` and ``B1 -> B2`` written one after the other need
two barriers (``A1 | A2 B1 | B2``); interleaved, one (``A1 B1 | A2 B2``). The pass
schedules the lane in phases: a phase takes, in program order, every fragment whose
predecessors have all run, those at block level before the phase began; a barrier
separates phases. Two fragments linked by any dependence keep their order (the UAR's
edges in either direction; those between host iterations too, conservatively), and two
that use the same shared array are never in one phase. The new order is kept only when
it needs fewer barriers; barrier placement then runs again on it, keeping a barrier only
where no other placed one orders what it was placed for.

Lanes with a re-indexed fragment (placed relative to the lane's first fragment) and
wave kernels are left as they are.
"""

from __future__ import annotations

import dataclasses

from sirius.analysis.uar import UAR
from sirius.fusion.barriers import place_barriers
from sirius.fusion.kernel_ir import LaneBarrier, Fragment, KernelIR, Lane
from sirius.fusion.redundant_barriers import without_covered_barriers


def _phases(frags: tuple[Fragment, ...], uar: UAR) -> list[list[Fragment]]:
    position = {f.launch: n for n, f in enumerate(frags)}
    before: dict[int, set[int]] = {f.launch: set() for f in frags}  # fragment -> those that must run first
    needs_barrier: set[tuple[int, int]] = set()
    for d in uar.dependences:
        if d.src in position and d.dst in position and d.src != d.dst:
            a, b = sorted((d.src, d.dst), key=position.get)
            before[b].add(a)
            if d.iteration_width != "thread" or not d.same_iteration:
                needs_barrier.add((a, b))
    for x in frags:
        for y in frags:
            if position[x.launch] < position[y.launch] and set(x.shared) & set(y.shared):
                before[y.launch].add(x.launch)
                needs_barrier.add((x.launch, y.launch))
    done_before_phase: set[int] = set()
    phases: list[list[Fragment]] = []
    left = list(frags)
    while left:
        phase: list[Fragment] = []
        done = set(done_before_phase)
        for f in list(left):
            ready = all(p in done and (p in done_before_phase or (p, f.launch) not in needs_barrier)
                        for p in before[f.launch])
            if ready:
                phase.append(f)
                done.add(f.launch)
                left.remove(f)
        if not phase:  # cannot happen (the program order is a valid schedule); keep it then
            return [[f] for f in frags]
        phases.append(phase)
        done_before_phase = done
    return phases


def _moved(lane: Lane, uar: UAR) -> Lane | None:
    if any(f.reindex is not None for f in lane.fragments):
        return None
    order = [f for phase in _phases(lane.fragments, uar) for f in phase]
    if [f.launch for f in order] == [f.launch for f in lane.fragments]:
        return None
    return dataclasses.replace(lane, body=tuple(order))


def interleave_fragments(kernels: list[KernelIR], uar: UAR) -> tuple[list[KernelIR], list[str]]:
    """Each fused kernel with its lanes' fragments reordered to share barriers where that
    saves barriers (see the module docstring), and per kernel how many it saved."""
    out, report = [], []
    for k in kernels:
        if k.role.per_cell:
            out.append(k)
            continue
        bare = [_moved(lane, uar) for lane in k.lanes]
        if all(b is None for b in bare):
            out.append(k)
            continue
        candidate = dataclasses.replace(k, lanes=tuple(b if b is not None else
                                                       dataclasses.replace(lane, body=lane.fragments)
                                                       for b, lane in zip(bare, k.lanes)))
        (placed,) = place_barriers([candidate], uar)
        placed = dataclasses.replace(placed, lanes=tuple(
            without_covered_barriers(lane, {n for n, s in enumerate(lane.body) if isinstance(s, LaneBarrier)})[0]
            for lane in placed.lanes))
        if placed.barriers < k.barriers:
            out.append(placed)
            report.append(f"{k.name}: fragments reordered, {k.barriers} -> {placed.barriers} barriers placed "
                          f"({', '.join(' '.join(f'S{f.launch}' for f in lane.fragments) for lane in placed.lanes)})")
        else:
            out.append(k)
    return out, report

