"""Promises a fused kernel keeps (fusion/promises.py) and the promise check of emitted
programs (fusion/check.py): restrict qualifiers only where the alias facts prove them,
read-only-cache loads never of data another fragment writes, launches a GPU accepts; a
planted violation is caught by the check and undone, and `sirius verify` fails on one."""

from __future__ import annotations

import dataclasses

import functools
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sirius.analysis.frontend import CompileJob
from sirius.core.config import CompileFlags, resolve_toolchain
from sirius.fusion.fragment_text import RESTRICT
from sirius.fusion.promises import PointerUse, Touch, broken_promises
from sirius.pipeline import OptimizeState, report, run_pipeline

ROOT = Path(__file__).resolve().parents[2]
SIRIUS = str(Path(sys.executable).parent / "sirius")
REUSE = ROOT / "cuda_inputs" / "storage_reuse.cu"


def _use(pointer, launch, *touches, param=True):
    return PointerUse(pointer, launch, param, tuple(Touch(*t) for t in touches))


# ------------------------------------------------------------------ the rule, on tiny facts

def test_disjoint_bytes_of_one_allocation_keep_the_promise():
    a = _use("s0_out", 0, ("buf", "{ buf[b] : 0 <= b < 64 }", "write"))
    b = _use("s1_in", 1, ("buf", "{ buf[b] : 64 <= b < 128 }", "read"))
    assert broken_promises("k", [a, b], {"s0_out", "s1_in"}) == []


def test_overlapping_bytes_with_a_write_break_both_promises():
    a = _use("s0_out", 0, ("buf", "{ buf[b] : 0 <= b < 64 }", "write"))
    b = _use("s1_in", 1, ("buf", "{ buf[b] : 60 <= b < 128 }", "read"))
    assert {p.pointer for p in broken_promises("k", [a, b], {"s0_out", "s1_in"})} == {"s0_out", "s1_in"}


def test_two_readers_of_the_same_bytes_keep_the_promise():
    a = _use("s0_w", 0, ("w", None, "read"))
    b = _use("s1_w", 1, ("w", None, "read"))
    assert broken_promises("k", [a, b], {"s0_w", "s1_w"}) == []


def test_a_pointer_of_unknown_provenance_reaches_everything():
    a = _use("s0_out", 0, ("buf", "{ buf[b] : 0 <= b < 4 }", "write"))
    loaded = _use("sirius_any", 1, (None, None, "read"), param=False)
    (p,) = broken_promises("k", [a, loaded], {"s0_out"})
    assert p.promise == "restrict" and p.pointer == "s0_out"


def test_host_loop_parameters_are_shared_unknowns_are_not():
    # the same iterator t on both sides: [4t, 4t+4) and [4t+4, 4t+8) never meet
    a = _use("s0_o", 0, ("buf", "[t] -> { buf[b] : 4t <= b < 4t + 4 }", "write"))
    b = _use("s1_i", 1, ("buf", "[t] -> { buf[b] : 4t + 4 <= b < 4t + 8 }", "read"))
    assert broken_promises("k", [a, b], {"s0_o", "s1_i"}) == []
    # two launches' own unknowns (renamed apart by pointer_uses) may take any values
    c = _use("s1_i", 1, ("buf", "[l1_n] -> { buf[b] : l1_n <= b < l1_n + 4 }", "read"))
    assert broken_promises("k", [a, c], {"s0_o"})


def test_cached_reads_of_another_fragments_writes_break_the_read_only_promise():
    w = _use("s0_y", 0, ("y", None, "write"))
    r = _use("s1_y", 1, ("y", None, "cached read"))
    assert [p.promise for p in broken_promises("k", [w, r], set())] == ["read-only cache"]
    # within one fragment it is the original kernel's own affair, unless cells of a wave share the kernel
    own = _use("s0_y2", 0, ("y", None, "cached read"))
    assert broken_promises("k", [w, own], set()) == []
    assert broken_promises("k", [w, own], set(), across_cells=True)


# ------------------------------------------------------------------ the pass, on programs

