"""Marks the tests listed in ``slow_tests.txt`` ``slow``: ``make test-fast`` runs
``-m "not slow"``; ``make test`` (and CI) runs them all. The list is measured, not
guessed: ``scripts/slow_tests.py`` writes it from a run of the suite with durations.

The run shares one frontend cache (``SIRIUS_FRONTEND_CACHE``, see
``sirius.analysis.frontend_cache``) among its workers and the commands they start: a
program analysed by one test is read, not compiled again, by the next. Every optimization
the suite runs checks the kernel IR's invariants after each stage and pass
(``SIRIUS_VERIFY_EACH=1``, as ``--verify-each``)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

SLOW_LIST = Path(__file__).resolve().parent / "slow_tests.txt"


def _slow_tests() -> frozenset[str]:
    if not SLOW_LIST.is_file():
        return frozenset()
    return frozenset(line.strip() for line in SLOW_LIST.read_text().splitlines()
                     if line.strip() and not line.startswith("#"))


def pytest_collection_modifyitems(config, items):
    """A listed id marks that test; a listed test without parameters marks every one of its
    parametrizations (tests that share a module fixture costly to build: the first fast one
    would pay for it)."""
    slow = _slow_tests()
    for item in items:
        if item.nodeid in slow or item.nodeid.split("[", 1)[0] in slow:
            item.add_marker(pytest.mark.slow)


_made_folders: list[str] = []


def pytest_configure(config):
    """The controller (or a run without workers) makes the cache folders; workers, started
    after, inherit the variables. Where the environment asks Python not to write bytecode
    (``PYTHONDONTWRITEBYTECODE``), the run's processes write it to a folder of the run's
    (``PYTHONPYCACHEPREFIX``) instead: the suite starts some hundreds of ``sirius`` processes,
    and each would compile the package's modules again (a quarter of a CPU-second each)."""
    os.environ.setdefault("SIRIUS_VERIFY_EACH", "1")
    if not os.environ.get("SIRIUS_FRONTEND_CACHE"):
        _made_folders.append(tempfile.mkdtemp(prefix="sirius-frontend-cache-"))
        os.environ["SIRIUS_FRONTEND_CACHE"] = _made_folders[-1]
    if os.environ.get("PYTHONDONTWRITEBYTECODE") and not os.environ.get("PYTHONPYCACHEPREFIX"):
        _made_folders.append(tempfile.mkdtemp(prefix="sirius-bytecode-"))
        os.environ["PYTHONPYCACHEPREFIX"] = _made_folders[-1]
        del os.environ["PYTHONDONTWRITEBYTECODE"]


def pytest_unconfigure(config):
    for folder in _made_folders:
        shutil.rmtree(folder, ignore_errors=True)
