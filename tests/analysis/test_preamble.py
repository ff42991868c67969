"""The headers every parse starts with, read from precompiled preambles: the same IR byte
for byte and the same index as from the headers; no preamble where a folder of the
program's could shadow a header it read, or where the flags break the headers; a preamble
clang cannot load is built again."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest

from sirius.analysis import preamble as preamble_module
from sirius.analysis.frontend import CompileJob, compile_program
from sirius.analysis.preamble import preamble_args
from sirius.analysis.source_index import build_source_index
from sirius.core.config import CompileFlags, resolve_toolchain
from sirius.core.errors import InputError

pytestmark = pytest.mark.toolchain

PROGRAM = """#include <cstdio>
#include <cmath>
__global__ void scale(float *x, float s) { x[threadIdx.x] = sqrtf(x[threadIdx.x]) * s; }
int main() {
  float *d;
  cudaMalloc(&d, 32 * sizeof(float));
  scale<<<1, 32>>>(d, 2.0f);
  cudaDeviceSynchronize();
  printf("done\\n");
  return 0;
}
"""


@pytest.fixture
def job(tmp_path, monkeypatch):
    monkeypatch.setenv("SIRIUS_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SIRIUS_FRONTEND_CACHE", raising=False)  # (where the suite keeps preambles)
    source = tmp_path / "program.cu"
    source.write_text(PROGRAM)
    return CompileJob(source, CompileFlags(), resolve_toolchain())


def _plain_ir(job: CompileJob, side: str) -> str:
    return subprocess.run(job.clang_command(side), capture_output=True, text=True, check=True).stdout


def _index_facts(job: CompileJob):
    """The index, less the list of files it read (from a preamble: those the program's own
    lines include)."""
    return dataclasses.replace(build_source_index(job), included=())


def test_the_ir_and_the_index_are_those_of_the_headers(job, monkeypatch):
    compiled, facts = compile_program(job, lambda: _index_facts(job))
    built = sorted(p.parent.name for p in (Path(job.path.parent) / "cache" / "pch").glob("*/preamble.pch"))
    assert len(built) == 3  # the index's, the device side's, the host side's
    assert preamble_module._preamble_folder() == Path(job.path.parent) / "cache" / "pch"
    assert compiled.device_ir == _plain_ir(job, "device") and compiled.host_ir == _plain_ir(job, "host")
    monkeypatch.setattr(preamble_module, "preamble_args", lambda job, kind: [])
    assert facts == _index_facts(job) and facts.launches  # the launch is indexed


def test_a_folder_of_the_program_holding_a_header_of_a_system_name_is_parsed_from_the_headers(job, tmp_path):
    assert preamble_args(job, "host")
    shadowing = tmp_path / "include"
    shadowing.mkdir()
    (shadowing / "cmath").write_text("// the program's own cmath\n")
    flags = CompileFlags(include_dirs=(str(shadowing),))
    assert preamble_args(CompileJob(job.path, flags, job.toolchain), "host") == []
    (shadowing / "cmath").rename(shadowing / "tables.h")  # a name no system header uses
    assert preamble_args(CompileJob(job.path, flags, job.toolchain), "host")


def test_a_preamble_clang_cannot_load_is_built_again(job):
    (header,) = [a for a in preamble_args(job, "device") if a.endswith(".pch")]
    Path(header).write_text("not a precompiled header\n")
    compiled, _ = compile_program(job)
    assert compiled.device_ir == _plain_ir(job, "device")
    assert not Path(header).exists() or Path(header).read_bytes()[:4] != b"not "
    assert preamble_args(job, "device") == ["-include-pch", header]  # built again


def test_flags_that_break_the_headers_give_clang_s_own_error_and_the_hint(tmp_path, monkeypatch):
    monkeypatch.setenv("SIRIUS_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SIRIUS_FRONTEND_CACHE", raising=False)
    source = tmp_path / "p.cu"
    source.write_text("__global__ void k(float *x) { x[threadIdx.x] = N; }\nint main() { return 0; }\n")
    job = CompileJob(source, CompileFlags(defines=("N=1024",)), resolve_toolchain())
    with pytest.raises(InputError, match="give the program's macro a longer name"):
        compile_program(job)
    assert preamble_args(job, "device") == [] and preamble_args(job, "host") == []
