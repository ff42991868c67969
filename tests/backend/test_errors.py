"""What the CPU backend cannot run is refused with one clear message and exit
status 2: unsupported features name file and line, build errors show clang's
diagnostics with file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import assert_clean_error, requires_clang, run_cpu

pytestmark = [pytest.mark.toolchain, requires_clang]

UNSUPPORTED = {
    "texture": (
        "#include <cuda_runtime.h>\n"
        "__global__ void k(cudaTextureObject_t t, float* o) {\n"
        "  o[0] = tex1Dfetch<float>(t, 0);\n"
        "}\n"
        "int main() { return 0; }\n",
        ":2: error: texture objects and references are unsupported by the CPU backend",
    ),
    "multi_grid": (
        "#include <cooperative_groups.h>\n"
        "namespace cg = cooperative_groups;\n"
        "__global__ void k(float* o) {\n"
        "  cg::this_multi_grid().sync();\n"
        "}\n"
        "int main() { return 0; }\n",
        ":4: error: multi-device cooperative launches (multi-grid groups) are unsupported by the "
        "CPU backend",
    ),
    "dynamic_parallelism": (
        "__global__ void child(int* o) { o[threadIdx.x] = 1; }\n"
        "__global__ void parent(int* o) {\n"
        "  if (threadIdx.x == 0)\n"
        "    child<<<1, 32>>>(o);\n"
        "}\n"
        "int main() { return 0; }\n",
        ":4: error: dynamic parallelism (a kernel launch in device code) is unsupported by the "
        "CPU backend",
    ),
    "inline_asm": (
        "__global__ void k(unsigned* o) {\n"
        "  unsigned v;\n"
        "  asm volatile(\"mov.u32 %0, %%laneid;\" : \"=r\"(v));\n"
        "  o[0] = v;\n"
        "}\n"
        "int main() { return 0; }\n",
        ":3: error: inline assembly (asm) is unsupported by the CPU backend",
    ),
}


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_unsupported_feature_exits_2_with_location(tmp_path, name):
    source, message = UNSUPPORTED[name]
    src = tmp_path / f"{name}.cu"
    src.write_text(source)
    proc = run_cpu(src)
    assert_clean_error(proc, f"{name}.cu{message}")


def test_syntax_error_reports_file_and_line(tmp_path):
    src = tmp_path / "broken.cu"
    src.write_text(
        "#include <cstdio>\n"
        "__global__ void k(float* o) {\n"
        "  o[threadIdx.x] = 1.0f\n"
        "}\n"
        "int main() { return 0; }\n")
    proc = run_cpu(src)
    assert_clean_error(proc, "cannot build", "broken.cu:3:", "expected ';'")


def test_missing_header_and_missing_file(tmp_path):
    src = tmp_path / "needs_cublas.cu"
    src.write_text("#include <cublas_v2.h>\nint main() { return 0; }\n")
    assert_clean_error(run_cpu(src), "needs_cublas.cu:1:", "'cublas_v2.h' file not found")
    assert_clean_error(run_cpu(tmp_path / "absent.cu"), "no such file")


@pytest.mark.parametrize("header, library", [("cub/cub.cuh", "CUB"), ("thrust/device_vector.h", "Thrust"),
                                             ("cuda/std/atomic", "libcu++ (the CUDA C++ standard library)")])
def test_cuda_cxx_libraries_are_named_as_what_the_backend_lacks(tmp_path, header, library):
    """A kernel using CUB (cub::BlockReduce), Thrust or libcu++: the message says which
    header, at which line, and which library the backend lacks, not clang's diagnostics."""
    src = tmp_path / "uses_library.cu"
    if header.startswith("cub/"):
        src.write_text((Path(__file__).resolve().parents[1] / "analysis" / "idioms" / "cub_block_reduce.cu").read_text())
        line = 3
    else:
        src.write_text(f"#include <cstdio>\n#include <{header}>\nint main() {{ return 0; }}\n")
        line = 2
    proc = run_cpu(src)
    assert_clean_error(proc, f"uses_library.cu:{line} includes <{header}>, a header of {library}, which the CPU "
                             "backend does not provide", "--backend gpu")
    assert "fatal error" not in proc.stdout + proc.stderr


def test_gpu_backend_without_gpu_says_so(tmp_path):
    from sirius.backend import gpu

    if gpu.gpu_unavailable_reason() is None:
        pytest.skip("this machine has a CUDA GPU")
    src = tmp_path / "p.cu"
    src.write_text("int main() { return 0; }\n")
    from conftest import sirius

    proc = sirius("run", str(src), "--backend", "gpu")
    assert_clean_error(proc, "no CUDA GPU available for --backend gpu")
    proc = sirius("verify", str(src), str(src), "--backend", "gpu")
    assert_clean_error(proc, "no CUDA GPU available for --backend gpu")
