"""FileCheck tests: each file under tests/filecheck/ names its command on a
``// RUN:`` line (``%s`` is the file itself) and states the expected output
with ``// CHECK`` lines, checked by the ``filecheck`` package."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent / "filecheck"
CASES = sorted(HERE.glob("*.cu"))
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.toolchain


def run_line(path: Path) -> list[str]:
    for line in path.read_text().splitlines():
        if line.startswith("// RUN:"):
            words = shlex.split(line[len("// RUN:"):].replace("%s", str(path)))
            return [str(BIN / words[0])] + words[1:]
    raise AssertionError(f"{path} has no RUN line")


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_filecheck(path: Path):
    produced = subprocess.run(run_line(path), capture_output=True, text=True)
    assert produced.returncode == 0, produced.stderr
    check = subprocess.run([str(BIN / "filecheck"), str(path)], input=produced.stdout,
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr + "\n--- output ---\n" + produced.stdout
