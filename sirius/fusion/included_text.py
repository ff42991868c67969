"""A program file's text written in place of its ``#include`` (printer only).

Launches written in a file of the program's own that one ``#include`` names
(``SourceIndex.program_files``: in the main file, or in another such file)
are rewritten where they are written: the emitted program holds a copy of
that file's text, with its edits, in place of the ``#include`` (a file
included by such a file: in place of the ``#include`` in that file's copy).
``#line`` directives around the copy keep the lines and the file name that
diagnostics, ``__FILE__`` and ``__LINE__`` see in it, and the numbering of
the file around it after it. The files themselves are left as they are
(other programs may include them).
"""

from __future__ import annotations

import os
from pathlib import Path

from sirius.analysis.source_index import IncludedProgramFile
from sirius.fusion.fragment_text import line_directive, line_end

def copy_edits(included: IncludedProgramFile, text: bytes, main_file: str) -> list[tuple[int, int, bytes]]:
    """The edits (start, end, bytes) that make ``text``, the included file's, fit to stand
    in the main file: a byte-order mark dropped (only a file's first bytes may be one), its
    ``#pragma once`` made a comment (in the main file it would be a warning, and means
    nothing there), and quoted ``#include``s whose search from the main file's folder could
    find another file naming the file clang found (from that folder)."""
    edits = [(0, 3, b"")] if text.startswith(b"\xef\xbb\xbf") else []
    edits += [(start, end, b"/* sirius: pragma once (this file's text stands in place of its include) */")
              for start, end in included.pragma_once]
    main_dir = Path(main_file).resolve().parent
    edits += [(start, end, b'"' + os.path.relpath(Path(found).resolve(), main_dir).encode() + b'"')
              for start, end, found in included.repoint]
    return edits


def in_place_text(included: IncludedProgramFile, copy: bytes, parent: bytes) -> tuple[int, int, bytes]:
    """The edit of the file holding the ``#include`` (``parent``: its bytes) that puts
    ``copy`` (the included file's text, edited) in place of the directive: start, end,
    bytes. The copy comes after a ``#line`` naming the file; a ``#line`` gives the
    including file's name and numbering back after it. What shares the directive's line
    (a comment, which may go on over the next lines) stays, on that line's number."""
    eol = line_end(parent)
    if copy and not copy.endswith(b"\n"):
        copy += eol.encode()
    copy += eol.encode()  # an empty line: a last line continued by a backslash (spaces after it too) ends there
    line_start = parent.rfind(b"\n", 0, included.start) + 1
    before = b"" if not parent[line_start:included.start].strip() else eol.encode()
    line_stop = parent.find(b"\n", included.end)
    line_stop = len(parent) if line_stop < 0 else line_stop + 1
    end, line = included.end, included.line  # what follows the file name keeps its line
    if not parent[included.end:line_stop].strip():
        end, line = line_stop, included.line + 1  # nothing does: the directive's line goes
    opening = line_directive(1, included.path).replace("\n", eol)
    closing = line_directive(line, included.parent).replace("\n", eol)
    return included.start, end, before + opening.encode() + copy + closing.encode()
