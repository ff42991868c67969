"""The pages of docs/ cannot rot: every `sirius` command they name exists with every option
they give it (its --help lists them), and the examples written to be run (shell blocks
without placeholders in brackets or "...") run, exit 0, on a corpus program."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md"))
SIRIUS = str(Path(sys.executable).parent / "sirius")
SUBCOMMANDS = ("analyze", "optimize", "run", "verify", "bench", "check", "tune", "experiment")
# what the examples' placeholders stand for when the suite runs them
PLACEHOLDERS = {"PROGRAM.cu": "cuda_inputs/elementwise_chain.cu", "OUT.cu": "{tmp}/out.cu",
                "path/to/my_policy.py": "{tmp}/my_policy.py"}


def _mentions(text: str) -> list[str]:
    """Each `sirius SUBCOMMAND ...` as the page writes it: an inline code span, or a line of a
    fenced block (with its continuation lines)."""
    found = [m[1] for m in re.finditer(r"`(sirius [a-z]+[^`]*)`", text)]
    for block in re.findall(r"^```\w*\n(.*?)^```$", text, re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            at = line.find("sirius ")
            if at >= 0 and re.match(r"sirius (" + "|".join(SUBCOMMANDS) + r")\b", line[at:].split("/bin/")[-1]):
                found.append(line[at:].split("#")[0])
    return [m.replace(".venv/bin/", "") for m in found]


@lru_cache(maxsize=None)
def _help(subcommand: str) -> str:
    return subprocess.run([SIRIUS, subcommand, "--help"], capture_output=True, text=True, check=True).stdout


def _examples(text: str) -> list[str]:
    """The shell blocks' `sirius` commands that are meant to be run as written."""
    out = []
    for block in re.findall(r"^```sh\n(.*?)^```$", text, re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            command = line.split("#")[0].strip()
            if command.startswith("sirius ") and "..." not in command and "[" not in command:
                out.append(command)
    return out


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_every_command_a_page_names_exists_with_its_options(page):
    wrong = []
    for mention in _mentions(page.read_text()):
        subcommand = mention.split()[1]
        if subcommand not in SUBCOMMANDS:
            wrong.append(f"{mention}: no subcommand {subcommand}")
            continue
        listed = set(re.findall(r"--[a-z][a-z0-9-]*", _help(subcommand)))
        wrong += [f"{mention}: {subcommand} has no option {flag}"
                  for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", mention) if flag not in listed]
    assert not wrong, "\n".join(wrong)


def test_the_check_finds_an_option_that_does_not_exist():
    assert _mentions("run `sirius optimize X.cu --fuse-harder` and\n```sh\nsirius tune X.cu \\\n  --speed\n```\n") \
        == ["sirius optimize X.cu --fuse-harder", "sirius tune X.cu    --speed"]
    assert "--fuse-harder" not in _help("optimize")


@pytest.mark.toolchain
def test_the_examples_run(tmp_path):
    """The policy examples of docs/policies.md, with the policy file the page shows."""
    policies = (ROOT / "docs" / "policies.md").read_text()
    [policy_code] = re.findall(r"^```python\n(# my_policy\.py\n.*?)^```$", policies, re.S | re.M)
    (tmp_path / "my_policy.py").write_text(policy_code)
    (tmp_path / "my_policies.py").write_text(policy_code)
    examples = [e for page in DOCS for e in _examples(page.read_text())]
    assert len(examples) >= 3
    for example in examples:
        for placeholder, value in PLACEHOLDERS.items():
            example = example.replace(placeholder, value.format(tmp=tmp_path))
        proc = subprocess.run([SIRIUS, *shlex.split(example)[1:]], cwd=ROOT, capture_output=True, text=True,
                              env={"PYTHONPATH": str(tmp_path), "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"},
                              timeout=600)
        assert proc.returncode == 0, example + "\n" + proc.stdout + proc.stderr
