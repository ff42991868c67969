"""Hazard probes: small CUDA programs in tests/probes/, one per pattern that can make a
fusion wrong (an ordering point between two launches, a helper with hidden effects, symbols,
barriers behind an early exit, shared memory in a helper, a wavefront whose anti-diagonal is
not independent, ...). Each is optimized once; the optimized program must verify equal to
the original on the CPU backend, and each pattern's own expectation (written at the top of
each .cu file and in PROBES below) must hold. Launches left apart must be explained by a
refusal."""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest

from sirius.analysis.frontend import CompileJob
from sirius.core.config import CompileFlags, resolve_toolchain
from sirius.pipeline import OptimizeState, pairs_without_reason, report, run_pipeline

pytestmark = pytest.mark.toolchain

ROOT = Path(__file__).resolve().parents[1]
PROBES_DIR = ROOT / "tests" / "probes"
SIRIUS = str(Path(sys.executable).parent / "sirius")


@dataclass(frozen=True)
class Probe:
    kernels: tuple[str, str]            # the two launches the hazard sits between, in program order
    apart: bool = False                 # they must end up in different groups
    reason: tuple[str, ...] = ()        # each text in the reason of a refusal naming one of the two
    bodies: tuple[str, ...] = ()        # if fused: each body line appears in the generated code too
    barrier: bool = False               # if fused into one lane: at least one barrier inserted
    nvcc: bool = False                  # the optimized program compiles with nvcc
    fits: bool = False                  # if fused: the promise check ran (ptxas figures, or none needed), no violation
    emits: tuple[str, ...] = ()         # if fused: each text appears in the optimized program


PROBES: dict[str, Probe] = {
    "memcpy2d_between.cu": Probe(("scale", "square"), apart=True, reason=("cudaMemcpy2D",)),
    "host_helper_copy.cu": Probe(("affine", "mul"), apart=True, reason=("refresh",)),
    "host_helper_launch.cu": Probe(("affine", "mul"), apart=True, reason=("reset_input",)),
    "overloads.cu": Probe(("op", "op"), bodies=("a[i] = a[i] * (float)k + 1.0f;", "a[i] = a[i] * s - 2.0f;")),
    "symbol_globals.cu": Probe(("scale_a", "scale_b"), apart=True, reason=("cudaMemcpyToSymbol",)),
    "device_pointer_globals.cu": Probe(("update", "shift"), apart=True),
    "device_array_only.cu": Probe(("produce", "reverse"), apart=True),
    "syncthreads_count_exit.cu": Probe(("mark", "smooth"), apart=True, reason=("returns early",)),
    "shared_helper.cu": Probe(("center", "energy"), barrier=True),
    "index_helper.cu": Probe(("scale_a", "square_b")),
    "wavefront_same_diagonal.cu": Probe(("mix", "update")),
    "macro_launch.cu": Probe(("scale", "shift"), nvcc=True, apart=True,
                             reason=("launch is written through the macro LAUNCH1D",)),
    "host_read_between.cu": Probe(("affine", "refine"), apart=True, reason=("cudaMemcpy",)),
    "memset_between.cu": Probe(("blend", "accumulate"), apart=True, reason=("cudaMemset",)),
    "d2d_copy_between.cu": Probe(("affine", "mul"), apart=True, reason=("cudaMemcpy",)),
    "shared_56k.cu": Probe(("tile_shift", "window_flip"), nvcc=True, fits=True,
                           emits=("cudaFuncAttributeMaxDynamicSharedMemorySize, 16384)",)),
    "reindexed_after_barrier.cu": Probe(("tile", "spread"), barrier=True),
    "launch_bounds_1024.cu": Probe(("spread", "offset"), nvcc=True, fits=True,
                                   emits=("__launch_bounds__(1024) sirius_fused_",)),
    "managed_variable_fused.cu": Probe(("square", "shift"), nvcc=True,
                                       bodies=("acc[i] = acc[i] * acc[i] - 1.0f;", "acc[i] = acc[i] + by;")),
    "managed_variable_sync.cu": Probe(("count", "normalize"), apart=True,
                                      reason=("cudaDeviceSynchronize", "host read of __managed__ bins",
                                              "__managed__ variable bins")),
    "exit_with_atexit_handler.cu": Probe(("scale", "shift"), apart=True, reason=("atexit(report_partial) at line 35",)),
    "throw_caught_in_main.cu": Probe(("blend", "square"), apart=True, reason=("try at line 57",)),
}


def test_every_probe_is_listed():
    assert sorted(p.name for p in PROBES_DIR.glob("*.cu")) == sorted(PROBES)


