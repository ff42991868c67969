"""Unified abstract representation (UAR): host statements and their dependences.

Nodes are the host statements of the entry function (launches, copies,
memsets, frees, synchronizations, allocations), each with its iteration
domain over host loops. Edges are flow, anti and output dependences between
statement *instances*, each carrying an isl relation from producer instances
``S<i>[h…, bx, by, bz, tx, ty, tz]`` to consumer instances (host iterators,
then block and thread indices for launches), restricted to pairs in program
order. Device effects are aggregated per thread from the kernel model's
access maps; kernel loop iterators are existentially quantified. Inside a
launch, barriers are represented by virtual dependences between threads of
a block (see :mod:`sirius.analysis.barrier_deps`).

Every launch-to-launch edge has a *width* (paper section 3.4):

- ``thread``: every dependent pair has the same block and thread index;
- ``block``: every dependent pair has the same block index, and producer
  blocks write disjoint regions;
- ``global``: anything else.

When one side is a mapping kernel (no shared memory, barriers, warp
operations or atomics: its threads are independent), its iteration domain
may be re-indexed onto the other side's (section 5.2). The width after
re-indexing is recorded beside the width as launched.

Soundness: memory is modelled per allocation; an access through a pointer of
unknown origin touches every allocation; a non-affine index touches the
whole allocation; isl parameters (unknown scalars) make a relation hold for
some value, which only adds edges.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import re
import sys
from dataclasses import dataclass, field

import islpy as isl
import networkx as nx

from sirius.analysis.barrier_deps import BarrierRole, VirtualDependence, barrier_dependences
from sirius.analysis.evaluate import Formula, conjunction
from sirius.analysis.host_model import ArgValue, HostStatement
from sirius.analysis.kernel_model import Access, KernelModel
from sirius.analysis.program_model import LaunchInstance, ProgramModel, isl_ident, launch_substitution
from sirius.analysis.symbolic import Expr

BLOCK = ("bx", "by", "bz")
_KERNEL_ITERATOR = re.compile(r"k\d+")
# isl operations allowed for one re-indexing question; past it the answer is "not established"
REINDEX_OPERATION_BUDGET = 300_000


@contextlib.contextmanager
def isl_budget(operations: int):
    """Bound the isl work of a question; isl raises ``isl.Error`` when it runs out."""
    ctx = isl.DEFAULT_CONTEXT
    ctx.reset_operations()
    ctx.set_max_operations(operations)
    try:
        yield
    finally:
        ctx.set_max_operations(0)
        ctx.reset_operations()
THREAD = ("tx", "ty", "tz")


@dataclass(frozen=True)
class Dependence:
    src: int  # statement index (producer, earlier in program order)
    dst: int
    buffer: str
    kind: str  # "flow", "anti", "output"
    relation: str  # isl map text between instances
    width: str | None  # "thread", "block", "global" for launch-to-launch edges
    width_reindexed: str | None = None  # width once a mapping kernel is re-indexed
    reindexed: str | None = None  # "consumer" or "producer": which side was re-indexed
    same_iteration: bool = True  # False when the edge only links different host iterations
    # the width of the pairs in one host iteration (what a fused kernel of one iteration's
    # launches must respect: launches of other iterations are other fused launches)
    iteration_width: str | None = None


@dataclass
class UAR:
    graph: nx.MultiDiGraph
    dependences: list[Dependence] = field(default_factory=list)
    # per launch statement: intra-block dependences and what each barrier orders
    virtual: dict[int, list[VirtualDependence]] = field(default_factory=dict)
    barriers: dict[int, list[BarrierRole]] = field(default_factory=dict)

    def edges_between(self, src: int, dst: int) -> list[Dependence]:
        return [d for d in self.dependences if d.src == src and d.dst == dst]


# ------------------------------------------------------------ names & units

def _instance_dims(stmt: HostStatement) -> list[str]:
    dims = list(stmt.loops)
    if stmt.kind == "launch":
        dims += list(BLOCK + THREAD)
    return dims


@dataclass(frozen=True)
class _Touch:
    """One statement's access to one allocation, before conversion to isl."""

    stmt: HostStatement
    buffer: str
    kind: str  # "read" or "write"
    offset: Expr | None  # bytes from the allocation start; None: anywhere
    size: int
    guard: Formula | None
    kernel_loops: tuple[tuple[str, Formula | None], ...] = ()
    subs: tuple = ()


