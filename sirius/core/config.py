"""Settings of one run, gathered in one place.

Environment variables (each overridden by the matching command-line flag):

``SIRIUS_CLANG``      clang executable (default ``clang-22`` on PATH)
``SIRIUS_CUDA_PATH``  CUDA toolkit root (then ``CUDA_HOME``, ``CUDA_PATH``,
                      ``/usr/local/cuda``, the tree of ``nvcc`` on PATH)
``SIRIUS_CACHE``      cache folder for built CPU programs, checks of emitted programs, tuning
                      results and the front end's precompiled headers (default ``.sirius-cache``)
``SIRIUS_FRONTEND_CACHE``  folder caching the frontend's IR and source index (off when unset;
                      see ``sirius.analysis.frontend_cache``)
``SIRIUS_VERIFY_EACH`` ``1``: check the kernel IR's invariants after every stage and pass
                      (as ``sirius optimize --verify-each``)
"""

from __future__ import annotations

import functools

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from sirius.core.errors import ToolchainError

DEFAULT_ARCH = "sm_90"


def cache_folder() -> Path:
    """The folder of the caches that outlive a run (``SIRIUS_CACHE``, default ``.sirius-cache``)."""
    return Path(os.environ.get("SIRIUS_CACHE") or ".sirius-cache")


@dataclass(frozen=True)
class CompileFlags:
    """Compiler flags a user passes as to nvcc: includes, defines, standard, arch."""

    include_dirs: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()
    std: str | None = None
    arch: str = DEFAULT_ARCH
    # nvcc options that change only how nvcc builds for the GPU (--use_fast_math, -G,
    # -lineinfo, -rdc=true, -maxrregcount=N): given to nvcc by the GPU backend, not to clang
    nvcc_options: tuple[str, ...] = ()

    def preprocessor_args(self) -> list[str]:
        args = [f"-I{d}" for d in self.include_dirs]
        args += [f"-D{d}" for d in self.defines]
        if self.std:
            args.append(f"-std={self.std}")
        return args


@dataclass(frozen=True)
class Toolchain:
    """Resolved paths of the external tools a run uses."""

    clang: str
    cuda_path: str
    extra_include_dirs: tuple[str, ...] = field(default=())

    @property
    def clang_resource_dir(self) -> str:
        return tool_answer(self.clang, "-print-resource-dir")  # every analysis (and frontend-cache key) asks


@functools.lru_cache(maxsize=None)
def tool_answer(tool: str, *args: str) -> str:
    """What ``tool args`` prints (stripped), asked once per process and kept in the cache
    folder by the tool's path, size and modification time: a question about the tool itself
    (its version, its resource folder), whose answer changes only with the tool. A short
    command's start costs little, but hundreds of processes (the test suite's) each ask."""
    import hashlib
    import subprocess
    import tempfile

    try:
        st = os.stat(tool)
        stamp = f"{os.path.realpath(tool)}\0{st.st_size}\0{st.st_mtime_ns}\0" + "\0".join(args)
    except OSError:
        stamp = None
    entry = cache_folder() / "tools" / (hashlib.sha256(stamp.encode()).hexdigest()[:24] + ".txt") if stamp else None
    if entry is not None and entry.is_file():
        return entry.read_text()
    answer = subprocess.run([tool, *args], capture_output=True, text=True).stdout.strip()
    if entry is not None and answer:
        try:  # whole or not at all: processes share the folder
            entry.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=entry.parent, suffix=".tmp")
            with os.fdopen(fd, "w") as out:
                out.write(answer)
            os.replace(tmp, entry)
        except OSError:
            pass  # a folder that cannot be written: the answer stands, it is not kept
    return answer


def _curand_include_dir() -> str | None:
    """Folder holding curand_mtgp32_kernel.h from the nvidia-curand wheel.

    clang's CUDA wrapper header always includes that file; the CUDA tree on
    our machines lacks it, the wheel ships it.
    """
    try:
        import nvidia  # namespace package of the nvidia-* wheels
    except ImportError:
        return None
    for root in getattr(nvidia, "__path__", []):
        for candidate in sorted(Path(root).glob("*/include/curand_mtgp32_kernel.h")):
            return str(candidate.parent)
    return None


def find_cuda_path(explicit: str | None = None) -> str:
    candidates: list[tuple[str, str]] = []
    if explicit:
        candidates.append(("--cuda-path", explicit))
    else:
        for var in ("SIRIUS_CUDA_PATH", "CUDA_HOME", "CUDA_PATH"):
            if os.environ.get(var):
                candidates.append((var, os.environ[var]))
        candidates.append(("default", "/usr/local/cuda"))
        nvcc = shutil.which("nvcc")
        if nvcc:
            candidates.append(("nvcc on PATH", str(Path(nvcc).resolve().parent.parent)))
    for origin, path in candidates:
        if (Path(path) / "include" / "cuda_runtime.h").is_file():
            return path
        if origin == "--cuda-path":
            raise ToolchainError(
                f"error: CUDA toolkit not found at {path} (given by --cuda-path): "
                "no include/cuda_runtime.h there; pass the root of a CUDA installation"
            )
    raise ToolchainError(
        "error: no CUDA toolkit found; install one and pass --cuda-path DIR or set "
        "SIRIUS_CUDA_PATH (looked in: " + ", ".join(p for _, p in candidates) + ")"
    )


def find_clang(explicit: str | None = None) -> str:
    name = explicit or os.environ.get("SIRIUS_CLANG") or "clang-22"
    found = shutil.which(name)
    if not found:
        origin = "--clang" if explicit else ("SIRIUS_CLANG" if os.environ.get("SIRIUS_CLANG") else "PATH")
        raise ToolchainError(
            f"error: clang not found: '{name}' (from {origin}); "
            "install it with 'apt-get install clang-22' (or run 'make setup'), "
            "or pass --clang PATH"
        )
    return found


def resolve_toolchain(clang: str | None = None, cuda_path: str | None = None) -> Toolchain:
    extra = _curand_include_dir()
    root = find_cuda_path(cuda_path)
    # CUDA 13 keeps libcu++ (cuda/std/...), which cooperative_groups.h includes, under include/cccl;
    # nvcc adds that folder itself, clang does not
    cccl = Path(root) / "include" / "cccl"
    return Toolchain(
        clang=find_clang(clang),
        cuda_path=root,
        extra_include_dirs=tuple(str(d) for d in (extra, cccl if cccl.is_dir() else None) if d),
    )
