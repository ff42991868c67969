"""The check cache (sirius/fusion/check_cache.py): an emitted text checked again under the
same flags, folder, tools and code is answered without analysing it again; a changed
header the program includes, or a text that does not compile, is analysed each time."""

from __future__ import annotations

from pathlib import Path

import pytest

from sirius.analysis.frontend import CompileJob
from sirius.core.config import CompileFlags, resolve_toolchain
from sirius.fusion import check

pytestmark = pytest.mark.toolchain

PROGRAM = """#include <cuda_runtime.h>
#include "scale.h"
__global__ void sirius_fused_0(float* x) { x[threadIdx.x] *= SCALE; }
int main() {
  float* x;
  cudaMalloc(&x, 256 * sizeof(float));
  sirius_fused_0<<<1, 256>>>(x);
  cudaDeviceSynchronize();
  return 0;
}
"""


@pytest.fixture
def counted(monkeypatch, tmp_path):
    """Checks of PROGRAM beside ``original.cu`` in a folder holding scale.h, counting analyses."""
    monkeypatch.setenv("SIRIUS_CACHE", str(tmp_path / "cache"))
    (tmp_path / "scale.h").write_text("#define SCALE 2.0f\n")
    (tmp_path / "original.cu").write_text(PROGRAM)
    calls = []
    analyze = check.analyze_program
    monkeypatch.setattr(check, "analyze_program", lambda *a, **k: calls.append(1) or analyze(*a, **k))
    job = CompileJob(tmp_path / "original.cu", CompileFlags(), resolve_toolchain())
    return job, calls, tmp_path


def test_a_text_checked_before_is_not_analysed_again(counted):
    job, calls, _ = counted
    first = check.check_program(job, source=PROGRAM)
    again = check.check_program(job, source=PROGRAM)
    assert len(calls) == 1 and first == again and first.kernels_checked == 1
    check.check_program(job, source=PROGRAM.replace("256>>>", "128>>>"))  # another text
    assert len(calls) == 2


def test_a_changed_header_is_checked_again(counted):
    job, calls, folder = counted
    check.check_program(job, source=PROGRAM)
    (folder / "scale.h").write_text("#define SCALE 3.0f  // another value\n")
    check.check_program(job, source=PROGRAM)
    assert len(calls) == 2


def test_other_flags_are_another_check(counted):
    job, calls, _ = counted
    check.check_program(job, source=PROGRAM)
    check.check_program(CompileJob(job.path, CompileFlags(defines=("N=1",)), job.toolchain), source=PROGRAM)
    assert len(calls) == 2


def test_a_text_that_does_not_compile_is_not_kept(counted):
    job, calls, _ = counted
    broken = PROGRAM.replace("x[threadIdx.x] *= SCALE;", "x[threadIdx.x] *= undeclared;")
    results = [check.check_program(job, source=broken) for _ in range(2)]
    assert len(calls) == 2 and all(r.violations and r.violations[0].what == "does not compile" for r in results)


@pytest.mark.parametrize("header_beside", [False, True])
def test_verify_asks_the_check_optimize_made_unless_an_include_was_re_pointed(tmp_path, header_beside):
    """``sirius verify`` of what ``sirius optimize`` wrote to another folder checks the same
    text under the same flags (one entry in the check cache), except where the text's
    quoted include was re-pointed for that folder (it needs the folder on the include path:
    another text, another entry)."""
    import os
    import subprocess
    import sys

    sirius = str(Path(sys.executable).parent / "sirius")
    env = {**os.environ, "SIRIUS_CACHE": str(tmp_path / "cache")}
    (tmp_path / "src").mkdir()
    (tmp_path / "out").mkdir()
    original = tmp_path / "src" / "pair.cu"
    text = (Path(__file__).resolve().parents[2] / "cuda_inputs" / "independent_pair.cu").read_text()
    if header_beside:
        (tmp_path / "src" / "scale.h").write_text("#define SCALE 1\n")
        text = text.replace("#include <cuda_runtime.h>", '#include <cuda_runtime.h>\n#include "scale.h"')
    original.write_text(text)
    out = tmp_path / "out" / "pair.cu"
    opt = subprocess.run([sirius, "optimize", str(original), "-o", str(out)], capture_output=True, text=True, env=env)
    assert opt.returncode == 0 and "2 -> 1" in opt.stdout, opt.stdout + opt.stderr
    assert ('"../src/scale.h"' in out.read_text()) == header_beside
    verify = subprocess.run([sirius, "verify", str(original), str(out)], capture_output=True, text=True, env=env)
    assert verify.returncode == 0 and "no violations" in verify.stdout, verify.stdout + verify.stderr
    assert len(list((tmp_path / "cache" / "check").glob("*.pickle"))) == (2 if header_beside else 1)


@pytest.mark.parametrize("threads, shared, asked", [(256, 0, False), (512, 0, True), (128, 16 * 1024, False), (128, 32 * 1024, True)])
def test_ptxas_is_asked_only_where_a_limit_depends_on_its_figures(counted, monkeypatch, threads, shared, asked):
    """256 threads at the most registers a thread may have (255) fill the register file
    exactly: no figure of ptxas's can break a limit, and the check says so without asking.
    512 threads may overflow it; 32 KB of static shared memory (more than half of the 48 KB a
    block has without an opt-in) is more than the kernel model is taken for alone."""
    job, _, _ = counted
    calls = []
    monkeypatch.setattr(check, "ptxas_figures", lambda j: calls.append(j) or {})
    body = "  x[threadIdx.x] *= SCALE;\n"
    if shared:
        body = (f"  __shared__ float tile[{shared // 4}];\n  tile[threadIdx.x] = x[threadIdx.x];\n  __syncthreads();\n"
                "  x[threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x] * SCALE;\n")
    source = PROGRAM.replace("__global__ void sirius_fused_0(float* x) { x[threadIdx.x] *= SCALE; }",
                             f"__global__ void __launch_bounds__({threads}) sirius_fused_0(float* x) {{\n{body}}}"
                             ).replace("<<<1, 256>>>", f"<<<1, {threads}>>>")
    result = check.check_program(job, source=source)
    assert result.kernels_checked == 1 and not result.violations
    assert bool(calls) == asked and result.bounded == (not asked)
    assert any("ptxas not asked" in note for note in result.notes) == (not asked)


def test_a_generated_kernel_in_a_namespace_is_checked(counted):
    """The blind red team's: a fused kernel emitted into the namespace of the kernels it
    fuses (``ops::sirius_fused_0``) went unchecked (0 fused kernels)."""
    job, _, _ = counted
    source = PROGRAM.replace("__global__ void sirius_fused_0(float* x) { x[threadIdx.x] *= SCALE; }",
                             "namespace ops {\n__global__ void sirius_fused_0(float* x) { x[threadIdx.x] *= SCALE; }\n}"
                             ).replace("  sirius_fused_0<<<", "  ops::sirius_fused_0<<<")
    assert check.check_program(job, source=source).kernels_checked == 1
