"""Launch limits of the kernels --cooperative writes (fusion/cooperative.py, the waves of
fusion/cell_waves.py): a block of the new kernel holds every phase's static shared arrays
and the largest dynamic size; over 48 KB the kernel gets its own
cudaFuncSetAttribute(MaxDynamicSharedMemorySize) before the occupancy query and the launch,
both with that dynamic size (the program's opt-in for its own kernel does not carry over;
without it a GPU rejects the launch and the fallback runs unreported), and past the
architecture's limit the region stays apart with the reason."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sirius.analysis.frontend import CompileJob
from sirius.core.config import CompileFlags, resolve_toolchain
from sirius.pipeline import OptimizeState, report, run_pipeline

pytestmark = pytest.mark.toolchain

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "fusion" / "programs" / "cooperative_dynamic_shared_56k.cu"
LAYER_WAVES = ROOT / "tests" / "filecheck" / "optimize_layer_waves.cu"
SIRIUS = str(Path(sys.executable).parent / "sirius")


def _optimize(source: Path, out: Path, *flags: str) -> str:
    proc = subprocess.run([SIRIUS, "optimize", str(source), "--cooperative", *flags, "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out.read_text()


def _verify(original: Path, optimized: Path, log: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([SIRIUS, "verify", str(original), str(optimized), "--backend", "cpu", *flags],
                          capture_output=True, text=True, env={**os.environ, "SIRIUS_LAUNCH_LOG": str(log)})


def _opted_in_before_sizing(text: str, kernel: str, threads: int, dynamic: int) -> None:
    """The kernel's opt-in for ``dynamic`` bytes comes before the occupancy query, which asks
    with the same size, and before every cooperative launch of it, which passes that size."""
    opt_in = text.index(f"cudaFuncSetAttribute({kernel}, cudaFuncAttributeMaxDynamicSharedMemorySize, {dynamic});")
    query = text.index(f"cudaOccupancyMaxActiveBlocksPerMultiprocessor(&sirius_per_sm, {kernel}, {threads}, "
                       f"{dynamic});")
    launches = [m.start() for m in re.finditer(rf"cudaLaunchCooperativeKernel\({kernel},", text)]
    assert opt_in < query and launches and all(at > query for at in launches)
    assert all(re.match(rf"cudaLaunchCooperativeKernel\({kernel}, dim3\(sirius_grid\), dim3\({threads}\), "
                        rf"sirius_args, {dynamic}, 0\)", text[at:]) for at in launches)


def test_a_cooperative_kernel_over_48_kb_opts_in_and_verifies(tmp_path):
    out, log = tmp_path / "coop.cu", tmp_path / "launches.txt"
    text = _optimize(PROGRAM, out)
    _opted_in_before_sizing(text, "sirius_coop_0", 256, 57344)
    for flags in ((), ("-DSIRIUS_COOPERATIVE_MAX_BLOCKS=3",)):  # 3 blocks: the phases' block loops loop
        verify = _verify(PROGRAM, out, log, *flags)
        assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr
        assert log.read_text().split() == ["sirius_coop_0"]  # the cooperative launch ran, not the fallback
    # without its opt-in the CPU backend rejects the cooperative launch, as a GPU does
    planted = tmp_path / "no_opt_in.cu"
    planted.write_text(re.sub(r"static const cudaError_t sirius_opt_in_coop_0 = [^;]*; \(void\)sirius_opt_in_coop_0; ",
                              "", text))
    assert planted.read_text() != text
    run = subprocess.run([SIRIUS, "run", str(planted), "--backend", "cpu"], capture_output=True, text=True)
    assert run.returncode == 2 and "error: kernel 'sirius_coop_0' needs 57344 bytes of dynamic shared memory per " \
        "block: a GPU rejects this cooperative launch (cudaErrorInvalidValue)" in run.stderr, run.stdout + run.stderr


@pytest.mark.parametrize("persistent", [False, True], ids=["a launch per wave", "persistent"])
def test_waves_of_cells_over_48_kb_opt_in_and_verify(tmp_path, persistent):
    # the layer pattern's second kernel stages t in 56 KB of dynamic shared memory, opted in by the program
    text = "".join(line for line in LAYER_WAVES.read_text().splitlines(keepends=True)
                   if not line.startswith(("// CHECK", "// RUN")))  # FileCheck's lines name the launches too
    for old, new in [("  int i = threadIdx.x;\n  out[i] = 0.5f * t[i] + 0.25f * t[H - 1 - i];",
                      "  extern __shared__ float staged[];\n  int i = threadIdx.x;\n  staged[i] = t[i];\n"
                      "  __syncthreads();\n  out[i] = 0.5f * staged[i] + 0.25f * staged[H - 1 - i];"),
                     ("  for (int step = 0; step < STEPS; ++step) {",
                      "  cudaFuncSetAttribute(update, cudaFuncAttributeMaxDynamicSharedMemorySize, 57344);\n"
                      "  for (int step = 0; step < STEPS; ++step) {"),
                     ("update<<<1, H>>>", "update<<<1, H, 57344>>>")]:
        assert old in text
        text = text.replace(old, new)
    program, out, log = tmp_path / "waves.cu", tmp_path / "waves_opt.cu", tmp_path / "launches.txt"
    program.write_text(text)
    emitted = _optimize(program, out, *(("--persistent",) if persistent else ()))
    _opted_in_before_sizing(emitted, "sirius_cells_0", 64, 57344)
    verify = _verify(program, out, log)
    assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr
    assert log.read_text().split() == ["sirius_cells_0"] * (1 if persistent else 7)


def test_a_region_past_the_architectures_limit_stays_apart_with_the_reason(tmp_path):
    # 200 KB of dynamic shared memory in the first phase and 40 KB of static in the second:
    # each fits a block of sm_90 alone, one kernel holding both does not (227 KB)
    text = PROGRAM.read_text()
    for old, new in [("#define PER_THREAD 56  // 56 floats x 256 threads = 56 KB", "#define PER_THREAD 200"),
                     ("  out[i] = partial[(i + THREADS) % N] - partial[i];  // another block's value",
                      "  __shared__ float mine[THREADS * 40];\n  for (int k = 0; k < 40; ++k) mine[k * THREADS + "
                      "threadIdx.x] = partial[i] * k;\n  __syncthreads();\n  out[i] = partial[(i + THREADS) % N] - "
                      "mine[39 * THREADS + (threadIdx.x + 1) % THREADS];")]:
        assert old in text
        text = text.replace(old, new)
    program = tmp_path / "too_much.cu"
    program.write_text(text)
    rep = report(run_pipeline(OptimizeState(CompileJob(program, CompileFlags(), resolve_toolchain()),
                                            cooperative=True)))
    assert not rep["cooperative"] and rep["launches_after"] == 2
    reasons = [r["reason"] for r in rep["refused"]]
    assert ("not one cooperative launch: shared memory of the fused kernel (40960 bytes static + 204800 dynamic) "
            "exceeds the 232448 bytes a block of sm_90 can have") in reasons, reasons
