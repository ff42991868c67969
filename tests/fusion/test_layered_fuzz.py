"""Differential fuzz of waves of cells in CI (sirius/testing/layered.py): random stacked
recurrences (temporaries in storages used in turns, the same storages, or a slot per layer;
a layer reading the layer above at the step before; a temporary read before the layer
writes it) optimized with --cooperative (and --persistent on odd seeds) and verified
bit-exact on the CPU backend. More seeds: ``python -m sirius.testing.layered --seeds 0:100``."""

from concurrent.futures import ThreadPoolExecutor
import tempfile
from pathlib import Path

import pytest

from sirius.testing.layered import generate, run_seed

pytestmark = pytest.mark.toolchain

CI_SEEDS = range(0, 12)


def test_the_seeds_hold_every_storage_and_hazard():
    programs = [generate(s) for s in CI_SEEDS]
    assert {p.storage for p in programs} == {"turns", "same", "strided"}
    assert {p.hazard for p in programs} == {"none", "above", "stale"}


def test_generated_stacked_recurrences_verify():
    with tempfile.TemporaryDirectory(prefix="sirius-layered-") as tmp, ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda s: run_seed(s, Path(tmp)), CI_SEEDS))
    bad = [r for r in results if not r["ok"]]
    assert not bad, "\n\n".join(f"seed {r['seed']} ({r['stage']}):\n{r['detail']}" for r in bad)
    waves = [r for r in results if r["waves"]]
    assert len(waves) >= 5, results  # the waves really run, one launch per wave and persistent
    assert {r["seed"] % 2 for r in waves} == {0, 1}
    # a layer reading the layer above at the step before shares an anti-diagonal: never waves
    assert not any(r["waves"] for r in results if r["hazard"] == "above")
