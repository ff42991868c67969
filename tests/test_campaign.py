"""``sirius.campaign``: independent tasks run in this process or on a local Dask cluster of two
workers give the same results in the same order; a rerun executes no task that is cached; a
worker killed mid-run loses no result and counts none twice; bad engine options exit 2 in one
line. Tiny tasks (``sirius.testing.campaign_probe``) count their own runs; one small
experiment runs end to end on two workers."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from sirius.campaign import Engine, ResultCache, Task, parse_workers, run_tasks, task_key
from sirius.cli import main as sirius_main
from sirius.core.errors import InputError
from sirius.testing import campaign_probe as probe

ROOT = Path(__file__).resolve().parents[1]


def _squares(log: Path, count: int, seconds: float = 0.0, killer: int | None = None,
             marker: Path | None = None) -> list[Task]:
    tasks = []
    for n in range(count):
        if n == killer:
            task = Task(task_key("square", n), probe.square_or_die, (str(log), n, str(marker), seconds), f"square {n}")
        else:
            task = Task(task_key("square", n), probe.square, (str(log), n, seconds), f"square {n}")
        tasks.append(task)
    return tasks


def _expected(count: int) -> list[dict]:
    return [{"n": n, "square": n * n} for n in range(count)]


def test_two_local_workers_give_the_results_of_one_process(tmp_path):
    tasks = _squares(tmp_path / "log", 6, seconds=0.2)
    arrived: list[int] = []
    here = run_tasks(tasks, Engine(workers=1))
    there = run_tasks(tasks, Engine(workers=2), on_result=lambda i, task, result, cached: arrived.append(i))
    assert here == there == _expected(6)
    assert sorted(arrived) == list(range(6))  # each result reported once, as it arrived
    assert all(probe.runs(str(tmp_path / "log"), f"square-{n}") == 2 for n in range(6))


def test_each_task_run_in_this_process_is_announced_before_its_result(tmp_path):
    """(progress names what is being worked on, not what finished last; a cached task is
    not run, so not announced)"""
    log, cache = tmp_path / "log", ResultCache(tmp_path / "cache")
    tasks = _squares(log, 4)
    run_tasks(tasks[:1], Engine(workers=1), cache)
    events: list[str] = []
    run_tasks(tasks, Engine(workers=1), cache, on_result=lambda i, task, result, cached: events.append(f"done {i}"),
              on_start=lambda task: events.append(f"start {task.label}"))
    assert events == ["done 0", "start square 1", "done 1", "start square 2", "done 2", "start square 3", "done 3"]


def test_tasks_that_need_a_gpu_run_on_the_worker_declaring_one(tmp_path):
    tasks = [Task(task_key("gpu", n), probe.worker_resources, (), f"gpu {n}", gpu=True) for n in range(3)]
    tasks.append(Task(task_key("cpu"), probe.worker_resources, (), "cpu"))
    results = run_tasks(tasks, Engine(workers=2))
    assert all(r == {"GPU": 1.0} for r in results[:3])


def test_a_second_run_executes_no_task(tmp_path):
    log, cache = tmp_path / "log", ResultCache(tmp_path / "cache")
    tasks = _squares(log, 6)
    run_tasks(tasks[:3], Engine(workers=1), cache)  # a campaign stopped half-way
    assert [probe.runs(str(log), f"square-{n}") for n in range(6)] == [1, 1, 1, 0, 0, 0]
    from_cache: list[bool] = []
    assert run_tasks(tasks, Engine(workers=1), cache, lambda i, t, r, cached: from_cache.append(cached)) \
        == _expected(6)
    assert from_cache == [True] * 3 + [False] * 3
    assert [probe.runs(str(log), f"square-{n}") for n in range(6)] == [1] * 6  # only what was left ran

    again = run_tasks(tasks, Engine(workers=2), cache)  # all cached: no cluster, no task
    assert again == _expected(6)
    assert [probe.runs(str(log), f"square-{n}") for n in range(6)] == [1] * 6
    assert len(list((tmp_path / "cache").glob("*.json"))) == 6

    fresh = ResultCache(tmp_path / "cache", read=False)
    assert run_tasks(tasks[:1], Engine(workers=1), fresh) == _expected(1)
    assert probe.runs(str(log), "square-0") == 2


def test_a_worker_killed_mid_run_loses_nothing_and_counts_nothing_twice(tmp_path):
    log, marker = tmp_path / "log", tmp_path / "killed"
    tasks = _squares(log, 6, seconds=0.5, killer=2, marker=marker)
    arrived: list[int] = []
    cache = ResultCache(tmp_path / "cache")
    results = run_tasks(tasks, Engine(workers=2), cache, lambda i, task, result, cached: arrived.append(i))
    assert marker.is_file()  # a worker was killed running task 2 ...
    assert probe.runs(str(log), "square-2") == 2  # ... which ran again elsewhere
    assert all(probe.runs(str(log), f"square-{n}") >= 1 for n in range(6))
    assert results == _expected(6)  # every result once, in the tasks' order
    assert sorted(arrived) == list(range(6))
    cached = sorted(json.loads(p.read_text())["result"]["n"] for p in (tmp_path / "cache").glob("*.json"))
    assert cached == list(range(6))


def test_identical_tasks_run_once(tmp_path):
    task = _squares(tmp_path / "log", 1)[0]
    assert run_tasks([task, task], Engine(workers=1)) == _expected(1) * 2
    assert probe.runs(str(tmp_path / "log"), "square-0") == 1


@pytest.mark.parametrize("given, message", [
    ("two", "not a whole number"), ("-1", "cannot be negative"), ("100000", "use --scheduler")])
def test_bad_worker_counts_are_input_errors(given, message):
    with pytest.raises(InputError, match=message):
        parse_workers(given, 1)
    assert parse_workers(None, 3) == 3 and parse_workers("0", 3) == 0


@pytest.mark.parametrize("argv, message", [
    (["--workers", "two"], "error: --workers two: not a whole number"),
    (["--workers", "2", "--scheduler", "tcp://127.0.0.1:8786"], "give one"),
    (["--scheduler", "tcp://127.0.0.1:9"], "error: --scheduler tcp://127.0.0.1:9: no Dask scheduler answered"),
])
def test_bad_engine_options_exit_2_in_one_line(tmp_path, capsys, argv, message):
    status = sirius_main(["experiment", "--inputs", str(ROOT / "cuda_inputs" / "independent_pair.cu"),
                          "--no-sass", "--no-plot", "--out", str(tmp_path / "out"), *argv])
    err = capsys.readouterr().err
    assert status == 2
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def _table(path: Path) -> list[dict]:
    with path.open() as f:
        return [{k: v for k, v in row.items() if k != "optimize_seconds"} for row in csv.DictReader(f)]


@pytest.mark.toolchain
def test_an_experiment_on_two_workers_resumes_in_one_process_with_the_same_table(tmp_path, capsys):
    """Two programs x two policies on a local cluster of two workers; then one program's cached
    result is removed and the same experiment, run again in one process, does that program
    alone: the table is the same, rows in program order."""
    programs = [str(ROOT / "cuda_inputs" / "independent_pair.cu"), str(ROOT / "cuda_inputs" / "elementwise_chain.cu")]
    out = tmp_path / "exp"
    argv = ["experiment", "--policies", "greedy,none", "--inputs", *programs, "--out", str(out), "--no-sass",
            "--no-plot"]
    assert sirius_main([*argv, "--workers", "2"]) == 0, capsys.readouterr().err
    assert "experiment [4/4]" in capsys.readouterr().err
    first = _table(out / "experiment.csv")
    assert [(Path(r["program"]).stem, r["policy"], r["launches_after"]) for r in first] == [
        ("independent_pair", "greedy", "1"), ("independent_pair", "none", "2"),
        ("elementwise_chain", "greedy", "1"), ("elementwise_chain", "none", "4")]
    assert all(r["verified"] == "True" for r in first)

    results = sorted((out / ".sirius-tasks").glob("*.json"))
    assert len(results) == 2
    gone = next(p for p in results if json.loads(p.read_text())["label"] == "elementwise_chain")
    gone.unlink()
    assert sirius_main([*argv, "--workers", "1"]) == 0
    err = capsys.readouterr().err
    assert "independent_pair.cu greedy: 2 -> 1 launches, verified" in err and err.count("(cached)") == 2
    assert "1 of 2 programs from" in err
    assert _table(out / "experiment.csv") == first
