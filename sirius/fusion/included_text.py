"""A program file's text written in place of its ``#include`` (printer only).

Launches written in a file the main file includes once, directly
(``SourceIndex.program_files``), are rewritten where they are written: the
emitted program holds a copy of that file's text, with its edits, in place
of the ``#include`` line. ``#line`` directives around the copy keep the
lines and the file name that diagnostics, ``__FILE__`` and ``__LINE__`` see
in it, and the main file's numbering after it. The file itself is left as
it is (other programs may include it).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from sirius.analysis.source_index import IncludedProgramFile
from sirius.fusion.fragment_text import line_directive, line_end

_PRAGMA_ONCE = re.compile(rb"^([ \t]*#[ \t]*pragma[ \t]+once\b[^\r\n]*)", re.M)
_QUOTED = re.compile(rb'^([ \t]*#[ \t]*include[ \t]*)"([^"]+)"', re.M)


def in_place_text(included: IncludedProgramFile, edited: bytes, main: bytes, main_file: str
                  ) -> tuple[int, int, bytes]:
    """The edit of the main file (``main``: its bytes) that puts ``edited`` (the included
    file's text with its edits) in place of its ``#include`` directive: start, end, bytes.
    The copy comes after a ``#line`` naming the file, its ``#pragma once`` made a comment
    (in the main file it would be a warning, and means nothing there), quoted
    ``#include``s that name files beside it naming them from the main file's folder; a
    ``#line`` gives the main file's name and numbering back. What shares the directive's
    line (a comment, which may go on over the next lines) stays, on that line's number."""
    eol = line_end(main)
    text = edited[3:] if edited.startswith(b"\xef\xbb\xbf") else edited  # a byte-order mark is only first
    text = _PRAGMA_ONCE.sub(rb"// sirius: \1 (this file's text stands in place of its #include here)", text)
    here, main_dir = Path(included.path).resolve().parent, Path(main_file).resolve().parent

    def from_main(m: re.Match) -> bytes:
        name = m.group(2).decode("utf-8", "replace")
        if here == main_dir or Path(name).is_absolute() or not (here / name).is_file():
            return m.group(0)
        return m.group(1) + b'"' + os.path.relpath(here / name, main_dir).encode() + b'"'

    text = _QUOTED.sub(from_main, text)
    if text and not text.endswith(b"\n"):
        text += eol.encode()
    line_start = main.rfind(b"\n", 0, included.start) + 1
    before = b"" if not main[line_start:included.start].strip() else eol.encode()
    line_stop = main.find(b"\n", included.end)
    line_stop = len(main) if line_stop < 0 else line_stop + 1
    end, line = included.end, included.line  # what follows the file name keeps its line
    if not main[included.end:line_stop].strip():
        end, line = line_stop, included.line + 1  # nothing does: the directive's line goes
    opening = line_directive(1, included.path).replace("\n", eol)
    closing = line_directive(line, main_file).replace("\n", eol)
    return included.start, end, before + opening.encode() + text + closing.encode()
