"""Results of the check of an emitted program, kept on disk by what they depend on, so
that the same text checked again (``sirius verify`` after ``sirius optimize``, a rerun, the
test suite's many runs of one program) is answered without compiling and analysing it
again.

An entry lives under ``$SIRIUS_CACHE/check`` (default ``.sirius-cache/check``), keyed by the
emitted text, the entry function, the compile flags, the folder and name the text is
checked under, the tools (clang and nvcc: paths, sizes and modification times) and
Sirius's own code (every module of the package and its clang headers): a change to any of
them is another key. The files the program includes are known only after the check ran:
the entry stores each one's size and modification time, and is not used once one of them
changed. A check that found the program not compiling is not kept.
"""

from __future__ import annotations

import functools
import hashlib
import pickle
from pathlib import Path
from typing import Callable, TypeVar

from sirius.analysis.frontend_cache import file_stamp, write_entry
from sirius.core.config import cache_folder

_PACKAGE = Path(__file__).resolve().parent.parent
T = TypeVar("T")


@functools.lru_cache(maxsize=1)
def _code_hash() -> str:
    h = hashlib.sha256()
    for path in sorted(_PACKAGE.rglob("*")):
        if path.suffix in (".py", ".h", ".json") and "__pycache__" not in path.parts:
            h.update(str(path.relative_to(_PACKAGE)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def check_key(parts: tuple[str, ...], tools: tuple[str | None, ...], text: str) -> str:
    """The key of checking ``text`` under ``parts`` (flags, folder, name, entry) with ``tools``."""
    h = hashlib.sha256()
    for part in (_code_hash(), *parts, *(f"{t}{file_stamp(t)}" for t in tools)):
        h.update(part.encode() + b"\0")
    h.update(text.encode())
    return h.hexdigest()


def cached_check(key: str, compute: Callable[[], tuple[T, tuple[str, ...] | None]]) -> T:
    """``compute()``'s result (it returns the result and the files the program included, or
    None for a result not to keep), or the one it returned before under ``key``."""
    entry = cache_folder() / "check" / f"{key}.pickle"
    try:
        stamps, result = pickle.loads(entry.read_bytes())
        if all(file_stamp(f) == s for f, s in stamps):
            return result
    except (OSError, pickle.PickleError, EOFError, ValueError, TypeError, AttributeError):
        pass
    result, included = compute()
    if included is None:
        return result
    try:
        write_entry(entry, (tuple((f, file_stamp(f)) for f in included), result))
    except OSError:
        pass  # a folder that cannot be written: the result stands, it is not kept
    return result
