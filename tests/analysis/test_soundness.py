"""What the analysis must see (or refuse): every host call between launches, device
globals, every barrier intrinsic, kernels by identity. One fact per test, on tiny
programs; the whole-tool outcomes of the same hazards are in tests/test_probes.py."""

import pytest

from sirius.analysis.kernel_model import ANY_BUFFER
from sirius.analysis.uar import build_uar

pytestmark = pytest.mark.toolchain

HEAD = "#include <cstdio>\n#include <cuda_runtime.h>\n"
MAP = """
__global__ void scale(float* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] *= 2.0f; }
__global__ void shift(float* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] += 1.0f; }
"""


def main(body: str) -> str:
    return ("int main() { float *a, *b; float h[256]; cudaMalloc(&a, 1024); cudaMalloc(&b, 1024);\n"
            f"{body}\n cudaMemcpy(h, a, 1024, cudaMemcpyDeviceToHost); return 0; }}\n")


def others(model):
    return [s for s in model.host.statements if s.kind not in ("launch", "alloc")]


@pytest.mark.parametrize("call, kind, direction", [
    ("cudaMemcpy2D(b, 64, a, 64, 64, 4, cudaMemcpyDeviceToDevice);", "copy", "DeviceToDevice"),
    ("cudaMemcpyAsync(b, a, 1024, cudaMemcpyDeviceToDevice, 0);", "copy", "DeviceToDevice"),
    ("cudaMemcpyPeer(b, 0, a, 0, 1024);", "copy", "PeerToPeer"),
    ("cudaMemset2D(b, 64, 0, 64, 4);", "memset", None),
    ("cudaMemsetAsync(b, 0, 1024, 0);", "memset", None),
])
def test_every_runtime_copy_and_memset_is_a_statement(snippet, call, kind, direction):
    m = snippet(HEAD + MAP + main(f"scale<<<2, 128>>>(a, 256); {call} shift<<<2, 128>>>(b, 256);"))
    (stmt, _) = others(m)  # the call, then the final copy back
    assert (stmt.kind, stmt.direction, stmt.call) == (kind, direction, call.split("(")[0])
    assert stmt.dst.kind == "buffer" and stmt.dst.buffer == "b"


def test_unknown_library_call_is_opaque_and_orders_everything(snippet):
    m = snippet(HEAD + MAP + "extern void library_step(float*);\n" +
                main("scale<<<2, 128>>>(a, 256); library_step(b); shift<<<2, 128>>>(b, 256);"))
    (opaque, _) = others(m)
    assert opaque.kind == "opaque" and opaque.call == "library_step"
    uar = build_uar(m, barriers=False, reindexed_widths=False)
    touched = {d.buffer for d in uar.dependences if opaque.index in (d.src, d.dst)}
    assert {"a", "b"} <= touched  # both launches depend on it, whatever buffer they use


def test_host_only_calls_are_not_statements(snippet):
    m = snippet(HEAD + MAP + main('scale<<<2, 128>>>(a, 256); printf("%d\\n", (int)cudaGetLastError()); '
                                  "shift<<<2, 128>>>(b, 256);"))
    assert len(others(m)) == 1  # only the final copy


def test_own_function_that_launches_is_modelled_at_its_call(snippet):
    """main launches, and calls a helper of its own that launches too: the helper's launch
    is a launch at the call, between main's two, on the buffer the call passes (it was an
    opaque call ordering everything)."""
    m = snippet(HEAD + MAP + "__attribute__((noinline)) void again(float* p) { shift<<<2, 128>>>(p, 256); }\n" +
                main("scale<<<2, 128>>>(a, 256); again(a); shift<<<2, 128>>>(a, 256);"))
    assert len(others(m)) == 1  # only the final copy
    launches = [s for s in m.host.statements if s.kind == "launch"]
    assert [(s.line, s.through != ()) for s in launches] == [(8, False), (6, True), (8, False)], launches
    assert [a.buffer for s in launches for a in s.args if a.kind == "buffer"] == ["a", "a", "a"]
    assert any("again" in n and "modelled where they are called" in n for n in m.notes), m.notes


