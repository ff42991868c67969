"""`sirius bench`: refuses without a GPU (exit 2), prepares a manifest on the CPU machine, and
renders rows from recorded results: speedups as baseline / optimized, a WRONG row claims no
speedup, the roofline fraction is floor / the optimized program's best time. The GPU half
imports without islpy, llvmlite or libclang. What needs a GPU (building, timing, the bandwidth
and PyTorch measurements) is not run here."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from sirius import cli
from sirius.backend import gpu
from sirius.commands import bench
from sirius.core.errors import SiriusError
from sirius.tuning import gpu_bench
from sirius.tuning.gpu_bench import (BenchOptions, BenchProgram, BenchResult, MachineFacts, ProgramTiming, Verdict,
                                     build_row, judge_dumps, render_table, result_json, write_plot)
from sirius.tuning.torch_baselines import TorchRow
from tests.terminal import run_on_a_terminal

ROOT = Path(__file__).resolve().parents[1]
SOFTMAX = ROOT / "cuda_inputs" / "softmax.cu"
BERT_QKV = ROOT / "cuda_inputs" / "bert_qkv.cu"


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(gpu, "gpu_unavailable_reason", lambda: "nvidia-smi not found")


@pytest.fixture
def a_gpu(monkeypatch):
    monkeypatch.setattr(gpu, "gpu_unavailable_reason", lambda: None)


# ------------------------------------------------------------------ refusals and bad input


def test_run_without_a_gpu_exits_2_and_says_so(tmp_path, no_gpu, capsys):
    (tmp_path / "manifest.json").write_text(json.dumps({"version": 1, "programs": []}))
    assert cli.main(["bench", "--run", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "needs a CUDA GPU and finds none (nvidia-smi not found)" in err
    assert "--prepare DIR" in err and "python3 -m sirius.tuning.gpu_bench" in err


def test_the_plain_form_without_a_gpu_exits_2_before_optimizing(no_gpu, monkeypatch, capsys):
    monkeypatch.setattr(bench, "prepare", lambda *a, **k: pytest.fail("optimized although nothing can be measured"))
    assert cli.main(["bench", str(SOFTMAX)]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err


def test_a_missing_manifest_exits_2(tmp_path, a_gpu, capsys):
    assert cli.main(["bench", "--run", str(tmp_path / "nothing")]) == 2
    assert "manifest.json not found: run `sirius bench --prepare" in capsys.readouterr().err


def test_a_manifest_naming_a_missing_file_exits_2(tmp_path, a_gpu, capsys):
    entry = {"name": "p", "original": "p.orig.cu", "optimized": "p.opt.cu"}
    (tmp_path / "manifest.json").write_text(json.dumps({"programs": [entry]}))
    assert cli.main(["bench", "--run", str(tmp_path)]) == 2
    assert "p.orig.cu not found (the manifest names it)" in capsys.readouterr().err


def test_a_malformed_manifest_exits_2(tmp_path, a_gpu, capsys):
    (tmp_path / "manifest.json").write_text("{not json")
    assert cli.main(["bench", "--run", str(tmp_path)]) == 2
    assert "is not a bench manifest" in capsys.readouterr().err


@pytest.mark.parametrize("phase", [["--prepare", "DIR"], []])
def test_a_missing_program_exits_2(tmp_path, phase, capsys):
    argv = ["bench", *[str(tmp_path / "out") if a == "DIR" else a for a in phase], str(tmp_path / "missing.cu")]
    assert cli.main(argv) == 2
    assert "no such file" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_prepare_into_a_file_exits_2(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    assert cli.main(["bench", "--prepare", str(tmp_path / "file"), str(SOFTMAX)]) == 2
    assert "not a folder" in capsys.readouterr().err


def test_run_takes_no_programs(tmp_path, capsys):
    assert cli.main(["bench", "--run", str(tmp_path), str(SOFTMAX)]) == 2
    assert "give no PROGRAM.cu" in capsys.readouterr().err


def test_help_explains_the_columns_and_the_baselines(capsys):
    with pytest.raises(SystemExit):
        cli.main(["bench", "--help"])
    text = capsys.readouterr().out
    for phrase in ("opt direct vs orig graph", "the honest baseline", "orig direct / opt direct", "roofline floor",
                   "compulsory DRAM bytes", "WRONG", "--prepare DIR", "--run DIR", "torch.compile", "Exit status"):
        assert phrase in text, phrase


# ------------------------------------------------------------------ prepare


@pytest.mark.toolchain
def test_prepare_writes_the_programs_and_a_manifest_and_shows_its_progress_on_a_terminal(tmp_path):
    folder = tmp_path / "bench"
    sirius = str(Path(sys.executable).parent / "sirius")
    prepared = run_on_a_terminal([sirius, "bench", "--prepare", str(folder), str(SOFTMAX), str(BERT_QKV)])
    assert prepared.returncode == 0, prepared.terminal
    # a bar over the programs showing each one's pipeline stage, a line per program above it
    for shown in ("bench --prepare: softmax: schedule", "bench --prepare: bert_qkv: codegen", "1/2",
                  "softmax: 4 -> 1 launches", "bert_qkv: 9 -> 1 launches", "manifest.json (2 programs)"):
        assert shown in prepared.terminal, shown
    data = json.loads((folder / "manifest.json").read_text())
    assert data["arch"] == "sm_90" and data["std"] == "c++17" and data["command"] and data["date"]
    by_name = {p["name"]: p for p in data["programs"]}
    assert set(by_name) == {"softmax", "bert_qkv"}
    assert (by_name["softmax"]["launches_before"], by_name["softmax"]["launches_after"]) == (4, 1)
    assert (by_name["bert_qkv"]["launches_before"], by_name["bert_qkv"]["launches_after"]) == (9, 1)
    for p in by_name.values():
        assert p["error"] is None and p["defines"] == [] and p["torch_equivalent"] is None
        assert isinstance(p["compulsory_bytes"], int) and p["compulsory_bytes"] > 0, p["compulsory_bytes_note"]
        assert p["predicted"]["optimized_direct_us"] < p["predicted"]["original_direct_us"]  # fusion predicted to pay
        assert (folder / p["original"]).read_text() == Path(p["source"]).read_text()
        assert "sirius_fused" in (folder / p["optimized"]).read_text()
    assert json.loads((folder / "softmax.report.json").read_text())["launches_after"] == 1
    # the GPU half reads it back with absolute paths
    manifest = gpu_bench.read_manifest(folder)
    assert [p.name for p in manifest.programs] == ["softmax", "bert_qkv"]
    assert manifest.programs[0].optimized == (folder / "softmax.opt.cu").resolve()


def test_when_the_cost_model_cannot_bound_the_traffic_the_manifest_says_why(monkeypatch):
    monkeypatch.setattr(bench, "compulsory_bytes", lambda model: None)
    value, note = bench.compulsory_bytes_of(object())
    assert value is None and "cannot bound its DRAM traffic" in note


def test_the_models_with_a_pytorch_equivalent_carry_their_sizes():
    models = ROOT / "cuda_inputs" / "models"
    bert = bench.torch_equivalent(models / "bert_fp32.cu", ())
    assert bert == {"model": "bert", "program": "bert_fp32",
                    "sizes": {"seq": 384, "hidden": 768, "heads": 12, "ffn": 3072, "dtype": "float32"}}
    lstm = bench.torch_equivalent(models / "lstm.cu", ("SIRIUS_SMALL",))
    assert lstm["model"] == "lstm" and lstm["sizes"]["hidden"] == 64  # the small configuration
    assert bench.torch_equivalent(models / "resnext.cu", ()) is None
    assert bench.torch_equivalent(SOFTMAX, ()) is None


def test_programs_with_the_same_stem_get_their_folder_in_the_name():
    names = bench.program_names([ROOT / "cuda_inputs" / "lstm.cu", ROOT / "cuda_inputs" / "models" / "lstm.cu",
                                 SOFTMAX])
    assert names == ["cuda_inputs/lstm", "models/lstm", "softmax"]


# ------------------------------------------------------------------ rows and rendering


def program(name: str, compulsory: int | None = 4_000_000) -> BenchProgram:
    return BenchProgram(name, f"cuda_inputs/{name}.cu", Path(f"{name}.orig.cu"), Path(f"{name}.opt.cu"),
                        launches_before=9, launches_after=1, compulsory_bytes=compulsory)


EQUAL = Verdict(True, "1 buffer bit-exact", 0.0)
ORIGINAL = ProgramTiming(direct_us=90.0, graph_us=60.0, launches=9)
OPTIMIZED = ProgramTiming(direct_us=30.0, graph_us=25.0, launches=1)


def test_speedups_are_baseline_over_optimized_and_the_honest_one_is_against_the_original_graph():
    row = build_row(program("bert_qkv"), ORIGINAL, OPTIMIZED, EQUAL, bandwidth_gbps=4000.0)
    assert row.result == "equal"
    assert row.speedup_direct == 3.0  # 90 / 30
    assert row.speedup_graph == 2.4  # 60 / 25
    assert row.speedup_vs_original_graph == 2.0  # 60 / 30
    assert row.floor_us == 1.0  # 4e6 bytes / 4000 GB/s
    assert row.floor_fraction == 0.04  # 1 us / the best optimized time, 25 us


def test_a_wrong_row_claims_no_speedup_and_no_fraction_of_the_floor():
    wrong = Verdict(False, "d_out: 3 of 1024 elements differ (max abs 0.5)", 0.5)
    row = build_row(program("softmax"), ORIGINAL, OPTIMIZED, wrong, bandwidth_gbps=4000.0)
    assert row.result == "WRONG"
    assert (row.speedup_direct, row.speedup_graph, row.speedup_vs_original_graph, row.floor_fraction) == (
        None, None, None, None)
    assert row.floor_us == 1.0  # a property of the program, still shown
    assert row.optimized == OPTIMIZED  # the times are reported, not claimed


def test_an_incomplete_timing_or_a_failure_claims_no_speedup():
    partial = ProgramTiming(30.0, 25.0, 1, incomplete="1 launch sequence(s) not replayed, e.g. kernel k: printf")
    assert build_row(program("a"), ORIGINAL, partial, EQUAL, 4000.0).speedup_direct is None
    failed = build_row(program("b"), None, None, None, 4000.0, error="nvcc cannot build b.opt.cu")
    assert failed.result == "ERROR" and failed.speedup_direct is None
    unprepared = build_row(BenchProgram("c", "c.cu", None, None, error="optimize failed: x"), None, None, None, None)
    assert unprepared.result == "ERROR" and unprepared.error == "optimize failed: x"


def test_a_run_that_took_only_the_original_code_of_a_region_claims_no_speedup():
    def paths(runs, fused_runs):
        return {"region": 0, "kind": "fused", "line": 7, "kernels": ["a", "b"], "runs": runs, "fused_runs": fused_runs,
                "paths": {"original code: guard failed": runs - fused_runs} if runs > fused_runs else
                {"fused launches": runs}, "guard_failed_on": {}}
    fell_back = dataclasses.replace(EQUAL, region_paths=(paths(1, 0),))
    row = build_row(program("softmax"), ORIGINAL, OPTIMIZED, fell_back, 4000.0)
    assert row.result == "FALLBACK" and row.speedup_direct is None and row.speedup_vs_original_graph is None
    tested = dataclasses.replace(EQUAL, region_paths=(paths(1, 1),))
    assert build_row(program("softmax"), ORIGINAL, OPTIMIZED, tested, 4000.0).speedup_direct == 3.0
    result = BenchResult(MachineFacts("NVIDIA H200", "580", "13.0", "13.0", 132, "9.0", "13.0"), 4000.0, (row,))
    assert result.exit_status == 0  # equal results: nothing wrong, only nothing fused measured
    assert ("softmax: FALLBACK, no speedup claimed: 1 of 1 fused regions ran only their original code "
            "(region 0: original code: guard failed)") in render_table(result)


def test_no_bandwidth_or_no_compulsory_bytes_leaves_the_floor_blank():
    assert build_row(program("a"), ORIGINAL, OPTIMIZED, EQUAL, None).floor_us is None
    row = build_row(program("a", compulsory=None), ORIGINAL, OPTIMIZED, EQUAL, 4000.0)
    assert row.floor_us is None and row.floor_fraction is None and row.speedup_direct == 3.0


def recorded_result() -> BenchResult:
    rows = (build_row(program("bert_qkv"), ORIGINAL, OPTIMIZED, EQUAL, 4000.0),
            build_row(program("softmax"), ORIGINAL, OPTIMIZED, Verdict(False, "printed output differs at line 2"),
                      4000.0),
            build_row(program("gather"), None, None, None, 4000.0, error="the original program exits with status 1"))
    torch_rows = (TorchRow("lstm", "PyTorch 2.9 nn.LSTM (cuDNN), hidden 256, 10 layers, 100 steps, batch 1, float32",
                           1500.0, 900.0, None, ("compile failed: RuntimeError: boom",)),)
    return BenchResult(MachineFacts("NVIDIA H200", "580.65.06", "13.0", "13.0", 132, "9.0", "release 13.0"),
                       4000.0, rows, torch_rows, ("no PyTorch rows for x",), "abc123", "abc123",
                       "2026-11-23T00:00:00+00:00", BenchOptions(command="sirius bench --run DIR"))


def test_the_table_shows_each_row_and_explains_wrong_and_error_rows():
    text = render_table(recorded_result())
    assert "GPU: NVIDIA H200 (driver 580.65.06, CUDA runtime 13.0)" in text and "4000 GB/s" in text
    header = next(line for line in text.splitlines() if line.startswith("program"))
    assert "opt direct vs orig graph" in header and "of floor" in header
    qkv = next(line for line in text.splitlines() if line.startswith("bert_qkv"))
    assert qkv.split()[:2] == ["bert_qkv", "9->1"]
    assert "3.00x" in qkv and "2.40x" in qkv and "2.00x" in qkv and "equal" in qkv and "4%" in qkv
    softmax = next(line for line in text.splitlines() if line.startswith("softmax "))
    assert "WRONG" in softmax and not re.search(r"\d\.\d\dx", softmax)  # no speedup in the row
    assert "softmax: WRONG, no speedup claimed: printed output differs at line 2" in text
    assert "gather: ERROR: the original program exits with status 1" in text
    assert "PyTorch 2.9 nn.LSTM" in text and "lstm (PyTorch): compile failed" in text
    assert "note: no PyTorch rows for x" in text


def test_the_json_has_the_machine_the_commit_and_every_row():
    data = result_json(recorded_result())
    assert (data["gpu"], data["driver"], data["cuda_runtime"], data["commit"], data["command"]) == (
        "NVIDIA H200", "580.65.06", "13.0", "abc123", "sirius bench --run DIR")
    assert data["date"].startswith("2026-11-23")
    qkv, softmax, gather = data["rows"]
    assert qkv["speedup_direct_vs_original_graph"] == 2.0 and qkv["floor_fraction"] == 0.04
    assert qkv["original_graph_us"] == 60.0 and qkv["optimized_direct_us"] == 30.0
    assert softmax["result"] == "WRONG" and softmax["speedup_direct"] is None
    assert gather["result"] == "ERROR" and gather["error"]
    assert data["torch_rows"][0]["graph_us"] == 900.0 and data["torch_rows"][0]["compile_us"] is None
    json.dumps(data)  # plain JSON, no paths or dataclasses left
    assert recorded_result().exit_status == 2  # an ERROR row outranks a WRONG one


def test_the_plot_is_written_or_skipped_with_a_note(tmp_path, monkeypatch):
    path = tmp_path / "bench.png"
    note = write_plot(recorded_result(), path)
    if note is None:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert "matplotlib is not importable" in write_plot(recorded_result(), tmp_path / "none.png")
    assert not (tmp_path / "none.png").exists()


# ------------------------------------------------------------------ correctness from dump files


def dump_record(seq: int, data: bytes, element_code: int = 1) -> bytes:
    """One record as sirius_gpu_dump.h writes it (sirius/backend/compare.py)."""
    def text(s: str) -> bytes:
        return struct.pack("<I", len(s)) + s.encode()

    return (b"SRD1" + struct.pack("<III", seq, element_code, 42) + text("h_out, d_out, 16, cudaMemcpyDeviceToHost")
            + text("p.cu") + text("cudaMemcpy") + struct.pack("<Q", len(data)) + data)


def test_dump_files_give_the_verdict(tmp_path):
    a, b, c = tmp_path / "a.dump", tmp_path / "b.dump", tmp_path / "c.dump"
    a.write_bytes(dump_record(0, struct.pack("<4f", 1, 2, 3, 4)))
    b.write_bytes(dump_record(0, struct.pack("<4f", 1, 2, 3, 4)))
    c.write_bytes(dump_record(0, struct.pack("<4f", 1, 2, 3, 4.001)))
    same = dict(stdout_original="sum 10\n", stdout_optimized="sum 10\n", status_original=0, status_optimized=0)
    assert judge_dumps(a, b, rtol=0.0, atol=0.0, **same) == Verdict(True, "1 buffer bit-exact", 0.0)
    wrong = judge_dumps(a, c, rtol=0.0, atol=0.0, **same)
    assert not wrong.equal and "d_out: 1 of 4 elements differ" in wrong.detail
    assert judge_dumps(a, c, rtol=1e-3, atol=0.0, **same).equal  # within the tolerance
    assert "exit status 0 vs 1" in judge_dumps(a, b, rtol=0.0, atol=0.0, **{**same, "status_optimized": 1}).detail
    row = build_row(program("p"), ORIGINAL, OPTIMIZED, wrong, 4000.0)
    assert row.result == "WRONG" and row.speedup_graph is None


def test_a_harness_report_becomes_a_timing(tmp_path):
    harness = pytest.importorskip("sirius.backend.harness")
    report = {"harness": 1, "device": {"name": "NVIDIA H200", "sm_count": 132, "driver": 13000, "runtime": 13000,
                                       "cc": "9.0"},
              "reps": 20, "warmup": 3,
              "segments": [{"index": 0, "ended_by": "cudaMemcpy", "launches": 9, "streams": 1, "kernels": {"k": 9},
                            "replayed": True, "reason": None,
                            "direct_us": {"median": 90.0, "min": 89.0, "samples": [90.0] * 20},
                            "graph_us": {"median": 60.0, "min": 59.0, "samples": [60.0] * 20}},
                           {"index": 1, "ended_by": "exit", "launches": 1, "streams": 1, "kernels": {"printer": 1},
                            "replayed": False, "reason": "graph: capture failed", "direct_us": None,
                            "graph_us": None}],
              "total": {"launches": 10, "direct_us": 90.0, "graph_us": 60.0}}
    path = tmp_path / "timings.json"
    path.write_text(json.dumps(report))
    run = harness.read_timings(path)
    timing = gpu_bench.timing_of(run)
    assert (timing.direct_us, timing.graph_us, timing.launches) == (90.0, 60.0, 10)
    assert timing.incomplete == "1 launch sequence(s) not replayed, e.g. graph: capture failed"
    assert build_row(program("p"), timing, OPTIMIZED, EQUAL, 4000.0).speedup_graph is None  # sums miss a sequence
    facts = gpu_bench._machine_facts(run.device, "/bin/true")
    assert (facts.gpu, facts.cuda_runtime, facts.cuda_driver_api, facts.compute_capability) == (
        "NVIDIA H200", "13.0", "13.0", "9.0")


# ------------------------------------------------------------------ the GPU half stays light


def test_the_gpu_half_imports_without_islpy_llvmlite_or_libclang():
    code = ("import sys; sys.modules['islpy'] = None; sys.modules['llvmlite'] = None; sys.modules['clang'] = None; "
            "import sirius.tuning.gpu_bench, sirius.tuning.torch_baselines; "
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('islpy', 'llvmlite', 'clang', 'networkx', "
            "'rich', 'torch', 'matplotlib') and sys.modules[m] is not None); print(heavy)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_the_gpu_half_runs_as_a_module_and_refuses_without_a_gpu(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"version": 1, "programs": []}))
    proc = subprocess.run([sys.executable, "-m", "sirius.tuning.gpu_bench", str(tmp_path)], capture_output=True,
                          text=True, cwd=ROOT, timeout=60,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/nonexistent"})  # no nvidia-smi on this PATH
    assert proc.returncode == 2
    assert "needs a CUDA GPU" in proc.stderr


def test_every_binary_is_built_once_and_a_failed_build_belongs_to_its_row(tmp_path):
    """Three tuning rows share the original, two candidates are one file: 2 builds (judged
    and timed) per distinct source; the build of a broken source is that row's error."""
    log = tmp_path / "nvcc.log"
    nvcc = tmp_path / "nvcc"
    nvcc.write_text("#!/bin/sh\n"
                    f"echo \"$@\" >> {log}\n"
                    "for last; do :; done\n"
                    "case \"$*\" in *broken*) echo 'broken.cu(1): error: expected a ;' >&2; exit 1;; esac\n"
                    "while [ \"$1\" != -o ]; do shift; done; touch \"$2\"\n")
    nvcc.chmod(0o755)
    sources = {name: tmp_path / f"{name}.cu" for name in ("original", "fused", "broken")}
    for path in sources.values():
        path.write_text("int main() { return 0; }\n")
    rows = [BenchProgram(name, "prog.cu", sources["original"], sources[file])
            for name, file in (("original", "original"), ("a", "fused"), ("b", "fused"), ("c", "broken"))]
    manifest = gpu_bench.Manifest(tmp_path, "sm_90", "c++17", None, tuple(rows))
    built = gpu_bench.build_all(rows, manifest, str(nvcc), tmp_path, jobs=2)
    assert len(built) == 6 and len(log.read_text().splitlines()) == 6
    judged = gpu_bench.requests_of(rows[1])["optimized", "judge"]
    assert built[judged].is_file() and judged.command(str(nvcc), manifest, Path("x"))[1:5] == [
        "-O2", "-std=c++17", "-arch=sm_90", "-include"]
    timed = gpu_bench.requests_of(rows[3])["optimized", "time"]
    assert isinstance(built[timed], SiriusError) and "expected a ;" in str(built[timed])
    assert "-cudart shared" in " ".join(timed.command("nvcc", manifest, Path("x")))
    # --verify-only builds what the judge runs and nothing for timing
    folder = tmp_path / "judge_only"
    folder.mkdir()
    log.write_text("")
    judged_only = gpu_bench.build_all(rows, manifest, str(nvcc), folder, jobs=2, purposes=("judge",))
    assert {r.purpose for r in judged_only} == {"judge"} and len(log.read_text().splitlines()) == 3
    parser = argparse.ArgumentParser()
    gpu_bench.add_run_options(parser)
    options = gpu_bench.options_from_args(parser.parse_args(["--verify-only"]), "cmd")
    assert options.verify_only and not options.torch


