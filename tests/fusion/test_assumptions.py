"""What an optimized program assumes is checked when it runs: the launch shapes, integer
arguments and pointer distances the analysis took as constants guard the fused launches,
and a build with other sizes runs the original launches instead (and still verifies
equal). A launch shape the host computes at run time (argv) is never taken for a number."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sirius.fusion.region_paths import ENVIRONMENT, read_counts, regions_of, summarize

ROOT = Path(__file__).resolve().parents[2]
SIRIUS = str(Path(sys.executable).parent / "sirius")
CHAIN = ROOT / "cuda_inputs" / "elementwise_chain.cu"

pytestmark = pytest.mark.toolchain


def sirius(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([SIRIUS, *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})


def _launched(program: Path, tmp_path: Path, *defines: str, paths: Path | None = None) -> list[str]:
    log = tmp_path / f"launches{len(defines)}.txt"
    env = {"SIRIUS_LAUNCH_LOG": str(log), **({ENVIRONMENT: str(paths)} if paths else {})}
    proc = sirius("run", str(program), *defines, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return log.read_text().split()


def test_fused_at_the_sizes_optimized_for_original_launches_at_others(tmp_path):
    out = tmp_path / "chain.opt.cu"
    proc = sirius("optimize", str(CHAIN), "-o", str(out))
    assert proc.returncode == 0 and "runs when the host values match" in proc.stdout, proc.stdout + proc.stderr
    assert _launched(out, tmp_path) == ["sirius_fused_0"]
    assert _launched(out, tmp_path, "-DNUM_ELEMS=1000") == ["scale2", "add", "relu", "square_plus_one"]
    proc = sirius("verify", str(CHAIN), str(out), "-DNUM_ELEMS=1000")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # equal, but nothing fused was compared: verify says so, and which condition sent it back
    assert "0 of them took their fused path" in proc.stdout, proc.stdout
    assert "original code: guard failed 1" in proc.stdout and "warning: no fused code ran" in proc.stdout
    assert 'guard failed 1x on: NUM_ELEMS expands to "(1 << 16)" as when optimized' in proc.stdout, proc.stdout


def test_a_wavefront_runs_where_the_nest_is_the_one_optimized_for(tmp_path):
    """The wave kernel bakes in the nest's trip counts, shapes and pointer offsets: the nest
    runs once without launching to check them, and other sizes run the nest as written."""
    lstm, small = ROOT / "cuda_inputs" / "lstm.cu", ("-DSTEPS=6", "-DCELLS=4", "-DHIDDEN=32")
    out = tmp_path / "lstm.opt.cu"
    proc = sirius("optimize", str(lstm), "-o", str(out), *small)
    assert proc.returncode == 0 and "sirius_wave_0" in proc.stdout, proc.stdout + proc.stderr
    counts = tmp_path / "paths.txt"
    assert _launched(out, tmp_path, *small, paths=counts) == ["sirius_wave_0"] * (6 + 4 - 1)
    (wavefront,) = summarize(regions_of(out.read_text()), read_counts(counts))
    assert wavefront.paths == {"wavefront": 1}
    other = ("-DSTEPS=3", "-DCELLS=4", "-DHIDDEN=32")
    assert _launched(out, tmp_path, *other) == (["gemv"] * 8 + ["solve"]) * 3 * 4
    proc = sirius("verify", str(lstm), str(out), *other)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "region 0 (wavefront, lstm.cu:" in proc.stdout and "warning: no fused code ran" in proc.stdout
    assert "guard failed 1x on: the loop issues 216 launches, as when optimized" in proc.stdout, proc.stdout


def test_a_launch_shape_from_argv_is_unknown_not_a_number(tmp_path):
    program = tmp_path / "argv_shape.cu"
    program.write_text("""#include <cstdio>
#include <cstdlib>
__global__ void twice(float* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] *= 2.0f; }
__global__ void inc(float* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] += 1.0f; }
int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 256;
  float* a; cudaMalloc(&a, 4096); cudaMemset(a, 0, 4096);
  twice<<<(1024 + threads - 1) / threads, threads>>>(a, 1024);
  inc<<<(1024 + threads - 1) / threads, threads>>>(a, 1024);
  float h[4]; cudaMemcpy(h, a, 16, cudaMemcpyDeviceToHost); printf("%f\\n", h[0]);
  return 0;
}
""")
    analysis = sirius("analyze", str(program))
    assert "twice grid [?, 1, 1] block [?, 1, 1]" in analysis.stdout, analysis.stdout
    assert "4294967296" not in analysis.stdout and "(over-approximated)" in analysis.stdout
    out = tmp_path / "argv_shape.opt.cu"
    proc = sirius("optimize", str(program), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "launch configuration at line 8 is not known when optimizing" in proc.stdout
    for threads in ("128", "64"):
        proc = sirius("verify", str(program), str(out), "--", threads)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_macro_only_a_kernel_body_uses_is_checked_when_rebuilt(tmp_path):
    # fusion is proven for SHIFT = 0; a rebuild with -DSHIFT=300 reads across blocks
    program = ROOT / "tests" / "fusion" / "programs" / "macro_in_kernel_body.cu"
    out, report = tmp_path / "shift.opt.cu", tmp_path / "shift.json"
    proc = sirius("optimize", str(program), "-o", str(out), "--report", str(report))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [group] = json.loads(report.read_text())["groups"]
    assert 'sirius_same_tokens(SIRIUS_STR(SHIFT), "0")' in group["assumes"]
    assert _launched(out, tmp_path) == ["sirius_fused_0"]
    assert _launched(out, tmp_path, "-DSHIFT=300") == ["produce", "consume"]
    proc = sirius("verify", str(program), str(out), "-DSHIFT=300")
    assert proc.returncode == 0 and "result: all equal" in proc.stdout, proc.stdout + proc.stderr


def test_allocations_told_apart_are_checked_apart(tmp_path):
    # optimized with INPLACE 0 (relu6 writes y, apart from x); rebuilt with INPLACE 1 it
    # writes x, which diff reads: the fused launch must not run
    program = ROOT / "tests" / "fusion" / "programs" / "allocation_by_macro.cu"
    out = tmp_path / "inplace.opt.cu"
    proc = sirius("optimize", str(program), "--arrangement", "vertical", "-o", str(out))
    assert proc.returncode == 0 and "launches per run: 2 -> 1" in proc.stdout, proc.stdout + proc.stderr
    assert _launched(out, tmp_path) == ["sirius_fused_0"]
    assert _launched(out, tmp_path, "-DINPLACE=1") == ["relu6", "diff"]
    proc = sirius("run", str(program), "-DINPLACE=1")
    expected = proc.stdout
    proc = sirius("run", str(out), "-DINPLACE=1")
    assert proc.returncode == 0 and proc.stdout == expected, proc.stdout + proc.stderr