def _launch_touches(inst: LaunchInstance, allocations: list[str], globals_: frozenset[str]) -> list[_Touch]:
    """What one launch reads and writes, per buffer: through its arguments, in device
    globals, and everywhere (``allocations``, which lists the globals too) through a
    pointer of unknown provenance."""
    stmt, kernel = inst.statement, inst.kernel
    subs = launch_substitution(stmt, kernel, inst.bindings)
    binding = dict(inst.bindings)
    loops = {lp.iterator: lp.domain for lp in kernel.loops}
    out: list[_Touch] = []
    for a in kernel.accesses:
        if a.space == "shared":
            continue
        kinds = ("read", "write") if a.kind == "atomic" else (("read",) if a.kind == "load" else ("write",))
        arg = ArgValue("buffer", buffer=a.buffer, offset=Expr.const(0)) if a.buffer in globals_ else \
            binding.get(a.buffer, ArgValue("unknown"))
        offset = None if a.offset is None else a.offset.subs(subs)
        guard = None if a.guard is None else a.guard.subs(subs)
        kl = tuple((n, None if loops.get(n) is None else loops[n].subs(subs)) for n in a.loops)
        if arg.kind == "buffer":
            targets = [(arg.buffer, arg.offset)]
        elif arg.kind == "buffers":
            targets = list(arg.options)
        else:
            targets = [(b, None) for b in allocations]  # unknown origin: may alias anything
        for buf, base in targets:
            off = None if offset is None or base is None else base + offset
            for k in kinds:
                out.append(_Touch(stmt, buf, k, off, a.size, guard, kl))
    return out


def _statement_touches(stmt: HostStatement, allocations: list[str]) -> list[_Touch]:
    def of(arg: ArgValue | None, kind: str) -> list[_Touch]:
        if arg is None or arg.kind == "host":
            return []
        size = stmt.bytes.constant_value() if stmt.bytes is not None else None
        if arg.kind == "buffer" and size is not None and arg.offset is not None:
            return [_Touch(stmt, arg.buffer, kind, arg.offset, size, None)]
        bufs = [arg.buffer] if arg.kind == "buffer" else (
            [b for b, _ in arg.options] if arg.kind == "buffers" else allocations)
        return [_Touch(stmt, b, kind, None, 1, None) for b in bufs]

    if stmt.kind == "copy":
        return of(stmt.src, "read") + of(stmt.dst, "write")
    if stmt.kind == "memset":
        return of(stmt.dst, "write")
    if stmt.kind == "free":
        return of(stmt.dst, "write")  # a free orders after every use of the allocation
    if stmt.kind == "opaque":  # not understood: it may read and write all device memory
        return [_Touch(stmt, b, kind, None, 1, None) for b in allocations for kind in ("read", "write")]
    return []


def _unit_of(touches: list[_Touch]) -> int:
    """Largest element size that divides every offset coefficient and size."""
    g = 0
    for t in touches:
        g = math.gcd(g, t.size)
        if t.offset is not None:
            for _, c in t.offset.terms:
                g = math.gcd(g, c)
    return g or 1


# --------------------------------------------------------------- relations

def _affine(f: Formula | None) -> str | None:
    if f is None:
        return None
    parts = f.parts if f.op == "and" else (f,)
    keep = [p for p in parts if p.is_affine()]
    c = conjunction(keep)
    return None if c is None else c.to_isl()


