"""The source rewrite of the CPU backend (pure Python: no compiler needed).

Inputs are snippets of preprocessed text; a line marker opens each so that
locations and user regions are known.
"""

from __future__ import annotations

import pytest

from sirius.backend.rewrite import LineMap, rewrite_preprocessed
from sirius.core.errors import InputError, UnsupportedError


def pre(body: str, name: str = "prog.cu") -> str:
    return f'# 1 "{name}"\n{body}'


def test_launch_becomes_a_call_with_a_lambda():
    out = rewrite_preprocessed(pre("void f() { k<<<g, b>>>(x, y); }\n"))
    assert ('::__sirius::launch(::__sirius::LaunchConfig(g, b), "k", [=](auto... __sirius_a) '
            "{ k(__sirius_a...); }, x, y);") in out.text
    assert out.kernels_launched == ["k"]


def test_launch_of_template_kernel_with_nested_angle_brackets():
    src = "void f() { ns::gemm<Tile<16, 8>, 4><<<dim3(m / 16, n), 256, 0, s>>>(a); }\n"
    out = rewrite_preprocessed(pre(src))
    assert "ns::gemm<Tile<16, 8>, 4>(__sirius_a...)" in out.text
    assert "LaunchConfig(dim3(m / 16, n), 256, 0, s)" in out.text
    assert out.kernels_launched == ["ns::gemm<Tile<16, 8>, 4>"]


def test_launch_without_arguments_and_over_several_lines_keeps_lines():
    src = "void f() {\n  k<<<\n    1,\n    2>>>(\n  );\n  int after = __LINE__;\n}\n"
    out = rewrite_preprocessed(pre(src))
    assert "{ k(__sirius_a...); }\n  );" in out.text
    assert out.text.count("\n") == pre(src).count("\n")
    lines = out.text.splitlines()
    assert lines[6].strip() == "int after = __LINE__;"


def test_shift_operators_and_strings_are_not_launches():
    src = 'void f() { int a = b >> 3 << 2; const char* s = "k<<<1,1>>>()"; }\n'
    out = rewrite_preprocessed(pre(src))
    assert out.kernels_launched == []
    assert '"k<<<1,1>>>()"' in out.text


def test_static_shared_becomes_thread_local_and_poisoned():
    src = "void k() {\n  __shared__ __align__(16) float a[16][4], *p;\n  a[0][0] = 1;\n}\n"
    out = rewrite_preprocessed(pre(src))
    assert "alignas(16) static thread_local float a[16][4], *p;" in out.text
    assert "shared_fresh(__builtin_addressof(a), sizeof(a), &__sirius_sg0[0]);" in out.text
    assert "shared_fresh(__builtin_addressof(p), sizeof(p), &__sirius_sg0[1]);" in out.text
    assert out.text.splitlines()[3].strip() == "a[0][0] = 1;"


def test_shared_at_namespace_scope_registers_for_poisoning():
    out = rewrite_preprocessed(pre("__shared__ int table[64];\nvoid k() {}\n"))
    assert "static thread_local int table[64];" in out.text
    assert "SharedRegistration" in out.text and "shared_fresh" not in out.text


def test_extern_shared_is_a_reference_to_dynamic_shared_memory():
    src = "void k() { extern __shared__ volatile float sm[]; sm[0] = 1; }\n"
    out = rewrite_preprocessed(pre(src))
    assert ("volatile float (&sm)[] = *reinterpret_cast<volatile float (*)[]>"
            "(::__sirius::dynamic_shared());") in out.text
    at_file = rewrite_preprocessed(pre("extern __shared__ unsigned char buf[];\n"))
    assert "static thread_local unsigned char (&buf)[]" in at_file.text


def test_cuda_keywords_become_plain_cpp_keeping_columns():
    src = ('extern "C" __global__ void __launch_bounds__(256) k(float* __restrict__ p) {}\n'
           "__device__ __forceinline__ int f() { return 1; }\n"
           "struct __align__(8) S { int x; };\n"
           "__attribute__((__noinline__)) __noinline__ void g();\n")
    out = rewrite_preprocessed(pre(src)).text.splitlines()
    assert out[1] == 'extern "C"            void                        k(float* __restrict__ p) {}'
    assert out[2].split() == ["inline", "int", "f()", "{", "return", "1;", "}"]
    assert "struct __attribute__((aligned(8))) S" in out[3]
    assert out[4] == "__attribute__((__noinline__)) __attribute__((noinline)) void g();"


