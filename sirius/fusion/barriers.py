"""LaneBarrier placement: the ``__syncthreads()`` a fused kernel's lanes need, and why.

Within a lane the fragments run one after another in every thread of a block.
A thread may start a fragment while other threads of its block are still in
the one before, so a barrier goes before a fragment when

- a dependence links it to an earlier fragment of the lane at block level (the
  producer's block wrote what other threads of the same block read);
- it was re-indexed onto the lane's threads and a dependence stays within a
  block, not within a thread, after re-indexing;
- it uses a static ``__shared__`` array (or the dynamic shared memory, which all
  fragments share) that a fragment since the last barrier used: one array per
  block, so the second use would overwrite what slower threads of the first
  still read.

Each barrier records what it orders (``kernel_ir.Ordering``).
"""

from __future__ import annotations

import dataclasses

from sirius.analysis.uar import UAR
from sirius.fusion.kernel_ir import LaneBarrier, Fragment, KernelIR, Lane, Ordering


def _lane_with_barriers(lane: Lane, uar: UAR) -> Lane:
    body: list = []
    earlier: list[int] = []
    since_barrier: dict[str, int] = {}  # shared array -> the launch that used it since the last barrier
    for frag in lane.fragments:
        orders = [Ordering("block dependence", d.src, frag.launch, d.buffer) for d in uar.dependences
                  if d.dst == frag.launch and d.src in earlier and d.same_iteration and d.iteration_width == "block"]
        if frag.reindex_needs_barrier:
            # the fragments it depends on (any width: the re-indexing made some block-level);
            # the one just before it when none is recorded
            sources = [d.src for d in uar.dependences
                       if d.dst == frag.launch and d.src in earlier and d.same_iteration] or earlier[-1:]
            orders += [Ordering("re-indexed dependence", src, frag.launch, "") for src in dict.fromkeys(sources)]
        orders += [Ordering("shared array reuse", since_barrier[a], frag.launch, a)
                   for a in frag.shared if a in since_barrier]
        if orders:
            body.append(LaneBarrier(tuple(dict.fromkeys(orders))))
            since_barrier.clear()
        since_barrier.update({a: frag.launch for a in frag.shared})
        body.append(frag)
        earlier.append(frag.launch)
    return dataclasses.replace(lane, body=tuple(body))


def place_barriers(kernels: list[KernelIR], uar: UAR) -> list[KernelIR]:
    """Each kernel with the barriers its lanes need (see the module docstring); lowering
    places none, so this pass runs first."""
    return [dataclasses.replace(k, lanes=tuple(_lane_with_barriers(lane, uar) for lane in k.lanes))
            for k in kernels]