def _touch_map(t: _Touch, unit: int, alloc_bytes: dict[str, int | None], params: tuple[str, ...]) -> isl.Map:
    stmt = t.stmt
    dims = _instance_dims(stmt)
    cons: list[str] = []
    if stmt.domain is not None and stmt.domain.is_affine():
        cons.append(stmt.domain.to_isl())
    if stmt.kind == "launch":
        for axis, d in zip("xyz", (stmt.grid.x, stmt.grid.y, stmt.grid.z)):
            cons.append(f"0 <= b{axis}" + (f" and b{axis} < {d}" if d is not None and d.is_affine() else ""))
        for axis, d in zip("xyz", (stmt.block.x, stmt.block.y, stmt.block.z)):
            cons.append(f"0 <= t{axis}" + (f" and t{axis} < {d}" if d is not None and d.is_affine() else ""))
    g = _affine(t.guard)
    inner: list[str] = [g] if g else []
    for _, dom in t.kernel_loops:
        d = _affine(dom)
        if d:
            inner.append(d)
    total = alloc_bytes.get(t.buffer)
    if t.offset is not None and t.offset.is_affine() and all(c % unit == 0 for _, c in t.offset.terms):
        start = t.offset.floordiv(unit)
        count = max(1, t.size // unit)
        inner.append(f"{start} <= e < {start} + {count}" if count > 1 else f"e = {start}")
    else:
        inner.append("0 <= e" + (f" < {total // unit}" if total else ""))
    kvars = [n for n, _ in t.kernel_loops]
    # a kernel loop iterator used outside its loop (a value carried out of the loop), and a
    # scalar the analysis does not know (an argument from argv or data, a launch shape): any
    # value, chosen anew for each instance, since two launches, or two iterations of one,
    # may pass different values under one parameter name
    kvars += sorted(_unknown_symbols(t, dims) - set(kvars) - set(params))
    body = " and ".join(inner)
    if kvars:
        body = f"exists ({', '.join(kvars)} : {body})"
    cons.append(body)
    text = f"{{ S{stmt.index}[{', '.join(dims)}] -> {isl_ident(t.buffer)}[e] : {' and '.join(c for c in cons if c)} }}"
    ctx = f"[{', '.join(params)}] -> " if params else ""
    try:
        return isl.Map(ctx + text)
    except isl.Error:
        if os.environ.get("SIRIUS_DEBUG"):
            print(f"sirius: isl could not read {ctx + text}", file=sys.stderr)
        if t.offset is None and t.guard is None and not t.kernel_loops:
            raise
        # widen: the whole allocation, for every instance of the statement
        return _touch_map(_Touch(t.stmt, t.buffer, t.kind, None, t.size, None), unit, alloc_bytes, params)


def _unknown_symbols(t: _Touch, dims: list[str]) -> set[str]:
    """The symbols of the touch's index, guard and kernel loop bounds that are neither its
    instance's dimensions nor its kernel loops' iterators: kernel loop exit values and
    scalars the analysis does not know."""
    syms: set[str] = set()
    if t.offset is not None:
        syms |= t.offset.symbols()
    if t.guard is not None:
        syms |= t.guard.symbols()
    for _, d in t.kernel_loops:
        if d is not None:
            syms |= d.symbols()
    return {n for n in syms - set(dims) - {n for n, _ in t.kernel_loops} if not n.startswith("__")}


def _params_of(touches: list[_Touch], dims_of) -> list[str]:
    """The parameters of every relation: symbols of the host statements' iteration domains
    (one value for the whole run); what a kernel does not know is existential per touch."""
    names: set[str] = set()
    for t in touches:
        if t.stmt.domain is not None:
            names |= t.stmt.domain.symbols() - set(dims_of(t.stmt))
    return sorted(n for n in names if not n.startswith("__") and not _KERNEL_ITERATOR.fullmatch(n))


def _rename(m: isl.Map, suffix_in: str, suffix_out: str) -> isl.Map:
    for i in range(m.dim(isl.dim_type.in_)):
        m = m.set_dim_name(isl.dim_type.in_, i, m.get_dim_name(isl.dim_type.in_, i) + suffix_in)
    for i in range(m.dim(isl.dim_type.out)):
        m = m.set_dim_name(isl.dim_type.out, i, m.get_dim_name(isl.dim_type.out, i) + suffix_out)
    return m


def _order(a: HostStatement, b: HostStatement, ctx: str) -> isl.Map:
    """{ S_a[…] -> S_b[…] : instance of a runs before instance of b }."""
    da, db = _instance_dims(a), _instance_dims(b)
    common = [h for h in a.loops if h in b.loops]
    common = [h for i, h in enumerate(common) if i < len(a.loops) and a.loops[i] == h and b.loops[i] == h]
    clauses = []
    for i in range(len(common)):
        eqs = [f"{common[j]}_s = {common[j]}_d" for j in range(i)]
        clauses.append(" and ".join(eqs + [f"{common[i]}_s < {common[i]}_d"]))
    if a.index < b.index:
        clauses.append(" and ".join([f"{h}_s = {h}_d" for h in common]) or "true")
    if not clauses:
        clauses = ["false"]
    cond = " or ".join(f"({c})" for c in clauses)
    ins = ", ".join(f"{d}_s" for d in da)
    outs = ", ".join(f"{d}_d" for d in db)
    return isl.Map(f"{ctx}{{ S{a.index}[{ins}] -> S{b.index}[{outs}] : {cond} }}")


def _same_axes(a: HostStatement, b: HostStatement, axes: tuple[str, ...], ctx: str, same_iter: bool = False) -> isl.Map:
    da, db = _instance_dims(a), _instance_dims(b)
    eqs = [f"{x}_s = {x}_d" for x in axes]
    if same_iter:
        eqs += [f"{h}_s = {h}_d" for h in a.loops if h in b.loops]
    ins = ", ".join(f"{d}_s" for d in da)
    outs = ", ".join(f"{d}_d" for d in db)
    return _parsed_map(f"{ctx}{{ S{a.index}[{ins}] -> S{b.index}[{outs}] : {' and '.join(eqs) or 'true'} }}")


@functools.lru_cache(maxsize=4096)  # the same statement pairs recur for every buffer they share
def _parsed_map(text: str) -> isl.Map:
    return isl.Map(text)


def is_mapping_kernel(k: KernelModel) -> bool:
    """Threads neither communicate nor share memory: may be re-indexed."""
    return not (k.shared or k.barriers or k.warp_ops or k.unsupported
                or any(a.kind == "atomic" for a in k.accesses))


# ------------------------------------------------------------------ builder

def build_uar(model: ProgramModel, barriers: bool = True, reindexed_widths: bool = True) -> UAR:
    """Build the UAR of ``model`` (see the module docstring).

    ``barriers``: also derive each launch's virtual dependences and barrier
    roles; ``reindexed_widths``: also give each edge its width after
    re-indexing a mapping kernel. Both are for the analysis report; the
    fusion schedule proves what it needs itself, so the optimizer skips them.
    """
    stmts = list(model.host.statements)
    # device memory: the allocations and the device globals, each a buffer of its own
    allocations = [a.name for a in model.host.allocations] + sorted(model.device_globals)
    alloc_bytes = {a.name: (a.bytes.constant_value() if a.bytes is not None else None)
                   for a in model.host.allocations}
    alloc_bytes.update(model.device_globals)
    globals_ = frozenset(model.device_globals)
    inst_of = {inst.statement.index: inst for inst in model.launches}
    touches: list[_Touch] = []
    for s in stmts:
        if s.kind == "launch" and s.index in inst_of:
            touches += _launch_touches(inst_of[s.index], allocations, globals_)
        else:
            touches += _statement_touches(s, allocations)
    graph = nx.MultiDiGraph()
    for s in stmts:
        label = inst_of[s.index].kernel.name if s.index in inst_of else (
            s.direction or s.detail or (str(s.dst) if s.dst is not None else s.kind))
        graph.add_node(s.index, kind=s.kind, label=label, line=s.line, loops=list(s.loops),
                       domain=None if s.domain is None else str(s.domain))
    params = _params_of(touches, _instance_dims)
    ctx = f"[{', '.join(params)}] -> " if params else ""
    by_buffer: dict[str, list[_Touch]] = {}
    for t in touches:
        by_buffer.setdefault(t.buffer, []).append(t)
    uar = UAR(graph)
    for inst in model.launches if barriers else ():
        if inst.kernel.barriers or any(a.space == "shared" for a in inst.kernel.accesses):
            uar.virtual[inst.statement.index], uar.barriers[inst.statement.index] = barrier_dependences(inst)
    for buf, ts in by_buffer.items():
        unit = _unit_of(ts)
        maps: dict[tuple[int, str], isl.Map] = {}
        for t in ts:
            m = _touch_map(t, unit, alloc_bytes, tuple(params))
            key = (t.stmt.index, t.kind)
            maps[key] = maps[key].union(m) if key in maps else m
        stmt_by_index = {s.index: s for s in stmts}
        indices = sorted({k[0] for k in maps})
        for ia in indices:
            for ib in indices:
                a, b = stmt_by_index[ia], stmt_by_index[ib]
                order = None
                for kind, ka, kb in (("flow", "write", "read"), ("anti", "read", "write"),
                                     ("output", "write", "write")):
                    if (ia, ka) not in maps or (ib, kb) not in maps:
                        continue
                    rel = maps[(ia, ka)].apply_range(maps[(ib, kb)].reverse())
                    if rel.is_empty():
                        continue
                    rel = _rename(rel, "_s", "_d")
                    order = order if order is not None else _order(a, b, ctx)
                    rel = rel.intersect(order)
                    if rel.is_empty():
                        continue
                    dep = _classify(a, b, buf, kind, rel.coalesce(), maps, ctx, inst_of, reindexed_widths)
                    uar.dependences.append(dep)
                    graph.add_edge(ia, ib, kind=kind, buffer=buf, width=dep.width,
                                   width_reindexed=dep.width_reindexed, relation=dep.relation)
    uar.dependences.sort(key=lambda d: (d.src, d.dst, d.buffer, d.kind))
    return uar


def _classify(a: HostStatement, b: HostStatement, buf: str, kind: str, rel: isl.Map, maps,
              ctx: str, inst_of, reindexed_widths: bool) -> Dependence:
    same_iter_rel = rel.intersect(_same_axes(a, b, (), ctx, same_iter=True))
    same_iteration = not same_iter_rel.is_empty()
    if a.kind != "launch" or b.kind != "launch":
        return Dependence(a.index, b.index, buf, kind, str(rel), None, same_iteration=same_iteration)
    width = _width(a, b, rel, maps, ctx)
    iteration_width = width if width == "thread" or not same_iteration or _within_iterations(a, b, rel, ctx) else \
        _width(a, b, same_iter_rel, maps, ctx)
    reindexed_width, side = None, None
    if width != "thread" and same_iteration and reindexed_widths:
        ka, kb = inst_of[a.index].kernel, inst_of[b.index].kernel
        if is_mapping_kernel(kb):
            reindexed_width, side = _reindexed_width(same_iter_rel.reverse(), b, a, maps, ctx), "consumer"
        elif is_mapping_kernel(ka):
            reindexed_width, side = _reindexed_width(same_iter_rel, a, b, maps, ctx), "producer"
        if reindexed_width is None:
            side = None
    return Dependence(a.index, b.index, buf, kind, str(rel), width, reindexed_width, side, same_iteration,
                      iteration_width)


def _within_iterations(a: HostStatement, b: HostStatement, rel: isl.Map, ctx: str) -> bool:
    """Every pair of ``rel`` is in one iteration of the loops around both statements (``rel``
    equals its part within iterations): no pair with an iterator before or after the other's.
    Asked one loop and one side at a time: isl answers these at once where the equality of
    the two relations, with modulo indexing in grid-stride loops, took it minutes."""
    da, db = _instance_dims(a), _instance_dims(b)
    ins, outs = ", ".join(f"{d}_s" for d in da), ", ".join(f"{d}_d" for d in db)
    for h in (h for h in a.loops if h in b.loops):
        for apart in (f"{h}_s < {h}_d", f"{h}_s > {h}_d"):
            if not rel.intersect(_parsed_map(f"{ctx}{{ S{a.index}[{ins}] -> S{b.index}[{outs}] : {apart} }}")).is_empty():
                return False
    return True


def _writes_block_disjoint(a: HostStatement, maps, ctx: str) -> bool:
    w = None
    for (idx, kind), m in maps.items():
        if idx == a.index and kind == "write":
            w = m if w is None else w.union(m)
    if w is None:
        return True
    overlap = _rename(w.apply_range(w.reverse()), "_s", "_d")
    diff_block = isl.Map(f"{ctx}{{ S{a.index}[{', '.join(d + '_s' for d in _instance_dims(a))}] -> "
                         f"S{a.index}[{', '.join(d + '_d' for d in _instance_dims(a))}] : "
                         + " and ".join(f"{h}_s = {h}_d" for h in a.loops)
                         + (" and " if a.loops else "")
                         + "(bx_s != bx_d or by_s != by_d or bz_s != bz_d) }")
    return overlap.intersect(diff_block).is_empty()


def _width(a: HostStatement, b: HostStatement, rel: isl.Map, maps, ctx: str) -> str:
    if rel.is_subset(_same_axes(a, b, BLOCK + THREAD, ctx)):
        return "thread"
    if rel.is_subset(_same_axes(a, b, BLOCK, ctx)) and _writes_block_disjoint(a, maps, ctx):
        return "block"
    return "global"


def _active(s: HostStatement, maps) -> isl.Set:
    dom = None
    for (idx, _), m in maps.items():
        if idx == s.index:
            d = m.domain()
            dom = d if dom is None else dom.union(d)
    return dom


def _reindexed_width(pi: isl.Map, moved: HostStatement, anchor: HostStatement, maps, ctx: str) -> str | None:
    """Width once ``moved`` (a mapping kernel) runs each of its threads on ``pi``'s image.

    ``pi`` relates instances of ``moved`` to instances of ``anchor`` (same
    host iteration). Thread-level when ``pi`` is a one-to-one function
    defined on every active instance of ``moved``; block-level when each
    instance of ``moved`` depends on one block of ``anchor`` only.
    """
    try:
        with isl_budget(REINDEX_OPERATION_BUDGET):
            return _reindexed_width_exact(pi, moved, anchor, maps)
    except isl.Error:
        return None  # too costly to establish: no re-indexed width (the launched width stands)


def _reindexed_width_exact(pi: isl.Map, moved: HostStatement, anchor: HostStatement, maps) -> str | None:
    active = _active(moved, maps)
    if active is None or not active.is_subset(_strip_names(pi.domain())):
        return None  # some instance of ``moved`` would have nowhere to run
    if pi.is_single_valued() and pi.is_injective():
        return "thread"
    blocks = pi.project_out(isl.dim_type.out, len(anchor.loops) + 3, 3)
    if blocks.is_single_valued():
        return "block"
    return None


def _strip_names(s: isl.Set) -> isl.Set:
    for i in range(s.dim(isl.dim_type.set)):
        name = s.get_dim_name(isl.dim_type.set, i)
        if name and name.endswith(("_s", "_d")):
            s = s.set_dim_name(isl.dim_type.set, i, name[:-2])
    return s
