"""The pages of docs/ cannot rot: every `sirius` command they name exists with every option
they give it (its --help lists them), and every command they give with a program runs and
exits 0 (on stand-ins for its placeholders)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md"))
SIRIUS = str(Path(sys.executable).parent / "sirius")
SUBCOMMANDS = ("analyze", "optimize", "run", "verify", "bench", "check", "tune", "experiment")


def _mentions(text: str) -> list[str]:
    """Each `sirius SUBCOMMAND ...` as the page writes it: an inline code span, or a line of a
    fenced block (with its continuation lines)."""
    found = [m[1] for m in re.finditer(r"`(sirius [a-z]+[^`]*)`", text)]
    for block in re.findall(r"^ *```\w*\n(.*?)^ *```$", text, re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            at = line.find("sirius ")
            if at >= 0 and re.match(r"sirius (" + "|".join(SUBCOMMANDS) + r")\b", line[at:].split("/bin/")[-1]):
                found.append(line[at:].split("#")[0])
    return [m.replace(".venv/bin/", "") for m in found]


@lru_cache(maxsize=None)
def _help(subcommand: str) -> str:
    return subprocess.run([SIRIUS, subcommand, "--help"], capture_output=True, text=True, check=True).stdout


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


# A page's commands name placeholders and whole sets; the suite runs them on these.
STAND_INS = {
    "PROGRAM.cu": "cuda_inputs/elementwise_chain.cu", "P.cu": "cuda_inputs/elementwise_chain.cu",
    "A.cu": "cuda_inputs/elementwise_chain.cu", "ORIGINAL.cu": "cuda_inputs/elementwise_chain.cu",
    "B.cu": "cuda_inputs/independent_pair.cu",
    "build/generated/model.cu": "cuda_inputs/softmax.cu", "-Ibuild/generated": "-Icuda_inputs",
    "OUT.cu": "{tmp}/out.cu", "O.cu": "{tmp}/out.cu", "OPTIMIZED.cu": "{tmp}/out.cu",
    "DIR": "{tmp}/dir", "DIR/results.json": "{tmp}/dir/results.json",
    "FILE": "{tmp}/report.json", "FILE.json": "{tmp}/report.json", "R.json": "{tmp}/report.json",
    "sirius-check.xml": "{tmp}/check.xml", "sirius-check.json": "{tmp}/check.json",
    "docs/experiments/corpus": "{tmp}/experiment", "docs/experiments/models": "{tmp}/experiment",
    "path/to/my_policy.py:OnlyScale": "{tmp}/my_policy.py:OnlyScale",
    "my_policy.py:OnlyScale": "{tmp}/my_policy.py:OnlyScale",
}


def _shortest(mention: str) -> str:
    """A mention with its optional [parts] left out and the first of alternatives a|b."""
    text = " ".join(mention.split())
    while re.search(r"\[[^\[\]]*\]", text):
        text = re.sub(r"\s*\[[^\[\]]*\]", "", text)
    return " ".join(w.split("|")[0] for w in text.split())


def _runs(mention: str) -> bool:
    """A mention is a command to run when it names a program or inputs; `sirius tune` or
    `sirius optimize --cooperative` in a sentence names a command and its option (checked
    above), and `...` stands for what the page said before."""
    text = _shortest(mention)
    return "..." not in text and (re.search(r"[\w/-]\.cu\b", text) is not None or "--inputs" in text)


def _as_run(mention: str, tmp: Path) -> list[str]:
    """The command the suite runs for a mention: its shortest form, stand-ins for
    placeholders, and a set of programs (the corpus folder, the list of models) stood in for
    by the stand-in program (the figures such a command made are in docs/experiments/)."""
    words = [STAND_INS.get(w, w).format(tmp=tmp) for w in _shortest(mention).split()]
    if "--inputs" in words:
        at = words.index("--inputs") + 1
        end = next((i for i in range(at, len(words)) if words[i].startswith("-")), len(words))
        words[at:end] = [STAND_INS["PROGRAM.cu"]]
    return words


def _needs_a_gpu_it_lacks(words: list[str], proc: subprocess.CompletedProcess) -> bool:
    """`sirius tune --import` reads what the exported runner measured on a GPU: where no GPU
    ever ran it, the command stops at the missing file with exit 2 and says so."""
    return ("--import" in words and shutil.which("nvidia-smi") is None and proc.returncode == 2
            and "no such file" in proc.stderr)


def test_a_mention_is_run_in_its_shortest_form_on_stand_ins(tmp_path):
    assert _as_run("sirius check PROGRAM.cu [--min-speedup Y [--predicted]] [-o OUT.cu]", tmp_path) == \
        ["sirius", "check", "cuda_inputs/elementwise_chain.cu"]
    assert _as_run("sirius optimize P.cu -o O.cu --arrangement auto|vertical", tmp_path) == \
        ["sirius", "optimize", "cuda_inputs/elementwise_chain.cu", "-o", f"{tmp_path}/out.cu", "--arrangement", "auto"]
    assert _as_run("sirius experiment --inputs a.cu b.cu --out DIR -DX", tmp_path)[2:5] == [
        "--inputs", "cuda_inputs/elementwise_chain.cu", "--out"]
    assert not _runs("sirius optimize --cooperative") and not _runs("sirius experiment ... --workers 4")
    assert _runs("sirius experiment --inputs cuda_inputs --out DIR")


@pytest.mark.toolchain
def test_every_command_the_pages_give_runs(tmp_path):
    """Every command of docs/ that names a program runs and exits 0, on stand-ins for its
    placeholders, with the policy file docs/policies.md shows; optimizing commands first,
    so that a verify or check finds the program they wrote."""
    policies = (ROOT / "docs" / "policies.md").read_text()
    [policy_code] = re.findall(r"^```python\n(# my_policy\.py\n.*?)^```$", policies, re.S | re.M)
    (tmp_path / "my_policy.py").write_text(policy_code)
    (tmp_path / "my_policies.py").write_text(policy_code)
    mentions = [(page.name, m) for page in DOCS for m in _mentions(page.read_text()) if _runs(m)]
    mentions.sort(key=lambda pm: pm[1].split()[1] != "optimize")
    assert len(mentions) >= 20, mentions
    failed = []
    for page, mention in mentions:
        words = _as_run(mention, tmp_path)
        proc = subprocess.run([SIRIUS, *words[1:]], cwd=ROOT, capture_output=True, text=True,
                              env={"PYTHONPATH": str(tmp_path), "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"},
                              timeout=600)
        if proc.returncode != 0 and not _needs_a_gpu_it_lacks(words, proc):
            failed.append(f"{page}: {' '.join(words)} (exit {proc.returncode})\n{proc.stdout}{proc.stderr}")
    assert not failed, "\n".join(failed)
