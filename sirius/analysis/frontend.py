"""Frontend: one CUDA translation unit to device IR and host IR with clang-22.

Device IR (nvptx64, one ``--cuda-gpu-arch``) and host IR (x86-64) are both
compiled at ``-O1`` so that index arithmetic is in SSA form, with line
tables so every instruction maps back to a source line. Missing inputs or
tools and compile errors become :class:`SiriusError` with exit code 2 and
clang's own diagnostics (file:line) in the message.
"""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypeVar

from sirius.analysis.managed_variables import MANAGED_HEADER
from sirius.analysis.preamble import forget, pch_failure, preamble_args
from sirius.core.config import CompileFlags, Toolchain
from sirius.core.errors import InputError, SiriusError

T = TypeVar("T")


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
        # clang's CUDA mode ignores __managed__; the header makes it a device global
        # marked as managed (see managed_variables.py)
        args += ["-include", str(MANAGED_HEADER)]
        return args

    def compile_options(self, side: str) -> list[str]:
        """clang's options for the IR of one side, without the input and the output."""
        assert side in ("device", "host")
        return [*self.common_args(), "-O1", "-gline-tables-only", f"--cuda-{side}-only"]

    def clang_command(self, side: str, preamble: tuple[str, ...] = ()) -> list[str]:
        """The compile of one side to IR (``preamble``: the headers from a precompiled one)."""
        return [self.toolchain.clang, *self.compile_options(side), *preamble, "-S", "-emit-llvm",
                str(self.path), "-o", "-"]

    def libclang_args(self) -> list[str]:
        return [*self.common_args(), "--cuda-host-only", "-resource-dir", self.toolchain.clang_resource_dir]


@dataclass(frozen=True)
class CompiledProgram:
    job: CompileJob
    source: str
    device_ir: str
    host_ir: str


def _start_clang(job: CompileJob, side: str, preamble: tuple[str, ...] = ()) -> subprocess.Popen:
    cmd = job.clang_command(side, preamble)
    try:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as err:
        raise SiriusError(f"error: cannot run {cmd[0]}: {err}") from None


def _finish_clang(job: CompileJob, side: str, proc: subprocess.Popen, preamble: tuple[str, ...] = ()) -> str:
    out, err = proc.communicate()
    if proc.returncode != 0 and pch_failure(err, list(preamble)):  # a header changed since it was built
        forget(list(preamble))
        return _finish_clang(job, side, _start_clang(job, side))
    if proc.returncode != 0:
        diags = "\n".join(ln for ln in err.splitlines()
                          if "CUDA version" not in ln and "-Wunknown-cuda-version" not in ln)
        hint = _macro_collision(diags)
        raise InputError(f"error: {job.path} does not compile ({side} side):\n{diags.strip()}"
                         + (f"\n{hint}" if hint else ""))
    return out


def _compile_side(job: CompileJob, side: str) -> str:
    preamble = tuple(preamble_args(job, side))
    return _finish_clang(job, side, _start_clang(job, side, preamble), preamble)


def _macro_collision(diagnostics: str) -> str | None:
    """A hint when a macro from the command line breaks a system header (``-DN=1024``
    turns every parameter named N in cuda.h into a number)."""
    import re

    macro = re.search(r"<command line>:\d+:\d+: note: expanded from macro '(\w+)'", diagnostics)
    if macro is None or not re.search(r"^(?:/usr/|[^\n]*/include/)[^\n:]*:\d+:\d+: error", diagnostics, re.M):
        return None
    name = macro.group(1)
    return (f"hint: the macro -D{name} also replaces the name {name} inside the CUDA headers; "
            "give the program's macro a longer name")


def compile_program(job: CompileJob, while_compiling: Callable[[], T] | None = None
                    ) -> tuple[CompiledProgram, T | None]:
    """Compile ``job.path`` to device and host IR; raise a user-facing error on failure.

    The two clang processes run in parallel, and ``while_compiling`` (the
    libclang index, say) runs meanwhile; its result is returned beside the IR.
    """
    path = job.path
    if not path.exists():
        raise InputError(f"error: no such file: {path}")
    if not path.is_file():
        raise InputError(f"error: not a file: {path}")
    source = path.read_text(errors="replace")
    # each side loads its headers from a precompiled preamble (built here on first use)
    with ThreadPoolExecutor(max_workers=2) as sides:
        device = sides.submit(_compile_side, job, "device")
        host = sides.submit(_compile_side, job, "host")
        extra = while_compiling() if while_compiling is not None else None
        device_ir, host_ir = device.result(), host.result()
    return CompiledProgram(job, source, device_ir, host_ir), extra
