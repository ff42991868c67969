#!/usr/bin/env python3
"""What keeping only the proven ``__restrict__`` promises costs, in static figures.

For each program (default: the TVM LSTM and Seq2Seq models at full size) the
optimizer runs once; its fused kernels are then generated three ways and each
compiled with ``nvcc -arch=sm_90 -cubin`` and disassembled with ``cuobjdump -sass``:

  every    every qualifier the fragments declared (what the optimizer emitted before
           it checked promises: wrong on the GPU for these two models)
  proven   the qualifiers the alias facts prove (what it emits now)
  none     no qualifier at all

Per variant, over the fused kernels only: global loads through the read-only data
cache (``LDG.E.CONSTANT``, from ``ld.global.nc``) and plain ones (``LDG.E``), and
registers per thread from ``ptxas -v``. Static figures only; no GPU needed.

Needs nvcc, ptxas and cuobjdump with nvdisasm (the CUDA toolkit, or
``pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm``).

Usage: scripts/bench_promises.py [PROGRAM.cu ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections import Counter
from pathlib import Path

from sirius.analysis.frontend import CompileJob
from sirius.config import CompileFlags, resolve_toolchain
from sirius.fusion.codegen import generate
from sirius.fusion.promises import RESTRICT
from sirius.pipeline import OptimizeState, run_pipeline

REPO = Path(__file__).resolve().parent.parent
DEFAULT = [REPO / "cuda_inputs" / "models" / "lstm.cu", REPO / "cuda_inputs" / "models" / "seq2seq.cu"]
FUSED = re.compile(r"sirius_(?:fused|wave)_\d+")


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    for root in [Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin",
                 *Path(sysconfig.get_paths()["purelib"]).glob("nvidia/*/bin")]:
        if (root / name).is_file():
            return str(root / name)
    raise SystemExit(f"error: {name} not found (install the CUDA toolkit, or pip install "
                     "nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")


def _variants(state: OptimizeState) -> dict[str, list]:
    """The fused kernels keeping every declared __restrict__, those proven, and none."""
    def keeping(rule):
        return [dataclasses.replace(k, params=tuple(dataclasses.replace(p, restrict=rule(p)) for p in k.params))
                for k in state.kernels]
    return {"every": keeping(lambda p: bool(RESTRICT.search(p.ctype))), "proven": state.kernels,
            "none": keeping(lambda p: False)}


def _figures(source: str, name: str) -> dict:
    """LDG counts and registers of the fused kernels of one program text."""
    with tempfile.TemporaryDirectory() as tmp:
        src, cubin = Path(tmp) / name, Path(tmp) / "out.cubin"
        src.write_text(source)
        build = subprocess.run([_tool("nvcc"), "-arch=sm_90", "-cubin", "-w", "-Xptxas", "-v", str(src),
                                "-o", str(cubin)], capture_output=True, text=True)
        if build.returncode != 0:
            raise SystemExit(f"error: nvcc cannot compile the {name} variant:\n{build.stderr[-2000:]}")
        sass = subprocess.run([_tool("cuobjdump"), "-sass", str(cubin)], capture_output=True, text=True,
                              env={**os.environ, "PATH": str(Path(_tool("nvdisasm")).parent) + os.pathsep
                                   + os.environ.get("PATH", "")}).stdout
    loads: Counter = Counter()
    current = ""
    for line in sass.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            current = m.group(1)
            continue
        if FUSED.search(current):
            for op in re.findall(r"\bLDG\.E(?:\.\w+)*", line):
                loads["constant" if ".CONSTANT" in op else "plain"] += 1
    registers, kernel = [], ""
    for line in build.stderr.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            kernel = m.group(1)
        m = re.search(r"Used (\d+) registers", line)
        if m and FUSED.search(kernel):
            registers.append(int(m.group(1)))
    return {"ldg_constant": loads["constant"], "ldg_plain": loads["plain"], "fused_kernels": len(registers),
            "registers_max": max(registers, default=0), "registers_sum": sum(registers)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("programs", nargs="*", type=Path, default=DEFAULT)
    ap.add_argument("--json", type=Path, help="write the figures as JSON")
    args = ap.parse_args(argv)
    rows = []
    for program in args.programs:
        state = run_pipeline(OptimizeState(CompileJob(program, CompileFlags(), resolve_toolchain())))
        for variant, plan in _variants(state).items():
            text, _ = generate(state.model, state.schedule, plan, state.source)
            fig = _figures(text, program.name)
            kept = sum(len(v) for v in plan.restrict.values())
            rows.append({"program": str(program.relative_to(REPO)) if program.is_relative_to(REPO) else str(program),
                         "variant": variant, "restrict_parameters": kept, **fig})
            print(f"{program.name:14s} {variant:7s} restrict {kept:5d}  LDG.E.CONSTANT {fig['ldg_constant']:5d}  "
                  f"LDG.E {fig['ldg_plain']:5d}  registers max {fig['registers_max']:3d} "
                  f"sum {fig['registers_sum']:5d} over {fig['fused_kernels']} fused kernels", flush=True)
    if args.json:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        nvcc = subprocess.run([_tool("nvcc"), "--version"], capture_output=True, text=True).stdout.splitlines()
        args.json.write_text(json.dumps({
            "what": "static SASS load counts and ptxas registers of the fused kernels, per restrict policy",
            "machine": "CPU only (no GPU): nvcc -arch=sm_90 -cubin, cuobjdump -sass",
            "cuda": nvcc[-2] if len(nvcc) >= 2 else "", "date": datetime.date.today().isoformat(),
            "commit": commit, "command": "scripts/bench_promises.py "
            + " ".join(str(p.relative_to(REPO)) if p.is_relative_to(REPO) else str(p) for p in args.programs),
            "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
