"""Promises a fused kernel may keep.

A kernel makes promises about itself alone that fusion can make false:

- ``__restrict__`` on a pointer parameter: no other pointer reaches the bytes
  it touches while either of them writes;
- a load through the read-only data cache (``__ldg``, which clang marks
  ``!invariant.load`` and nvcc compiles to ``ld.global.nc``): nothing writes
  those bytes while the kernel runs.

Inside a fused kernel the fragments' parameters may point into one allocation
(TVM's memory plan reuses storage) and one fragment writes what another
reads. nvcc believes the promise and moves loads above the stores they depend
on; the result changes on the GPU only (the CPU backend's compiler does not
exploit it the same way).

``keep_promises`` decides, from the alias facts of the launches (allocation
and bytes each pointer reads and writes), which ``__restrict__`` qualifiers
each fused kernel keeps (fragments never keep their own: the fused kernel's
parameters carry every promise that holds), and which groups must be left
unfused because a fragment reads through the read-only cache bytes that
another fragment writes (that load is in the fragment's own body). The same
rule, ``broken_promises``, checks the emitted program (``fusion.check``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import islpy as isl

from sirius.analysis.kernel_model import ANY_BUFFER
from sirius.analysis.program_model import AccessMap, LaunchInstance, ProgramModel
from sirius.fusion.schedule import FusionGroup
from sirius.fusion.fragment_text import RESTRICT


@dataclass(frozen=True)
class Touch:
    """Bytes one access may touch: ``bytes`` is an isl set ``{ buffer[b] : ... }`` of byte
    offsets in the allocation (None: all of it); ``buffer`` None: anywhere in device memory."""

    buffer: str | None
    bytes: str | None
    kind: str  # "read", "write" or "cached read" (read-only data cache)
    line: int | None = None


@dataclass(frozen=True)
class PointerUse:
    """What one pointer of a (fused) kernel touches at one launch. ``param`` is False for
    accesses not through a parameter (device globals, pointers loaded from memory)."""

    pointer: str
    launch: int
    param: bool
    touches: tuple[Touch, ...]


@dataclass(frozen=True)
class BrokenPromise:
    """A promise that would be false inside ``kernel``: ``pointer`` promises (restrict, or a
    read through the read-only cache) while ``other`` reaches the same bytes of ``buffer``."""

    kernel: str
    promise: str  # "restrict" or "read-only cache"
    pointer: str
    other: str
    buffer: str
    line: int | None = None

    def describe(self) -> str:
        where = self.buffer if self.buffer else "device memory of unknown provenance"
        if self.promise == "restrict":
            return (f"{self.kernel}: parameter {self.pointer} is __restrict__ but {self.other} reaches the same "
                    f"bytes of {where} and one of them writes")
        return (f"{self.kernel}: {self.pointer} reads {where} through the read-only data cache (__ldg"
                + (f", line {self.line}" if self.line else "") + f") while {self.other} writes those bytes")


def fused_param_name(launch: int, position: int, name: str) -> str:
    """The fused kernel's name for parameter ``position`` (``name``) of the fragment of ``launch``."""
    return f"s{launch}_{name or position}"


# ------------------------------------------------------------------ alias facts

def _byte_set(m: AccessMap, rename: Callable[[str], str]) -> str:
    """The bytes an access map touches, as an isl set text with renamed parameters."""
    got = m.byte_map()
    for k in range(got.dim(isl.dim_type.param)):
        got = got.set_dim_name(isl.dim_type.param, k, rename(got.get_dim_name(isl.dim_type.param, k)))
    return str(got.range().coalesce())


def pointer_uses(inst: LaunchInstance, name_of: Callable[[int, str], str],
                 shared_params: tuple[str, ...] = ()) -> list[PointerUse]:
    """What each pointer of ``inst``'s kernel touches at this launch. ``name_of(position, name)``
    names a parameter in the kernel being judged; isl parameters other than ``shared_params``
    (host loop iterators, equal for every fragment of one launch) are renamed per launch, so
    unrelated unknowns of two launches are never taken for equal."""
    kernel, binding = inst.kernel, dict(inst.bindings)
    position = {p.name: j for j, p in enumerate(kernel.params)}
    rename = lambda p: p if p in shared_params else f"l{inst.index}_{p}"
    per_pointer: dict[str, list[Touch]] = {}
    through_param: dict[str, bool] = {}
    for m in inst.maps:
        a = m.access
        if a.space != "global":
            continue
        arg = binding.get(a.buffer)
        is_param = a.buffer in position
        if is_param and (arg is None or arg.kind != "buffer" or not arg.buffer):
            buffer = None  # an argument of unknown provenance may point anywhere
        elif a.buffer == ANY_BUFFER:
            buffer = None
        else:
            buffer = m.buffer
        base_dropped = is_param and arg is not None and arg.offset is not None and not _usable_base(inst, a, arg)
        exact_range = buffer is not None and not base_dropped and not re.search(r"\[o0\]", m.isl)
        kind = "write" if a.kind in ("store", "atomic") else ("cached read" if a.noncoherent else "read")
        touch = Touch(buffer, _byte_set(m, rename) if exact_range
                      else None, kind, a.line)
        pointer = name_of(position[a.buffer], a.buffer) if is_param else a.buffer
        per_pointer.setdefault(pointer, []).append(touch)
        through_param[pointer] = is_param
    return [PointerUse(p, inst.index, through_param[p], tuple(t)) for p, t in per_pointer.items()]


