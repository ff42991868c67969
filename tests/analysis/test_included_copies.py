"""Launches written in a file the main file includes, rewritten in a copy of that file's
text that the emitted program holds in place of the #include: the programs a blind red
team wrote against it (``idioms/includes_redteam/pNN``, each with a WHAT.txt saying what it
attacks, and FLAGS.txt where it needs flags). Those the transformation may take fuse and
verify equal; the others stay apart, for the reason given here."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).resolve().parent / "idioms" / "includes_redteam"
SIRIUS = str(Path(sys.executable).parent / "sirius")


# run from each program's folder (its flags name folders beside it), its caches where the suite's are
CACHE = str(Path(os.environ.get("SIRIUS_CACHE") or ".sirius-cache").resolve())


def sirius(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([SIRIUS, *args], capture_output=True, text=True, timeout=600, cwd=cwd,
                          env={**os.environ, "SIRIUS_CACHE": CACHE})


def _optimized(name: str, out: Path):
    folder = PROGRAMS / name
    flags = shlex.split((folder / "FLAGS.txt").read_text()) if (folder / "FLAGS.txt").exists() else []
    proc = sirius("optimize", "main.cu", "-o", str(out), *flags, cwd=folder)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout, flags


@pytest.mark.parametrize("name, launches", [
    ("p05", "2 -> 1"),  # the included file's last line a comment continued by a backslash; main prints __LINE__
    ("p08", "2 -> 1"),  # a raw string holding a "#pragma once" line
    ("p09", "2 -> 1"),  # a raw string holding an #include line of a file beside the included one
    ("p17", "2 -> 1"),  # a closer overload declared in main after the #include: fragments stay where their kernels are
    ("p26", "2 -> 1"),  # a quoted #include found through -I, another file of its name in main's folder
    ("p41", "2 -> 1"),  # the helper a static member function: the prototypes go before its class
    # the second blind red team
    ("r2_p02", "2 -> 1"),  # the helper declared extern "C" without braces: the prototypes go before extern "C"
    ("r2_p03", "2 -> 1"),  # the helper in a namespace of the copy, the kernels not: the prototypes at file scope
    ("r2_p10", "2 -> 1"),  # a nested copy whose last line ends in a backslash and a space
    ("r2_p33", "2 -> 1"),  # a [[noreturn]] helper: the prototypes go before its attribute
])
def test_a_copy_of_an_included_file_computes_what_the_file_did(name, launches, tmp_path):
    out = tmp_path / "out.cu"
    summary, flags = _optimized(name, out)
    assert f"launches per run: {launches}" in summary and "internal error" not in summary, summary
    verify = sirius("verify", "main.cu", str(out), *flags, cwd=PROGRAMS / name)
    assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr


@pytest.mark.parametrize("name, why", [
    ("p06", "which ends line 3 with a lone carriage return"),
    ("p13", "which is included inside namespace model_v2 (line 5)"),
    ("p22", "which the program includes 2 times"),  # as "layers.cuh" and "./layers.cuh"
    ("p24", "which the program includes 2 times"),  # again as "../layers.cuh" from another header
    ("p27", "whose text uses __has_include (line 3), which means something else where the main file holds it"),
    ("p28", "which names a file to include with a macro (line 8)"),
    ("p29", "whose text uses __INCLUDE_LEVEL__ (line 15)"),
    ("p36", "which has a #include_next directive (line 4)"),
    ("p47", "its launch expression spans lines and uses __LINE__, whose value rewriting it would change"),
    ("p48", "its launch expression holds a preprocessor directive (line 15)"),
    ("p51", "the main file ends line 1 with a lone carriage return"),
    # the second blind red team
    ("r2_p22", "whose text uses CK (line 11), a macro that names what a file's place decides"),  # __FILE__ in it
    ("r2_p30", "whose text uses HAS_LOCAL (line 10), a macro that names what a file's place decides"),
    ("r2_p38", "a preprocessor conditional (kern.cuh line 12) is between them: another build may leave one out"),
    ("r2_p43", "it uses __func__ (through a macro), the name of the function it is in"),
    ("r2_p45", "which is not UTF-8 text"),
    ("r2_p49", "and the program names source_location (in kern.cuh), which a function reads where it is called"),
    ("r2_p21", "and the program names __builtin_FILE (in log.h), which a function reads where it is called from"),
])
def test_what_a_copy_would_change_keeps_the_launches_apart(name, why, tmp_path):
    summary, _ = _optimized(name, tmp_path / "out.cu")
    assert why in summary and "internal error" not in summary, summary


def test_an_include_in_a_branch_not_taken_is_re_pointed_too(tmp_path):
    """r2_p37: the copy's #include "bias.h" in an #if branch the optimized build does not
    take names the file beside the copied one, also in a build that takes it (the main
    file's folder holds another bias.h)."""
    out = tmp_path / "out.cu"
    summary, _ = _optimized("r2_p37", out)
    assert "launches per run: 2 -> 1" in summary, summary
    verify = sirius("verify", "main.cu", str(out), "-DOPS_TUNED=1", cwd=PROGRAMS / "r2_p37")
    assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr


def test_a_copy_written_to_another_folder_is_checked_from_there(tmp_path):
    """r2_p12: the copy's #include re-pointed for the output's folder; verify's promise
    check compiles the optimized program so that it finds it."""
    out = tmp_path / "build" / "out.cu"
    out.parent.mkdir()
    summary, _ = _optimized("r2_p12", out)
    assert "launches per run: 2 -> 1" in summary, summary
    verify = sirius("verify", "main.cu", str(out), cwd=PROGRAMS / "r2_p12")
    assert verify.returncode == 0 and "no violations" in verify.stdout, verify.stdout + verify.stderr


def test_a_launch_reading_its_column_is_not_rewritten(tmp_path):
    """Rewritten, a launch's arguments stand at other columns (red team 2, p49, in one file)."""
    (tmp_path / "main.cu").write_text(
        "#include <cstdio>\n__global__ void k(int* t, int c) { t[threadIdx.x] += c; }\n"
        "int main() {\n  int* t; cudaMalloc(&t, 128); cudaMemset(t, 0, 128);\n"
        "  k<<<1, 32>>>(t, __builtin_COLUMN()); k<<<1, 32>>>(t, 1);\n"
        "  int h[32]; cudaMemcpy(h, t, 128, cudaMemcpyDeviceToHost);\n  printf(\"%d\\n\", h[0]);\n  return 0;\n}\n")
    proc = sirius("optimize", "main.cu", "-o", "out.cu", cwd=tmp_path)
    assert proc.returncode == 0 and "launches per run: 2 -> 2" in proc.stdout, proc.stdout + proc.stderr
    assert "its launch expression uses __builtin_COLUMN, whose value rewriting it would change" in proc.stdout
