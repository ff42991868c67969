"""Cooperative fusion (fusion/cooperative.py): a region's groups, joined by global
dependences, as phases of one cooperative launch with grid barriers between them; what it
refuses, with the reason (phases that synchronize blocks of other sizes, larger blocks
whose threads share data, loads through the read-only cache); the launch counted once in
the report; the program verifies on the CPU backend, which runs every block at once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sirius.analysis.frontend import CompileJob
from sirius.core.config import CompileFlags, resolve_toolchain
from sirius.pipeline import OptimizeState, report, run_pipeline
from sirius.tuning.cost_model import predict_program
from tests.fusion.cooperative_builds import assert_equal_in_three_builds
from tests.report_schema import assert_follows_schema

pytestmark = pytest.mark.toolchain

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "filecheck" / "optimize_cooperative.cu"
SIRIUS = str(Path(sys.executable).parent / "sirius")
TOTAL = "  out[t] = sums[t] + sums[(t + 1) % BLOCKS];"
TOTAL_KERNEL = "__global__ void total(const float* sums, float* out) {\n  int t = threadIdx.x;\n" + TOTAL
SYNCHRONIZING_TOTAL = "  __shared__ float s[BLOCKS];\n  s[t] = sums[t];\n  __syncthreads();\n  out[t] = s[t] + s[(t + 1) % BLOCKS];"


def optimized(path: Path, cooperative: bool = True) -> OptimizeState:
    return run_pipeline(OptimizeState(CompileJob(path, CompileFlags(), resolve_toolchain()), cooperative=cooperative))


def variant(tmp_path: Path, old: str, new: str, launch: str | None = None) -> Path:
    text = PROGRAM.read_text()
    assert old in text
    text = text.replace(old, new)
    if launch is not None:
        text = text.replace("total<<<1, BLOCKS>>>(sums, out);", launch)
    path = tmp_path / "variant.cu"
    path.write_text(text)
    return path


def test_the_two_groups_become_one_launch_with_a_grid_barrier():
    state = optimized(PROGRAM)
    rep = report(state)
    assert (rep["launches_before"], rep["launches_after"]) == (3, 1)
    [coop] = rep["cooperative"]
    assert (coop["kernel"], coop["threads"], coop["grid_barriers"]) == ("sirius_coop_0", 256, 1)
    assert [[m["kernel"] for m in phase] for phase in coop["phases"]] == [["scale", "block_sums"], ["total"]]
    assert not rep["apart_without_reason"]
    assert not any("global dependence" in r["reason"] for r in rep["refused"])  # joined after all
    assert rep["promise_check"]["kernels_checked"] == 1
    assert_follows_schema(rep)
    # without --cooperative: two launches, and the reason they stay apart
    plain = report(optimized(PROGRAM, cooperative=False))
    assert plain["launches_after"] == 2 and not plain["cooperative"]
    # the cost model sees one cooperative launch with one grid barrier
    _, predicted = predict_program(state)
    [launch] = [i for i in predicted.items if i.shape.phases]
    assert launch.count == 1 and launch.shape.grid_syncs == 1 and len(launch.shape.phases) == 2


@pytest.mark.parametrize("old, new, launch, reason", [
    (TOTAL, SYNCHRONIZING_TOTAL.replace("BLOCKS", "48"), "total<<<1, 48>>>(sums, out);",
     "total (line {line}) synchronizes blocks of 48 threads, not whole warps"),
    (TOTAL, "  out[t] = __ldg(&sums[t % BLOCKS]);", None, "total loads through the read-only data cache"),
    # the same load in a helper nvcc does not inline, and a helper whose parameter is
    # const __restrict__ (which nvcc may read through the same cache), one call deeper
    (TOTAL_KERNEL, "__device__ __noinline__ float cached(const float* p, int i) { return __ldg(&p[i]); }\n"
     + TOTAL_KERNEL.replace("sums[t] + sums", "cached(sums, t) + sums"), None,
     "total loads through the read-only data cache"),
    (TOTAL_KERNEL, "__device__ __noinline__ float pick(const float* __restrict__ p, int i) { return p[i]; }\n"
     "__device__ __noinline__ float twice(const float* p, int i) { return 2.0f * pick(p, i); }\n"
     + TOTAL_KERNEL.replace("sums[t] + sums", "twice(sums, t) + sums"), None,
     "total loads through the read-only data cache"),
    (TOTAL, "  out[t % BLOCKS] = __shfl_down_sync(0xffffffffu, sums[t % BLOCKS], 1);",
     "total<<<1, 1024>>>(sums, out);", "total (line {line}) runs in blocks of 1024 threads, more than the "
                                       "cooperative kernel's 256, and its threads share data"),
])
def test_what_cannot_be_one_cooperative_launch_stays_apart_with_the_reason(tmp_path, old, new, launch, reason):
    path = variant(tmp_path, old, new, launch)
    rep = report(optimized(path))
    line = next(k for k, text in enumerate(path.read_text().splitlines(), 1) if text.startswith("  total<<<"))
    assert not rep["cooperative"] and rep["launches_after"] == 2
    reasons = [r["reason"] for r in rep["refused"]]
    assert any(reason.format(line=line) in r for r in reasons), reasons
    assert not rep["apart_without_reason"]


def test_a_smaller_block_that_synchronizes_counts_its_own_threads_at_its_barriers(tmp_path):
    state = optimized(variant(tmp_path, TOTAL, SYNCHRONIZING_TOTAL))
    assert report(state)["launches_after"] == 1
    assert "else __barrier_sync_count(1, sirius_n);" in state.output  # the helper: barrier 1 over the first n threads
    fragment = state.output[state.output.index("void sirius_frag_total("):]
    assert "sirius_block_sync(sirius_bdim);" in fragment[:fragment.index("\n}\n")]
    scale = state.output[state.output.index("void sirius_frag_block_sums("):]
    assert "__syncthreads();" in scale[:scale.index("\n}\n")]  # the full-size phase keeps its barriers


def test_a_larger_block_whose_threads_share_nothing_runs_in_turns(tmp_path):
    path = variant(tmp_path, TOTAL, "  out[t % BLOCKS] = sums[t % BLOCKS] * 2.0f;", "total<<<1, 1024>>>(sums, out);")
    state = optimized(path)
    assert report(state)["launches_after"] == 1
    assert "for (unsigned sirius_turn = sirius_thread; sirius_turn < 1024u; sirius_turn += 256u) {" in state.output


def test_the_cooperative_kernel_runs_and_computes_what_the_original_launches_did(tmp_path):
    out, log = tmp_path / "coop.cu", tmp_path / "launches.txt"
    proc = subprocess.run([SIRIUS, "optimize", str(PROGRAM), "--cooperative", "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "one cooperative launch, 2 phases, 1 grid barriers" in proc.stdout, proc.stderr
    run = subprocess.run([SIRIUS, "run", str(out)], capture_output=True, text=True,
                         env={**os.environ, "SIRIUS_LAUNCH_LOG": str(log)})
    assert run.returncode == 0, run.stderr
    assert log.read_text().split() == ["sirius_coop_0"]  # the cooperative launch ran, not the fallback
    verify = subprocess.run([SIRIUS, "verify", str(PROGRAM), str(out)], capture_output=True, text=True)
    assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr


def test_a_phase_whose_threads_return_early_before_a_barrier_is_refused():
    # shift_add returns in the threads past the end before its __syncthreads(): in a cooperative
    # kernel they would go on to the phase loop's barrier and pair with the one they skipped
    state = optimized(ROOT / "cuda_inputs" / "early_exit.cu")
    assert not state.schedule.cooperative
    assert any("returns early (line 42) before a barrier, in some threads of a block" in r.reason
               for r in state.schedule.refusals)


def test_a_phase_whose_kernel_calls_an_index_helper_is_refused():
    # scale_a's helper gid() reads blockIdx and threadIdx: in a phase, whose blocks are virtual
    # blocks of the grid, it would read the physical ones
    state = optimized(ROOT / "tests" / "probes" / "index_helper.cu")
    assert not state.schedule.cooperative
    assert any("not one cooperative launch: scale_a calls gid" in r.reason for r in state.schedule.refusals)


POOLS = ROOT / "tests" / "fusion" / "programs" / "cooperative_phase_pools.cu"


def test_the_phases_of_a_cooperative_launch_hold_one_pool(tmp_path):
    """Three phases, each reducing through a static shared array of its own (1 KB, 2 KB,
    512 B): the cooperative kernel holds one pool as large as the largest, 2048 bytes, not
    3584 (a grid barrier stands between two phases); the same result on the CPU backend,
    also with three blocks resident (each runs many virtual blocks) and with the fallback."""
    out = tmp_path / "pools.cu"
    proc = subprocess.run([SIRIUS, "optimize", str(POOLS), "--cooperative", "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "one cooperative launch, 3 phases, 2 grid barriers" in proc.stdout, proc.stderr
    assert "the 3 phases of one cooperative launch" in proc.stdout and "3584 -> 2048 bytes" in proc.stdout
    text = out.read_text()
    assert text.count("unsigned char sirius_pool[") == 1 and "unsigned char sirius_pool[2048];" in text
    assert_equal_in_three_builds(POOLS, out, "cooperative launch")


ACC = "  __shared__ float acc[2 * THREADS];"
# declarations whose bytes the pool cannot take over: the element type or an extent named by
# the program (a -D value elsewhere changes them, and the offsets are baked in), a larger
# alignment than the pool's, the array's type named in the body, a jump past it, a lambda's
PINNED = {
    "a type the program names": (("#define THREADS 256", "#define THREADS 256\n#ifdef WIDE\ntypedef double real;\n"
                                  "#else\ntypedef float real;\n#endif"), (ACC, "  __shared__ real acc[2 * THREADS];"),
                                 "-DWIDE"),
    "a constant the program names": (("#define THREADS 256", "#define THREADS 256\n#ifndef ACC_SIZE\n#define ACC_SIZE 512\n"
                                      "#endif\nconstexpr int kAcc = ACC_SIZE;"),
                                     (ACC, "  __shared__ float acc[kAcc];"), "-DACC_SIZE=1024"),
    "a larger alignment": ((ACC, "  __shared__ alignas(512) float acc[2 * THREADS];"),),
    "its type named": ((ACC, ACC + "\n  static_assert(sizeof(decltype(acc)) == 2048, \"\");"),),
    "a lambda's array beside it": ((ACC, ACC + "\n  auto zero = [](int i) { __shared__ float scratch[32]; "
                                          "scratch[i % 32] = 0.0f; return scratch[i % 32]; };"),
                                   ("  acc[THREADS + threadIdx.x] = 0.0f;", "  acc[THREADS + threadIdx.x] = zero(threadIdx.x);")),
    "a jump past it": (("  if (threadIdx.x == 0) sum[0]", "  if (threadIdx.x != 0) goto done;\n  sum[0]"),
                       ("acc[0] + acc[THREADS];\n}", "acc[0] + acc[THREADS];\ndone:;\n}")),
}


@pytest.mark.parametrize("what", sorted(PINNED))
def test_a_shared_array_the_pool_cannot_take_over_keeps_its_own_bytes(tmp_path, what):
    """The red team's pool findings, one program each: ``total``'s array stays its own
    (the other phases are still pooled), and the cooperative launch computes what the
    original did, also when rebuilt with the -D value that changes the array."""
    *edits, rebuilt = PINNED[what] if isinstance(PINNED[what][-1], str) else (*PINNED[what], None)
    text = POOLS.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    program, out = tmp_path / "pinned.cu", tmp_path / "pinned.opt.cu"
    program.write_text(text)
    proc = subprocess.run([SIRIUS, "optimize", str(program), "--cooperative", "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "one cooperative launch, 3 phases" in proc.stdout, proc.stdout + proc.stderr
    emitted = out.read_text()
    assert "(&acc)" not in emitted and "(&buf)[256]" in emitted
    for flags in ([], [rebuilt] if rebuilt else []):
        verify = subprocess.run([SIRIUS, "verify", str(program), str(out), *flags], capture_output=True, text=True)
        assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr
