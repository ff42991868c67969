"""Layouts of real programs (issue 31): kernels in a ``.cu`` file the main file includes,
and launches in host helpers that ``main`` calls through others. Launches the optimizer
can rewrite are fused and verified; the others are left as written with a true reason
(the file, line and function where the launch is written)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.toolchain

HERE = Path(__file__).resolve().parent / "idioms"
SIRIUS = str(Path(sys.executable).parent / "sirius")


def sirius(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([SIRIUS, *args], capture_output=True, text=True, timeout=600)


def fuses_and_verifies(program: Path, launches: str) -> None:
    """``program`` optimizes to ``launches`` per run ("2 -> 1"), and verifies equal."""
    out = program.with_suffix(".opt.cu")
    proc = sirius("optimize", str(program), "-o", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"launches per run: {launches}" in proc.stdout, proc.stdout
    verify = sirius("verify", str(program), str(out))
    assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr


@pytest.fixture(scope="module")
def included(tmp_path_factory):
    out = tmp_path_factory.mktemp("included") / "main.opt.cu"
    proc = sirius("optimize", str(HERE / "included_kernels" / "main.cu"), "-o", str(out))
    return proc, out


def test_kernels_of_an_included_file_fuse_where_main_launches_them(included):
    proc, out = included
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "launches per run: 4 -> 2" in proc.stdout, proc.stdout
    assert "layer_forward (line 13) -> squash (line 14)" in proc.stdout, proc.stdout
    verify = sirius("verify", str(HERE / "included_kernels" / "main.cu"), str(out))
    assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr
    assert "region 0 (fused, main.cu:13, layer_forward squash): fused launches 1" in verify.stdout, verify.stdout
    assert "region 1 (fused, kernels.cu:23, adjust_weights decay): fused launches 1" in verify.stdout, verify.stdout


def test_launches_written_in_the_included_file_are_rewritten_there(included):
    """The compiler inlined the included file's helper into main: its launches fuse where
    they are written, in a copy of the file's text that stands in place of its #include
    (with #line directives: its lines and name, then main's again)."""
    proc, out = included
    assert "adjust_weights (kernels.cu line 23) -> decay (kernels.cu line 24)" in proc.stdout, proc.stdout
    assert ("not fused: squash (line 14), adjust_weights (kernels.cu line 23): they are in different host "
            "functions (main, train_step)") in proc.stdout, proc.stdout
    emitted = out.read_text()
    kernels = str(HERE / "included_kernels" / "kernels.cu")
    copy = emitted.index(f'#line 1 "{kernels}"\n')
    assert '#include "kernels.cu"' not in emitted and "#include" not in emitted[copy:emitted.index("int main")]
    helper = emitted.index("static void train_step(")
    assert copy < emitted.index("// sirius: fused kernels, defined below") < helper < emitted.index("sirius_fused_1<<<")
    assert emitted.index(f'#line 4 "{HERE / "included_kernels" / "main.cu"}"\n') > helper


def _driver(includes: str) -> str:
    """A main file that includes ``includes`` and calls train_step, its lines as many as
    the included file's before main (so that lines of either could be mistaken)."""
    return (f"#include <cstdio>\n{includes}#define N 4096\n" + "\n" * 19 +
            "int main() {\n  float *d, *w; cudaMalloc(&d, N * 4); cudaMalloc(&w, N * 4);\n"
            "  cudaMemset(d, 0, N * 4); cudaMemset(w, 0, N * 4);\n"
            "  train_step(d, w, N);\n  float h[4]; cudaMemcpy(h, w, sizeof h, cudaMemcpyDeviceToHost);\n"
            "  printf(\"%f\\n\", h[1]);\n  return 0;\n}\n")


def test_a_helper_of_an_included_file_as_the_entry_is_rewritten_there(tmp_path):
    """The helper is the entry (main calls only it, not inlined), in a CRLF file with a
    byte-order mark and #pragma once: its launches fuse in the copy of that file, which
    keeps its CRLF lines, loses the mark (only a file's first bytes may be one) and has
    its #pragma once as a comment. The comment after the #include goes on over the next
    line: it stays, after the copy."""
    text = (HERE / "included_kernels" / "kernels.cu").read_text().replace("static void train_step", "void train_step")
    (tmp_path / "kernels.cu").write_bytes(b"\xef\xbb\xbf#pragma once\r\n" + text.replace("\n", "\r\n").encode())
    main = tmp_path / "main.cu"
    main.write_text(_driver('#include "kernels.cu" /* its kernels and\n   train_step */\n'))
    fuses_and_verifies(main, "2 -> 1")
    emitted = main.with_suffix(".opt.cu").read_bytes()
    assert b"\xef\xbb\xbf" not in emitted and b"/* sirius: pragma once (this file's text" in emitted
    assert b"static void train_step" not in emitted and b"void train_step(float* delta, float* w, int n) {\r\n" in emitted


@pytest.mark.parametrize("includes, why", [
    ('#include "kernels.cu"\n#include "layer.cuh"\n', "which the program includes 2 times"),
    ('#include "kernels.cu"\n#include "./kernels.cu"\n', "which the program includes 2 times"),
    ('namespace nn {\n#include "kernels.cu"\n}\nusing namespace nn;\n', 'which is included inside namespace nn (line 3)'),
])
def test_a_file_included_twice_or_inside_a_namespace_is_not_rewritten(tmp_path, includes, why):
    """A copy in place of one #include would leave the other including the file itself
    (however its name is written); one inside a namespace would put the generated code
    there: such files' launches stay as they are, with the reason naming the file and line."""
    (tmp_path / "kernels.cu").write_text((HERE / "included_kernels" / "kernels.cu").read_text())
    (tmp_path / "layer.cuh").write_text('#include "kernels.cu"\n')
    main = tmp_path / "main.cu"
    main.write_text(_driver(includes))
    proc = sirius("optimize", str(main), "-o", str(tmp_path / "out.cu"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (f"its launch expression cannot be rewritten: it is written in kernels.cu at line 23 (in train_step), "
            f"{why}: launches are rewritten in the main file and in the files it includes once, at file scope") \
        in proc.stdout, \
        proc.stdout


def test_a_file_included_through_another_is_rewritten_in_its_copy(tmp_path):
    """kernels.cu, included by ops/layer.cuh, which main includes: its copy stands in the
    copy of layer.cuh, and its own quoted #include of a file found beside it (where the
    main file's folder has another file of that name) names the file found."""
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "kernels.cu").write_text(
        '#include "scale.h"\n' + (HERE / "included_kernels" / "kernels.cu").read_text().replace("0.99f", "SCALE"))
    (tmp_path / "ops" / "scale.h").write_text("#define SCALE 0.5f\n")
    (tmp_path / "scale.h").write_text("#define SCALE 0.25f\n")
    (tmp_path / "ops" / "layer.cuh").write_text('#pragma once\n#include "kernels.cu"\n')
    main = tmp_path / "main.cu"
    main.write_text(_driver('#include "ops/layer.cuh"\n'))
    fuses_and_verifies(main, "2 -> 1")
    emitted = main.with_suffix(".opt.cu").read_text()
    assert '#include "ops/scale.h"' in emitted and emitted.index(f'#line 1 "{tmp_path}/ops/layer.cuh"') \
        < emitted.index(f'#line 1 "{tmp_path}/ops/kernels.cu"') < emitted.index("void train_step(")


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    out = tmp_path_factory.mktemp("chain") / "helper_chain.opt.cu"
    return sirius("optimize", str(HERE / "helper_chain.cu"), "-o", str(out)), out


def test_launches_in_helpers_main_calls_are_modelled_at_their_call_sites(chain):
    proc, out = chain
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "launches per run: 12 -> 8" in proc.stdout and "kick (line 23) -> drift (line 24)" in proc.stdout, \
        proc.stdout
    assert ("not fused: forces (line 20), kick (line 23): they are in different host functions "
            "(compute_forces, integrate)") in proc.stdout, proc.stdout
    verify = sirius("verify", str(HERE / "helper_chain.cu"), str(out))
    assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr
    assert "fused launches 4" in verify.stdout, verify.stdout


def test_a_helper_another_translation_unit_may_call_keeps_its_launches(tmp_path):
    """run_step keeps an external definition that calls integrate: rewriting integrate's
    launches would change what that definition runs. Named as the entry, it is modelled
    too (it was once an internal error)."""
    program = tmp_path / "chain.cu"
    program.write_text((HERE / "helper_chain.cu").read_text().replace("static void run_step", "void run_step"))
    for entry in ((), ("--entry", "run_step")):
        proc = sirius("optimize", str(program), "-o", str(tmp_path / "out.cu"), *entry)
        assert proc.returncode == 0 and "launches per run: " in proc.stdout, proc.stdout + proc.stderr
        assert "line None" not in proc.stdout, proc.stdout
    assert ("not fused: kick (line 23): its launch expression cannot be rewritten: the launches are in integrate, "
            "which main also calls (the analysis follows the calls in run_step)") in proc.stdout, proc.stdout
    plain = sirius("optimize", str(program), "-o", str(tmp_path / "out.cu"))
    assert ("which run_step also calls (the analysis follows the calls in main); run_step is not called here but "
            "has external linkage") in plain.stdout, plain.stdout


@pytest.fixture(scope="module")
def main_and_helpers(tmp_path_factory):
    out = tmp_path_factory.mktemp("main_and_helpers") / "main_and_helpers.opt.cu"
    return sirius("optimize", str(HERE / "main_and_helpers.cu"), "-o", str(out)), out


def test_helpers_main_calls_among_its_own_launches_are_modelled_at_their_calls(main_and_helpers):
    """main launches, and calls helpers that launch (main -> step -> compute_forces,
    integrate, in main's loop; normalize twice): each call is modelled where it is made, in
    program order among main's launches. main's pairs and integrate's pair fuse (the
    latter rewritten in integrate), verified equal with every fused path taken; the pairs
    across a call are apart for what is true of them, named at the helpers' lines."""
    proc, out = main_and_helpers
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for line in ("launches per run: 22 -> 15", "fill (line 55) | fill (line 56)", "kick (line 41) -> drift (line 42)",
                 "damp (line 59) | damp (line 60)",
                 "not fused: fill (line 56), forces (line 38): they are in different host loop nests",
                 "not fused: forces (line 38), kick (line 41): they are in different host functions "
                 "(compute_forces, integrate)",
                 "not fused: drift (line 42), damp (line 59): they are in different host functions (integrate, main)"):
        assert line in proc.stdout, proc.stdout
    emitted = out.read_text()
    integrate = emitted.index("static void integrate(")
    assert integrate < emitted.index("sirius_fused_2<<<") < emitted.index("static void step(")
    verify = sirius("verify", str(HERE / "main_and_helpers.cu"), str(out), "--backend", "cpu")
    assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr
    for took in ("fill fill): fused launches 1", "kick drift): fused launches 3", "damp damp): fused launches 3"):
        assert took in verify.stdout, verify.stdout


def test_a_helper_called_at_two_lines_keeps_its_launches_as_written(main_and_helpers, tmp_path):
    """normalize runs its two launch expressions for both its calls: rewritten for one,
    the other would run the fused kernel too. Refused with the calls' lines; so is a helper
    the compiler inlined at one call and kept at the other."""
    proc, _ = main_and_helpers
    for kernel, line in (("scale", 49), ("shift", 50)):
        assert (f"not fused: {kernel} (line {line}): its launch expression cannot be rewritten: it is written once in "
                f"normalize (line {line}), which the program runs from 2 calls (normalize is called at lines 62 "
                "and 63): rewriting it would change them all") in proc.stdout, proc.stdout
    program = tmp_path / "inlined_once.cu"
    program.write_text((HERE / "main_and_helpers.cu").read_text().replace(
        "  normalize(vel, N);", "  [[clang::always_inline]] normalize(vel, N);"))
    once = sirius("optimize", str(program), "-o", str(tmp_path / "out.cu"))
    assert once.returncode == 0 and "launches per run: 22 -> 15" in once.stdout, once.stdout + once.stderr
    assert ("not fused: scale (line 49): its launch expression cannot be rewritten: it is written once in normalize "
            "(line 49), which the program runs from 2 calls") in once.stdout, once.stdout
    assert "scale (line 49) -> shift" not in once.stdout, once.stdout


def test_the_launches_of_a_helper_main_calls_are_counted_for_each_call(tmp_path):
    """main launches nothing itself and calls one helper, in a loop and once more: the
    helper is modelled, its launches are counted per call of it, and the summary says so
    and how often a run calls it."""
    program = tmp_path / "calls.cu"
    program.write_text(r"""#include <cuda_runtime.h>
#define N 512
__global__ void add(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += x[i]; }
__global__ void twice(const float* x, float* z, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) z[i] = 2 * x[i]; }
static void step(const float* x, float* y, float* z) {
  add<<<N / 128, 128>>>(x, y, N);
  twice<<<N / 128, 128>>>(x, z, N);
}
int main() {
  float *x, *y, *z;
  cudaMalloc(&x, N * 4); cudaMalloc(&y, N * 4); cudaMalloc(&z, N * 4);
  for (int t = 0; t < 3; ++t) step(x, y, z);
  step(x, y, z);
  cudaDeviceSynchronize();
  return 0;
}
""")
    proc = sirius("analyze", str(program))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "launches (2 launch statements, 2 launches per call of step; a run makes 4 of them)" in proc.stdout, \
        proc.stdout


def test_launch_arguments_are_known_in_a_main_with_objects_to_destroy(tmp_path):
    """A std::vector in main makes every call an invoke (its destructor runs if one
    throws): the inlined launch stub's argument array is filled in the block before the
    launch's, and the arguments are still read, so the launches fuse."""
    program = tmp_path / "vector_main.cu"
    program.write_text(r"""#include <vector>
#include <cuda_runtime.h>
#define N 512
__global__ void add(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += x[i]; }
__global__ void twice(const float* x, float* z, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) z[i] = 2 * x[i]; }
int main() {
  std::vector<float> h(N, 1.0f);
  float *x, *y, *z;
  cudaMalloc(&x, N * 4); cudaMalloc(&y, N * 4); cudaMalloc(&z, N * 4);
  cudaMemcpy(x, h.data(), N * 4, cudaMemcpyHostToDevice);
  cudaMemset(y, 0, N * 4);
  add<<<N / 128, 128>>>(x, y, N);
  twice<<<N / 128, 128>>>(x, z, N);
  cudaMemcpy(h.data(), y, N * 4, cudaMemcpyDeviceToHost);
  cudaMemcpy(h.data(), z, N * 4 / 2, cudaMemcpyDeviceToHost);
  return 0;
}
""")
    fuses_and_verifies(program, "2 -> 1")


def test_the_cleanup_of_a_statement_before_the_launches_is_not_between_them(tmp_path):
    """A temporary with a destructor of the program's, made before two launches: clang puts
    the destructor's call on the exception path of that statement after the first launch
    in block order; it cannot run between the launches, which fuse."""
    program = tmp_path / "cleanup.cu"
    program.write_text(r"""#include <cstdio>
#include <memory>
#include <cuda_runtime.h>
#define N 512
__global__ void add(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += x[i]; }
__global__ void twice(const float* x, float* z, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) z[i] = 2 * x[i]; }
struct Probe {
  const float* dev = nullptr;
  ~Probe() { if (dev) { static float h[N]; cudaMemcpy(h, dev, sizeof h, cudaMemcpyDeviceToHost); printf("%f\n", h[1]); } }
};
static std::shared_ptr<Probe>& kept() { static std::shared_ptr<Probe> p; return p; }
int main() {
  static float h[N];
  for (int i = 0; i < N; ++i) h[i] = (float)(i % 7);
  float *x, *y, *z;
  cudaMalloc(&x, N * 4); cudaMalloc(&y, N * 4); cudaMalloc(&z, N * 4);
  cudaMemcpy(x, h, N * 4, cudaMemcpyHostToDevice);
  cudaMemset(y, 0, N * 4);
  kept() = std::make_shared<Probe>(Probe{y});
  add<<<N / 128, 128>>>(x, y, N);
  twice<<<N / 128, 128>>>(x, z, N);
  cudaMemcpy(h, z, N * 4, cudaMemcpyDeviceToHost);
  printf("%f\n", h[3]);
  return 0;
}
""")
    fuses_and_verifies(program, "2 -> 1")
