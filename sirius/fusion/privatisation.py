"""Private temporaries: where each lives while the copies of a repeated pattern run as cells.

``analysis.repetition`` proves which temporaries of a repeated launch pattern are private
to a copy, and for each the facts this module builds on: every write covers an interval
of bytes from its pointer (``PrivateWrite.first`` .. ``last``), every read reaches the
bytes of one earlier write of its copy at a constant distance from that write's pointer
(``PatternArgument.write``, ``distance``), and the last step writes every byte any step
writes. Cells of different layers run side by side, so the storages the original reuses
in turns cannot hold them: each layer gets a scratch area of its own instead.

``plan_scratch`` decides the layout: each write of the pattern a *slot* of its own in a
layer's area, aligned as an allocation is (a read then points ``distance`` bytes into the
slot of the write it reaches, the same in every layer); and the *copy-back*, the bytes that
end, after the last cell, where the original program left them: the last step's values of
each write that no later write (later in the copy, or in a later copy) overwrites.
"""

from __future__ import annotations

from dataclasses import dataclass

from sirius.analysis.repetition import PatternArgument, Repetition

SLOT_ALIGNMENT = 256  # bytes: every slot starts as aligned as an allocation


@dataclass(frozen=True)
class CopyBack:
    """Bytes of the scratch that end where the original left them (values of the last step)."""

    buffer: str  # the private allocation
    offset: int  # bytes into it
    slot: int  # bytes into the scratch (of all layers)
    bytes: int

    def without(self, buffer: str, start: int, end: int) -> list["CopyBack"]:
        """This piece minus the bytes [start, end) of ``buffer`` (a later value overwrites them)."""
        if buffer != self.buffer or end <= self.offset or start >= self.offset + self.bytes:
            return [self]
        out = []
        if start > self.offset:
            out.append(CopyBack(self.buffer, self.offset, self.slot, start - self.offset))
        if end < self.offset + self.bytes:
            cut = end - self.offset
            out.append(CopyBack(self.buffer, end, self.slot + cut, self.bytes - cut))
        return out


@dataclass(frozen=True)
class ScratchPlan:
    """Where the private temporaries of a repetition live: one area per layer."""

    cell_bytes: int  # one layer's area (0: nothing private)
    layers: int
    slots: tuple[tuple[tuple[int, int], int], ...]  # (position, argument) of a write -> bytes into a layer's area
    copy_back: tuple[CopyBack, ...]  # after the last cell: the private allocations' final bytes

    @property
    def bytes(self) -> int:
        """The scratch of every layer."""
        return self.cell_bytes * self.layers

    def slot(self, arg: PatternArgument) -> int:
        """Bytes from a layer's area to the pointer a private argument passes."""
        return dict(self.slots)[arg.write] + arg.distance

    def show(self, arg: PatternArgument) -> str:
        """A private argument as the ``cell-waves`` dump prints it."""
        return f"private slot {self.slot(arg)} (+{self.cell_bytes} bytes per layer)"


def plan_scratch(rep: Repetition) -> ScratchPlan:
    """The scratch layout of ``rep``'s private temporaries (module docstring).

    Needs the facts of ``analysis.repetition`` and nothing else: the slots are as many
    bytes as the write reaches from its pointer, so a layer's values never meet another
    write's; the copy-back is exact because the last step writes every byte any step does."""
    slots: dict[tuple[int, int], int] = {}
    cell = 0
    for w in rep.writes:
        slots[w.key] = cell
        cell += -(-(w.last + 1) // SLOT_ALIGNMENT) * SLOT_ALIGNMENT
    pieces: list[CopyBack] = []
    for c in range(rep.copies):
        for w in rep.writes:
            buffer, start = w.at_last_step[c]
            pieces = [piece for q in pieces for piece in q.without(buffer, start + w.first, start + w.last + 1)]
            pieces.append(CopyBack(buffer, start + w.first, c * cell + slots[w.key] + w.first, w.last + 1 - w.first))
    return ScratchPlan(cell, rep.copies, tuple(slots.items()), tuple(pieces))


def format_copy_back(plan: ScratchPlan) -> str:
    """The copy-back as the ``cell-waves`` dump prints it, one line per piece."""
    return "".join(f"  after the loop: {piece.buffer} bytes [{piece.offset}, {piece.offset + piece.bytes}) "
                   f"from scratch byte {piece.slot}\n" for piece in plan.copy_back)
