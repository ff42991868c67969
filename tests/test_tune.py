"""`sirius tune`: candidates ranked by the cost model without a GPU (said so), the cache
answering a second run without the optimizer, the export for a GPU machine (a runner that
needs no installed package) and the import of its results: the fastest verified candidate
wins, one with other results is discarded, results of other candidates are refused; several
programs tuned on two Dask workers choose as in one process, and a stopped run resumes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.terminal import run_on_a_terminal

pytestmark = pytest.mark.toolchain

ROOT = Path(__file__).resolve().parents[1]
SOFTMAX = str(ROOT / "cuda_inputs" / "softmax.cu")  # 4 launches -> 1
SIRIUS = str(Path(sys.executable).parent / "sirius")


def _env(cache: Path) -> dict[str, str]:
    return {**os.environ, "SIRIUS_CACHE": str(cache), "PATH": "/usr/bin:/bin"}  # no nvidia-smi: no GPU


def sirius(*args: str, cache: Path) -> subprocess.CompletedProcess:
    return subprocess.run([SIRIUS, *args], capture_output=True, text=True, timeout=600, env=_env(cache))


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tune") / "export"
    proc = sirius("tune", SOFTMAX, "--export", str(folder), cache=folder.parent / "cache")
    assert proc.returncode == 0, proc.stderr
    return folder


def test_without_a_gpu_the_choice_is_predicted_and_says_so_then_comes_from_the_cache(tmp_path):
    out, rep = tmp_path / "out.cu", tmp_path / "report.json"
    first = sirius("tune", SOFTMAX, "-o", str(out), "--report", str(rep), cache=tmp_path / "cache")
    assert first.returncode == 0, first.stderr
    assert "predicted, not measured: no CUDA GPU on this machine" in first.stdout
    report = json.loads(rep.read_text())
    assert report["basis"] == "predicted" and report["chosen"] == "auto/all-passes" and not report["cached"]
    rows = {r["name"]: r for r in report["candidates"]}
    assert rows["original"]["launches"] == 4 and rows["auto/all-passes"]["launches"] == 1
    assert rows["auto/all-passes"]["predicted_direct_us"] < rows["original"]["predicted_direct_us"]
    assert "sirius_fused" in out.read_text()
    written = out.read_text()
    out.unlink()
    second = sirius("tune", SOFTMAX, "-o", str(out), "--report", str(rep), cache=tmp_path / "cache")
    assert second.returncode == 0 and "(from the cache)" in second.stdout
    assert json.loads(rep.read_text())["cached"] and out.read_text() == written
    third = sirius("tune", SOFTMAX, "-o", str(out), "--no-cache", cache=tmp_path / "other")
    # the tuning cache untouched (the promise check keeps its own cache beside it)
    assert third.returncode == 0 and "from the cache" not in third.stdout
    assert not (tmp_path / "other" / "tune").exists()


def test_the_export_holds_every_candidate_and_a_runner_that_needs_no_installed_package(exported):
    manifest = json.loads((exported / "manifest.json").read_text())
    names = [p["name"] for p in manifest["programs"]]
    assert names == ["original", "auto/all-passes", "auto/fusion-alone"]
    assert all((exported / p["optimized"]).is_file() for p in manifest["programs"])
    tune = json.loads((exported / "tune.json").read_text())
    assert [c["name"] for c in tune["candidates"]] == names
    # -S: no site-packages at all (no islpy, llvmlite, libclang): the runner reaches its GPU check
    env = {**os.environ, "PYTHONPATH": "runner", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-S", "-m", "sirius.tuning.gpu_bench", ".", "--json", "results.json"],
                          cwd=exported, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2 and "needs a CUDA GPU and finds none" in proc.stderr, proc.stderr
    assert "PYTHONPATH=runner exec python3 -m sirius.tuning.gpu_bench . --json results.json" in \
        (exported / "run.sh").read_text()


def results(folder: Path, rows: dict[str, tuple[float | None, str]]) -> Path:
    """A results file as the runner writes it: per candidate its direct time and verdict."""
    path = folder / "results.json"
    path.write_text(json.dumps({"gpu": "NVIDIA H100 80GB HBM3", "rows": [
        {"program": name, "original_direct_us": 20.0, "optimized_direct_us": t, "optimized_graph_us": t,
         "result": verdict, "correctness": "buffer 0 differs" if verdict == "WRONG" else "equal",
         "error": None, "optimized_incomplete": None} for name, (t, verdict) in rows.items()]}))
    return path


def test_import_chooses_the_fastest_verified_candidate_and_discards_one_that_differs(exported, tmp_path):
    res = results(exported, {"original": (20.0, "equal"), "auto/all-passes": (5.0, "WRONG"),
                             "auto/fusion-alone": (7.5, "equal")})
    out, rep = tmp_path / "out.cu", tmp_path / "report.json"
    proc = sirius("tune", SOFTMAX, "--import", str(res), "-o", str(out), "--report", str(rep), cache=tmp_path / "c")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(rep.read_text())
    assert report["basis"] == "measured" and report["gpu"] == "NVIDIA H100 80GB HBM3"
    assert report["chosen"] == "auto/fusion-alone"
    rows = {r["name"]: r for r in report["candidates"]}
    assert rows["auto/all-passes"]["discarded"].startswith("results differ from the original's")
    assert rows["auto/fusion-alone"]["measured_direct_us"] == 7.5
    assert "measured on NVIDIA H100" in proc.stdout and "discarded: results differ" in proc.stdout


def test_results_of_other_candidates_are_refused(exported, tmp_path):
    tune = exported / "tune.json"
    saved = tune.read_text()
    try:
        data = json.loads(saved)
        data["candidates"][1]["digest"] = "0" * 16
        tune.write_text(json.dumps(data))
        res = results(exported, {"original": (20.0, "equal"), "auto/all-passes": (5.0, "equal")})
        proc = sirius("tune", SOFTMAX, "--import", str(res), "-o", str(tmp_path / "o.cu"), cache=tmp_path / "c")
        assert proc.returncode == 2 and "differ from those exported" in proc.stderr
    finally:
        tune.write_text(saved)
    other = tmp_path / "other"
    other.mkdir()
    res = results(other, {"bert_qkv": (5.0, "equal")})
    proc = sirius("tune", SOFTMAX, "--import", str(res), "-o", str(tmp_path / "o.cu"), cache=tmp_path / "c")
    assert proc.returncode == 2 and "name none of this program's candidates" in proc.stderr


PAIR = str(ROOT / "cuda_inputs" / "independent_pair.cu")  # 2 launches -> 1
CHAIN = str(ROOT / "cuda_inputs" / "elementwise_chain.cu")  # 4 launches -> 1


def test_two_programs_on_two_workers_choose_as_in_one_process_and_a_stopped_run_resumes(tmp_path):
    """Two programs tuned on a local Dask cluster of two workers; then one program's decision is
    removed from the cache (a run stopped half-way) and the run, again in this process, takes the
    other from the cache and tunes that one alone: the same tables, choices, reports and written
    programs as the workers made. That run is watched on a terminal: a line per program above a
    bar that shows the program's pipeline stage and candidate."""
    argv = ("tune", PAIR, CHAIN, "--predicted")
    cache = tmp_path / "cache"
    there = sirius(*argv, "-o", str(tmp_path / "there"), "--report", str(tmp_path / "there.json"), "--workers", "2",
                   cache=cache)
    assert there.returncode == 0, there.stderr
    assert there.stdout.count("chosen: auto/all-passes\n") == 2 and "(from the cache)" not in there.stdout
    assert "tune [2/2]" in there.stderr and "Traceback" not in there.stderr
    report = json.loads((tmp_path / "there.json").read_text())
    assert [(Path(p["program"]).name, p["chosen"], p["basis"]) for p in report["programs"]] == [
        ("independent_pair.cu", "auto/all-passes", "predicted"), ("elementwise_chain.cu", "auto/all-passes", "predicted")]

    decisions = {json.loads(p.read_text())["program"]: p for p in (cache / "tune").glob("decision-*.json")}
    assert sorted(decisions) == sorted([PAIR, CHAIN])
    decisions[CHAIN].unlink()
    here = run_on_a_terminal([SIRIUS, *argv, "-o", str(tmp_path / "here"), "--report", str(tmp_path / "here.json")],
                             env=_env(cache))
    assert here.returncode == 0, here.terminal
    assert here.stdout.count("(from the cache)") == 1
    assert here.stdout.replace(" (from the cache)", "") == there.stdout
    assert "independent_pair.cu: chosen auto/all-passes (from the cache)" in here.terminal
    assert "elementwise_chain.cu: 3 candidates, chosen auto/all-passes (predicted)" in here.terminal
    for shown in ("tune: elementwise_chain: optimize: schedule", "tune: elementwise_chain: candidate vertical/all-passes",
                  "1/2", "\x1b["):
        assert shown in here.terminal, shown
    assert "tune: independent_pair: optimize" not in here.terminal  # from the cache: not optimized again
    again = json.loads((tmp_path / "here.json").read_text())
    assert [p["cached"] for p in again["programs"]] == [True, False]
    assert [{**p, "cached": False} for p in again["programs"]] == report["programs"]
    for name in ("independent_pair.cu", "elementwise_chain.cu"):
        assert (tmp_path / "here" / name).read_text() == (tmp_path / "there" / name).read_text()


