"""Progress on long work: drawn on a terminal, nothing in a pipe or with --quiet."""

import io
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from sirius.commands.progress import item_progress, shown, stage_progress
from tests.terminal import run_on_a_terminal

ROOT = Path(__file__).resolve().parent.parent
SIRIUS = str(Path(sys.executable).parent / "sirius")


def _terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=100), out


def test_stages_are_drawn_on_a_terminal():
    console, out = _terminal()
    stages = ["analyze", "uar", "schedule"]
    with stage_progress("optimize softmax.cu", stages, False, console) as entering:
        for stage in ("analyze", "uar", "schedule"):
            entering(stage)
    drawn = out.getvalue()
    assert "optimize softmax.cu: uar" in drawn and "optimize softmax.cu: schedule" in drawn and "\x1b[" in drawn


def test_items_print_their_lines_above_the_bar():
    console, out = _terminal()
    with item_progress("experiment", 2, False, console) as done:
        done("a.cu greedy", "experiment [1/2] a.cu greedy: 4 -> 1 launches")
        done("b.cu greedy", None)
    drawn = out.getvalue()
    assert "experiment [1/2] a.cu greedy: 4 -> 1 launches" in drawn and "2/2" in drawn


def test_an_item_can_say_where_it_is_without_advancing():
    console, out = _terminal()
    with item_progress("tune", 2, False, console) as done:
        done("a: candidate vertical/all-passes", None, 0)
        done("a", "tune [1/2] a.cu: 3 candidates")
    drawn = out.getvalue()
    assert "tune: a: candidate vertical/all-passes" in drawn and "0/2" in drawn and "1/2" in drawn


def test_nothing_is_drawn_when_quiet_or_not_a_terminal(capsys):
    for console, quiet in ((_terminal()[0], True), (Console(file=io.StringIO(), force_terminal=False), False)):
        assert not shown(quiet, console)
        with stage_progress("optimize", ["analyze"], quiet, console) as entering:
            entering("analyze")
        assert console.file.getvalue() == ""
    # not drawn: a campaign's lines go to standard error as they are, and nothing with --quiet
    with item_progress("experiment", 1, False, Console(file=io.StringIO(), force_terminal=False)) as done:
        done("a.cu", "experiment [1/1] a.cu")
    with item_progress("experiment", 1, True, Console(file=io.StringIO(), force_terminal=False)) as done:
        done("a.cu", "experiment [1/1] quiet")
    assert capsys.readouterr().err == "experiment [1/1] a.cu\n"


def test_optimize_in_a_pipe_prints_no_escape_codes_and_nothing_with_quiet(tmp_path):
    program = ROOT / "cuda_inputs" / "independent_pair.cu"
    run = [SIRIUS, "optimize", str(program), "-o", str(tmp_path / "out.cu")]
    plain = subprocess.run(run, capture_output=True, text=True, check=True)
    assert "launches per run" in plain.stdout and "\x1b" not in plain.stdout + plain.stderr
    quiet = subprocess.run(run + ["--quiet"], capture_output=True, text=True, check=True)
    assert quiet.stdout == quiet.stderr == "" and (tmp_path / "out.cu").read_text().count("__global__")


def test_bench_prepare_is_quiet_with_quiet_and_verify_shows_its_stages_on_a_terminal(tmp_path):
    """``bench --prepare --quiet`` in a pipe says only where the manifest is; ``verify`` of what
    it prepared, on a terminal, draws its three stages (stdout keeps the verdict alone)."""
    folder = tmp_path / "bench"
    prepared = subprocess.run([SIRIUS, "bench", "--prepare", str(folder), "--quiet",
                               str(ROOT / "cuda_inputs" / "independent_pair.cu")], capture_output=True, text=True)
    assert prepared.returncode == 0 and prepared.stdout == "", prepared.stderr
    assert prepared.stderr == f"wrote {folder / 'manifest.json'} (1 programs)\n"
    verify = run_on_a_terminal([SIRIUS, "verify", str(folder / "independent_pair.orig.cu"),
                                str(folder / "independent_pair.opt.cu")])
    assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.terminal
    assert "\x1b" not in verify.stdout
    for stage in ("build both", "run the original", "run the optimized"):
        assert f"verify independent_pair.opt.cu: {stage}" in verify.terminal, stage
