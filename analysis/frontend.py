"""Frontend: one CUDA translation unit to device IR and host IR with clang-22.

Device IR (nvptx64, one ``--cuda-gpu-arch``) and host IR (x86-64) are both
compiled at ``-O1`` so that index arithmetic is in SSA form, with line
tables so every instruction maps back to a source line. Missing inputs or
tools and compile errors become :class:`SiriusError` with exit code 2 and
clang's own diagnostics (file:line) in the message.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from sirius.config import CompileFlags, Toolchain
from sirius.errors import InputError, SiriusError


@dataclass(frozen=True)
class CompileJob:
    """What to compile and how: the file, the user's flags, the tools."""

    path: Path
    flags: CompileFlags
    toolchain: Toolchain

    def common_args(self) -> list[str]:
        args = ["-x", "cuda", f"--cuda-path={self.toolchain.cuda_path}",
                f"--cuda-gpu-arch={self.flags.arch}", "-Wno-unknown-cuda-version"]
        args += self.flags.preprocessor_args()
        for d in self.toolchain.extra_include_dirs:
            args += ["-isystem", d]
        return args

    def clang_command(self, side: str) -> list[str]:
        assert side in ("device", "host")
        return [self.toolchain.clang, *self.common_args(), "-O1", "-gline-tables-only",
                "-S", "-emit-llvm", f"--cuda-{side}-only", str(self.path), "-o", "-"]

    def libclang_args(self) -> list[str]:
        return [*self.common_args(), "--cuda-host-only", "-resource-dir", self.toolchain.clang_resource_dir]


@dataclass(frozen=True)
class CompiledProgram:
    job: CompileJob
    source: str
    device_ir: str
    host_ir: str


def _run_clang(job: CompileJob, side: str) -> str:
    cmd = job.clang_command(side)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as err:
        raise SiriusError(f"error: cannot run {cmd[0]}: {err}") from None
    if proc.returncode != 0:
        diags = "\n".join(ln for ln in proc.stderr.splitlines()
                          if "CUDA version" not in ln and "-Wunknown-cuda-version" not in ln)
        raise InputError(f"error: {job.path} does not compile ({side} side):\n{diags.strip()}")
    return proc.stdout


def compile_program(job: CompileJob) -> CompiledProgram:
    """Compile ``job.path`` to device and host IR; raise a user-facing error on failure."""
    path = job.path
    if not path.exists():
        raise InputError(f"error: no such file: {path}")
    if not path.is_file():
        raise InputError(f"error: not a file: {path}")
    source = path.read_text(errors="replace")
    device_ir = _run_clang(job, "device")
    host_ir = _run_clang(job, "host")
    return CompiledProgram(job, source, device_ir, host_ir)