def _usable_base(inst: LaunchInstance, access, arg) -> bool:
    """The argument's offset into its allocation is in the access map (see instance_maps)."""
    base = arg.offset
    unit = inst.kernel.buffer_unit(access.buffer)
    return base.is_affine() and not any(c % unit for _, c in base.terms)


def _overlap(a: Touch, b: Touch) -> bool:
    if a.buffer is None or b.buffer is None:
        return True
    if a.buffer != b.buffer:
        return False
    if a.bytes is None or b.bytes is None:
        return True
    return _sets_meet(a.bytes, b.bytes)


@lru_cache(maxsize=65536)
def _sets_meet(a: str, b: str) -> bool:
    sa, sb = isl.Set(a), isl.Set(b)
    sa, sb = sa.align_params(sb.get_space()), sb.align_params(sa.get_space())
    return not sa.intersect(sb).is_empty()


def _conflict(a: PointerUse, b: PointerUse, cached_only: bool) -> tuple[Touch, Touch] | None:
    """Two touches, one of ``a`` and one of ``b``, reaching common bytes while one writes
    (``cached_only``: a cached read of ``a`` against a write of ``b``)."""
    for ta in a.touches:
        if cached_only and ta.kind != "cached read":
            continue
        for tb in b.touches:
            writes = tb.kind == "write" if cached_only else "write" in (ta.kind, tb.kind)
            if writes and _overlap(ta, tb):
                return ta, tb
    return None


def broken_promises(kernel: str, uses: list[PointerUse], restrict: set[str],
                    across_cells: bool = False) -> list[BrokenPromise]:
    """Every promise of one kernel that its pointers' uses falsify: a ``restrict`` parameter
    whose bytes another pointer reaches while one writes; a read through the read-only cache of
    bytes another fragment writes. ``across_cells``: the kernel runs many instances of the
    same launches at once (a wavefront), so a fragment's writes count against its own reads."""
    broken = []
    for a in uses:
        for b in uses:
            if a is b and not across_cells:
                continue
            if a.pointer in restrict and a.param and a.pointer != b.pointer:
                hit = _conflict(a, b, cached_only=False)
                if hit is not None:
                    broken.append(BrokenPromise(kernel, "restrict", a.pointer, b.pointer,
                                                hit[0].buffer or hit[1].buffer or ""))
            if a.launch != b.launch or across_cells:
                hit = _conflict(a, b, cached_only=True)
                if hit is not None:
                    broken.append(BrokenPromise(kernel, "read-only cache", a.pointer, b.pointer,
                                                hit[0].buffer or hit[1].buffer or "", hit[0].line))
    unique: dict[tuple, BrokenPromise] = {}
    for p in broken:
        unique.setdefault((p.promise, p.pointer, p.buffer), p)
    return list(unique.values())


# ------------------------------------------------------------------ the pass

def group_uses(model: ProgramModel, group: FusionGroup) -> list[PointerUse]:
    uses = []
    for idx in group.launches:
        inst = model.launch(idx)
        decl = model.kernel_decls.get(inst.kernel.mangled)
        spelled = [name for name, _ in decl.params] if decl else []
        name_of = lambda j, name, idx=idx, spelled=spelled: fused_param_name(
            idx, j, spelled[j] if j < len(spelled) else name)
        uses += pointer_uses(inst, name_of, shared_params=tuple(inst.statement.loops))
    return uses


def keep_promises(kernels: list, model: ProgramModel) -> tuple[list, dict, list]:
    """The fused kernels (``kernel_ir.KernelIR``) with the ``__restrict__`` qualifiers each
    keeps (those its fragments declared and the alias facts prove, none in a wave kernel),
    per group the qualifiers taken back, and the groups that cannot be fused with the
    reason: those where a fragment's read-only-cache load would read what another fragment
    writes (see the module docstring); their kernels are left out."""
    import dataclasses

    out, dropped, unfused = [], {}, []
    for k in kernels:
        wave = k.role.per_cell
        restrict = set() if wave else {p.name for p in k.params if RESTRICT.search(p.ctype)}
        broken = broken_promises(k.name, group_uses(model, k.group), restrict, across_cells=wave)
        cached = [b for b in broken if b.promise == "read-only cache"]
        if cached:
            unfused.append((k.group, cached[0].describe().split(": ", 1)[1]))
            continue
        kept = restrict - {b.pointer for b in broken}
        out.append(dataclasses.replace(k, params=tuple(dataclasses.replace(p, restrict=p.name in kept)
                                                       for p in k.params)))
        if broken:
            dropped[k.group.id] = tuple(broken)
    return out, dropped, unfused


