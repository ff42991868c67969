"""Fusion policies (fusion/policies.py): a policy chooses among the merges the legality
checks proved, and nothing else. A policy written in this file is used through
``sirius optimize --policy FILE:Class``; every shipped policy optimizes each corpus
program into one that verifies on the CPU backend, with a reason for every two launches
left apart; the default policy schedules as before; a bad ``--policy`` is bad input."""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from sirius.analysis.frontend import CompileJob
from sirius.cli import main as sirius_main
from sirius.commands import verify
from sirius.core.config import CompileFlags, resolve_toolchain
from sirius.core.errors import SiriusError
from sirius.fusion.policies import (SHIPPED, FusionPolicy, Greedy, Merge, MergeKind, Patterns, accepts, load_policy,
                                    name_words)
from sirius.fusion.schedule import RefusalKind
from sirius.pipeline import OptimizeState, pairs_without_reason, rearrange, report, run_pipeline

ROOT = Path(__file__).resolve().parents[2]
SIRIUS = str(Path(sys.executable).parent / "sirius")
CORPUS = sorted(p.name for p in (ROOT / "cuda_inputs").glob("*.cu"))
SMALL = {"softmax.cu": ("ROWS=16", "COLS=300"), "lstm.cu": ("STEPS=4", "CELLS=3", "HIDDEN=64"),
         "bert_qkv.cu": ("SEQ=32", "HIDDEN=64", "HEADS=2"), "storage_reuse.cu": ("ROWS=8",)}

SCALE_CHAIN = r"""
#include <cstdio>
#include <cuda_runtime.h>
#define N 4096

__global__ void scale_by_two(const float* x, float* a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) a[i] = 2.0f * x[i];
}

__global__ void scale_by_three(const float* a, float* b) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) b[i] = 3.0f * a[i];
}

__global__ void shift(const float* b, float* c) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) c[i] = b[i] - 1.0f;
}

int main() {
  static float h[N];
  for (int i = 0; i < N; ++i) h[i] = (float)(i % 17) - 8.0f;
  float *x, *a, *b, *c;
  cudaMalloc(&x, sizeof h); cudaMalloc(&a, sizeof h); cudaMalloc(&b, sizeof h); cudaMalloc(&c, sizeof h);
  cudaMemcpy(x, h, sizeof h, cudaMemcpyHostToDevice);
  scale_by_two<<<N / 256, 256>>>(x, a);
  scale_by_three<<<N / 256, 256>>>(a, b);
  shift<<<N / 256, 256>>>(b, c);
  cudaMemcpy(h, c, sizeof h, cudaMemcpyDeviceToHost);
  double sum = 0;
  for (int i = 0; i < N; ++i) sum += h[i];
  printf("sum %.1f\n", sum);
  return 0;
}
"""


class OnlyScale(FusionPolicy):
    """A user's policy, as short as one can be: only kernels named *scale* fuse."""

    name = "only-scale"
    summary = "only kernels whose name contains 'scale'"

    def accept(self, merge: Merge) -> bool:
        return all("scale" in kernel for kernel in merge.kernels)


class NoWaves(Greedy):
    """Greedy, but no host loop nest becomes a wavefront."""

    name = "no-waves"

    def accept(self, merge: Merge) -> bool:
        return merge.kind != MergeKind.WAVEFRONT


class Undecided(FusionPolicy):
    name = "undecided"

    def accept(self, merge: Merge):
        return None


def verified(original: Path, optimized: Path, defines=()) -> tuple[int, str]:
    """``sirius verify`` in this process (CPU backend): its exit status and what it printed."""
    parser = argparse.ArgumentParser()
    verify.add_arguments(parser)
    args = parser.parse_args([str(original), str(optimized), *[f"-D{d}" for d in defines]])
    args.program_args = []
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status = verify.execute(args)
    return status, printed.getvalue()


@functools.lru_cache(maxsize=None)
def corpus_states(name: str) -> dict[str, OptimizeState]:
    """The program optimized under every shipped policy (the analysis once)."""
    job = CompileJob(ROOT / "cuda_inputs" / name, CompileFlags(defines=SMALL.get(name, ())), resolve_toolchain())
    greedy = run_pipeline(OptimizeState(job))
    return {"greedy": greedy, **{n: rearrange(greedy, "auto", policy=cls()) for n, cls in SHIPPED.items()
                                 if n != "greedy"}}