@functools.lru_cache(maxsize=None)
def optimized(path: Path, defines: tuple[str, ...] = (), **options) -> OptimizeState:
    return run_pipeline(OptimizeState(CompileJob(path, CompileFlags(defines=defines), resolve_toolchain()), **options))


def _kept(state: OptimizeState) -> set[str]:
    (fk,) = state.fused
    return {re.sub(r"^s\d+_", "", name) for name in fk.restrict}


def test_reused_storage_and_flowing_tensors_lose_restrict_read_only_inputs_keep_it():
    assert _kept(optimized(REUSE, ("ROWS=8",))) == {"x", "bias"}
    assert _kept(optimized(REUSE, ("ROWS=8", "REUSE_STORAGE=0"))) == {"x", "bias", "T_add"}


def test_fragments_promise_nothing_of_their_own():
    text = optimized(REUSE, ("ROWS=8",)).output
    fragments = re.findall(r"static __device__ __forceinline__ void sirius_frag_\w+\(\n[^)]*\)", text)
    assert len(fragments) == 4 and not any("__restrict" in f for f in fragments)


def test_read_only_cache_load_of_data_another_fragment_writes_is_not_fused(tmp_path):
    program = tmp_path / "ldg_pair.cu"
    program.write_text("""#include <cuda_runtime.h>
__global__ void twice(const float* __restrict__ x, float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = 2.0f * x[i];
}
__global__ void plus_one(const float* __restrict__ src, float* __restrict__ z) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  z[i] = __ldg(&src[i]) + 1.0f;
}
int main() {
  float *x, *y, *z, *w;
  cudaMalloc(&x, 1024 * 4); cudaMalloc(&y, 1024 * 4); cudaMalloc(&z, 1024 * 4); cudaMalloc(&w, 1024 * 4);
  cudaMemset(x, 0, 1024 * 4);
  twice<<<4, 256>>>(x, y);
  plus_one<<<4, 256>>>(y, z);  // reads what twice wrote, through the read-only cache
  plus_one<<<4, 256>>>(x, w);  // reads only what nothing writes
  float h[4];
  cudaMemcpy(h, z, 16, cudaMemcpyDeviceToHost);
  cudaMemcpy(h, w, 16, cudaMemcpyDeviceToHost);
  return 0;
}
""")
    state = optimized(program)
    rep = report(state)
    assert any("read-only data cache" in r["reason"] and "__ldg" in r["reason"] for r in rep["refused"])
    groups = [[m["kernel"] for lane in g["lanes"] for m in lane] for g in rep["groups"]]
    assert ["twice", "plus_one", "plus_one"] not in groups and state.check_findings == []


def test_a_planted_violation_is_caught_and_its_group_left_unfused(monkeypatch):
    """Code generation that kept every declared qualifier (the bug that broke the TVM LSTM on
    the GPU): the check of the emitted program finds it, and the group is left unfused."""
    import sirius.pipeline as pipeline

    def keep_every_qualifier(kernels, model):
        return [dataclasses.replace(k, params=tuple(dataclasses.replace(p, restrict=bool(RESTRICT.search(p.ctype)))
                                                    for p in k.params)) for k in kernels], {}, []

    monkeypatch.setattr(pipeline, "keep_promises", keep_every_qualifier)
    # fusion alone: host constants would make the aliasing pointers offsets from one base,
    # which no promise covers (their output is correct even with this bug; tested there)
    state = run_pipeline(OptimizeState(CompileJob(REUSE, CompileFlags(defines=("ROWS=8",)), resolve_toolchain()),
                                       passes=()))
    assert state.check_findings and {v.what for v in state.check_findings} == {"restrict"}
    assert any(v.kernel == "sirius_fused_0" and "is __restrict__ but" in v.message for v in state.check_findings)
    assert state.fused == [] and "sirius_fused_0" not in state.output
    rep = report(state)
    assert rep["launches_after"] == 4
    assert any(r["reason"].startswith("internal error caught by the promise check: sirius_fused_0: parameter")
               for r in rep["refused"])
    assert rep["promise_check"]["violations_undone"][0]["what"] == "restrict"


