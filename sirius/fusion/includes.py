"""Quoted ``#include`` lines of the emitted program, for the folder it is written to.

A quoted include is looked up first beside the file that includes it. The
optimized program usually lands in another folder than the original, where
``#include "kernels.cuh"`` would name nothing (or another file): such lines are
rewritten to the path of the same header relative to the output's folder.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from sirius.fusion.fragment_text import RAW_STRING

_LINE_DIRECTIVE = re.compile(r"^#line (\d+)[^\n]*$", re.M)
_QUOTED = re.compile(r'^(\s*#\s*include\s*)"([^"]+)"', re.M)


@dataclass(frozen=True)
class MovedInclude:
    line: int  # in the emitted program
    written: str  # the path as the original wrote it
    now: str  # the path the emitted program uses


def _presumed_line(text: str, at: int) -> int:
    """The line of offset ``at`` as the program numbers it: the emitted text's ``#line``
    directives keep the original's numbers after what sirius added."""
    line = text.count("\n", 0, at) + 1
    directive = None
    for directive in _LINE_DIRECTIVE.finditer(text, 0, at):
        pass
    if directive is None:
        return line
    return int(directive.group(1)) + line - (text.count("\n", 0, directive.start()) + 2)


def relocate_includes(text: str, program: Path, output_dir: Path) -> tuple[str, list[MovedInclude]]:
    """``text`` (the emitted program of ``program``) with every quoted include that names a
    file beside ``program`` naming the same file from ``output_dir``; and what was changed."""
    source_dir, output_dir = program.resolve().parent, output_dir.resolve()
    moved: list[MovedInclude] = []
    if source_dir == output_dir:
        return text, moved

    raw_strings = [m.span() for m in RAW_STRING.finditer(text)]  # their lines are text, not directives

    def repoint(m: re.Match) -> str:
        if any(start < m.start() < end for start, end in raw_strings):
            return m.group(0)
        header = source_dir / m.group(2)
        if Path(m.group(2)).is_absolute() or not header.is_file():
            return m.group(0)  # found on the include path, not beside the program
        if (output_dir / m.group(2)).resolve() == header.resolve():
            return m.group(0)
        now = os.path.relpath(header, output_dir)
        moved.append(MovedInclude(_presumed_line(text, m.start()), m.group(2), now))
        return f'{m.group(1)}"{now}"'

    return _QUOTED.sub(repoint, text), moved


def includes_from_own_folder(text: str, program: Path, output_dir: Path) -> bool:
    """Whether ``text`` (an emitted program of ``program`` written in ``output_dir``) has a
    quoted include found beside it there and not beside ``program``: one re-pointed by
    ``relocate_includes``. Only then does its check need ``output_dir`` on the include
    path; without one, it is checked as ``sirius optimize`` checked it."""
    source_dir, output_dir = program.resolve().parent, output_dir.resolve()
    if source_dir == output_dir:
        return False
    return any((output_dir / m.group(2)).is_file() and not (source_dir / m.group(2)).is_file()
               for m in _QUOTED.finditer(text))
