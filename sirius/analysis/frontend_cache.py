"""A cache of the frontend's work on disk: clang's IR of both sides and the libclang source
index of one compile job, so that a program analysed again (by another test, by the check
of an emitted program written before, by a rerun) is read instead of compiled.

Off unless ``SIRIUS_FRONTEND_CACHE`` names a folder (the test suite sets one for its run).
An entry is keyed by everything the compile depends on that can be known before it runs:
the code computing it, the clang command lines, the clang binary (path, size, modification
time), the text of the main file and whether bodies were indexed. What is known only after (the files the main
file includes) is stored in the entry with each file's size and modification time, and an
entry whose files changed is not used.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Callable

from sirius.analysis.frontend import CompiledProgram, CompileJob
from sirius.analysis.source_index import SourceIndex

VERSION = 11  # of the entries' layout; raise when CompiledProgram or SourceIndex change shape
# the code that computes an entry: a change to it (a new fact in the index) makes new keys
_CODE = hashlib.sha256(b"".join((Path(__file__).parent / name).read_bytes()
                                for name in ("frontend.py", "source_index.py", "statement_flow.py", "program_ends.py",
                                             "cursors.py", "preamble.py"))).hexdigest()


def file_stamp(path: str | None) -> tuple[int, int] | None:
    """Size and modification time of ``path`` (None when there is none)."""
    try:
        st = os.stat(path) if path else None
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns) if st else None


def write_entry(entry: Path, value: object) -> None:
    """Pickle ``value`` to ``entry``, whole or not at all: processes share the folder."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=entry.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as out:
        pickle.dump(value, out)
    os.replace(tmp, entry)


def _key(job: CompileJob, bodies: bool) -> str:
    h = hashlib.sha256()
    for part in (str(VERSION), _CODE, *job.clang_command("device"), *job.clang_command("host"), *job.libclang_args(),
                 str(bodies), repr(file_stamp(job.toolchain.clang)), str(Path.cwd())):
        h.update(part.encode() + b"\0")
    h.update(job.path.read_bytes())
    return h.hexdigest()


def cached_frontend(job: CompileJob, bodies: bool,
                    compute: Callable[[], tuple[CompiledProgram, SourceIndex]]
                    ) -> tuple[CompiledProgram, SourceIndex]:
    """``compute()`` (the frontend on ``job``), or what it returned before on the same inputs."""
    folder = os.environ.get("SIRIUS_FRONTEND_CACHE")
    if not folder or not job.path.is_file():
        return compute()
    entry = Path(folder) / f"{_key(job, bodies)}.pickle"
    try:
        stamps, compiled, index = pickle.loads(entry.read_bytes())
        if all(file_stamp(f) == s for f, s in stamps) and compiled.job == job:
            return compiled, index
    except (OSError, pickle.PickleError, EOFError, ValueError, TypeError, AttributeError):
        pass
    compiled, index = compute()
    stamps = tuple((f, file_stamp(f)) for f in index.included)
    write_entry(entry, (stamps, compiled, index))
    return compiled, index