def test_a_build_cache_builds_the_same_text_once_across_runs(tmp_path):
    """Two prepared folders copy one original (and one of them a fused program): with a build
    cache the second run builds only what the first did not, and a source whose text changed
    is built again."""
    log = tmp_path / "nvcc.log"
    nvcc = tmp_path / "nvcc"
    nvcc.write_text("#!/bin/sh\n"
                    f"echo \"$@\" >> {log}\n"
                    "while [ \"$1\" != -o ]; do shift; done; echo built > \"$2\"\n")
    nvcc.chmod(0o755)
    cache = tmp_path / "cache"
    builds = []
    for mode, fused_text in (("default", "int main() { return 1; }\n"), ("cooperative", "int main() { return 2; }\n")):
        folder = tmp_path / mode
        folder.mkdir()
        (folder / "p.orig.cu").write_text("int main() { return 0; }\n")
        (folder / "p.opt.cu").write_text(fused_text)
        rows = [BenchProgram("p", "p.cu", folder / "p.orig.cu", folder / "p.opt.cu")]
        manifest = gpu_bench.Manifest(folder, "sm_90", "c++17", None, tuple(rows))
        before = len(log.read_text().splitlines()) if log.exists() else 0
        built = gpu_bench.build_all(rows, manifest, str(nvcc), folder, jobs=2, cache=cache)
        builds.append(len(log.read_text().splitlines()) - before)
        assert all(p.read_text() == "built\n" for p in built.values())
    assert builds == [4, 2]  # the original, judged and timed, came from the cache the second time
    assert len(list(cache.iterdir())) == 6


