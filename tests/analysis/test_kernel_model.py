"""Kernel model on tiny kernels: one feature per test, keep-cases and change-cases."""

import islpy as isl
import pytest

from sirius.analysis.kernel_model import ANY_BUFFER

from .conftest import maps_of, same_map

pytestmark = pytest.mark.toolchain

HEAD = "#include <cuda_runtime.h>\n"


def launch_main(body: str, allocs: str = "float *a, *b; cudaMalloc(&a, 1 << 20); cudaMalloc(&b, 1 << 20);") -> str:
    return f"int main() {{ {allocs} {body} cudaDeviceSynchronize(); return 0; }}\n"


def test_three_dimensional_indices(snippet):
    m = snippet(HEAD + """
__global__ void k3(float* a) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  int z = blockIdx.z * blockDim.z + threadIdx.z;
  a[(z * 16 + y) * 16 + x] = 1.0f;
}
""" + launch_main("k3<<<dim3(2, 2, 2), dim3(8, 8, 8)>>>(a);"))
    (store,) = maps_of(m, 0, "store")
    assert same_map(store, "{ [bx, by, bz, tx, ty, tz] -> a[256(8bz + tz) + 16(8by + ty) + 8bx + tx] : "
                           "0 <= bx, by, bz < 2 and 0 <= tx, ty, tz < 8 }".replace("256(", "256*(").replace("16(", "16*("))


def test_dynamic_shared_memory_and_launch_shmem(snippet):
    m = snippet(HEAD + """
__global__ void dyn(float* a) {
  extern __shared__ float buf[];
  buf[threadIdx.x] = a[threadIdx.x];
  __syncthreads();
  a[threadIdx.x] = buf[blockDim.x - 1 - threadIdx.x];
}
""" + launch_main("dyn<<<1, 128, 128 * sizeof(float)>>>(a);"))
    k = m.launches[0].kernel
    assert [(s.name, s.dynamic) for s in k.shared] == [("buf", True)]
    assert m.launches[0].statement.shmem.constant_value() == 512
    reads = maps_of(m, 0, "load", "buf")
    assert same_map(reads[0], "{ [bx, tx] -> buf[127 - tx] : bx = 0 and 0 <= tx < 128 }")


def test_atomics_are_accesses(snippet):
    m = snippet(HEAD + """
__global__ void hist(const int* in, int* bins, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&bins[in[i] & 15], 1);
}
""" + launch_main("hist<<<4, 256>>>((const int*)a, (int*)b, 1000);"))
    atomics = [mp for mp in m.launches[0].maps if mp.access.kind == "atomic"]
    assert atomics and atomics[0].buffer == "b"


def test_pointer_loaded_from_memory_may_alias_every_buffer(snippet):
    m = snippet(HEAD + """
__global__ void indirect(float** table, float* out) {
  out[threadIdx.x] = table[0][threadIdx.x];
}
""" + launch_main("indirect<<<1, 32>>>((float**)a, b);"))
    unknown = [a for a in m.launches[0].kernel.accesses if a.reason == "pointer of unknown provenance"]
    assert {a.buffer for a in unknown} == {ANY_BUFFER}  # any device memory, not only the parameters' buffers


def test_an_argument_passed_by_value_is_no_device_memory(snippet):
    """A struct argument (a dim3, a parameter block) is the kernel's own copy: reading its
    fields touches no device memory; a pointer it holds still may point anywhere."""
    m = snippet(HEAD + """
struct Window { int start; float* spill; };
__global__ void windowed(float* a, const dim3 shape, Window w) {
  int i = w.start + blockIdx.x * shape.x + threadIdx.x;
  a[i] = 1.0f;
  w.spill[threadIdx.x] = 2.0f;
}
""" + launch_main("Window w = {4, b}; windowed<<<2, 64>>>(a, dim3(64), w);"))
    k = m.launches[0].kernel
    assert [p.is_pointer for p in k.params] == [True, False, False]
    assert {(a.kind, a.buffer) for a in k.accesses} == {("store", "a"), ("store", ANY_BUFFER)}, k.accesses


def test_uniform_loop_exit_is_not_an_early_exit(snippet):
    m = snippet(HEAD + """
__global__ void tiles(float* a, int k) {
  __shared__ float t[64];
  float acc = 0;
  for (int j = 0; j < k; j += 64) {
    t[threadIdx.x] = a[j + threadIdx.x];
    __syncthreads();
    acc += t[63 - threadIdx.x];
    __syncthreads();
  }
  a[threadIdx.x] = acc;
}
""" + launch_main("tiles<<<1, 64>>>(a, 256);"))
    k = m.launches[0].kernel
    assert len(k.barriers) == 2 and not k.early_exits


def test_divergent_return_without_later_barrier_is_only_a_guard(snippet):
    m = snippet(HEAD + """
__global__ void guarded(float* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  a[i] = 2.0f * a[i];
}
""" + launch_main("guarded<<<4, 256>>>(a, 1000);"))
    assert not m.launches[0].kernel.early_exits  # no barrier waits on the leaving threads
    (store,) = maps_of(m, 0, "store")
    assert isl.Map(store).range().is_equal(isl.Set("{ a[i] : 0 <= i < 1000 }"))


def test_strided_loop_becomes_affine_at_launch(snippet):
    m = snippet(HEAD + """
__global__ void strided(float* a, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    a[i] += 1.0f;
}
""" + launch_main("strided<<<2, 128>>>(a, 1000);"))
    (store,) = maps_of(m, 0, "store")
    rng = isl.Map(store).range()
    assert rng.is_equal(isl.Set("{ a[i] : 0 <= i < 1000 }"))


