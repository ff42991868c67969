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
import json
import re
import sys
from pathlib import Path

from sirius.analysis.frontend import CompileJob
from sirius.core.config import CompileFlags, resolve_toolchain
from sirius.toolchain import kernel_figures, static_provenance
from sirius.core.errors import ToolchainError
from sirius.fusion.codegen import generate
from sirius.fusion.fragment_text import RESTRICT
from sirius.pipeline import OptimizeState, run_pipeline

REPO = Path(__file__).resolve().parent.parent
DEFAULT = [REPO / "cuda_inputs" / "models" / "lstm.cu", REPO / "cuda_inputs" / "models" / "seq2seq.cu"]
FUSED = re.compile(r"sirius_(?:fused|wave)_\d+")


def _variants(state: OptimizeState) -> dict[str, list]:
    """The fused kernels keeping every declared __restrict__, those proven, and none."""
    def keeping(rule):
        return [dataclasses.replace(k, params=tuple(dataclasses.replace(p, restrict=rule(p)) for p in k.params))
                for k in state.kernels]
    return {"every": keeping(lambda p: bool(RESTRICT.search(p.ctype))), "proven": state.kernels,
            "none": keeping(lambda p: False)}


def _figures(source: str, name: str) -> dict:
    """LDG counts and registers of the fused kernels of one program text."""
    try:
        figures = {k: f for k, f in kernel_figures(source, name).items() if FUSED.search(k)}
    except ToolchainError as err:
        raise SystemExit(str(err)) from None
    registers = [f.registers for f in figures.values()]
    return {"ldg_constant": sum(f.ldg_constant for f in figures.values()),
            "ldg_plain": sum(f.ldg_plain for f in figures.values()), "fused_kernels": len(figures),
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
            text, _ = generate(state.model, state.program.with_kernels(plan), state.source)
            fig = _figures(text, program.name)
            kept = sum(len(k.restrict) for k in plan)
            rows.append({"program": str(program.relative_to(REPO)) if program.is_relative_to(REPO) else str(program),
                         "variant": variant, "restrict_parameters": kept, **fig})
            print(f"{program.name:14s} {variant:7s} restrict {kept:5d}  LDG.E.CONSTANT {fig['ldg_constant']:5d}  "
                  f"LDG.E {fig['ldg_plain']:5d}  registers max {fig['registers_max']:3d} "
                  f"sum {fig['registers_sum']:5d} over {fig['fused_kernels']} fused kernels", flush=True)
    if args.json:
        args.json.write_text(json.dumps({
            "what": "static SASS load counts and ptxas registers of the fused kernels, per restrict policy",
            "machine": "CPU only (no GPU): nvcc -arch=sm_90 -cubin, cuobjdump -sass",
            **static_provenance(REPO), "command": "scripts/bench_promises.py "
            + " ".join(str(p.relative_to(REPO)) if p.is_relative_to(REPO) else str(p) for p in args.programs),
            "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
