"""Barriers as virtual dependences (paper section 3.3).

Inside one launch, two accesses to a common byte by *different threads of
the same block*, at least one a write, form a virtual dependence (a 4-byte store
and a 1-byte read through a ``char*`` meet on the store's last bytes). It is
ordered by a ``__syncthreads()`` that executes between them: in the same
iteration of the loops they share, a barrier at a program point between the
two accesses in that loop body; carried by a shared loop, a barrier in that
loop's body after the source or before the sink. A barrier that orders no
virtual dependence is a candidate for removal; a dependence no barrier
orders is a race in the input (reported, never "fixed").

Needs the launch's block size to be constant so that maps are affine; a
non-affine access conflicts with every access of its buffer (widening).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import islpy as isl

from sirius.analysis.kernel_model import Access, Barrier
from sirius.analysis.program_model import LaunchInstance, instance_maps, isl_ident

DIMS = ["bx", "by", "bz", "tx", "ty", "tz"]


@dataclass(frozen=True)
class VirtualDependence:
    src: Access
    dst: Access
    buffer: str
    kind: str  # "flow", "anti", "output"
    carried_by: str | None  # kernel loop iterator carrying it; None: same iteration
    ordered_by: tuple[Barrier, ...]  # barriers that execute between source and sink

    @property
    def race(self) -> bool:
        return not self.ordered_by


@dataclass(frozen=True)
class BarrierRole:
    barrier: Barrier
    orders: tuple[VirtualDependence, ...]

    @property
    def needed(self) -> bool:
        """Some virtual dependence is ordered by this barrier alone."""
        return any(len(d.ordered_by) == 1 for d in self.orders)


@functools.lru_cache(maxsize=256)
def _cross_thread_text(n_in: int, n_out: int, ctx_params: str) -> str:
    return str(_cross_thread(n_in, n_out, ctx_params))


def _cross_thread(n_in: int, n_out: int, ctx_params: str) -> isl.Map:
    ins = [f"i{k}" for k in range(n_in)]
    outs = [f"o{k}" for k in range(n_out)]
    same_block = " and ".join(f"{ins[k]} = {outs[k]}" for k in range(3))
    other_thread = " or ".join(f"{ins[k]} != {outs[k]}" for k in range(3, 6))
    return isl.Map(f"{ctx_params}{{ [{', '.join(ins)}] -> [{', '.join(outs)}] : {same_block} and ({other_thread}) }}")


@functools.lru_cache(maxsize=1024)  # isl objects are values: sharing one is safe
def _iterations(n_in: int, n_out: int, common: int, carried: int | None, ctx: str) -> isl.Map:
    """Pairs in the same iteration of the first ``common`` loops, or carried by loop ``carried``."""
    ins = [f"i{k}" for k in range(n_in)]
    outs = [f"o{k}" for k in range(n_out)]
    conds = []
    upto = common if carried is None else carried
    for k in range(upto):
        conds.append(f"i{6 + k} = o{6 + k}")
    if carried is not None:
        conds.append(f"o{6 + carried} > i{6 + carried}")
    return isl.Map(f"{ctx}{{ [{', '.join(ins)}] -> [{', '.join(outs)}] : {' and '.join(conds) or 'true'} }}")


def _orderers(a1: Access, a2: Access, common: tuple[str, ...], carried: int | None,
              barriers: list[Barrier]) -> tuple[Barrier, ...]:
    out = []
    for b in barriers:
        if b.kind != "block":
            continue
        if carried is None:
            if b.loops == common[:len(b.loops)] and a1.position < b.position < a2.position \
                    and all(lp in common for lp in b.loops):
                out.append(b)
        else:
            body = common[:carried + 1]
            if b.loops == body and (b.position > a1.position or b.position < a2.position):
                out.append(b)
    return tuple(out)


def _anywhere(buffer: str, loops: int) -> isl.Map:
    """Every element (or byte) of ``buffer``, from every instance."""
    dims = DIMS + [f"l{k}" for k in range(loops)]
    return isl.Map(f"{{ [{', '.join(dims)}] -> {isl_ident(buffer)}[o0] }}")


def _buffers_shared_between_threads(parsed: list[tuple[Access, str, isl.Map]]) -> set[str]:
    """Buffers where two threads of one block may touch one element, one of them writing.

    A quick filter before the per-access-pair work: each access is projected
    onto (block, thread) -> element (an over-approximation, so an empty
    conflict here is empty for every pair). TVM kernels touch most global
    buffers at one element per thread, and are skipped here.
    """
    touched: dict[str, isl.UnionMap] = {}
    written: dict[str, isl.UnionMap] = {}
    for access, buf, m in parsed:
        flat = isl.UnionMap.from_map(m.project_out(isl.dim_type.in_, 6, m.dim(isl.dim_type.in_) - 6)
                                     .reset_tuple_id(isl.dim_type.in_))
        touched[buf] = touched[buf].union(flat) if buf in touched else flat
        if access.kind != "load":
            written[buf] = written[buf].union(flat) if buf in written else flat
    out = set()
    cross = isl.UnionMap.from_map(_cross_thread(6, 6, ""))
    for buf, w in written.items():
        pairs = w.apply_range(touched[buf].reverse())
        if not pairs.intersect(cross).is_empty():
            out.add(buf)
    return out


def barrier_dependences(inst: LaunchInstance) -> tuple[list[VirtualDependence], list[BarrierRole]]:
    """Virtual dependences of one launch and the role of each of its barriers."""
    kernel = inst.kernel
    maps = instance_maps(inst.statement, kernel, inst.bindings, dims=list(DIMS))
    # a buffer whose accesses all have the size of its element is compared element by
    # element (equal elements or none); any other in bytes, as between launches
    sub_word = {m.buffer for m in maps if m.access.size != m.unit}
    parsed = []
    for m in maps:
        try:
            parsed.append((m.access, m.buffer, m.byte_map() if m.buffer in sub_word else isl.Map(m.isl)))
        except isl.Error:  # not understood: the access may touch any element, in any thread
            parsed.append((m.access, m.buffer, _anywhere(m.buffer, len(m.access.loops))))
    deps: list[VirtualDependence] = []
    barriers = [b for b in kernel.barriers if b.kind == "block"]
    shared_between_threads = _buffers_shared_between_threads(parsed)
    for a1, buf1, m1 in parsed:
        for a2, buf2, m2 in parsed:
            if buf1 != buf2 or (a1.kind == "load" and a2.kind == "load") or buf1 not in shared_between_threads:
                continue
            kind = "flow" if a1.kind != "load" and a2.kind == "load" else (
                "anti" if a1.kind == "load" else "output")
            rel = m1.apply_range(m2.reverse())
            if rel.is_empty():
                continue
            n_in, n_out = rel.dim(isl.dim_type.in_), rel.dim(isl.dim_type.out)
            params = [rel.get_dim_name(isl.dim_type.param, i) for i in range(rel.dim(isl.dim_type.param))]
            ctx = f"[{', '.join(params)}] -> " if params else ""
            rel = rel.intersect(isl.Map(_cross_thread_text(n_in, n_out, ctx)))
            if rel.is_empty():
                continue
            common: list[str] = []
            for x, y in zip(a1.loops, a2.loops):
                if x != y:
                    break
                common.append(x)
            classes = [(None, a1.position < a2.position)] + [(i, True) for i in range(len(common))]
            for carried, possible in classes:
                if not possible:
                    continue
                part = rel.intersect(_iterations(n_in, n_out, len(common), carried, ctx))
                if part.is_empty():
                    continue
                ordered = _orderers(a1, a2, tuple(common), carried, barriers)
                deps.append(VirtualDependence(a1, a2, buf1, kind,
                                              None if carried is None else common[carried], ordered))
    roles = [BarrierRole(b, tuple(d for d in deps if b in d.ordered_by)) for b in barriers]
    return deps, roles
