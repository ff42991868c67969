"""CPU execution backend: build a CUDA program as a CPU program and run it.

Build (``build_program``):

1. preprocess the ``.cu`` file as C++ with ``clang -E``, the backend's CUDA
   headers (``sirius/runtime/cpu/include``) first on the include path and its
   prelude ``sirius_cpu.h`` included before the first line;
2. rewrite what macros cannot express (``rewrite.rewrite_preprocessed``):
   launches, ``__shared__`` declarations, CUDA keywords; refuse unsupported
   features with file and line;
3. compile the result with ``-O1`` and link it with the runtime
   (``sirius/runtime/cpu/src/runtime.cpp``, compiled once per toolchain).

Binaries are cached under ``.sirius-cache/cpu`` (``$SIRIUS_CACHE``), keyed by a
hash of the rewritten program, the flags, the runtime sources and the compiler
version, so an unchanged program (headers included) is not rebuilt.

Run (``run_program``): execute the binary with the program's arguments; the
runtime's own errors (divergent barrier, deadlock, invalid memory access in a
kernel, unsupported feature) end the program with exit status 2 and a message
on stderr, also written to the file named by ``SIRIUS_ERROR_FILE``.

Errors of the build (clang diagnostics with file:line) raise
``SiriusError``/``InputError`` with exit code 2.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from sirius.backend.rewrite import rewrite_preprocessed
from sirius.core.config import CompileFlags, cache_folder, find_clang, tool_answer
from sirius.core.errors import InputError, SiriusError

RUNTIME_DIR = Path(__file__).resolve().parent.parent / "runtime" / "cpu"
INCLUDE_DIR = RUNTIME_DIR / "include"
RUNTIME_SOURCE = RUNTIME_DIR / "src" / "runtime.cpp"

# Code generation flags for programs and the runtime alike.
#  -O1                    builds a model's program about five times faster than -O2 (seq2seq
#                         at full size: 4.6 s against 21 s) and ran it as fast; no level
#                         reorders floating point arithmetic without fast-math, so the
#                         results are those of -O2
#  -fexcess-precision=16  every __half operation rounds to half, as on the GPU
#  -ffp-contract=off      no fused multiply-add the source did not ask for, so
#                         results do not depend on the host CPU
#  -fno-strict-aliasing   CUDA code type-puns through pointer casts freely
CODEGEN_FLAGS = ["-O1", "-fexcess-precision=16", "-ffp-contract=off", "-fno-strict-aliasing",
                 "-pthread"]
MIN_STD = "c++17"
DIAGNOSTIC_LINES = 40


@dataclass(frozen=True)
class Build:
    """A program built for the CPU backend."""

    source: Path
    binary: Path
    cached: bool
    seconds: float
    kernels_launched: tuple[str, ...] = ()


@dataclass
class RunResult:
    """What one run of a built program did."""

    returncode: int
    seconds: float
    stdout: str = ""
    stderr: str = ""
    runtime_error: str = ""  # message of a fatal runtime error, if any
    signal_name: str = ""  # set when the program was killed by a signal
    timed_out: bool = False
    extra: dict = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        """True when the run ended in an error of the backend's runtime, a
        signal or a timeout (not merely a nonzero exit status)."""
        return bool(self.runtime_error or self.signal_name or self.timed_out)

    @property
    def failure_text(self) -> str:
        """Why the run failed, in words."""
        if self.timed_out:
            return f"timed out after {self.seconds:.1f} s"
        if self.runtime_error:
            return self.runtime_error
        if self.signal_name:
            return f"terminated by {self.signal_name}"
        return f"exit status {self.returncode}"


def cache_root() -> Path:
    return cache_folder()


def _std_flag(std: str | None) -> str:
    """The -std to use: the user's if it is at least C++17, else C++17."""
    if not std:
        return MIN_STD
    s = std.lower().replace("gnu++", "c++")
    digits = s.removeprefix("c++")
    order = {"98": 0, "03": 1, "11": 2, "0x": 2, "14": 3, "1y": 3, "17": 4, "1z": 4, "20": 5,
             "2a": 5, "23": 6, "2b": 6, "26": 7, "2c": 7}
    if digits not in order:
        raise InputError(f"error: unknown C++ standard '{std}'")
    return std if order[digits] >= order["17"] else MIN_STD


