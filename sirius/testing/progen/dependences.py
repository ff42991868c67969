"""The dependences the generator intends between launches, from the templates' footprints:
per pair in program order, of a launch in a host loop with its next iteration, and
iteration by iteration within a loop nest.
"""

from __future__ import annotations

from sirius.testing.progen.footprint import Footprint, footprint_width
from sirius.testing.progen.model import _WIDTH_RANK, Dependence
from sirius.testing.progen.statements import _HostStmt, _Stmt
from sirius.testing.progen.templates import Template


def _iteration_effects(stmt: _Stmt) -> list[tuple[dict[str, Footprint], dict[str, Footprint]]]:
    """Per iteration of a loop nest (one entry otherwise): buffer -> footprint
    of the reads and of the writes of one launch."""
    out = []
    accesses = stmt.tmpl.cached_accesses()
    for offsets in stmt.iters or ((0,) * len(stmt.ptrs),):
        reads: dict[str, Footprint] = {}
        writes: dict[str, Footprint] = {}
        for ptrs in (stmt.ptrs, *stmt.alts):
            for acc in accesses:
                target = writes if acc.write else reads
                buf = ptrs[acc.arg]
                fp = acc.footprint.shifted(offsets[acc.arg])
                target[buf] = target[buf].merged(fp) if buf in target else fp
        out.append((reads, writes))
    return out


def _effects(stmt: _Stmt) -> tuple[dict[str, Footprint], dict[str, Footprint]]:
    """Buffer -> footprint of the reads and of the writes of one launch (over
    every iteration of a loop nest)."""
    its = _iteration_effects(stmt)
    reads, writes = its[0]
    for r, w in its[1:]:
        for mine, other in ((reads, r), (writes, w)):
            for buf, fp in other.items():
                mine[buf] = mine[buf].merged(fp) if buf in mine else fp
    return reads, writes


def _conflicts(first, second) -> tuple[str, set[str], set[str]]:
    """Width, buffers and kinds of the conflicts of ``first`` followed by ``second``."""
    (r1, w1), (r2, w2) = first, second
    width, bufs, kinds = "none", set(), set()
    for kind, x, y in (("raw", w1, r2), ("war", r1, w2), ("waw", w1, w2)):
        for buf in sorted(set(x) & set(y)):
            w = footprint_width(x[buf], y[buf])
            if w == "none":
                continue
            bufs.add(buf)
            kinds.add(kind)
            if _WIDTH_RANK[w] > _WIDTH_RANK[width]:
                width = w
    return width, bufs, kinds


def dependence_width(first: Template, first_buffers: tuple[str, ...],
                     second: Template, second_buffers: tuple[str, ...]) -> str:
    """Width of the dependence of launch ``second`` on launch ``first``, each
    a template with the buffer names of its pointer arguments."""
    a = _Stmt(first, tuple(first_buffers), (), "plain")
    b = _Stmt(second, tuple(second_buffers), (), "plain")
    return _conflicts(_effects(a), _effects(b))[0]


def _widest(a: str, b: str) -> str:
    return a if _WIDTH_RANK[a] >= _WIDTH_RANK[b] else b


def _nest_conflicts(ei: list, ej: list, same: bool) -> tuple[str, set[str], set[str], set[str]]:
    """Conflicts between two launches of one loop nest, iteration by
    iteration (iterations in execution order): width, buffers, kinds of the
    first's instances followed by the second's, kinds of the second's
    followed by the first's (``same``: one launch with itself, all carried)."""
    width, bufs, kinds, carried = "none", set(), set(), set()
    for p, fi in enumerate(ei):
        for q, fj in enumerate(ej):
            if same and q <= p:
                continue
            forward = same or p <= q
            w, b, k = _conflicts(fi, fj) if forward else _conflicts(fj, fi)
            if w == "none":
                continue
            width = _widest(width, w)
            bufs |= b
            (carried if same or not forward else kinds).update(k)
    return width, bufs, kinds, carried


def _dependences(stmts: list[_Stmt], host_ops: list[_HostStmt] = ()) -> list[Dependence]:
    eff = [_effects(s) for s in stmts]
    per_iter = {j: _iteration_effects(s) for j, s in enumerate(stmts) if s.iters}

    def nest_pair(i: int, j: int) -> bool:
        return i in per_iter and j in per_iter and stmts[i].loop == stmts[j].loop

    def between(i: int, j: int) -> tuple[int, ...]:
        loop = stmts[i].loop if stmts[i].loop == stmts[j].loop else None
        return tuple(k for k, o in enumerate(host_ops)
                     if (i < o.position <= j) or (loop is not None and o.loop == loop))

    deps: list[Dependence] = []
    for j, sj in enumerate(stmts):
        if sj.loop is not None and sj.trips > 1:
            if nest_pair(j, j):
                width, bufs, _, kinds = _nest_conflicts(per_iter[j], per_iter[j], True)
            else:
                width, bufs, kinds = _conflicts(eff[j], eff[j])
            if width != "none":
                deps.append(Dependence(j, j, width, tuple(sorted(bufs)), (), tuple(sorted(kinds)),
                                       between(j, j)))
    for i in range(len(stmts)):
        for j in range(i + 1, len(stmts)):
            if nest_pair(i, j):
                width, bufs, kinds, carried = _nest_conflicts(per_iter[i], per_iter[j], False)
            else:
                width, bufs, kinds = _conflicts(eff[i], eff[j])
                carried = set()
                same_loop = stmts[i].loop is not None and stmts[i].loop == stmts[j].loop
                if same_loop and stmts[i].trips > 1:
                    cw, cbufs, carried = _conflicts(eff[j], eff[i])
                    bufs |= cbufs
                    width = _widest(width, cw)
            deps.append(Dependence(i, j, width, tuple(sorted(bufs)), tuple(sorted(kinds)),
                                   tuple(sorted(carried)), between(i, j)))
    deps.sort(key=lambda d: (d.producer, d.consumer))
    return deps
