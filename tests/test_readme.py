"""The README cannot rot: every `sirius` command in its shell blocks runs and exits 0, the
output it shows (the block after the command, lines with "..." left out) is what the
command prints, and every page it links exists."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BIN = Path(sys.executable).parent


def _blocks(text: str) -> list[tuple[str, str]]:
    """The fenced blocks of ``text``: (language, body), in order."""
    return [(m[1], m[2]) for m in re.finditer(r"^```(\w*)\n(.*?)^```$", text, re.S | re.M)]


def _commands() -> list[tuple[str, list[str]]]:
    """Each `sirius` command of a shell block, with the lines of the plain block right after
    its block when that block holds only this command."""
    blocks = _blocks(README.read_text())
    out = []
    for n, (lang, body) in enumerate(blocks):
        if lang != "sh":
            continue
        commands = [line for line in body.splitlines() if line.startswith(".venv/bin/sirius ")]
        shown = blocks[n + 1][1].splitlines() if n + 1 < len(blocks) and blocks[n + 1][0] == "" else []
        out += [(c, shown if len(commands) == 1 else []) for c in commands]
    return out


COMMANDS = _commands()


def test_the_readme_shows_commands_and_links_pages_that_exist():
    assert len(COMMANDS) >= 5
    for link in re.findall(r"\]\(([^)#]+)\)", README.read_text()):
        assert (ROOT / link).is_file(), link


@pytest.mark.toolchain
def test_each_readme_command_runs_and_prints_what_it_shows(tmp_path):
    """In the README's order, in one folder standing for build/ (a command reads what an
    earlier one wrote)."""
    for command, shown in COMMANDS:
        words = [w.replace("build/", f"{tmp_path}/") for w in shlex.split(command)]
        proc = subprocess.run([str(BIN / "sirius"), *words[1:]], cwd=ROOT, capture_output=True, text=True,
                              timeout=900)
        assert proc.returncode == 0, command + "\n" + proc.stdout + proc.stderr
        printed = {line.strip() for line in (proc.stdout + proc.stderr).splitlines()}
        for line in shown:
            if "..." not in line and line.strip():
                assert line.strip() in printed, f"{line!r} not in the output of {command}:\n{proc.stdout}{proc.stderr}"
