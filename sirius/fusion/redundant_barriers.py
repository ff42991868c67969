"""Redundant barrier elimination on the fused kernels (paper section 5.1, after Darte
and Schreiber): a ``__syncthreads()`` that orders no dependence goes.

Two kinds of barrier stand in a fused kernel, and each is judged by what it orders:

- a fragment's own barrier (written in its kernel) orders the virtual dependences of
  ``analysis.barrier_deps``: two threads of one block touching one element, one writing,
  with the barrier between them. One that orders none, at every launch the fragment runs
  for, is left out of the fragment. Not where the analysis could miss what it orders:
  the kernel has an access or call it does not understand, an early exit, or a warp
  operation (``__activemask``, shuffles, votes) between the barrier and the next one
  kept (a barrier also reconverges the warp), or the barrier sits in a loop of a kernel
  with warp operations;
- a barrier placed between fragments (``fusion.barriers``) records the orderings it
  was placed for. It goes when every ordering of every barrier is still kept by another
  barrier between its two fragments: one placed between them, or the own barrier of a
  fragment run between them that every thread of the block passes once (on every path
  of its kernel, outside loops, in a lane as wide as the block, not re-indexed).

Removal never adds an ordering point's worth of doubt: what is not proven redundant stays.
"""

from __future__ import annotations

import dataclasses
import re

import islpy as isl

from sirius.analysis.barrier_deps import barrier_dependences
from sirius.analysis.program_model import LaunchInstance, ProgramModel
from sirius.analysis.uar import isl_budget
from sirius.fusion.kernel_ir import LaneBarrier, Fragment, KernelIR, Lane, Ordering
from sirius.fusion.fragment_text import BARRIER_CALL

ROLE_OPERATION_BUDGET = 2_000_000  # isl operations for one launch's virtual dependences


# ------------------------------------------------------------------ a fragment's own barriers

def _role_key(inst: LaunchInstance):
    """Launches whose virtual dependences are the same: one kernel and shape, the same
    scalars, and pointers into the same allocations at the same distances from each other
    (dependences within a block only see where the pointers are relative to each other)."""
    s = inst.statement
    first_offset: dict[str, object] = {}
    args = []
    for name, arg in inst.bindings:
        if arg.kind == "buffer" and arg.buffer and arg.offset is not None:
            base = first_offset.setdefault(arg.buffer, arg.offset)
            distance = (arg.offset - base).constant_value()
            if distance is None:
                return None
            args.append((name, "buffer", list(first_offset).index(arg.buffer), distance))
        elif arg.kind == "scalar" and arg.value is not None and arg.value.constant_value() is not None:
            args.append((name, "scalar", arg.value.constant_value()))
        else:
            return None
    return (inst.kernel.mangled, s.grid.constant(), s.block.constant(), tuple(args))


def _roleless_barriers(inst: LaunchInstance, cache: dict) -> frozenset[int]:
    """Source lines of ``inst``'s own barriers that order nothing at this launch and may go."""
    k = inst.kernel
    block = [b for b in k.barriers if b.kind == "block"]
    if not block or k.unsupported or k.early_exits or any(b.line is None for b in k.barriers) \
            or inst.statement.block.constant() is None or inst.statement.grid.constant() is None:
        return frozenset()
    key = _role_key(inst)
    if key is not None and key in cache:
        return cache[key]
    try:
        with isl_budget(ROLE_OPERATION_BUDGET):
            _, roles = barrier_dependences(inst)
    except isl.Error:
        roles = None  # too costly to establish: every barrier stays
    lines = frozenset() if roles is None else _removable(inst, [r.barrier for r in roles if not r.orders])
    if key is not None:
        cache[key] = lines
    return lines


def _removable(inst: LaunchInstance, unneeded) -> frozenset[int]:
    k = inst.kernel
    warp_lines = [line for _, line in k.warp_ops]
    if warp_lines and any(line is None for line in warp_lines):
        return frozenset()
    per_line: dict[int, int] = {}
    for b in k.barriers:
        per_line[b.line] = per_line.get(b.line, 0) + 1
    out = set()
    kept = sorted(b.line for b in k.barriers if b not in unneeded)
    for b in unneeded:
        if per_line[b.line] != 1:
            continue  # one line, several barriers (a macro): which one is which is not known
        if warp_lines and b.loops:
            continue
        following = next((line for line in kept if line > b.line), None)
        if any(b.line < w and (following is None or w <= following) for w in warp_lines):
            continue
        out.add(b.line)
    return frozenset(out)