def test_own_function_that_launches_recursively_is_opaque_with_its_name(snippet):
    m = snippet(HEAD + MAP + "__attribute__((noinline)) void again(float* p, int k) { shift<<<2, 128>>>(p, 256);"
                " if (k > 0) again(p, k - 1); }\n" + main("scale<<<2, 128>>>(a, 256); again(a, 3); shift<<<2, 128>>>(a, 256);"))
    (opaque, _) = others(m)
    assert (opaque.kind, opaque.call, opaque.detail) == ("opaque", "again", "the function launches kernels")


def test_symbol_copy_writes_the_device_global(snippet):
    m = snippet(HEAD + "__constant__ float coef; __device__ float out[256];\n"
                "__global__ void use(int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = coef * i; }\n"
                "int main() { float c = 2.0f; float h[256];\n"
                "use<<<2, 128>>>(256); cudaMemcpyToSymbol(coef, &c, sizeof(float)); use<<<2, 128>>>(256);\n"
                "cudaMemcpyFromSymbol(h, out, sizeof(h)); return 0; }\n")
    assert m.device_globals == {"coef": 4, "out": 1024}
    to_symbol, from_symbol = others(m)
    assert (to_symbol.dst.buffer, to_symbol.src.kind) == ("coef", "host")
    assert from_symbol.src.buffer == "out"
    uar = build_uar(m, barriers=False, reindexed_widths=False)
    first, second = (i.statement.index for i in m.launches)
    assert any(d.src == first and d.dst == to_symbol.index and d.buffer == "coef" for d in uar.dependences)
    assert any(d.src == to_symbol.index and d.dst == second and d.buffer == "coef" for d in uar.dependences)
    assert any(d.src == first and d.dst == second and d.buffer == "out" and d.kind == "output"
               for d in uar.dependences)


def test_pointer_loaded_from_a_device_global_reaches_all_device_memory(snippet):
    m = snippet(HEAD + "__device__ float* gp; __device__ float g[256];\n"
                "__global__ void put(int n) { int i = blockIdx.x * 64 + threadIdx.x; gp[i] = 1.0f; }\n"
                "__global__ void get(int n) { int i = blockIdx.x * 64 + threadIdx.x; g[i] = g[(i + 1) % n]; }\n"
                "int main() { put<<<2, 64>>>(128); get<<<2, 64>>>(128); cudaDeviceSynchronize(); return 0; }\n")
    put = m.launches[0].kernel
    assert [a.buffer for a in put.accesses if a.kind == "store"] == [ANY_BUFFER]
    uar = build_uar(m, barriers=False, reindexed_widths=False)
    assert any(d.buffer == "g" and d.width == "global" for d in uar.dependences if d.src != d.dst)


@pytest.mark.parametrize("barrier", ["__syncthreads_count(v > 0)", "__syncthreads_and(v > 0)",
                                     "__syncthreads_or(v > 0)", "__syncthreads()"])
def test_every_barrier_counts_for_early_exits(snippet, barrier):
    m = snippet(HEAD + "__global__ void k(float* a, int n) { int i = threadIdx.x; if (i >= n) return;\n"
                f"  float v = a[i]; {barrier}; a[i] = v + 1.0f; }}\n" + main("k<<<1, 128>>>(a, 100);"))
    k = m.launches[0].kernel
    assert len(k.barriers) == 1 and not k.unsupported
    assert [e.reaches_barrier for e in k.early_exits] == [True]


def test_named_barrier_with_a_count_is_not_understood(snippet):
    m = snippet(HEAD + "__global__ void k(float* a) { a[threadIdx.x] = 1.0f; __barrier_sync_count(1, 64); }\n"
                + main("k<<<1, 128>>>(a);"))
    assert any("named or partial barrier" in u for u in m.launches[0].kernel.unsupported)


