"""Every program of the corpus (``cuda_inputs/``) runs on the CPU backend, passes
its own CPU reference check, and ``sirius verify P P`` finds it equal to itself.

Programs whose default sizes take long on the CPU run at reduced sizes.
"""

from __future__ import annotations

import pytest

from conftest import CORPUS, requires_clang, run_cpu, sirius

pytestmark = [pytest.mark.toolchain, requires_clang]

REDUCED = {
    "lstm.cu": ["-DSTEPS=4", "-DCELLS=3", "-DHIDDEN=64"],
    "bert_qkv.cu": ["-DSEQ=64", "-DHIDDEN=128", "-DHEADS=2"],
}

PROGRAMS = sorted(p.name for p in CORPUS.glob("*.cu"))


def test_corpus_is_present():
    assert PROGRAMS, f"no programs in {CORPUS}"


@pytest.mark.parametrize("name", PROGRAMS)
def test_corpus_program_passes_its_reference_check(name):
    proc = run_cpu(CORPUS / name, *REDUCED.get(name, []), timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "reference: OK" in proc.stdout


@pytest.mark.parametrize("name", PROGRAMS)
def test_corpus_program_verifies_against_itself(name):
    program = str(CORPUS / name)
    proc = sirius("verify", program, program, *REDUCED.get(name, []), timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "result: all equal" in proc.stdout
