"""End to end on the corpus: optimize in every arrangement (and with the kernel passes
none, each alone and all), check the launch counts and refusals, compile the result with nvcc, and
run original and optimized programs on the CPU backend with `sirius verify` (bit-exact)."""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sirius.analysis.frontend import CompileJob
from sirius.core.config import CompileFlags, resolve_toolchain
from sirius.pipeline import OptimizeState, pairs_without_reason, pass_names, rearrange, report, run_pipeline
from tests.report_schema import assert_follows_schema

pytestmark = pytest.mark.toolchain

ROOT = Path(__file__).resolve().parents[2]
SIRIUS = str(Path(sys.executable).parent / "sirius")

# program -> (small-size defines, launches before, launches after with auto)
EXPECTED = {
    "elementwise_chain.cu": ((), 4, 1),
    "softmax.cu": (("ROWS=16", "COLS=300"), 4, 1),
    "independent_pair.cu": ((), 2, 1),
    "aliasing.cu": ((), 3, 1),
    "lstm.cu": (("STEPS=4", "CELLS=3", "HIDDEN=64"), 4 * 3 * 9, 4 + 3 - 1),
    "bert_qkv.cu": (("SEQ=32", "HIDDEN=64", "HEADS=2"), 9, 1),
    "dependent_pair.cu": ((), 2, 2),
    "gather.cu": ((), 2, 2),
    "early_exit.cu": ((), 2, 2),
    "storage_reuse.cu": (("ROWS=8",), 4, 1),
    # sizes from argv: a host loop runs a number of times only the run knows
    "run_time_sizes.cu": ((), None, None),
}


EACH_PASS_ALONE = {"softmax.cu", "storage_reuse.cu", "bert_qkv.cu"}


@functools.lru_cache(maxsize=None)
def optimized(name: str) -> dict[str, OptimizeState]:
    defines = EXPECTED[name][0]
    job = CompileJob(ROOT / "cuda_inputs" / name, CompileFlags(defines=defines), resolve_toolchain())
    auto = run_pipeline(OptimizeState(job))
    states = {"auto": auto, "vertical": rearrange(auto, "vertical"), "horizontal": rearrange(auto, "horizontal")}
    # the passes after fusion: none, and each alone where a program gives every pass work
    # (pools, barriers, restrict, re-indexed fragments); "auto" has all of them together
    for combo in [()] + ([(n,) for n in pass_names()] if name in EACH_PASS_ALONE else []):
        states["auto, passes " + ("+".join(combo) or "none")] = rearrange(auto, "auto", passes=combo)
    return states


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_launch_counts(name):
    _, before, after = EXPECTED[name]
    rep = report(optimized(name)["auto"])
    assert rep["launches_before"] == before
    assert rep["launches_after"] == after


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("arrangement", ["auto", "vertical", "horizontal"])
def test_every_pair_left_apart_has_a_reason(name, arrangement):
    assert pairs_without_reason(optimized(name)[arrangement]) == []


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_report_follows_the_schema(name):
    """Each arrangement's and each pass selection's report, as ``--report`` writes it."""
    for state in optimized(name).values():
        assert_follows_schema(report(state))


# bert_fp16 is bert_fp32's graph in half precision; clang needs minutes on its half operators
# (the front end's compile of these six at full size is tests/test_model_corpus.py's clang check)
MODELS = sorted(p.name for p in (ROOT / "cuda_inputs" / "models").glob("*.cu") if p.name != "bert_fp16.cu")


# the two models that came out wrong on an H100 (TVM's memory plan reuses storage, so fused
# kernels saw restrict-qualified parameters into one buffer): their launches after fusion
PROMISE_MODELS = {"lstm.cu": 2000, "seq2seq.cu": 302}


@pytest.mark.parametrize("model", MODELS)
def test_every_pair_a_model_leaves_apart_has_a_reason(model):
    """At full size, as users run them: every launch the optimizer leaves apart from the one
    before it has a refusal naming one of them. And every fused launch's promises hold on
    the analysis of the emitted program, nothing unfused for it, where storage is reused."""
    job = CompileJob(ROOT / "cuda_inputs" / "models" / model, CompileFlags(), resolve_toolchain())
    state = run_pipeline(OptimizeState(job))
    assert report(state)["refused"]
    assert pairs_without_reason(state) == []
    assert_follows_schema(report(state))
    if model in PROMISE_MODELS:
        assert report(state)["launches_after"] == PROMISE_MODELS[model]
        assert state.check is not None and state.check.kernels_checked > 0
        assert state.check.violations == [] and state.check_findings == []
        assert any(p.promise == "restrict" for dropped in state.promises_dropped.values() for p in dropped)


