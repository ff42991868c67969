"""Shared-memory overlay: fragments whose shared arrays are never live at the same time
share one region, so a fused kernel holds about the largest fragment's shared memory
instead of the sum.

A fragment's static ``__shared__`` arrays live while it runs: a block starts a kernel
with its shared memory undefined, so no fragment reads what another left there (the
same array used twice is ordered by barrier placement already). The pass gives every
fused kernel one pool (``__shared__ unsigned char sirius_pool[N]``) and the printer
declares each pooled fragment's arrays as references into it, from the offset the
fragment is called with (16-byte aligned; 128 where a declaration asks for an alignment). Two pooled fragments of a lane
may use the same bytes only with a barrier between them (one placed there, or the own
barrier of a fragment in between that every thread passes): the pass adds no barrier,
it starts a fragment at offset 0 where one stands since the last pooled fragment and
after the bytes of the pooled fragments before it otherwise. N is the most any stretch
between barriers needs. The phases of one cooperative launch hold one pool, as large as
the largest phase's (``kernel_ir.phases_pool``): a grid barrier stands between two phases,
and a barrier after every virtual block a phase runs; so pooling pays there even for a
phase of one fragment, and is judged for the launch, its phases together.

A kernel is pooled only when every static shared array it uses is declared in its own
body (not in a helper, a lambda or a local class), one per declaration statement, with a
size the same in every build (not ``extern``, not a template instance's dependent type,
no type or named constant the program defines: the offsets are baked in, and a ``-D``
value the guard does not check could change them; ``source_index.SharedDecl.fixed_size``),
aligned to at most the pool's 128 bytes, in a body that neither names an array's type
(``decltype``) nor jumps (``goto``, ``switch``) past a declaration; and no wave kernel runs
it (one fragment function serves every fused kernel that runs the kernel, so the choice is
per kernel).
"""

from __future__ import annotations

import dataclasses
import re

from sirius.analysis.program_model import ProgramModel
from sirius.fusion.kernel_ir import BlockSharedArray, Fragment, KernelIR, KernelRole, Lane, phases_shared
from sirius.fusion.redundant_barriers import stands_between
from sirius.fusion.fragment_text import POOL_ALIGNMENT, pool_layout


# a reference into the pool is not the array it replaces where the body names the array's
# type (decltype) or jumps past the declaration (goto, a case label after it): such a body
# keeps its arrays
_TYPE_OR_JUMP = re.compile(r"\b(?:decltype|goto|switch)\b")


def _poolable(model: ProgramModel, kernels: list[KernelIR]) -> set[str]:
    in_waves = {model.launch(f.launch).kernel.mangled for k in kernels if k.role.per_cell
                for lane in k.lanes for f in lane.fragments}
    out = set()
    for k in kernels:
        for f in (f for lane in k.lanes for f in lane.fragments):
            kernel = model.launch(f.launch).kernel
            decl = model.kernel_decls.get(kernel.mangled)
            static = [a for a in kernel.shared if not a.dynamic]
            if decl is None or not static or decl.shared_unlisted or decl.template_params \
                    or kernel.mangled in in_waves or _TYPE_OR_JUMP.search(decl.body_text) \
                    or any(d.align > POOL_ALIGNMENT or not d.fixed_size for d in decl.shared_decls):
                continue
            if {a.name for a in static} <= {d.name for d in decl.shared_decls}:
                out.add(kernel.mangled)
    return out