# ------------------------------------------------------------------ pure Python

def test_shipped_policies_are_greedy_none_horizontal_patterns():
    assert list(SHIPPED) == ["greedy", "none", "horizontal", "patterns"]
    assert all(cls().summary for cls in SHIPPED.values())


@pytest.mark.parametrize("kernel, words", [
    ("fused_conv2d1_add_relu_kernel", ("fused", "conv2d", "add", "relu", "kernel")),
    ("gemmTiled", ("gemm", "tiled")),
    ("bias_add", ("bias", "add")),
])
def test_name_words_drop_variant_numbers_and_split_camel_case(kernel, words):
    assert name_words(kernel) == words


@pytest.mark.parametrize("kernel, producer, epilogue", [
    ("gemm_tiled", True, False), ("fused_matmul_add_kernel", True, False), ("conv2d3_kernel", True, False),
    ("bias_add", False, True), ("relu_kernel", False, True), ("fused_add_relu_kernel", False, True),
    ("fused_conv2d_add_relu_minimum_kernel", True, False), ("reshape_heads", False, False),
    ("fused_tir_sigmoid_multiply_kernel", False, False), ("softmax_kernel", False, False),
])
def test_patterns_know_producers_and_epilogues_by_the_words_of_names(kernel, producer, epilogue):
    assert (Patterns().is_producer(kernel), Patterns().is_epilogue(kernel)) == (producer, epilogue)


def test_an_answer_that_is_not_a_bool_is_the_policys_error():
    merge = Merge(MergeKind.VERTICAL, ((),), (), True)
    with pytest.raises(SiriusError, match="must return True or False"):
        accepts(Undecided(), merge)


