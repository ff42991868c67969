"""A fragment is its kernel's body written again; it must mean there what it meant in the
kernel (tests/fusion/programs/written_where_it_stands.cu): a macro redefined between
kernels and #undef'd after them, an overload declared after the kernel, ``__LINE__`` in
a check. Fragments of the main file's kernels are written right after their kernels, and
every text the optimizer adds or replaces keeps the lines after it where they were
(``#line``), also the #include a cooperative launch adds on top of the file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.toolchain

PROGRAM = Path(__file__).parent / "programs" / "written_where_it_stands.cu"
SIRIUS = str(Path(sys.executable).parent / "sirius")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([SIRIUS, *args], capture_output=True, text=True, timeout=600)


def test_fragments_are_written_after_their_kernels_and_verify(tmp_path):
    out = tmp_path / "out.cu"
    proc = run("optimize", str(PROGRAM), "-o", str(out))
    assert proc.returncode == 0 and "launches per run: 3 -> 2" in proc.stdout, proc.stdout + proc.stderr
    text = out.read_text()
    # each fragment right after its kernel, before the #undef of the OP it was written with
    assert text.index("sirius_frag_offset(") < text.index("#undef OP") < text.index("sirius_frag_scale(")
    assert text.index("sirius_frag_scale(") < text.index("#undef OP", text.index("sirius_frag_scale("))
    proc = run("verify", str(PROGRAM), str(out))
    assert proc.returncode == 0 and "result: all equal" in proc.stdout, proc.stdout + proc.stderr


def test_the_cooperative_program_keeps_the_lines_of_the_original(tmp_path):
    out = tmp_path / "coop.cu"
    proc = run("optimize", str(PROGRAM), "--cooperative", "-o", str(out))
    assert proc.returncode == 0 and "launches per run: 3 -> 1" in proc.stdout, proc.stdout + proc.stderr
    text = out.read_text()  # the include first, before the program's own macros could rename what it declares
    assert text.index("#include <cooperative_groups.h>") < text.index(PROGRAM.read_text().splitlines()[0])
    for blocks in ("3", "0"):  # the virtual blocks looping, and the original launches
        proc = run("verify", str(PROGRAM), str(out), f"-DSIRIUS_COOPERATIVE_MAX_BLOCKS={blocks}")
        assert proc.returncode == 0 and "result: all equal" in proc.stdout, proc.stdout + proc.stderr