def _own_barriers_to_remove(kernels: list[KernelIR], model: ProgramModel) -> dict[str, frozenset[int]]:
    """Per kernel (mangled name), the lines of its own barriers that no launch it runs for
    in a fused kernel needs, and that its source text shows unambiguously."""
    cache: dict = {}
    per_kernel: dict[str, frozenset[int]] = {}
    for k in kernels:
        for f in (f for lane in k.lanes for f in lane.fragments):
            inst = model.launch(f.launch)
            # a wave kernel runs the fragment for every cell of a wave, not only this launch
            lines = _roleless_barriers(inst, cache) if not k.role.per_cell else frozenset()
            name = inst.kernel.mangled
            per_kernel[name] = lines if name not in per_kernel else per_kernel[name] & lines
    out = {}
    for name, lines in per_kernel.items():
        decl = model.kernel_decls.get(name)
        if decl is None or not lines:
            continue
        text = decl.body_text.split("\n")
        ok = frozenset(line for line in lines if 0 <= line - decl.body_line < len(text)
                       and len(BARRIER_CALL.findall(text[line - decl.body_line])) == 1)
        if ok:
            out[name] = ok
    return out


# ------------------------------------------------------------------ barriers between fragments

def stands_between(lane: Lane, k: KernelIR, position: int, removed: dict[int, tuple[int, ...]], insts) -> bool:
    """The statement at ``position`` of the lane's body is a barrier every thread passes."""
    s = lane.body[position]
    if isinstance(s, LaneBarrier):
        return True
    if k.role.per_cell or len(k.lanes) != 1 or s.reindex is not None or s.block != lane.block:
        return False
    own = insts[s.launch].kernel.barriers
    return any(b.kind == "block" and b.every_path and b.line not in removed.get(s.launch, ()) for b in own)


def without_covered_barriers(lane: Lane, points: set[int]) -> tuple[Lane, int]:
    """The lane without each placed barrier whose orderings, and those of the barriers
    removed before it, another of the barrier ``points`` (positions in the body) keeps;
    and how many went. A removed barrier's orderings move to a placed barrier that keeps
    them, so that what each barrier orders stays recorded for the passes after."""
    at = {s.launch: n for n, s in enumerate(lane.body) if isinstance(s, Fragment)}
    orders = {n: list(s.orders) for n, s in enumerate(lane.body) if isinstance(s, LaneBarrier)}
    orderings: list[Ordering] = [o for each in orders.values() for o in each]
    points = set(points)

    def keepers(o: Ordering, points: set[int]) -> list[int]:
        return [n for n in sorted(points) if at[o.before] < n < at[o.after]]

    for n in sorted(orders):
        if all(keepers(o, points - {n}) for o in orderings):
            points.discard(n)
            for o in orders.pop(n):
                placed = [m for m in keepers(o, points) if m in orders]
                if placed and o not in orders[placed[0]]:
                    orders[placed[0]].append(o)
    body = [LaneBarrier(tuple(orders[n])) if isinstance(s, LaneBarrier) else s
            for n, s in enumerate(lane.body) if not isinstance(s, LaneBarrier) or n in orders]
    gone = sum(isinstance(s, LaneBarrier) for s in lane.body) - len(orders)
    return dataclasses.replace(lane, body=tuple(body)), gone


def eliminate_redundant_barriers(kernels: list[KernelIR], model: ProgramModel) -> tuple[list[KernelIR], list[str]]:
    """The fused kernels without the barriers that order nothing (see the module docstring),
    and per kernel what went."""
    insts = model.instances()
    own = _own_barriers_to_remove(kernels, model)
    out, report = [], []
    for k in kernels:
        lanes = []
        removed: dict[int, tuple[int, ...]] = {}
        for lane in k.lanes:
            frags = tuple(dataclasses.replace(s, removed_barriers=tuple(sorted(own[insts[s.launch].kernel.mangled])))
                          if isinstance(s, Fragment) and insts[s.launch].kernel.mangled in own else s
                          for s in lane.body)
            lane = dataclasses.replace(lane, body=frags)
            removed.update({f.launch: f.removed_barriers for f in lane.fragments})
            lanes.append(lane)
        placed = 0
        for n, lane in enumerate(lanes):
            points = {m for m in range(len(lane.body)) if stands_between(lane, k, m, removed, insts)}
            lanes[n], gone = without_covered_barriers(lane, points)
            placed += gone
        own_gone = sum(len(v) for v in removed.values())
        out.append(dataclasses.replace(k, lanes=tuple(lanes)))
        changes = ([f"{placed} placed between fragments"] if placed else []) + \
                  ([f"{own_gone} of the fragments' own"] if own_gone else [])
        if changes:
            report.append(f"{k.name}: barriers removed: " + "; ".join(changes))
    return out, report