def test_refusals_name_their_reason():
    reasons = {n: [r["reason"] for r in report(optimized(n)["auto"])["refused"]]
               for n in ("dependent_pair.cu", "gather.cu", "early_exit.cu")}
    assert any("global dependence on dy" in r for r in reasons["dependent_pair.cu"])
    assert any("global dependence on dy" in r for r in reasons["gather.cu"])
    assert any("returns early" in r and "barrier" in r for r in reasons["early_exit.cu"])


def test_lstm_cells_fuse_vertically_and_waves_share_a_launch():
    """S*C*9 launches become S+C-1: a cell's 9 launches are one vertical lane, and the
    cells of one anti-diagonal of (step, cell) run in one launch (paper figure 9)."""
    st = optimized("lstm.cu")["auto"]
    rep = report(st)
    (group,) = rep["groups"]
    assert group["arrangement"] == "vertical + wavefront"
    assert [m["kernel"] for m in group["lanes"][0]] == ["gemv"] * 8 + ["solve"]
    (wave,) = st.schedule.wavefronts.values()
    assert wave.waves == 4 + 3 - 1 and "sirius_w <= 5" in wave.wave_for
    # without the vertical lane (horizontal arrangement) no wavefront is attempted on 9 launches
    assert report(optimized("lstm.cu")["horizontal"])["launches_after"] > rep["launches_after"]


def test_bert_qkv_nine_launches_become_one_hybrid():
    """The paper's figure 1: each branch is GEMM -> bias -> reshape in one lane (the two
    element-wise kernels re-indexed onto the GEMM's threads), the three branches side by side."""
    rep = report(optimized("bert_qkv.cu")["auto"])
    (group,) = rep["groups"]
    assert group["arrangement"] == "hybrid"
    assert [[m["kernel"] for m in lane] for lane in group["lanes"]] == [["gemm_tiled", "bias_add", "reshape_heads"]] * 3
    st = optimized("bert_qkv.cu")["auto"]
    lane = st.schedule.groups[0].lanes[0]
    assert lane.reindex[0] is None and lane.reindex[1] is not None and lane.reindex[2] is not None


def test_softmax_gets_barriers_for_block_level_edges():
    rep = report(optimized("softmax.cu")["auto"])
    (group,) = rep["groups"]
    assert group["barriers_inserted"] == 2  # row max -> exp, row sum -> normalize


def _distinct_outputs(name: str) -> list[tuple[str, str]]:
    seen, out = set(), []
    for arrangement, st in optimized(name).items():
        if st.output not in seen:
            seen.add(st.output)
            out.append((arrangement, st.output))
    return out


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_arrangement_verifies_on_cpu_backend(name, tmp_path):
    defines = [f"-D{d}" for d in EXPECTED[name][0]]
    original = ROOT / "cuda_inputs" / name
    for arrangement, text in _distinct_outputs(name):
        out = tmp_path / f"{arrangement.replace(', ', '_').replace(' ', '_')}_{name}"
        out.write_text(text)
        proc = subprocess.run([SIRIUS, "verify", str(original), str(out), "--backend", "cpu", *defines],
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"{arrangement}:\n{proc.stdout}\n{proc.stderr}"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_arrangement_compiles_with_nvcc(name, tmp_path):
    """nvcc builds every emitted program (clang parsed each before it was written: the check
    stage of the pipeline)."""
    defines = [f"-D{d}" for d in EXPECTED[name][0]]
    for arrangement, text in _distinct_outputs(name):
        out = tmp_path / f"{arrangement.replace(', ', '_').replace(' ', '_')}_{name}"
        out.write_text(text)
        nv = subprocess.run(["nvcc", "-arch=sm_90", "-c", str(out), "-o", str(tmp_path / "o.o"), *defines],
                            capture_output=True, text=True)
        assert nv.returncode == 0, f"{arrangement}: {nv.stderr}"


def test_emit_candidates_writes_each_arrangement_and_a_manifest(tmp_path):
    import json
    out = tmp_path / "cands"
    proc = subprocess.run([SIRIUS, "optimize", str(ROOT / "cuda_inputs" / "independent_pair.cu"),
                           "-o", str(tmp_path / "o.cu"), "--emit-candidates", str(out), "--report",
                           str(tmp_path / "r.json")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    by = {c["arrangement"]: c for c in manifest["candidates"]}
    assert set(by) == {"auto", "vertical", "horizontal"}
    assert by["horizontal"]["launches_after"] == 1 and by["vertical"]["launches_after"] == 2
    for c in manifest["candidates"]:
        assert (out / c["file"]).is_file()
    report = json.loads((tmp_path / "r.json").read_text())
    assert {"launches_before", "launches_after", "kernels_before", "kernels_after", "groups", "refused"} <= set(report)
