"""``sirius experiment``: every policy over every program, each result verified, a table
(CSV and JSON with the command line, commit and date) and a plot; bad input exits 2."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from sirius.cli import main as sirius_main
from sirius.commands.experiment import COLUMNS

pytestmark = pytest.mark.toolchain

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = [str(ROOT / "cuda_inputs" / "independent_pair.cu"), str(ROOT / "cuda_inputs" / "elementwise_chain.cu")]


def test_experiment_on_two_programs_writes_the_table_and_the_plot(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)  # the policy file is named from the repository's root
    out = tmp_path / "exp"
    policies = "greedy,none,tests/fusion/test_policies.py:OnlyScale"
    status = sirius_main(["experiment", "--policies", policies, "--inputs", *PROGRAMS, "--out", str(out),
                          "--keep-programs"])
    err = capsys.readouterr().err
    assert status == 0, err
    assert "experiment [6/6]" in err  # progress on standard error

    with (out / "experiment.csv").open() as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames) == COLUMNS
        rows = list(reader)
    assert [(Path(r["program"]).name, r["policy"]) for r in rows] == [
        (Path(p).name, policy) for p in PROGRAMS for policy in ("greedy", "none", "only-scale")]
    assert all(r["verified"] == "True" and not r["error"] for r in rows)
    by = {(Path(r["program"]).stem, r["policy"]): r for r in rows}
    assert (by["elementwise_chain", "greedy"]["launches_before"], by["elementwise_chain", "greedy"]["launches_after"]) \
        == ("4", "1")
    assert by["elementwise_chain", "none"]["launches_after"] == "4"
    assert by["elementwise_chain", "none"]["fused_kernels"] == "0"
    assert int(by["elementwise_chain", "none"]["declined"]) > 0
    assert by["independent_pair", "greedy"]["kernels_after"] == "1"
    for r in rows:  # the cost model prices every program; fusion never predicts it slower here
        assert float(r["predicted_us"]) <= float(r["predicted_original_us"])

    table = json.loads((out / "experiment.json").read_text())
    assert table["columns"] == list(COLUMNS)
    assert table["command"].startswith("sirius experiment --policies greedy,none,")
    assert {"commit", "date", "notes", "policies", "programs"} <= set(table)
    assert [p["name"] for p in table["policies"]] == ["greedy", "none", "only-scale"]
    assert len(table["rows"]) == 6 and set(table["rows"][0]) == set(COLUMNS)
    sass = [r["sass_instructions"] for r in table["rows"]]
    assert all(s is None for s in sass) == any("SASS" in n for n in table["notes"])  # counted, or a note says why
    assert (out / "experiment.png").stat().st_size > 0
    markdown = (out / "experiment.md").read_text()
    assert "| program | original | greedy | none | only-scale |" in markdown
    assert "| elementwise_chain | 4 · " in markdown
    assert (out / "programs" / "elementwise_chain" / "greedy.cu").is_file()


@pytest.mark.parametrize("argv, message", [
    (["--policies", "greedy,fastest"], "unknown policy"),
    (["--policies", "greedy,greedy"], "two policies are named greedy"),
    (["--inputs", "EMPTY"], "no .cu files"),
    (["--inputs", "no/such.cu"], "no such file"),
])
def test_bad_input_exits_2(tmp_path, capsys, argv, message):
    (tmp_path / "empty").mkdir()
    argv = [str(tmp_path / "empty") if a == "EMPTY" else a for a in argv]
    if "--inputs" not in argv:
        argv += ["--inputs", PROGRAMS[0]]
    assert sirius_main(["experiment", *argv, "--out", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err
