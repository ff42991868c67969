"""A launch and a host statement as the generator records them, before numbering: the
dependences, the source text and the description are computed from these.
"""

from __future__ import annotations

from dataclasses import dataclass

from sirius.testing.progen.templates import Template


@dataclass
class _Stmt:
    """A launch as generated, before numbering: template and operands.

    ``ptrs`` are buffer names, one per operand of the template (a device
    global by its own name); ``arg_text`` the pointer arguments as written.
    For a pointer-swap loop ``alts`` holds the other assignment of the same
    statement (the footprint covers both). In a loop nest ``iters`` holds,
    per iteration in execution order, each operand's element offset into its
    buffer.
    """

    tmpl: Template
    ptrs: tuple[str, ...]
    arg_text: tuple[str, ...]
    structure: str
    loop: int | None = None
    trips: int = 1
    alts: tuple[tuple[str, ...], ...] = ()
    step: int = 0
    iters: tuple[tuple[int, ...], ...] = ()
    nest: tuple[int, ...] = ()


@dataclass
class _HostStmt:
    kind: str
    position: int  # launches emitted before it
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    text: str
    loop: int | None = None