def test_results_that_differ_only_by_contraction_are_judged_again_with_fmad_false(tmp_path):
    """A fused kernel may let nvcc contract ``b * f + c * q`` into another fma than the
    original's: bit-exact with -fmad=false, the row is FMA (times stand), not WRONG; a
    difference that stays with -fmad=false is WRONG. Both programs are compiled under the
    original's file name, so that __FILE__ reads the same."""
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    (dumps / "plain.dump").write_bytes(dump_record(0, struct.pack("<2f", 1.0, 2.0)))
    (dumps / "other.dump").write_bytes(dump_record(0, struct.pack("<2f", 1.0, 2.5)))
    names = tmp_path / "names.log"
    nvcc = tmp_path / "nvcc"
    nvcc.write_text("#!/bin/sh\n"
                    "strict=; case \"$*\" in *-fmad=false*) strict=1;; esac\n"
                    "while [ \"$1\" != -o ]; do src=$1; shift; done\n"
                    f"head -n 1 \"$src\" >> {names}\n"
                    "kind=plain\n"
                    "grep -q CONTRACTS \"$src\" && [ -z \"$strict\" ] && kind=other\n"
                    "grep -q DIFFERS \"$src\" && kind=other\n"
                    f"printf '#!/bin/sh\\ncp {dumps}/%s.dump \"$SIRIUS_DUMP\"\\n' $kind > \"$2\"; chmod +x \"$2\"\n")
    nvcc.chmod(0o755)
    results = {}
    for case in ("CONTRACTS", "DIFFERS"):
        folder = tmp_path / case
        folder.mkdir()
        (folder / "p.orig.cu").write_text("int main() {}\n")
        (folder / "p.opt.cu").write_text(f"// {case}\nint main() {{}}\n")
        program = BenchProgram("p", "src/p.cu", folder / "p.orig.cu", folder / "p.opt.cu")
        manifest = gpu_bench.Manifest(folder, "sm_90", "c++17", None, (program,))
        built = gpu_bench.build_all([program], manifest, str(nvcc), folder, jobs=1)
        verdict = gpu_bench._judge(program, built, BenchOptions(), str(nvcc), manifest, folder)
        results[case] = gpu_bench.build_row(program, ProgramTiming(10.0, 5.0), ProgramTiming(5.0, 2.5), verdict, None)
    fma, wrong = results["CONTRACTS"], results["DIFFERS"]
    assert fma.result == "FMA" and "bit-exact with -fmad=false" in fma.verdict.detail and fma.speedup_graph == 2.0
    assert wrong.result == "WRONG" and wrong.speedup_graph is None
    assert set(names.read_text().splitlines()) == {'#line 1 "p.cu"'}
    facts = MachineFacts("GPU")
    assert BenchResult(facts, None, (fma,)).exit_status == 0 and BenchResult(facts, None, (wrong,)).exit_status == 1
    assert "p: FMA, the times stand" in render_table(BenchResult(facts, None, (fma,)))
