"""GPU execution backend: build a CUDA program with nvcc and run it on a GPU.

The program is built as is, with one header included before its first line
(``sirius/runtime/gpu/sirius_gpu_dump.h``) that records every device-to-host
copy in the file named by ``SIRIUS_DUMP``, in the format the CPU backend
writes, so ``sirius verify --backend gpu`` compares the same things.

Needs nvcc (``--cuda-path``, ``$SIRIUS_CUDA_PATH``, ``$CUDA_HOME`` or
``/usr/local/cuda``) and a CUDA GPU: without one the backend says so and the
command exits with status 2.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from sirius.backend.cpu import Build, _short_diagnostics, cache_root
from sirius.core.config import CompileFlags
from sirius.core.errors import InputError, SiriusError
from sirius.toolchain import find_nvcc

DUMP_HEADER = Path(__file__).resolve().parent.parent / "runtime" / "gpu" / "sirius_gpu_dump.h"
NO_GPU = "error: no CUDA GPU available for --backend gpu"


def gpu_unavailable_reason() -> str | None:
    """None when a CUDA GPU can be used, else why not."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return "nvidia-smi not found"
    try:
        proc = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"nvidia-smi failed: {err}"
    if proc.returncode != 0 or "GPU" not in proc.stdout:
        reason = (proc.stderr or proc.stdout).strip().splitlines()
        return f"nvidia-smi lists no GPU ({reason[0] if reason else 'no output'})"
    return None


def require_gpu() -> None:
    reason = gpu_unavailable_reason()
    if reason:
        raise SiriusError(f"{NO_GPU} ({reason})")


def build_program(source: str | os.PathLike, flags: CompileFlags = CompileFlags(), *,
                  cuda_path: str | None = None) -> Build:
    """Build ``source`` with nvcc for the GPU named by ``flags.arch``."""
    start = time.perf_counter()
    src = Path(source)
    if not src.is_file():
        raise InputError(f"error: no such file: {source}")
    nvcc = find_nvcc(cuda_path)
    out_dir = cache_root() / "gpu"
    out_dir.mkdir(parents=True, exist_ok=True)
    binary = Path(tempfile.mkdtemp(prefix=src.stem + "-", dir=out_dir)) / "program"
    cmd = [nvcc, "-O2", f"-std={flags.std or 'c++17'}", f"-arch={flags.arch}",
           "-include", str(DUMP_HEADER)]
    cmd += [f"-I{d}" for d in flags.include_dirs]
    cmd += [f"-D{d}" for d in flags.defines]
    cmd += list(flags.nvcc_options)
    cmd += [str(src), "-o", str(binary)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise InputError(f"error: nvcc cannot build {source}:\n"
                         + _short_diagnostics(proc.stderr + proc.stdout))
    return Build(src, binary, False, time.perf_counter() - start)
