"""Control-flow facts of one function: dominators, natural loops, program order.

Shared by the kernel model (device IR) and the host model (host IR).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sirius.analysis.ir import Block, Function


def reverse_postorder(func: Function) -> list[Block]:
    seen: set[int] = set()
    order: list[Block] = []
    stack = [(func.entry, iter(func.entry.succs))]
    seen.add(id(func.entry))
    while stack:
        block, it = stack[-1]
        nxt = next(it, None)
        if nxt is None:
            stack.pop()
            order.append(block)
        elif id(nxt) not in seen:
            seen.add(id(nxt))
            stack.append((nxt, iter(nxt.succs)))
    order.reverse()
    return order


def dominators(func: Function) -> dict[Block, Block | None]:
    """Immediate dominators (Cooper, Harvey and Kennedy's iterative algorithm)."""
    rpo = reverse_postorder(func)
    index = {b: i for i, b in enumerate(rpo)}
    idom: dict[Block, Block | None] = {func.entry: func.entry}

    def intersect(a: Block, b: Block) -> Block:
        while a is not b:
            while index[a] > index[b]:
                a = idom[a]  # type: ignore[assignment]
            while index[b] > index[a]:
                b = idom[b]  # type: ignore[assignment]
        return a

    changed = True
    while changed:
        changed = False
        for b in rpo[1:]:
            preds = [p for p in b.preds if p in idom and p in index]
            if not preds:
                continue
            new = preds[0]
            for p in preds[1:]:
                new = intersect(p, new)
            if idom.get(b) is not new:
                idom[b] = new
                changed = True
    idom[func.entry] = None
    return idom


def dominates(idom: dict[Block, Block | None], a: Block, b: Block) -> bool:
    cur: Block | None = b
    while cur is not None:
        if cur is a:
            return True
        cur = idom.get(cur)
    return False


@dataclass(eq=False)
class Loop:
    """A natural loop: header, body blocks, latches, exits, and nesting."""

    header: Block
    blocks: set[Block]
    latches: list[Block]
    parent: "Loop | None" = None
    children: list["Loop"] = field(default_factory=list)
    name: str = ""

    @property
    def depth(self) -> int:
        return 0 if self.parent is None else self.parent.depth + 1

    def exits(self) -> list[tuple[Block, Block]]:
        """(exiting block, outside successor) pairs."""
        return [(b, s) for b in self.blocks for s in b.succs if s not in self.blocks]

    def preheader_preds(self) -> list[Block]:
        return [p for p in self.header.preds if p not in self.blocks]


def natural_loops(func: Function, idom: dict[Block, Block | None]) -> list[Loop]:
    """All natural loops, outermost first, with parent/children links."""
    by_header: dict[Block, Loop] = {}
    for b in func.blocks:
        for s in b.succs:
            if b in idom and dominates(idom, s, b):  # back edge b -> s
                body = {s, b}
                work = [b]
                while work:
                    x = work.pop()
                    if x is s:
                        continue
                    for p in x.preds:
                        if p not in body and p in idom:
                            body.add(p)
                            work.append(p)
                loop = by_header.get(s)
                if loop:
                    loop.blocks |= body
                    loop.latches.append(b)
                else:
                    by_header[s] = Loop(s, body, [b])
    loops = sorted(by_header.values(), key=lambda lp: len(lp.blocks), reverse=True)
    for i, inner in enumerate(loops):
        for outer in reversed(loops[:i]):
            if inner.header in outer.blocks and inner is not outer and inner.blocks <= outer.blocks:
                inner.parent = outer
                outer.children.append(inner)
                break
    loops.sort(key=lambda lp: (lp.depth, lp.header.index))
    return loops


def innermost_loop(loops: list[Loop], block: Block) -> Loop | None:
    best = None
    for lp in loops:
        if block in lp.blocks and (best is None or len(lp.blocks) < len(best.blocks)):
            best = lp
    return best


def loop_nest(loops: list[Loop], block: Block) -> list[Loop]:
    """Loops around ``block``, outermost first."""
    lp = innermost_loop(loops, block)
    chain = []
    while lp is not None:
        chain.append(lp)
        lp = lp.parent
    return list(reversed(chain))


def structured_order(func: Function, loops: list[Loop]) -> list[Block]:
    """Blocks in program order with every loop's blocks contiguous.

    A topological order of the CFG without back edges in which each loop is
    emitted as a unit where its header comes up; this is the order in which
    a statement-level schedule lists host statements.
    """
    idom = dominators(func)

    def order_region(blocks: set[Block], entry: Block, region_loop: Loop | None) -> list[Block]:
        inner = [lp for lp in loops if lp.parent is region_loop and lp.header in blocks]
        unit_of: dict[Block, object] = {}
        for lp in inner:
            for b in lp.blocks:
                unit_of[b] = lp
        for b in blocks:
            unit_of.setdefault(b, b)
        units = {id(u): u for u in unit_of.values()}
        edges: dict[int, set[int]] = {k: set() for k in units}
        indeg = {k: 0 for k in units}
        for b in blocks:
            for s in b.succs:
                if s not in blocks or dominates(idom, s, b):
                    continue  # leaves the region, or a back edge
                u, v = id(unit_of[b]), id(unit_of[s])
                if u != v and v not in edges[u]:
                    edges[u].add(v)
                    indeg[v] += 1
        first = lambda k: min(x.index for x in (units[k].blocks if isinstance(units[k], Loop) else [units[k]]))
        ready = sorted([k for k in units if indeg[k] == 0], key=first)
        out: list[Block] = []
        while ready:
            k = ready.pop(0)
            u = units[k]
            if isinstance(u, Loop):
                out += order_region(u.blocks, u.header, u)
            else:
                out.append(u)
            for v in sorted(edges[k], key=first):
                indeg[v] -= 1
                if indeg[v] == 0:
                    ready.append(v)
            ready.sort(key=first)
        if region_loop is not None and out and out[0] is not entry:
            out.remove(entry)
            out.insert(0, entry)
        return out

    reachable = set(idom)
    return order_region({b for b in func.blocks if b in reachable}, func.entry, None)


def postdominator_sets(func: Function) -> dict[Block, set[Block]]:
    """For each block, the blocks on every path from it to a return (itself included).

    A block that reaches no return (an endless loop) post-dominates nothing but itself
    here, which makes more blocks control dependent on branches, never fewer."""
    blocks = list(func.blocks)
    universe = set(blocks)
    pdom: dict[Block, set[Block]] = {b: ({b} if not b.succs else set(universe)) for b in blocks}
    order = list(reversed(reverse_postorder(func)))
    order += [b for b in blocks if b not in set(order)]
    changed = True
    while changed:
        changed = False
        for b in order:
            if not b.succs:
                continue
            new = set.intersection(*(pdom[s] for s in b.succs)) | {b}
            if new != pdom[b]:
                pdom[b] = new
                changed = True
    for b in blocks:
        if pdom[b] == universe and len(universe) > 1:
            pdom[b] = {b}
    return pdom


def deciding_branches(func: Function) -> dict[Block, set[Block]]:
    """For each block, the branch blocks that decide whether it runs: those it is
    control dependent on, directly or through another deciding branch.

    ``b`` is control dependent on branch ``p`` when some successor of ``p`` leads to
    ``b`` on every path while ``p`` itself does not (``b`` does not post-dominate ``p``).
    """
    pdom = postdominator_sets(func)
    direct: dict[Block, set[Block]] = {b: set() for b in func.blocks}
    for p in func.blocks:
        if len(p.succs) < 2:
            continue
        for s in p.succs:
            for b in pdom[s]:
                if b is p or b not in pdom[p]:
                    direct[b].add(p)
    closed: dict[Block, set[Block]] = {}
    for b in func.blocks:
        seen, work = set(), list(direct[b])
        while work:
            p = work.pop()
            if p not in seen:
                seen.add(p)
                work.extend(direct[p])
        closed[b] = seen
    return closed