@pytest.mark.parametrize("spec, message", [
    ("fastest", "unknown policy; the shipped policies are greedy, none, horizontal, patterns"),
    ("no/such/file.py:Policy", "no such file"),
    ("tests/fusion/test_policies.py:Missing", "has no Missing"),
    ("json:dumps", "not a fusion policy"),
    ("no_such_module_here:Policy", "cannot import"),
])
def test_a_bad_policy_spec_is_bad_input(spec, message, monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(SiriusError, match=message) as err:
        load_policy(spec)
    assert err.value.exit_code == 2


def test_a_policy_loads_by_module_and_by_file(monkeypatch):
    monkeypatch.chdir(ROOT)
    assert load_policy("patterns").name == "patterns"
    assert load_policy("tests.fusion.test_policies:OnlyScale").name == "only-scale"
    assert load_policy(f"{__file__}:OnlyScale").name == "only-scale"


# ------------------------------------------------------------------ toolchain

@pytest.mark.toolchain
def test_bad_policy_on_the_command_line_exits_2(tmp_path, capsys):
    program = ROOT / "cuda_inputs" / "independent_pair.cu"
    status = sirius_main(["optimize", str(program), "-o", str(tmp_path / "out.cu"), "--policy", "fastest"])
    assert status == 2
    assert "greedy, none, horizontal, patterns" in capsys.readouterr().err
    assert not (tmp_path / "out.cu").exists()


@pytest.mark.toolchain
def test_a_policy_defined_in_this_file_is_used_through_policy(tmp_path):
    """Only the two scale kernels fuse; the shift stays apart, with the policy as the reason,
    and the program computes what the original does."""
    program = tmp_path / "scale_chain.cu"
    program.write_text(SCALE_CHAIN)
    out, rep_file = tmp_path / "out.cu", tmp_path / "report.json"
    proc = subprocess.run([SIRIUS, "optimize", str(program), "-o", str(out), "--report", str(rep_file),
                           "--policy", f"{Path(__file__).relative_to(ROOT)}:OnlyScale"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "(arrangement auto, policy only-scale)" in proc.stdout
    rep = json.loads(rep_file.read_text())
    assert rep["policy"] == "only-scale"
    assert (rep["launches_before"], rep["launches_after"]) == (3, 2)
    assert [[m["kernel"] for m in lane] for g in rep["groups"] for lane in g["lanes"]] == [
        ["scale_by_two", "scale_by_three"]]
    [refusal] = [r for r in rep["refused"] if "shift" in [m["kernel"] for m in r["launches"]]]
    assert refusal["reason"].startswith("the fusion policy 'only-scale' declines this legal vertical fusion")
    assert rep["apart_without_reason"] == []
    # greedy makes all three one kernel: the policy, not legality, kept the shift apart
    greedy = subprocess.run([SIRIUS, "optimize", str(program), "-o", str(tmp_path / "greedy.cu")],
                            capture_output=True, text=True)
    assert "launches per run: 3 -> 1" in greedy.stdout
    status, said = verified(program, out)
    assert status == 0, said


@pytest.mark.toolchain
def test_a_policy_can_decline_the_wavefront():
    """lstm.cu: greedy makes each cell one lane and the cells of an anti-diagonal one launch
    (S+C-1 launches); without the wavefront each cell is a launch (S*C), and the refusal names
    the policy."""
    greedy = corpus_states("lstm.cu")["greedy"]
    state = rearrange(greedy, "auto", policy=NoWaves())
    assert (report(greedy)["launches_after"], report(state)["launches_after"]) == (4 + 3 - 1, 4 * 3)
    [declined] = [r for r in state.schedule.refusals if r.kind is RefusalKind.POLICY]
    assert declined.reason.startswith("the fusion policy 'no-waves' declines this legal wavefront fusion")
    assert pairs_without_reason(state) == []


@pytest.mark.toolchain
def test_refusals_carry_their_kind():
    """A reason is data: the kind says what kept launches apart, the text says it to people."""
    kinds = {r.kind for r in corpus_states("dependent_pair.cu")["greedy"].schedule.refusals}
    assert RefusalKind.WIDE_DEPENDENCE in kinds
    assert not RefusalKind.WIDE_DEPENDENCE.legal
    declined = [r for r in corpus_states("bert_qkv.cu")["none"].schedule.refusals if r.kind is RefusalKind.POLICY]
    assert declined and all(r.kind.legal and "'none' declines" in r.reason for r in declined)


@pytest.mark.toolchain
def test_the_shipped_policies_on_bert_qkv():
    """Greedy: one hybrid kernel; horizontal: the three GEMMs, biases and reshapes side by
    side; patterns: GEMM + bias in one lane, three times, reshapes apart; none: as written."""
    lanes = {name: [[m["kernel"] for m in lane] for g in report(st)["groups"] for lane in g["lanes"]]
             for name, st in corpus_states("bert_qkv.cu").items()}
    assert lanes["greedy"] == [["gemm_tiled", "bias_add", "reshape_heads"]] * 3
    assert lanes["horizontal"] == [["gemm_tiled"]] * 3 + [["bias_add"]] * 3 + [["reshape_heads"]] * 3
    assert lanes["patterns"] == [["gemm_tiled", "bias_add"]] * 3
    assert lanes["none"] == []
    assert corpus_states("bert_qkv.cu")["none"].output == (ROOT / "cuda_inputs" / "bert_qkv.cu").read_text()


# the greedy schedule of elementwise_chain.cu as emitted before policies were split from
# legality (sha256 of the program text); a change to code generation changes it on purpose
# (last: the counters of the path each fused region takes)
ELEMENTWISE_CHAIN_GREEDY = "446a49f99ab542fc1c54e32a76a9bb11c19294f4833cf5ecba7149004eeb4d44"


@pytest.mark.toolchain
def test_the_default_policy_emits_what_greedy_fusion_always_did():
    default = corpus_states("elementwise_chain.cu")["greedy"]
    assert default.policy.name == "greedy"
    assert hashlib.sha256(default.output.encode()).hexdigest() == ELEMENTWISE_CHAIN_GREEDY
    explicit = rearrange(default, "auto", policy=load_policy("greedy"))
    assert explicit.output == default.output


@pytest.mark.toolchain
@pytest.mark.parametrize("name", CORPUS)
def test_every_shipped_policy_verifies_on_the_corpus(name, tmp_path):
    """Each policy's program, compiled for the CPU backend, computes what the original does;
    every two launches left apart have a reason."""
    original = ROOT / "cuda_inputs" / name
    done: dict[str, str] = {}
    for policy, state in corpus_states(name).items():
        assert pairs_without_reason(state) == [], policy
        if state.output in done:
            continue
        out = tmp_path / f"{policy}_{name}"
        out.write_text(state.output)
        status, said = verified(original, out, SMALL.get(name, ()))
        assert status == 0, f"{policy}:\n{said}"
        done[state.output] = policy