def test_with_a_gpu_the_candidates_are_measured_by_a_gpu_task_whose_figures_are_cached(tmp_path, monkeypatch, capsys):
    """The rounds of a measured run, with the two tasks stood in for (no pipeline, no GPU): each
    program's candidates, then one GPU task per program measuring them, the original first; the
    fastest measured candidate wins over the predicted one. Run again without its decisions,
    every figure comes from the measurement cache and no GPU task runs."""
    from sirius.cli import main
    from sirius.commands import tune

    def made(job, progress=None):
        def candidate(name, predicted_us):
            return {"name": name, "arrangement": None if name == "original" else "auto", "passes": [],
                    "source": f"// {name} of {Path(job.program).name}\n", "launches": 1, "same_as": [],
                    "prediction": {"launches": 1, "direct_us": predicted_us, "graph_us": predicted_us, "notes": []}}
        return {"candidates": [candidate("original", 20.0), candidate("auto/all-passes", 5.0),
                               candidate("auto/fusion-alone", 6.0)]}

    measured: list[list[str]] = []

    def measure(job, rows, settings, progress=None):
        measured.append([r["name"] for r in rows])
        times = {"original": 20.0, "auto/all-passes": 9.0, "auto/fusion-alone": 7.0}
        return {"measured": {r["name"]: {"direct_us": times[r["name"]], "graph_us": times[r["name"]], "discarded": None}
                             for r in rows}}

    monkeypatch.setattr(tune, "_gpu_name", lambda: "Some GPU, 580.1")
    monkeypatch.setattr(tune, "tune_candidates", made)
    monkeypatch.setattr(tune, "measure_candidates", measure)
    monkeypatch.setenv("SIRIUS_CACHE", str(tmp_path / "cache"))
    argv = ["tune", PAIR, CHAIN, "-o", str(tmp_path / "out"), "--report", str(tmp_path / "r.json")]
    assert main(argv) == 0, capsys.readouterr().err
    assert measured == [["original", "auto/all-passes", "auto/fusion-alone"]] * 2
    report = json.loads((tmp_path / "r.json").read_text())
    assert [(p["basis"], p["gpu"], p["chosen"]) for p in report["programs"]] == \
        [("measured", "Some GPU, 580.1", "auto/fusion-alone")] * 2
    assert (tmp_path / "out" / "elementwise_chain.cu").read_text() == "// auto/fusion-alone of elementwise_chain.cu\n"
    assert capsys.readouterr().out.count("measured on Some GPU, 580.1") == 2

    for decision in (tmp_path / "cache" / "tune").glob("decision-*.json"):
        decision.unlink()
    assert main(argv) == 0
    assert len(measured) == 2  # no GPU task ran: every candidate's figures were cached
    assert json.loads((tmp_path / "r.json").read_text()) == report


@pytest.mark.parametrize("args, message", [
    (["tune", SOFTMAX], "-o OUT.cu is required"),
    (["tune", SOFTMAX, "-o", SOFTMAX], "must differ from the input"),
    (["tune", SOFTMAX, "-o", "x.cu", "--import", "/nonexistent.json"], "no such file"),
    (["tune", "/nonexistent.cu", "-o", "x.cu"], "no such file"),
    (["tune", SOFTMAX, "-o", "x.cu", "--predicted", "--export", "d"], "not allowed with"),
    (["tune", SOFTMAX, PAIR, "-o", "x.cu"], "-o names a folder"),
    (["tune", SOFTMAX, PAIR, "-o", str(ROOT / "cuda_inputs")], "would overwrite the program"),
    (["tune", SOFTMAX, PAIR, "--export", "d"], "--export takes one program (2 were given)"),
    (["tune", SOFTMAX, "-o", "x.cu", "--workers", "two"], "--workers two: not a whole number"),
])
def test_bad_input_exits_2_with_a_message(args, message, tmp_path):
    proc = sirius(*args, cache=tmp_path)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