def _clang_version(clang: str) -> str:
    return tool_answer(clang, "--version")


def _runtime_hash() -> str:
    h = hashlib.sha256()
    for path in sorted(RUNTIME_DIR.rglob("*")):
        if path.is_file():
            h.update(str(path.relative_to(RUNTIME_DIR)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def _short_diagnostics(stderr: str) -> str:
    lines = [l for l in stderr.splitlines() if l.strip()]
    if len(lines) > DIAGNOSTIC_LINES:
        lines = lines[:DIAGNOSTIC_LINES] + [f"... ({len(lines) - DIAGNOSTIC_LINES} more lines)"]
    return "\n".join(lines)


def _atomic_move(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    os.replace(src, dst)


def _runtime_object(clang: str, cache: Path) -> Path:
    """The runtime compiled once per runtime version and compiler."""
    key = hashlib.sha256(
        (_runtime_hash() + _clang_version(clang) + " ".join(CODEGEN_FLAGS)).encode()
    ).hexdigest()[:24]
    obj = cache / f"runtime-{key}.o"
    if obj.is_file():
        return obj
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        out = Path(tmp) / "runtime.o"
        cmd = [clang, "--driver-mode=g++", f"-std={MIN_STD}", *CODEGEN_FLAGS, "-w",
               f"-I{INCLUDE_DIR}", "-c", str(RUNTIME_SOURCE), "-o", str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SiriusError(
                "error: cannot compile the CPU backend runtime:\n" + _short_diagnostics(proc.stderr)
            )
        _atomic_move(out, obj)
    return obj


def preprocess(source: Path, flags: CompileFlags, clang: str) -> str:
    """The program after clang's preprocessor, with the backend's headers."""
    cmd = [clang, "-E", "-x", "c++", f"-std={_std_flag(flags.std)}", f"-I{INCLUDE_DIR}",
           "-include", "sirius_cpu.h"]
    cmd += [f"-I{d}" for d in flags.include_dirs]
    cmd += [f"-D{d}" for d in flags.defines]
    cmd.append(str(source))
    # bytes that are not UTF-8 (a Latin-1 comment) go through as they are
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="surrogateescape")
    if proc.returncode != 0:
        lacking = missing_library(proc.stderr)
        raise InputError(
            f"error: cannot build {source} for the CPU backend: "
            + (lacking if lacking else "\n" + _short_diagnostics(proc.stderr))
        )
    return proc.stdout


# CUDA's C++ libraries, by the folder their headers are included from
_CUDA_LIBRARIES = {"cub": "CUB", "thrust": "Thrust", "cuda": "libcu++ (the CUDA C++ standard library)",
                   "cooperative_groups": "cooperative groups"}
_NOT_FOUND = re.compile(r"^(?P<file>[^\n:]+):(?P<line>\d+):\d+: fatal error: '(?P<header>[^']+)' file not found", re.M)


def missing_library(stderr: str) -> str | None:
    """What the CPU backend lacks, when the program includes a header of one of CUDA's C++
    libraries (CUB, Thrust, libcu++) that it does not provide: the file and line of the
    include, the header and the library (None: the failure is another one)."""
    found = _NOT_FOUND.search(stderr)
    if found is None:
        return None
    header = found["header"]
    library = _CUDA_LIBRARIES.get(header.split("/")[0]) if "/" in header else None
    if library is None:
        return None
    return (f"{Path(found['file']).name}:{found['line']} includes <{header}>, a header of {library}, which the "
            "CPU backend does not provide (it provides the CUDA runtime API, the device built-ins and "
            "cooperative_groups.h; the libraries' device code is written in inline PTX assembly, which it cannot "
            "run); run it on a GPU (--backend gpu)")


def build_program(source: str | os.PathLike, flags: CompileFlags = CompileFlags(), *,
                  clang: str | None = None, rebuild: bool = False) -> Build:
    """Build ``source`` for the CPU backend (cached); returns the binary.

    Raises InputError/UnsupportedError (exit 2) with file:line for programs the
    backend cannot build, ToolchainError when clang is missing.
    """
    start = time.perf_counter()
    src = Path(source)
    if not src.is_file():
        raise InputError(f"error: no such file: {source}")
    clang = find_clang(clang)
    text = preprocess(src, flags, clang)
    rewritten = rewrite_preprocessed(text)
    std = _std_flag(flags.std)
    cache = cache_root() / "cpu"
    runtime = _runtime_object(clang, cache)
    key = hashlib.sha256(
        "\0".join([rewritten.text, std, " ".join(CODEGEN_FLAGS), runtime.name,
                   _clang_version(clang)]).encode("utf-8", "surrogateescape")
    ).hexdigest()[:24]
    binary = cache / key / "program"
    if binary.is_file() and not rebuild:
        return Build(src, binary, True, time.perf_counter() - start,
                     tuple(rewritten.kernels_launched))
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        ii = Path(tmp) / (src.stem + ".ii")
        ii.write_text(rewritten.text, errors="surrogateescape")
        out = Path(tmp) / "program"
        cmd = [clang, "--driver-mode=g++", "-x", "c++-cpp-output", f"-std={std}", *CODEGEN_FLAGS,
               "-w", "-ferror-limit=10", str(ii), "-x", "none", str(runtime), "-o", str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
        if proc.returncode != 0:
            raise InputError(
                f"error: cannot build {source} for the CPU backend:\n"
                + _short_diagnostics(proc.stderr)
            )
        _atomic_move(ii, binary.parent / ii.name)  # kept beside the binary, for reading
        _atomic_move(out, binary)
    return Build(src, binary, False, time.perf_counter() - start,
                 tuple(rewritten.kernels_launched))


def _signal_name(returncode: int) -> str:
    if returncode >= 0:
        return ""
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def run_program(binary: str | os.PathLike, args: list[str] | tuple[str, ...] = (), *,
                capture: bool = False, timeout: float | None = None, threads: int | None = None,
                dump: str | os.PathLike | None = None,
                env: dict[str, str] | None = None) -> RunResult:
    """Run a program built by ``build_program``.

    ``capture`` collects stdout/stderr (else they go to this process's);
    ``dump`` names the file receiving every device-to-host copy (for
    ``sirius verify``); ``threads`` sets the number of worker OS threads.
    """
    environ = dict(os.environ if env is None else env)
    if threads is not None:
        environ["SIRIUS_CPU_THREADS"] = str(threads)
    if dump is not None:
        environ["SIRIUS_DUMP"] = str(dump)
    else:
        environ.pop("SIRIUS_DUMP", None)
    with tempfile.TemporaryDirectory(prefix="sirius-run-") as tmp:
        error_file = Path(tmp) / "error.txt"
        environ["SIRIUS_ERROR_FILE"] = str(error_file)
        start = time.perf_counter()
        pipe = subprocess.PIPE if capture else None
        proc = subprocess.Popen([str(binary), *args], stdout=pipe, stderr=pipe, env=environ,
                                text=capture, errors="replace" if capture else None)
        timed_out = False
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            timed_out = True
        seconds = time.perf_counter() - start
        runtime_error = error_file.read_text().strip() if error_file.is_file() else ""
    return RunResult(
        returncode=proc.returncode,
        seconds=seconds,
        stdout=out or "",
        stderr=err or "",
        runtime_error=runtime_error,
        signal_name="" if timed_out else _signal_name(proc.returncode),
        timed_out=timed_out,
    )
