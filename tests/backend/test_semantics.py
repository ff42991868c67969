"""The CPU backend runs CUDA programs with CUDA's semantics.

Each input program checks its own results on the host and prints ``NAME: OK``
(exit 0) or ``NAME: MISMATCH`` (exit 1); see ``inputs/``.
"""

from __future__ import annotations

import pytest

from conftest import INPUTS, requires_clang, run_cpu, sirius

pytestmark = [pytest.mark.toolchain, requires_clang]


@pytest.mark.parametrize(
    "program, expected",
    [
        ("indices.cu", ["indices: OK"]),
        ("tiled.cu", ["tiled: OK"]),
        ("reductions.cu", ["max: OK", "sum: OK", "stencil: OK", "reverse: OK"]),
        ("warp.cu", ["warp: OK"]),
        ("atomics.cu", ["atomics: OK"]),
        ("half.cu", ["half: OK"]),
        ("tvm_style.cu", ["tvm style: OK"]),
        ("runtime_outside_main.cu", ["in main: OK", "after main: OK"]),
    ],
)
def test_program_checks_pass(program, expected):
    proc = run_cpu(INPUTS / program)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for line in expected:
        assert line in proc.stdout


def test_atomics_with_one_and_four_worker_threads():
    for threads in ("1", "4"):
        proc = run_cpu(INPUTS / "atomics.cu", "--threads", threads)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "atomics: OK" in proc.stdout


def test_runtime_api_templates_symbols_groups():
    proc = run_cpu(INPUTS / "features.cu")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for line in ("templates: OK", "math: OK", "vector types: OK", "braced arguments: OK", "cooperative groups: OK",
                 "features: OK", "launch error: invalid configuration argument"):
        assert line in proc.stdout
    # printf from kernels comes out in block order, whatever ran them
    hello = [l for l in proc.stdout.splitlines() if l.startswith("hello from block")]
    assert hello == [f"hello from block {b}" for b in range(4)]
    assert "launch of kernel 'hello' failed" in proc.stderr


def test_barrier_variants_that_must_work():
    early = run_cpu(INPUTS / "barriers.cu", "-DCASE=2", timeout=120)
    assert early.returncode == 0 and "early exit: OK" in early.stdout, early.stdout + early.stderr
    counting = run_cpu(INPUTS / "barriers.cu", "-DCASE=4", timeout=120)
    assert counting.returncode == 0 and "counting: OK" in counting.stdout, (
        counting.stdout + counting.stderr)


def test_program_arguments_after_double_dash(tmp_path):
    src = tmp_path / "args.cu"
    src.write_text(
        "#include <cstdio>\n"
        "int main(int argc, char** argv) {\n"
        "  for (int i = 1; i < argc; ++i) printf(\"arg %d: %s\\n\", i, argv[i]);\n"
        "  return argc - 1;\n"
        "}\n")
    proc = run_cpu(src, "--", "one", "--two", "-3")
    assert proc.returncode == 3
    assert proc.stdout.splitlines() == ["arg 1: one", "arg 2: --two", "arg 3: -3"]
    direct = sirius("run", str(src), "--", "7", "-x")
    assert direct.returncode == 2 and direct.stdout.splitlines() == ["arg 1: 7", "arg 2: -x"]


def test_include_dirs_and_defines_like_a_compiler(tmp_path):
    inc = tmp_path / "include"
    inc.mkdir()
    (inc / "sizes.cuh").write_text(
        "#pragma once\n#ifndef WIDTH\n#define WIDTH 4\n#endif\n"
        "__global__ void fill(int* p) { p[threadIdx.x] = WIDTH * threadIdx.x; }\n")
    src = tmp_path / "prog.cu"
    src.write_text(
        "#include <cstdio>\n#include <sizes.cuh>\n"
        "int main() {\n"
        "  int* d; int h[8];\n"
        "  cudaMalloc(&d, sizeof h);\n"
        "  fill<<<1, 8>>>(d);\n"
        "  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);\n"
        "  printf(\"%d\\n\", h[7]);\n"
        "  return 0;\n"
        "}\n")
    proc = run_cpu(src, "-I", str(inc), "-DWIDTH=5")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "35"


BF16 = r"""
#include <cstdio>
#include <cuda_bf16.h>
__global__ void ops(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* out) {
  int i = threadIdx.x;
  __nv_bfloat16 x = a[i], y = b[i];
  out[3 * i] = __hadd(__hmul(x, y), x);
  out[3 * i + 1] = hexp(__hmax(x, y));
  out[3 * i + 2] = x / y;
}
static float r(float v) { return __bfloat162float(__float2bfloat16(v)); }
int main() {
  __nv_bfloat16 a[64], b[64], o[192];
  for (int i = 0; i < 64; ++i) {
    a[i] = __float2bfloat16(i * 0.173f - 3.0f);
    b[i] = __float2bfloat16(i * -0.311f + 4.1f);
  }
  __nv_bfloat16 *da, *db, *dout;
  cudaMalloc(&da, sizeof a);
  cudaMalloc(&db, sizeof b);
  cudaMalloc(&dout, sizeof o);
  cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice);
  ops<<<1, 64>>>(da, db, dout);
  cudaMemcpy(o, dout, sizeof o, cudaMemcpyDeviceToHost);
  int bad = 0;
  for (int i = 0; i < 64; ++i) {
    float x = __bfloat162float(a[i]), y = __bfloat162float(b[i]);
    float want[3] = {r(r(x * y) + x), r(expf(x > y ? x : y)), r(x / y)};
    for (int k = 0; k < 3; ++k) bad += __bfloat162float(o[3 * i + k]) != want[k];
  }
  printf("bf16: %s\n", bad ? "MISMATCH" : "OK");
  return bad ? 1 : 0;
}
"""


def test_bfloat16_rounds_each_operation(tmp_path):
    src = tmp_path / "bf16.cu"
    src.write_text(BF16)
    proc = run_cpu(src)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "bf16: OK" in proc.stdout
