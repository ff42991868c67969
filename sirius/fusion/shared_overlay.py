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
between barriers needs.

A kernel is pooled only when every static shared array it uses is declared in its own
body, one per declaration statement, with a fixed size (not in a helper, not ``extern``,
not a template instance's dependent type), and no wave kernel runs it (one fragment
function serves every fused kernel that runs the kernel, so the choice is per kernel).
"""

from __future__ import annotations

import dataclasses

from sirius.analysis.program_model import ProgramModel
from sirius.fusion.kernel_ir import Fragment, KernelIR, Lane, BlockSharedArray
from sirius.fusion.redundant_barriers import stands_between
from sirius.fusion.fragment_text import POOL_ALIGNMENT, pool_layout


def _poolable(model: ProgramModel, kernels: list[KernelIR]) -> set[str]:
    insts = model.instances()
    in_waves = {insts[f.launch].kernel.mangled for k in kernels if k.role.per_cell
                for lane in k.lanes for f in lane.fragments}
    out = set()
    for k in kernels:
        for f in (f for lane in k.lanes for f in lane.fragments):
            kernel = insts[f.launch].kernel
            decl = model.kernel_decls.get(kernel.mangled)
            static = [a for a in kernel.shared if not a.dynamic]
            if decl is None or not static or decl.shared_unlisted or decl.template_params \
                    or kernel.mangled in in_waves or any(d.align > POOL_ALIGNMENT for d in decl.shared_decls):
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
    shared = kept + (BlockSharedArray("sirius_pool", size, False, tuple(f.launch for f in frags if f.launch in pooled)),)
    static = sum(a.bytes for a in kept if not a.dynamic) + size
    return dataclasses.replace(k, lanes=tuple(lanes), shared=shared, static_shared=static, pool=size), static


def overlay_shared_memory(kernels: list[KernelIR], model: ProgramModel) -> tuple[list[KernelIR], list[str]]:
    """Each fused kernel with its fragments' static shared arrays in one pool (see the module
    docstring), where that makes every fused kernel running them smaller; and per kernel the
    bytes saved."""
    insts = model.instances()
    poolable = _poolable(model, kernels)
    while True:  # a kernel is pooled everywhere or nowhere: drop those of a kernel the pool does not shrink
        results = [_pooled(k, model, poolable, insts) for k in kernels]
        worse = {insts[f.launch].kernel.mangled for k, (_, static) in zip(kernels, results)
                 if static >= k.static_shared for lane in k.lanes for f in lane.fragments}
        if not worse & poolable:
            break
        poolable -= worse
    report = [f"{k.name}: shared memory {k.static_shared} -> {static} bytes per block "
              f"({sum(1 for a in k.shared if a.symbol not in {b.symbol for b in new.shared})} arrays in one pool)"
              for k, (new, static) in zip(kernels, results) if new is not k]
    return [new for new, _ in results], report
