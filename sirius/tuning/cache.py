"""A cache of tuning results, so that tuning the same program again is instant.

Two kinds of entries, each a JSON file named by a digest of its key:

``measurement``  one candidate on one GPU: key = the candidate's program text, the compile
                 flags, the GPU's name and driver. A candidate another setting or another
                 run already measured is not built or timed again.
``decision``     one tuning run: key = the program's text, the compile flags, the tuning
                 options, the optimizer's own source and the GPU (or ``predicted``). A hit
                 gives the chosen program without running the optimizer.

Entries live under ``$SIRIUS_CACHE/tune`` (default ``.sirius-cache/tune``); deleting the
folder is always safe.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from sirius.backend.cpu import cache_root


def digest(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


@lru_cache(maxsize=1)
def optimizer_fingerprint() -> str:
    """A digest of the optimizer's own Python sources: a decision made by other code is not reused."""
    root = Path(__file__).resolve().parent.parent
    files = sorted(p for d in (root, root.parent / "analysis", root.parent / "fusion") if d.is_dir()
                   for p in d.rglob("*.py"))
    return digest(*(p.read_text() for p in files))


class TuneCache:
    """Measurements and decisions on disk (see the module docstring); ``enabled=False``
    reads nothing and writes nothing."""

    def __init__(self, root: Path | None = None, enabled: bool = True):
        self.root = (root or cache_root() / "tune")
        self.enabled = enabled

    def _path(self, kind: str, key: str) -> Path:
        return self.root / f"{kind}-{key}.json"

    def get(self, kind: str, key: str) -> dict[str, Any] | None:
        if not self.enabled:
            return None
        path = self._path(kind, key)
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):  # absent, or torn by an interrupted write: a miss
            return None

    def put(self, kind: str, key: str, value: dict[str, Any]) -> None:
        if not self.enabled:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        path = self._path(kind, key)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(value, indent=1) + "\n")
        tmp.replace(path)  # atomic: a reader sees the old entry or the new one