@functools.lru_cache(maxsize=None)
def _optimize(name: str) -> tuple[OptimizeState | None, str]:
    job = CompileJob(PROBES_DIR / name, CompileFlags(), resolve_toolchain())
    try:
        return run_pipeline(OptimizeState(job)), ""
    except Exception:  # reported by each test that needs the result, computed once
        return None, traceback.format_exc()


def optimized(name: str) -> OptimizeState:
    state, error = _optimize(name)
    if state is None:
        pytest.fail(f"optimizing {name} raised:\n{error}")
    return state


@functools.lru_cache(maxsize=None)
def probe_report(name: str) -> dict:
    return report(optimized(name))


def launch_order(name: str) -> list[tuple[int, str, int]]:
    """(statement index, kernel, line) of every launch, in program order."""
    return sorted((i.statement.index, i.kernel.name, i.statement.line) for i in optimized(name).model.launches)


def group_of(rep: dict) -> dict[int, object]:
    """launch index -> (group id, lane number); launches in no group are their own group."""
    return {m["launch"]: (g["id"], lane_no) for g in rep["groups"]
            for lane_no, lane in enumerate(g["lanes"]) for m in lane}


def the_pair(name: str) -> tuple[int, int]:
    """The launches of the probe's two kernels: the first launch of the first kernel and the
    first launch of the second after it."""
    first, second = PROBES[name].kernels
    order = launch_order(name)
    a = next(i for i, k, _ in order if k == first)
    b = next(i for i, k, _ in order if k == second and i > a)
    return a, b


def summary(rep: dict) -> str:
    groups = ["{}: {}".format(g["arrangement"], " | ".join(" -> ".join(m["kernel"] for m in lane)
                                                             for lane in g["lanes"])) for g in rep["groups"]]
    refused = ["{}: {}".format(", ".join(f"{m['kernel']}#{m['launch']}" for m in r["launches"]), r["reason"])
               for r in rep["refused"]]
    return f"groups: {groups}\nrefused: {refused}"


@functools.lru_cache(maxsize=None)
def _verify(name: str, text: str) -> tuple[int, str]:
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / name
        out.write_text(text)
        proc = subprocess.run([SIRIUS, "verify", str(PROBES_DIR / name), str(out), "--backend", "cpu"],
                              capture_output=True, text=True, timeout=600)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("name", sorted(PROBES))
def test_probe_verifies_on_cpu_backend(name):
    state = optimized(name)
    rc, log = _verify(name, state.output)
    assert rc == 0, f"{name} optimized differs from the original:\n{log}\n{summary(probe_report(name))}"


@pytest.mark.parametrize("name", sorted(PROBES))
def test_probe_expectation(name, tmp_path):
    probe, rep, state = PROBES[name], probe_report(name), optimized(name)
    a, b = the_pair(name)
    groups = group_of(rep)
    same_group = a in groups and b in groups and groups[a][0] == groups[b][0]
    same_lane = same_group and groups[a] == groups[b]
    if probe.apart:
        assert not same_group, f"{probe.kernels} fused\n{summary(rep)}"
    if probe.reason:
        reasons = [r["reason"] for r in rep["refused"] if {m["launch"] for m in r["launches"]} & {a, b}]
        for text in probe.reason:
            assert any(text in r for r in reasons), f"no refusal of {probe.kernels} mentions {text!r}\n{summary(rep)}"
    if probe.bodies and same_group:
        for body in probe.bodies:
            assert state.output.count(body) >= 2, f"fused, but no fragment carries {body!r}\n{summary(rep)}"
    for text in probe.emits if same_group else ():
        assert text in state.output, f"fused, but the program lacks {text!r}\n{summary(rep)}"
    if probe.fits and same_group:
        if shutil.which("nvcc") is None:
            pytest.skip("nvcc not installed")
        assert state.check is not None and (state.check.ptxas or state.check.bounded) and not state.check.violations
        assert not state.check_findings
    if probe.barrier and same_lane:
        (group,) = [g for g in rep["groups"] if g["id"] == groups[a][0]]
        assert group["barriers_inserted"] >= 1, f"one lane, no barrier between the helper's calls\n{summary(rep)}"
    if probe.nvcc:
        if shutil.which("nvcc") is None:
            pytest.skip("nvcc not installed")
        out = tmp_path / name
        out.write_text(state.output)
        nv = subprocess.run(["nvcc", "-arch=sm_90", "-c", str(out), "-o", str(tmp_path / "o.o")],
                            capture_output=True, text=True)
        assert nv.returncode == 0, nv.stderr


@pytest.mark.parametrize("name", sorted(PROBES))
def test_launches_left_apart_have_a_refusal(name):
    """Every two launches consecutive in program order that end up apart are explained by a
    refusal naming both sides (or refusing one of them as a fragment)."""
    assert not pairs_without_reason(optimized(name)), summary(probe_report(name))
