"""Static figures of compiled kernels: SASS instructions, loads, barriers, registers, shared memory.

``kernel_figures(source)`` compiles one program text with ``nvcc -cubin -Xptxas -v``
and disassembles it with ``cuobjdump -sass``; no GPU is needed. nvcc, ptxas and
cuobjdump (with nvdisasm) come from the CUDA toolkit or the PyPI packages
``nvidia-cuda-cuobjdump`` and ``nvidia-cuda-nvdisasm``.
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

from sirius.backend.gpu import find_nvcc
from sirius.errors import ToolchainError


@dataclass(frozen=True)
class KernelFigures:
    instructions: int  # SASS instructions, NOPs excluded
    ldg_constant: int  # global loads through the read-only data cache (LDG.E...CONSTANT)
    ldg_plain: int
    barriers: int  # BAR.SYNC
    registers: int  # per thread, from ptxas -v
    shared: int  # static shared memory bytes, from ptxas -v


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
    return {k: KernelFigures(**c, registers=resources.get(k, (0, 0))[0], shared=resources.get(k, (0, 0))[1])
            for k, c in counts.items()}


def ptxas_resources(verbose_output: str) -> dict[str, tuple[int, int]]:
    """(registers per thread, static shared bytes) of each kernel, from ``ptxas -v`` output."""
    resources: dict[str, tuple[int, int]] = {}
    kernel = None
    for line in verbose_output.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            kernel = m.group(1)
            continue
        m = re.search(r"Used (\d+) registers.*?(?:(\d+) bytes smem)?\s*$", line)
        if m and kernel is not None:
            resources[kernel] = (int(m.group(1)), int(m.group(2) or 0))
            kernel = None
    return resources


def static_provenance(repo: Path) -> dict[str, str]:
    """What a table of static figures was made with: the CUDA release, the date, the commit."""
    import datetime

    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    nvcc = subprocess.run([find_nvcc(), "--version"], capture_output=True, text=True).stdout.splitlines()
    return {"cuda": nvcc[-2] if len(nvcc) >= 2 else "", "date": datetime.date.today().isoformat(),
            "commit": commit}