def _lane_with_pool(lane: Lane, k: KernelIR, sizes: dict[int, tuple[int, int]], removed, insts) -> tuple[Lane, int]:
    """The lane with each pooled fragment at its offset in the pool: fragments with a barrier
    between them start at the same offset, others one after another; and the bytes needed."""
    body: list = []
    epoch_end, need = 0, 0
    for n, s in enumerate(lane.body):
        if isinstance(s, Fragment) and s.launch in sizes:
            size, align = sizes[s.launch]
            start = -(-epoch_end // align) * align
            s = dataclasses.replace(s, pooled=True, pool_offset=start)
            epoch_end = start + size
            need = max(need, epoch_end)
        elif stands_between(lane, k, n, removed, insts):
            epoch_end = 0
        body.append(s)
    return dataclasses.replace(lane, body=tuple(body)), need


def _pooled(k: KernelIR, model: ProgramModel, poolable: set[str], insts) -> tuple[KernelIR, int]:
    """``k`` with the fragments of ``poolable`` kernels in one pool, and its static shared bytes."""
    frags = [f for lane in k.lanes for f in lane.fragments]
    pooled = {f.launch for f in frags if insts[f.launch].kernel.mangled in poolable}
    if not pooled:
        return k, k.static_shared
    removed = {f.launch: f.removed_barriers for f in frags}
    decls = {i: model.kernel_decls[insts[i].kernel.mangled] for i in pooled}
    sizes = {i: (pool_layout(d)[1], max(a.align for a in d.shared_decls)) for i, d in decls.items()}
    lanes, size = [], 0
    for lane in k.lanes:
        lane, need = _lane_with_pool(lane, k, sizes, removed, insts)
        lanes.append(lane)
        size = max(size, need)
    pooled_symbols = {a.symbol for i in pooled for a in insts[i].kernel.shared if not a.dynamic}
    kept = tuple(a for a in k.shared if a.dynamic or a.symbol not in pooled_symbols)
    users = tuple(f.launch for f in frags if f.launch in pooled)
    shared = kept + (BlockSharedArray("sirius_pool", size, False, users),)
    static = sum(a.bytes for a in kept if not a.dynamic) + size
    return dataclasses.replace(k, lanes=tuple(lanes), shared=shared, static_shared=static, pool=size), static


def _launched_together(kernels: list[KernelIR]) -> list[list[int]]:
    """The kernels (indices) one launch runs: a cooperative launch's phases together (they
    hold one pool, ``kernel_ir.phases_pool``), every other kernel alone."""
    units: dict[object, list[int]] = {}
    for n, k in enumerate(kernels):
        units.setdefault(("region", k.group.region) if k.role is KernelRole.PHASE else ("kernel", n), []).append(n)
    return list(units.values())


def overlay_shared_memory(kernels: list[KernelIR], model: ProgramModel) -> tuple[list[KernelIR], list[str]]:
    """Each fused kernel with its fragments' static shared arrays in one pool (see the module
    docstring), where that makes every launch running them smaller (a cooperative launch
    counts its phases together: one pool serves them all); and per kernel the bytes saved."""
    insts = model.instances()
    poolable = _poolable(model, kernels)
    units = _launched_together(kernels)
    while True:  # a kernel is pooled everywhere or nowhere: drop those of a kernel the pool does not shrink
        results = [_pooled(k, model, poolable, insts) for k in kernels]
        worse = set()
        for unit in units:
            if len(unit) == 1:
                before, after = kernels[unit[0]].static_shared, results[unit[0]][1]
            else:
                before = phases_shared([kernels[n] for n in unit])[0]
                after = phases_shared([results[n][0] for n in unit])[0]
            if after >= before:
                worse |= {insts[f.launch].kernel.mangled for n in unit for lane in kernels[n].lanes
                          for f in lane.fragments}
        if not worse & poolable:
            break
        poolable -= worse
    pooled = [new for new, _ in results]
    report = []
    for unit in units:
        if all(pooled[n] is kernels[n] for n in unit):
            continue
        old_kernels, new_kernels = [kernels[n] for n in unit], [pooled[n] for n in unit]
        arrays = sum(1 for k, new in zip(old_kernels, new_kernels)
                     for a in k.shared if a.symbol not in {b.symbol for b in new.shared})
        name = new_kernels[0].name if len(unit) == 1 else \
            f"the {len(unit)} phases of one cooperative launch ({', '.join(k.name for k in new_kernels)})"
        report.append(f"{name}: shared memory {phases_shared(old_kernels)[0]} -> {phases_shared(new_kernels)[0]} "
                      f"bytes per block ({arrays} arrays in one pool)")
    return pooled, report
