"""The CUDA toolkit's programs as the check, the backends and the bench use them: finding
nvcc and the other tools, what ptxas reports for each kernel, and static figures of the
SASS (``kernel_figures``: instructions, loads, barriers; cuobjdump with nvdisasm come from
the toolkit or the PyPI packages ``nvidia-cuda-cuobjdump`` and ``nvidia-cuda-nvdisasm``).

It needs no GPU; it depends on the core only, so that fusion (the check of emitted
programs) and the backends use one interface to the toolkit.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sirius.core.config import find_cuda_path
from sirius.core.errors import ToolchainError


def find_nvcc(cuda_path: str | None = None) -> str:
    """nvcc of the CUDA toolkit ``find_cuda_path`` finds, else the one on PATH."""
    root = find_cuda_path(cuda_path)
    nvcc = Path(root) / "bin" / "nvcc"
    if nvcc.is_file():
        return str(nvcc)
    found = shutil.which("nvcc")
    if found:
        return found
    raise ToolchainError(f"error: nvcc not found (looked in {root}/bin and on PATH)")


def find_tool(name: str) -> str:
    """A CUDA tool on PATH, in $CUDA_HOME/bin or in an installed nvidia-* wheel."""
    found = shutil.which(name)
    if found:
        return found
    for root in [Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin",
                 *Path(sysconfig.get_paths()["purelib"]).glob("nvidia/*/bin")]:
        if (root / name).is_file():
            return str(root / name)
    raise ToolchainError(f"error: {name} not found (install the CUDA toolkit, or pip install "
                         "nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")


@dataclass(frozen=True)
class KernelResources:
    """What ptxas reports for one kernel."""

    registers: int  # per thread
    static_shared: int  # bytes


def ptxas_resources(verbose_output: str) -> dict[str, KernelResources]:
    """Each kernel's resources (by mangled name), from ``ptxas -v`` output."""
    resources: dict[str, KernelResources] = {}
    kernel = None
    for line in verbose_output.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            kernel = m.group(1)
            continue
        m = re.search(r"Used (\d+) registers.*?(?:(\d+) bytes smem)?\s*$", line)
        if m and kernel is not None:
            resources[kernel] = KernelResources(int(m.group(1)), int(m.group(2) or 0))
            kernel = None
    return resources


def compile_resources(source: Path, arch: str, preprocessor_args: list[str],
                      cuda_path: str | None = None) -> dict[str, KernelResources] | None:
    """Every kernel's resources in ``source``, from ``nvcc -cubin -Xptxas -v`` (None when
    nvcc is not installed or cannot compile it)."""
    try:
        nvcc = find_nvcc(cuda_path)
    except ToolchainError:
        return None
    with tempfile.TemporaryDirectory(prefix="sirius-ptxas-") as tmp:
        cmd = [nvcc, f"-arch={arch}", "-cubin", "-Xptxas", "-v", "-w", *preprocessor_args,
               str(source), "-o", str(Path(tmp) / "out.cubin")]
        proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    return ptxas_resources(proc.stderr)


@dataclass(frozen=True)
class KernelFigures:
    instructions: int  # SASS instructions, NOPs excluded
    ldg_constant: int  # global loads through the read-only data cache (LDG.E...CONSTANT)
    ldg_plain: int
    barriers: int  # BAR.SYNC
    registers: int  # per thread, from ptxas -v
    shared: int  # static shared memory bytes, from ptxas -v


def kernel_figures(source: str, name: str = "program.cu", arch: str = "sm_90",
                   flags: tuple[str, ...] = ()) -> dict[str, KernelFigures]:
    """Figures of every kernel of the program text ``source``, by mangled name."""
    with tempfile.TemporaryDirectory(prefix="sirius-sass-") as tmp:
        src, cubin = Path(tmp) / name, Path(tmp) / "out.cubin"
        src.write_text(source)
        build = subprocess.run([find_nvcc(), f"-arch={arch}", "-cubin", "-w", "-Xptxas", "-v", *flags,
                                str(src), "-o", str(cubin)], capture_output=True, text=True)
        if build.returncode != 0:
            raise ToolchainError(f"error: nvcc cannot compile {name}:\n{build.stderr[-2000:]}")
        path = str(Path(find_tool("nvdisasm")).parent) + os.pathsep + os.environ.get("PATH", "")
        sass = subprocess.run([find_tool("cuobjdump"), "-sass", str(cubin)], capture_output=True, text=True,
                              env={**os.environ, "PATH": path}).stdout
    counts: dict[str, dict[str, int]] = {}
    current = None
    for line in sass.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            current = counts.setdefault(m.group(1), {"instructions": 0, "ldg_constant": 0, "ldg_plain": 0,
                                                     "barriers": 0})
            continue
        op = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if current is None or op is None or op.group(1).startswith("NOP"):
            continue
        current["instructions"] += 1
        if op.group(1).startswith("LDG"):
            current["ldg_constant" if ".CONSTANT" in op.group(1) else "ldg_plain"] += 1
        if op.group(1).startswith("BAR.SYNC"):
            current["barriers"] += 1
    resources = ptxas_resources(build.stderr)
    return {k: KernelFigures(**c, registers=resources[k].registers if k in resources else 0,
                           shared=resources[k].static_shared if k in resources else 0)
            for k, c in counts.items()}


def static_provenance(repo: Path) -> dict[str, str]:
    """What a table of static figures was made with: the CUDA release, the date, the commit."""
    import datetime

    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    nvcc = subprocess.run([find_nvcc(), "--version"], capture_output=True, text=True).stdout.splitlines()
    return {"cuda": nvcc[-2] if len(nvcc) >= 2 else "", "date": datetime.date.today().isoformat(),
            "commit": commit}