def test_pointers_made_offsets_from_one_base_carry_no_promise(monkeypatch):
    """Host constants define a pointer into the base's allocation as the base plus its distance,
    never restrict: a local's promise is one the check of the emitted program could not see.
    Even with every declared qualifier kept, what is left is one promise over one allocation."""
    import sirius.pipeline as pipeline

    def keep_every_qualifier(kernels, model):
        return [dataclasses.replace(k, params=tuple(dataclasses.replace(p, restrict=bool(RESTRICT.search(p.ctype)))
                                                    for p in k.params)) for k in kernels], {}, []

    monkeypatch.setattr(pipeline, "keep_promises", keep_every_qualifier)
    state = run_pipeline(OptimizeState(CompileJob(REUSE, CompileFlags(defines=("ROWS=8",)), resolve_toolchain())))
    derived = [p for k in state.kernels for p in k.params if p.base is not None]
    assert derived and all(p.restrict for p in derived)  # the planted bug asked for them
    assert all("__restrict__" not in p.definition for p in derived)
    assert state.check_findings == [] and "sirius_fused_0" in state.output


def _verify(original: Path, optimized_text: str, tmp_path: Path, *flags: str) -> subprocess.CompletedProcess:
    out = tmp_path / f"planted_{original.name}"
    out.write_text(optimized_text)
    return subprocess.run([SIRIUS, "verify", str(original), str(out), *flags], capture_output=True, text=True,
                          timeout=600)


def test_verify_fails_on_a_restrict_promise_the_aliasing_breaks(tmp_path):
    text = optimized(REUSE, ("ROWS=8",), passes=()).output  # every aliasing pointer a parameter
    planted = re.sub(r"(__global__ void __launch_bounds__\(256\) sirius_fused_0\()([^)]*)\)",
                     lambda m: m.group(1) + m.group(2).replace("float * ", "float *__restrict ") + ")", text)
    assert planted != text
    proc = _verify(REUSE, planted, tmp_path, "-DROWS=8")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "violation (restrict): sirius_fused_0: parameter" in proc.stdout
    assert "result: all equal" in proc.stdout  # the CPU backend alone cannot see it


def test_verify_fails_on_a_launch_over_the_shared_memory_limit(tmp_path):
    probe = ROOT / "tests" / "probes" / "shared_56k.cu"
    text = optimized(probe).output
    planted = re.sub(r"static const cudaError_t sirius_opt_in_\d+ = [^;]*; \(void\)sirius_opt_in_\d+; ", "", text)
    assert planted != text
    proc = _verify(probe, planted, tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "violation (shared memory): sirius_fused_0: needs 40960 bytes of static and 16384" in proc.stdout
    # the CPU runtime itself rejects the launch, as a GPU would
    assert "the optimized program failed" in proc.stdout and "a GPU rejects this launch" in proc.stdout


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed (register counts come from ptxas)")
def test_verify_fails_on_a_launch_over_the_register_file(tmp_path):
    probe = ROOT / "tests" / "probes" / "launch_bounds_1024.cu"
    text = optimized(probe).output
    planted = text.replace("__launch_bounds__(1024) sirius_fused_0", "sirius_fused_0")
    assert planted != text
    proc = _verify(probe, planted, tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert re.search(r"violation \(registers\): sirius_fused_0: \d+ registers x 1024 threads", proc.stdout)


def test_an_emitted_program_that_does_not_compile_is_never_written(monkeypatch):
    """A code generation bug that writes invalid C++ into a fused kernel: clang's rejection
    of the emitted program is caught before writing, and that group is left unfused."""
    import sirius.fusion.kernel_text as kernel_text

    real = kernel_text.signature
    monkeypatch.setattr(kernel_text, "signature", lambda *a: real(*a) + " this is not C++;")
    state = run_pipeline(OptimizeState(CompileJob(REUSE, CompileFlags(defines=("ROWS=8",)), resolve_toolchain())))
    assert [v.what for v in state.check_findings] == ["does not compile"]
    assert state.fused == [] and "this is not C++" not in state.output
    assert any("the emitted program does not compile" in r["reason"] for r in report(state)["refused"])
