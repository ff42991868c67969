"""Footprints: which thread instance (block, thread) touches which element of a buffer,
the width of the conflict between two of them, and the accesses (one per operand) the
templates' Python mirrors of their address streams return.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from sirius.testing.progen.model import _WIDTH_RANK


_MULTI = "*"  # more than one instance (or block) touches the element

Dim3 = tuple[int, int, int]


class Footprint:
    """Element -> (the one instance touching it or ``*``, the one block or ``*``)."""

    __slots__ = ("cells",)

    def __init__(self) -> None:
        self.cells: dict[int, tuple] = {}

    def touch(self, elem: int, blk: Dim3, thr: Dim3) -> None:
        inst = (blk, thr)
        cur = self.cells.get(elem)
        if cur is None:
            self.cells[elem] = (inst, blk)
            return
        if cur[0] == inst:
            return
        cur_inst, cur_blk = cur
        self.cells[elem] = (
            cur_inst if cur_inst == inst else _MULTI,
            cur_blk if cur_blk == blk else _MULTI,
        )

    def touch_by_many(self, elem: int, blk: Dim3 | str) -> None:
        """``elem`` is touched by several threads, all of block ``blk`` (or of several)."""
        cur = self.cells.get(elem)
        if cur is not None and cur[1] != blk:
            blk = _MULTI
        self.cells[elem] = (_MULTI, blk)

    def shifted(self, offset: int) -> "Footprint":
        """The same accesses through a pointer ``offset`` elements further."""
        if not offset:
            return self
        out = Footprint()
        out.cells = {elem + offset: v for elem, v in self.cells.items()}
        return out

    def merged(self, other: "Footprint") -> "Footprint":
        out = Footprint()
        out.cells = dict(self.cells)
        for elem, (inst, blk) in other.cells.items():
            cur = out.cells.get(elem)
            if cur is None:
                out.cells[elem] = (inst, blk)
            else:
                out.cells[elem] = (
                    cur[0] if cur[0] == inst and inst != _MULTI else _MULTI,
                    cur[1] if cur[1] == blk and blk != _MULTI else _MULTI,
                )
        return out


def footprint_width(earlier: Footprint, later: Footprint) -> str:
    """Width of the conflict between two accesses of one buffer (one a write)."""
    a, b = earlier.cells, later.cells
    if len(b) < len(a):
        a, b = b, a
    width = "none"
    for elem, (inst_a, blk_a) in a.items():
        other = b.get(elem)
        if other is None:
            continue
        inst_b, blk_b = other
        if inst_a != _MULTI and inst_a == inst_b:
            w = "thread"
        elif blk_a != _MULTI and blk_a == blk_b:
            w = "block"
        else:
            return "global"
        if _WIDTH_RANK[w] > _WIDTH_RANK[width]:
            width = w
    return width


def _threads_1d(grid: int, block: int) -> Iterator[tuple[Dim3, Dim3, int, int]]:
    for b in range(grid):
        for t in range(block):
            yield (b, 0, 0), (t, 0, 0), b, t


@dataclass(frozen=True)
class Access:
    arg: int  # index of the pointer argument
    write: bool
    footprint: Footprint = field(compare=False)


def _map_accesses(grid: int, block: int, n: int, flags: tuple[bool, ...]) -> list[Access]:
    """Element-wise ``i = blockIdx.x * block + threadIdx.x`` accesses (``i < n``),
    one per operand; ``flags`` says which are writes."""
    fps = [Footprint() for _ in flags]
    for bd, td, b, t in _threads_1d(grid, block):
        i = b * block + t
        if i < n:
            for fp in fps:
                fp.touch(i, bd, td)
    return [Access(k, w, fp) for k, (w, fp) in enumerate(zip(flags, fps))]


def _every_thread_reads_first(grid: int, block: int) -> Footprint:
    """Element 0 read by every thread (a scalar symbol, a pointer variable)."""
    fp = Footprint()
    for bd, td, _, _ in _threads_1d(grid, block):
        fp.touch(0, bd, td)
    return fp
