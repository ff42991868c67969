"""Differential fuzz of waves of cells in CI (sirius/testing/layered.py): random stacked
recurrences (temporaries in storages used in turns, the same storages, or a slot per layer;
a layer reading the layer above at the step before; a temporary read before the layer
writes it) optimized with --cooperative (and --persistent on odd seeds) and verified
bit-exact on the CPU backend; with issue 26's constructs (a temporary written under a data
guard, a side-effecting declaration in the step loop, verified through the cooperative
fallback too, macros rebuilt with other values). More seeds:
``python -m sirius.testing.layered --seeds 0:100``."""

from concurrent.futures import ThreadPoolExecutor
import tempfile
from pathlib import Path

import pytest

from sirius.testing.layered import CURSORS, GUARDS, MACRO_KERNELS, generate, run_seed

pytestmark = pytest.mark.toolchain

# nine programs hold every storage, hazard and construct (checked below) and take waves in
# five, of both parities: 0, 9, 10 are older programs; 5 and 11 (SHIFT), 18 (DECAY) rebuilt
# with other values; 3, 8, 13 write under each guard, 8 and 13 advance a cursor
CI_SEEDS = [0, 3, 5, 8, 9, 10, 11, 13, 18]


def test_the_seeds_hold_every_storage_and_hazard():
    programs = [generate(s) for s in CI_SEEDS]
    assert {p.storage for p in programs} == {"turns", "same", "strided"}
    assert {p.hazard for p in programs} == {"none", "above", "stale"}


def test_the_seeds_hold_every_construct_of_issue_26():
    programs = [generate(s) for s in CI_SEEDS]
    assert {p.guard for p in programs} == {"none", *GUARDS}
    assert {p.macro_kernel for p in programs} == {"none", *MACRO_KERNELS}
    assert {p.cursor for p in programs} == set(CURSORS)


def test_newer_constructs_are_written_as_real_code():
    for seed in range(40):
        p = generate(seed)
        src = p.source
        if p.guard == "early_exit":
            assert "if (step >= len[i]) return;" in src and "ragged<<<" in src
        if p.guard == "condition":
            assert "if (t[i] > 0.0625f) out[i] =" in src and "gate<<<" in src
        if p.guard == "data_bound":
            assert "for (int r = 0; r < len[i]; ++r) out[i] =" in src and "repeat<<<" in src
        if p.cursor != "none":
            loop = src[src.index("for (int step = 0;"):src.index('report("h"')]
            assert "x + row * H" in loop and "x + step * H" not in loop
            assert ("int row = (cursor += 1) - 1;" if p.cursor == "statement" else "int row = NEXT_ROW(cursor);") in loop
            assert 'printf("cursor %d\\n", cursor);' in src
        if p.macro_kernel != "none":
            name = MACRO_KERNELS[p.macro_kernel][0]
            assert f"#ifndef {name}" in src and p.rebuild_defines == (f"{name}={MACRO_KERNELS[p.macro_kernel][2]}",)
        else:
            assert not p.rebuild_defines


def test_generated_stacked_recurrences_verify():
    with tempfile.TemporaryDirectory(prefix="sirius-layered-") as tmp, ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda s: run_seed(s, Path(tmp)), CI_SEEDS))
    bad = [r for r in results if not r["ok"]]
    assert not bad, "\n\n".join(f"seed {r['seed']} ({r['stage']}):\n{r['detail']}" for r in bad)
    waves = [r for r in results if r["waves"]]
    assert len(waves) >= 5, results  # the waves really run, one launch per wave and persistent
    assert {r["seed"] % 2 for r in waves} == {0, 1}
    # a layer reading the layer above at the step before shares an anti-diagonal: never waves
    # of (step, layer) cells; with --persistent the loop may still run as one launch, its body
    # one copy of itself (each step one cell, every dependence to a later step)
    assert not any(layers != 1 for r in results if r["hazard"] == "above" for layers in r["layers"])
