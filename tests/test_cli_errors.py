"""Bad inputs get one clear message and exit code 2, never a traceback."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

SIRIUS = str(Path(sys.executable).parent / "sirius")
ROOT = Path(__file__).resolve().parents[1]


def sirius(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([SIRIUS, *args], capture_output=True, text=True, cwd=cwd)


def assert_clean_failure(proc: subprocess.CompletedProcess, *needles: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    for n in needles:
        assert n in proc.stderr, proc.stderr


def test_missing_file():
    assert_clean_failure(sirius("analyze", "no/such/program.cu"), "no such file: no/such/program.cu")


@pytest.mark.toolchain
def test_syntax_error_reports_clang_diagnostic_with_file_and_line(tmp_path):
    bad = tmp_path / "broken.cu"
    bad.write_text("__global__ void k(float* a) {\n  a[threadIdx.x] = 1.0f\n}\nint main() { return 0; }\n")
    assert_clean_failure(sirius("analyze", str(bad)), "broken.cu:2:", "expected ';'")


@pytest.mark.toolchain
def test_program_without_launches(tmp_path):
    p = tmp_path / "idle.cu"
    p.write_text("__global__ void k(float* a) { a[threadIdx.x] = 1.0f; }\nint main() { return 0; }\n")
    assert_clean_failure(sirius("analyze", str(p)), "no kernel launches found in 'main'")


def test_missing_clang_names_the_fix():
    proc = sirius("analyze", str(ROOT / "cuda_inputs" / "elementwise_chain.cu"), "--clang", "/nonexistent/clang-22")
    assert_clean_failure(proc, "clang not found", "apt-get install clang-22")


def test_missing_cuda_tree_names_the_flag():
    proc = sirius("analyze", str(ROOT / "cuda_inputs" / "elementwise_chain.cu"), "--cuda-path", "/nonexistent/cuda")
    assert_clean_failure(proc, "CUDA toolkit not found at /nonexistent/cuda", "--cuda-path")


@pytest.mark.toolchain
def test_unknown_entry_function():
    proc = sirius("analyze", str(ROOT / "cuda_inputs" / "elementwise_chain.cu"), "--entry", "nowhere")
    assert_clean_failure(proc, "entry function 'nowhere' is not defined")


@pytest.mark.toolchain
def test_json_has_the_documented_keys(tmp_path):
    out = tmp_path / "a.json"
    proc = sirius("analyze", str(ROOT / "cuda_inputs" / "aliasing.cu"), "--json", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert {"kernels", "launches", "buffers"} <= set(data)
    assert [b["name"] for b in data["buffers"]] == ["d_buf", "d_out"]
    offsets = [(a["buffer"], a["offset_bytes"]) for a in data["launches"][1]["args"] if a["kind"] == "buffer"]
    assert offsets == [("d_buf", 16384), ("d_buf", 32768)]


def test_help_lists_commands():
    proc = sirius("--help")
    assert proc.returncode == 0 and "analyze" in proc.stdout


# ------------------------------------------------------------------ what a new user types

CHAIN = str(ROOT / "cuda_inputs" / "elementwise_chain.cu")


@pytest.mark.parametrize("output, needle", [
    ("/nonexistent/dir/x.cu", "the folder /nonexistent/dir does not exist"),
    ("/", "-o /: is a directory"),
])
def test_unusable_output_paths(output, needle):
    assert_clean_failure(sirius("optimize", CHAIN, "-o", output), needle)


@pytest.mark.parametrize("command", ["analyze", "optimize", "run"])
def test_a_directory_as_input(command, tmp_path):
    extra = ["-o", str(tmp_path / "o.cu")] if command == "optimize" else []
    assert_clean_failure(sirius(command, str(tmp_path), *extra), "is a directory, expected a CUDA source file")


@pytest.mark.parametrize("flags, needle", [
    (["--arch", "sm_999"], "--arch sm_999: not a GPU architecture"),
    (["-std=c++99"], "-std=c++99: CUDA sources are C++"),
    (["-x", "c"], "-x c: sirius reads CUDA sources only"),
])
def test_invalid_flag_values_are_named(flags, needle):
    assert_clean_failure(sirius("analyze", CHAIN, *flags), needle)


@pytest.mark.toolchain
def test_nvcc_spellings_are_accepted():
    proc = sirius("analyze", CHAIN, "-arch=sm_80", "-x", "cuda", "-O3", "-Xcompiler", "-fopenmp", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert "note: ignored nvcc options -O3 -fopenmp" in proc.stderr


@pytest.mark.toolchain
def test_the_nvcc_flags_of_real_builds_pass_through_optimize_run_and_verify(tmp_path):
    """Each is understood (the architecture of -gencode), kept for GPU builds (fast math, -G,
    -lineinfo, -rdc) or accepted with no effect on the analysis; a note names them once."""
    flags = ["--use_fast_math", "-lineinfo", "-G", "-gencode", "arch=compute_80,code=sm_80", "-rdc=true",
             "--expt-relaxed-constexpr", "-maxrregcount", "64"]
    out = tmp_path / "chain_opt.cu"
    proc = sirius("optimize", CHAIN, *flags, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "note: ignored nvcc option --expt-relaxed-constexpr" in proc.stderr
    assert "--use_fast_math -G -lineinfo -rdc=true -maxrregcount=64: for GPU builds only" in proc.stderr
    run = sirius("run", CHAIN, *flags)
    assert run.returncode == 0 and "reference: OK" in run.stdout, run.stderr
    verify = sirius("verify", CHAIN, str(out), *flags)
    assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stderr
    from sirius.commands.common import add_compile_flags, compile_flags_from_args
    parser = argparse.ArgumentParser()
    add_compile_flags(parser)
    parsed = compile_flags_from_args(parser.parse_args(flags))
    assert parsed.arch == "sm_80" and "-G" in parsed.nvcc_options and "--use_fast_math" in parsed.nvcc_options


def test_options_that_change_what_the_analysis_assumes_or_are_unknown_are_refused_in_one_line():
    stream = sirius("analyze", CHAIN, "--default-stream", "per-thread")
    assert stream.returncode == 2 and "legacy default stream" in stream.stderr
    unknown = sirius("optimize", CHAIN, "--bogus-flag", "-o", "-")
    assert unknown.returncode == 2 and unknown.stderr.strip().splitlines() == [
        "sirius optimize: error: unrecognized arguments: --bogus-flag (sirius optimize --help lists the options)"]


def test_an_option_typo_is_not_passed_to_the_program():
    proc = sirius("verify", CHAIN, CHAIN, "--rtl", "1e-3")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "unrecognized arguments: --rtl 1e-3; arguments for the program go after --" in proc.stderr


def test_no_corpus_program_uses_a_one_letter_size_macro():
    import re
    for program in (ROOT / "cuda_inputs").glob("*.cu"):
        assert not re.search(r"^#define [A-Z]\b", program.read_text(), re.M), program.name


@pytest.mark.toolchain
def test_a_corpus_size_can_be_set_from_the_command_line():
    proc = sirius("run", CHAIN, "-DNUM_ELEMS=1024")
    assert proc.returncode == 0 and "reference: OK" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.toolchain
def test_a_one_letter_macro_that_breaks_the_cuda_headers_gets_a_hint():
    assert_clean_failure(sirius("analyze", CHAIN, "-DN=1024"), "cuda.h",
                         "hint: the macro -DN also replaces the name N inside the CUDA headers")


@pytest.mark.toolchain
def test_bert_qkv_optimized_at_its_sizes_runs_the_original_launches_at_others(tmp_path):
    """The table's row: optimized with the default sizes, built with -DSEQ=64 ...: the fused
    launch's shapes are checked at run time and the original launches run instead."""
    bert = str(ROOT / "cuda_inputs" / "bert_qkv.cu")
    out = tmp_path / "bert_qkv.opt.cu"
    proc = sirius("optimize", bert, "-o", str(out))
    assert proc.returncode == 0 and "launches per run: 9 -> 1" in proc.stdout, proc.stdout + proc.stderr
    proc = sirius("verify", bert, str(out), "-DSEQ=64", "-DHIDDEN=128", "-DHEADS=2")
    assert proc.returncode == 0 and "result: all equal" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.toolchain
