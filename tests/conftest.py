"""Marks the tests listed in ``slow_tests.txt`` ``slow``: ``make test-fast`` runs
``-m "not slow"``; ``make test`` (and CI) runs them all. The list is measured, not
guessed: ``scripts/slow_tests.py`` writes it from a run of the suite with durations."""

from __future__ import annotations

from pathlib import Path

import pytest

SLOW_LIST = Path(__file__).resolve().parent / "slow_tests.txt"


def _slow_tests() -> frozenset[str]:
    if not SLOW_LIST.is_file():
        return frozenset()
    return frozenset(line.strip() for line in SLOW_LIST.read_text().splitlines()
                     if line.strip() and not line.startswith("#"))


def pytest_collection_modifyitems(config, items):
    slow = _slow_tests()
    for item in items:
        if item.nodeid in slow:
            item.add_marker(pytest.mark.slow)