def test_vector_types_step_by_their_size(snippet):
    m = snippet(HEAD + """
__global__ void vec(float4* a) {
  float4 v = a[threadIdx.x];
  v.x += v.w;
  a[threadIdx.x] = v;
}
""" + launch_main("vec<<<1, 32>>>((float4*)a);"))
    for mp in m.launches[0].maps:
        assert mp.exact
        assert isl.Map(mp.isl).range().is_subset(isl.Set("{ a[i] : 0 <= i < 128 }"))


def test_warp_shuffles_are_reported(snippet):
    m = snippet(HEAD + """
__global__ void warpsum(float* a) {
  float v = a[threadIdx.x];
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
  if (threadIdx.x == 0) a[0] = v;
}
""" + launch_main("warpsum<<<1, 32>>>(a);"))
    assert m.launches[0].kernel.warp_ops



def test_warp_operations_record_the_lanes_their_masks_name(snippet):
    m = snippet(HEAD + """
__global__ void half(float* a) {
  float v = a[threadIdx.x];
  unsigned mask = __activemask();
  v += __shfl_down_sync(mask, v, 8);
  v += __shfl_xor_sync(0xffffu, v, 1, 16);
  v += __shfl_down_sync(0xffffffffu, v, 4);
  v += __shfl_down_sync(__ballot_sync(mask, v > 0), v, 2);
  a[threadIdx.x] = v;
}
""" + launch_main("half<<<1, 16>>>(a);"))
    masks = m.launches[0].kernel.warp_masks
    assert [(w.active, w.bits) for w in masks] == [(True, None), (False, 0xFFFF), (False, 0xFFFFFFFF), (True, None),
                                                   (False, None)]
    assert [w.within(16) for w in masks] == [True, True, False, True, False]  # the ballot's answer: not known


def test_a_load_through_a_select_of_two_pointers_reads_both(snippet):
    # clang writes `c ? p[i - 32] : q[i]` as a select of the two addresses: each array is read,
    # neither surely (no byte of either is known to be read)
    m = snippet(HEAD + """
__global__ void concat(float* out, const float* lo, const float* hi) {
  if (threadIdx.x < 64) out[threadIdx.x] = 32 <= threadIdx.x ? hi[threadIdx.x - 32] : lo[threadIdx.x];
}
""" + launch_main("concat<<<1, 128>>>(a, b, b + 64);"))
    loads = [a for a in m.launches[0].kernel.accesses if a.kind == "load"]
    assert sorted(a.buffer for a in loads) == ["hi", "lo"] and ANY_BUFFER not in [a.buffer for a in loads]
    assert not any(a.exact for a in loads)

ASM_CASES = [  # (the statement, the warp operation it is, why it is not understood)
    # register reads that touch no memory: timers and where a thread runs are what they were
    ('asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(w));', None, None),
    ('asm("mov.u32 %0, %%smid;" : "=r"(v));', None, None),
    ('asm volatile("mov.u32 %0, %%clock;" : "=r"(v) :: "memory");', None, None),
    # the lane in the warp: what a fused kernel must keep as warp operations keep it
    ('asm volatile("mov.u32 %0, %%laneid;" : "=r"(v));', "laneid", None),
    ('asm("mov.u32 %0, %%lanemask_lt;" : "=r"(v));', "lanemask_lt", None),
    # indices a fused kernel renumbers, and memory: not understood
    ('asm("mov.u32 %0, %%tid.x;" : "=r"(v));', None, "mov.u32 $0, %tid.x;"),
    ('asm("mov.u32 %0, %%ctaid.x;" : "=r"(v));', None, "mov.u32 $0, %ctaid.x;"),
    ('asm volatile("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(a));', None, "ld.global.u32 $0, [$1];"),
]


def test_inline_assembly_is_understood_where_it_touches_no_memory(snippet):
    kernels = "".join(f"""
__global__ void asm{n}(unsigned long long* a) {{
  unsigned long long w = 0; unsigned v = 0;
  {statement}
  a[threadIdx.x] = v + w;
}}""" for n, (statement, _, _) in enumerate(ASM_CASES))
    launches = " ".join(f"asm{n}<<<1, 32>>>((unsigned long long*)a);" for n in range(len(ASM_CASES)))
    m = snippet(HEAD + kernels + "\n" + launch_main(launches))
    for inst, (statement, warp_op, unsupported) in zip(m.launches, ASM_CASES):
        kernel = inst.kernel
        assert [op for op, _ in kernel.warp_ops] == ([warp_op] if warp_op else []), statement
        line = kernel.warp_ops[0][1] if warp_op else None
        assert line is None or line == HEAD.count("\n") + 4 + 5 * int(kernel.name[3:]), statement
        expected = () if unsupported is None else \
            (f"inline assembly at line {HEAD.count(chr(10)) + 4 + 5 * int(kernel.name[3:])}: {unsupported}",)
        assert kernel.unsupported == expected, (statement, kernel.unsupported)


def test_pointer_swap_in_host_loop_is_one_of_two_buffers(snippet):
    m = snippet(HEAD + """
__global__ void step(const float* in, float* out) { out[threadIdx.x] = in[threadIdx.x] + 1.0f; }
""" + launch_main("float* src = a; float* dst = b; for (int s = 0; s < 4; ++s) { step<<<1, 64>>>(src, dst); "
                  "float* t = src; src = dst; dst = t; }"))
    args = dict(m.launches[0].bindings)
    assert args["in"].kind == "buffers" and {b for b, _ in args["in"].options} == {"a", "b"}