def test_overloads_are_different_kernels(snippet):
    m = snippet(HEAD + "__global__ void op(float* a, int k) { a[threadIdx.x] += k; }\n"
                "__global__ void op(float* a, float s) { a[threadIdx.x] *= s; }\n"
                + main("op<<<1, 128>>>(a, 3); op<<<1, 128>>>(b, 2.0f);"))
    first, second = (i.kernel for i in m.launches)
    assert first.mangled != second.mangled and first.ident != second.ident
    assert m.kernel_decls[first.mangled].params[1][1] == "int"
    assert m.kernel_decls[second.mangled].params[1][1] == "float"


SHIFTED = """
__global__ void produce(float* a, int n) { int t = blockIdx.x * blockDim.x + threadIdx.x; a[t + n] = t; }
__global__ void consume(const float* a, float* b, int n) { int t = blockIdx.x * blockDim.x + threadIdx.x; b[t] = a[t + n]; }
"""


@pytest.mark.parametrize("body", [
    # two launches pass different values the analysis does not know under one parameter name
    "int k = atoi(argv[1]), m = atoi(argv[2]); produce<<<2, 128>>>(a, k); consume<<<2, 128>>>(a, b, m);",
    # one value per iteration, a new one in each: the next iteration reads what another thread wrote
    "for (int i = 0; i < 3; i++) { int s = atoi(argv[i]); produce<<<2, 128>>>(a, s); consume<<<2, 128>>>(a, b, s); }",
])
def test_a_scalar_the_analysis_does_not_know_takes_any_value_at_each_launch(snippet, body):
    """``a[t + n]`` written with one unknown ``n`` and read with another is not a dependence
    of each thread on itself: an unknown scalar is not one parameter shared by every launch
    whose kernel names it so, nor by every iteration (that read ``t + n = t' + n`` as
    ``t = t'`` and fused the pair)."""
    m = snippet(HEAD + "#include <cstdlib>\n" + SHIFTED +
                "int main(int argc, char** argv) { float *a, *b; float h[256]; cudaMalloc(&a, 4096); "
                f"cudaMalloc(&b, 1024);\n{body}\n cudaMemcpy(h, b, 1024, cudaMemcpyDeviceToHost); return 0; }}\n")
    uar = build_uar(m, barriers=False, reindexed_widths=False)
    launches = {i.statement.index for i in m.launches}
    widths = {d.width for d in uar.dependences if d.buffer == "a" and d.kind == "flow"
              and d.src in launches and d.dst in launches}
    assert widths == {"global"}, uar.dependences


def test_what_joins_one_iteration_is_told_from_what_joins_iterations(snippet):
    """Row ``k + 1 + i`` updated by two launches of one iteration: thread-level there; the
    next iteration reads row ``k + 1`` (written by another thread, maybe another block):
    global over the loop. A fused launch runs one iteration's launches, so it respects the
    first; the iterations stay apart (``fusion.loop_iterations`` reads the second)."""
    m = snippet(HEAD + """
__global__ void eliminate(float* a, int k) { int row = k + 1 + blockIdx.x * blockDim.x + threadIdx.x; if (row < 512) a[row] -= 0.5f * a[k]; }
__global__ void normalise(float* a, int k) { int row = k + 1 + blockIdx.x * blockDim.x + threadIdx.x; if (row < 512) a[row] *= 0.75f; }
int main() { float* a; float h[512]; cudaMalloc(&a, 2048);
  for (int k = 0; k < 8; k++) { eliminate<<<4, 128>>>(a, k); normalise<<<4, 128>>>(a, k); }
  cudaMemcpy(h, a, 2048, cudaMemcpyDeviceToHost); return 0; }
""")
    uar = build_uar(m, barriers=False, reindexed_widths=False)
    first, second = (i.statement.index for i in m.launches)
    forward = [d for d in uar.dependences if (d.src, d.dst) == (first, second)]
    assert forward and {(d.width, d.iteration_width) for d in forward} == {("global", "thread")}, forward
    carried = [d for d in uar.dependences if (d.src, d.dst) == (second, first)]
    assert carried and all(not d.same_iteration and d.width == "global" for d in carried), carried
