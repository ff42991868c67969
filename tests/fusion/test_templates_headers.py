"""Kernels as real projects write them: template instances, kernels in the program's own
headers, in namespaces (named and anonymous), ``static``. Each becomes a fragment written
so that it compiles where the optimizer puts it, and the program verifies equal; what
cannot be written again is refused with the reason."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

SIRIUS = str(Path(sys.executable).parent / "sirius")

pytestmark = pytest.mark.toolchain

TEMPLATES = """#include <cstdio>
template <typename T, int K = 1> __global__ void scale(T* __restrict__ a, T s, int n) {
  __shared__ T tile[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? a[i] : T(0);
  __syncthreads();
  if (i < n) a[i] = tile[threadIdx.x] * s * K;
}
template <typename T> __global__ void add(T* a, const T* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] += b[i];
}
int main() {
  float* a; double* b; float* c;
  cudaMalloc(&a, 4096); cudaMalloc(&b, 8192); cudaMalloc(&c, 4096);
  cudaMemset(a, 0, 4096); cudaMemset(b, 0, 8192); cudaMemset(c, 0, 4096);
  scale<float><<<4, 256>>>(a, 2.0f, 1024);
  scale<double, 3><<<4, 256>>>(b, 3.0, 1024);
  add<<<4, 256>>>(a, c, 1024);
  float h[4]; cudaMemcpy(h, a, 16, cudaMemcpyDeviceToHost);
  double g[4]; cudaMemcpy(g, b, 32, cudaMemcpyDeviceToHost);
  printf("%f %f\\n", h[0], g[0]);
  return 0;
}
"""

HEADER = """#pragma once
namespace ops {
__device__ inline float twice_of(float v) { return 2.0f * v; }
__global__ void twice(float* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] = twice_of(a[i]); }
template <typename T> __global__ void inc(T* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] += T(1); }
}
"""

MAIN = """#include <cstdio>
#include "inc/kern.cuh"
namespace {
struct Pair { float x, y; };
__global__ void square(float* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] = a[i] * a[i] + 1.0f; }
__global__ void pairsum(Pair* p, float* out, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = p[i].x + p[i].y; }
}
static __global__ void halve(float* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] *= 0.5f; }
int main() {
  float* a; Pair* p; float* o;
  cudaMalloc(&a, 4096); cudaMalloc(&p, 8192); cudaMalloc(&o, 4096);
  cudaMemset(a, 0, 4096); cudaMemset(p, 0, 8192);
  ops::twice<<<4, 256>>>(a, 1024);
  square<<<4, 256>>>(a, 1024);
  halve<<<4, 256>>>(a, 1024);
  ops::inc<float><<<4, 256>>>(a, 1024);
  pairsum<<<4, 256>>>(p, o, 1024);
  float h[4]; cudaMemcpy(h, a, 16, cudaMemcpyDeviceToHost);
  float g[4]; cudaMemcpy(g, o, 16, cudaMemcpyDeviceToHost);
  printf("%f %f\\n", h[0], g[0]);
  return 0;
}
"""


def sirius(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([SIRIUS, *args], capture_output=True, text=True, timeout=600)


def _optimize(program: Path, out: Path) -> dict:
    report = out.with_suffix(".json")
    proc = sirius("optimize", str(program), "-o", str(out), "--report", str(report))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    verified = sirius("verify", str(program), str(out))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "result: all equal" in verified.stdout
    return json.loads(report.read_text())


def test_template_instances_are_fragments_called_with_their_arguments(tmp_path):
    program = tmp_path / "templates.cu"
    program.write_text(TEMPLATES)
    out = tmp_path / "templates.opt.cu"
    rep = _optimize(program, out)
    assert (rep["launches_before"], rep["launches_after"]) == (3, 1), rep
    assert not rep["refused"]
    text = out.read_text()
    # one template per instance, called with the instance's arguments (a defaulted one included)
    assert re.search(r"template <typename T, int K = 1>\nstatic __device__ __forceinline__ void "
                     r"sirius_frag_scale_float_1\(", text)
    assert "sirius_frag_scale_double_3<double, (int)(3LL)>(" in text
    assert "sirius_frag_add_float<float>(" in text
    # the fused kernel's parameters have the instances' types; the fallback names the instances as written
    assert re.search(r"sirius_fused_0\([^)]*double \*__restrict s\d+_a", text)
    assert "scale<double, 3><<<sirius_g" in text and "scale<float><<<sirius_g" in text


def test_header_namespace_anonymous_and_static_kernels_fuse(tmp_path):
    project = tmp_path / "project"
    (project / "inc").mkdir(parents=True)
    (project / "inc" / "kern.cuh").write_text(HEADER)
    program = project / "main.cu"
    program.write_text(MAIN)
    out_dir = tmp_path / "build"
    out_dir.mkdir()
    out = out_dir / "main.opt.cu"
    rep = _optimize(program, out)
    assert (rep["launches_before"], rep["launches_after"]) == (5, 1), rep
    kernels = [m["kernel"] for lane in rep["groups"][0]["lanes"] for m in lane]
    assert kernels == ["ops::twice", "(anonymous namespace)::square", "halve", "void ops::inc<float>",
                       "(anonymous namespace)::pairsum"]
    text = out.read_text()
    # the header (included once, at file scope) is copied in place of its #include, its
    # kernels' fragments written after them there, in their namespaces (where they were
    # written: what the main file declares after the #include cannot reach them)
    header = project / "inc" / "kern.cuh"
    assert f'#line 1 "{header}"' in text and '#include "' not in text and "twice_of(float v)" in text
    assert rep["includes_rewritten"] == []
    assert text.index(f'#line 1 "{header}"') < text.index("namespace ops {") \
        < text.index("static __device__ __forceinline__ void sirius_frag_ops_twice(") \
        < text.index(f'#line 3 "{program}"')
    # the fused kernel names them from file scope
    assert "ops::sirius_frag_ops_inc_float<float>(" in text
    assert re.search(r"sirius_fused_0\([^)]*Pair \* s\d+_p", text)
    # the generated kernels come after the #include that declares the header's kernels
    assert text.index("kern.cuh") < text.index("// ---- kernels generated by sirius ----")


def test_what_cannot_be_written_again_is_refused_with_the_reason(tmp_path):
    program = tmp_path / "variadic.cu"
    program.write_text("""#include <cstdio>
template <typename... Ts> __global__ void fill(float* a, Ts... vs) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; a[i] = (0.0f + ... + vs);
}
__global__ void twice(float* a) { int i = blockIdx.x * blockDim.x + threadIdx.x; a[i] *= 2.0f; }
int main() {
  float* a; cudaMalloc(&a, 4096);
  fill<<<4, 256>>>(a, 1.0f, 2.0f);
  twice<<<4, 256>>>(a);
  float h[4]; cudaMemcpy(h, a, 16, cudaMemcpyDeviceToHost);
  printf("%f\\n", h[0]);
  return 0;
}
""")
    out = tmp_path / "variadic.opt.cu"
    rep = _optimize(program, out)
    reasons = [r["reason"] for r in rep["refused"]]
    assert ("the kernel cannot be written as a fragment: the kernel template has a parameter pack or a "
            "template template parameter") in reasons, reasons