def test_verify_refuses_an_original_that_fails(tmp_path):
    p = tmp_path / "three.cu"
    p.write_text("#include <cstdio>\n__global__ void k(float* a) { a[threadIdx.x] = 1.0f; }\n"
                 "int main() { float* a; cudaMalloc(&a, 128); k<<<1, 32>>>(a); cudaDeviceSynchronize();\n"
                 "  printf(\"done\\n\"); return 3; }\n")
    assert_clean_failure(sirius("verify", str(p), str(p)), "the original program exited with status 3")


@pytest.mark.toolchain
def test_verify_ignores_a_timing_printed_on_the_line_after_its_label(tmp_path):
    def program(seconds: str) -> str:
        return ("#include <cstdio>\n__global__ void k(float* a) { a[threadIdx.x] = 2.0f; }\n"
                "int main() { float* a; float h[32]; cudaMalloc(&a, 128); k<<<1, 32>>>(a);\n"
                "  cudaMemcpy(h, a, 128, cudaMemcpyDeviceToHost);\n"
                f"  printf(\"GPU Time in seconds:\\n\"); printf(\"{seconds}\\n\"); printf(\"%f\\n\", h[3]);\n"
                "  return 0; }\n")
    a, b = tmp_path / "a.cu", tmp_path / "b.cu"
    a.write_text(program("0.000531"))
    b.write_text(program("0.000412"))
    proc = sirius("verify", str(a), str(b))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "timing line(s) ignored" in proc.stdout


@pytest.mark.toolchain
def test_optimize_to_standard_output(tmp_path):
    proc = sirius("optimize", CHAIN, "-o", "-")
    assert proc.returncode == 0, proc.stderr
    assert "__global__ void __launch_bounds__(256) sirius_fused_0(" in proc.stdout
    assert "launches per run: 4 -> 1" in proc.stderr