@pytest.mark.parametrize(
    "snippet, message",
    [
        ("float f(cudaTextureObject_t t) { return tex1Dfetch<float>(t, 0); }",
         "texture objects"),
        ("void f() { auto g = cooperative_groups::this_multi_grid(); }", "multi-grid groups"),
        ('void f() { asm("trap;"); }', "inline assembly"),
        ("__device__ void f() { k<<<1, 1>>>(); }", "dynamic parallelism"),
        ("__global__ void f() { if (1) { k<<<1, 1>>>(); } }", "dynamic parallelism"),
    ],
)
def test_unsupported_constructs_name_file_and_line(snippet, message):
    with pytest.raises(UnsupportedError) as err:
        rewrite_preprocessed(pre("\n" + snippet + "\n", name="model.cu"))
    assert str(err.value).startswith("model.cu:2: error: ")
    assert message in str(err.value)
    assert err.value.exit_code == 2


def test_host_device_function_may_launch_and_system_headers_are_not_checked():
    ok = '__host__ __device__ void f() { k<<<1, 1>>>(); }\n'
    rewrite_preprocessed(pre(ok))
    system = '# 1 "/usr/include/x.h" 1 3\nvoid g() { asm("nop"); }\n# 2 "prog.cu" 2\nint x;\n'
    assert "asm" in rewrite_preprocessed(pre(system)).text


def test_unreadable_launch_is_an_input_error():
    with pytest.raises(InputError) as err:
        rewrite_preprocessed(pre("void f() { k<<<1, 1>>> x; }\n"))
    assert "prog.cu:1" in str(err.value)


def test_line_map_follows_markers():
    text = '# 1 "a.cu"\nx\n# 1 "/usr/include/h.h" 1 3\ny\n# 3 "a.cu" 2\nz\n'
    lines = LineMap(text)
    assert lines.location(text.index("x")) == ("a.cu", 1)
    assert lines.location(text.index("z")) == ("a.cu", 3)
    assert not lines.is_user(text.index("y"))
    assert lines.is_user(text.index("z"))


def test_launch_bounds_travel_with_the_launch():
    src = ('extern "C" __global__ void __launch_bounds__(128, 2) k(int* p);\n'
           "template <int B> __global__ void __launch_bounds__(B) t(int* p) {}\n"
           "void f(int* p) { k<<<1, 256>>>(p); g<<<1, 1>>>(p); t<64><<<1, 64>>>(p); }\n")
    out = rewrite_preprocessed(pre(src)).text
    assert 'LaunchConfig(1, 256).max_threads(128), "k"' in out
    assert 'LaunchConfig(1, 1), "g"' in out
    assert 'LaunchConfig(1, 64), "t<64>"' in out  # a dependent bound is not checked


def test_kernel_cast_to_an_untyped_pointer_is_recorded_with_its_type():
    src = ("__global__ void __launch_bounds__(128) k(float* x) {}\n"
           "namespace ns { template <typename T> __global__ void t(T* x) {} }\n"
           "void host(float* p);\n"
           "void f() {\n"
           "  cudaLaunchKernel((void*)k, 1, 1, a);\n"
           "  g((const void *)&ns::t<float>, reinterpret_cast<const void*>(k), (void*)(k), (void*)host,\n"
           "    \"(void*)k\", (void*)p);\n"
           "}\n")
    out = rewrite_preprocessed(pre(src))
    assert 'cudaLaunchKernel(::__sirius::kernel_address(k, "k"), 1, 1, a);' in out.text
    assert ('g(::__sirius::kernel_address(&ns::t<float>, "ns::t<float>"), '
            '::__sirius::kernel_address(k, "k"), ::__sirius::kernel_address(k, "k"), (void*)host,') in out.text
    assert '"(void*)k", (void*)p);' in out.text  # literals and what is no kernel stay
    assert "cudaLaunchKernel(::__sirius::kernel_address" in out.text.splitlines()[5]  # lines kept


def test_managed_definitions_register_as_managed_memory():
    src = ("__managed__ float acc[16], total = 0;\n"
           "namespace ns { static __device__ __managed__ int hits; }\n"
           "extern __managed__ int elsewhere;\n"
           "void f() {}\n")
    out = rewrite_preprocessed(pre(src))
    lines = [" ".join(line.split()) for line in out.text.splitlines()]
    assert lines[1].endswith('float acc[16], total = 0; static ::__sirius::ManagedVariable __sirius_managed0_0(acc, '
                             '"acc"); static ::__sirius::ManagedVariable __sirius_managed0_1(total, "total");')
    assert 'static int hits; static ::__sirius::ManagedVariable __sirius_managed1_0(hits, "hits"); }' in lines[2]
    assert "ManagedVariable" not in lines[3]
    assert out.text.count("\n") == pre(src).count("\n")
