#!/usr/bin/env python3
"""What each kernel pass after fusion changes, in static figures (the paper's figure 7 shape).

For each program the optimizer runs once per stage: fusion alone (``--passes none``),
then each kernel pass added in pipeline order. Each optimized program is compiled
with ``nvcc -arch=sm_90 -cubin -Xptxas -v`` and disassembled with ``cuobjdump -sass``;
over its fused kernels (``sirius_fused_N``, ``sirius_wave_N``) the table gives the
SASS instructions, the ``BAR.SYNC`` instructions, the global loads (``LDG``, and
of them those through the read-only path), the largest register count per
thread and static shared memory per block, beside the barriers the optimizer placed
between fragments and the launches per run. Static figures only; no GPU needed.

Needs nvcc, ptxas and cuobjdump with nvdisasm (the CUDA toolkit, or
``pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm``).

Usage: scripts/ablation.py [PROGRAM.cu ...] [--json OUT] [--markdown OUT]
(default: cuda_inputs/bert_qkv.cu, cuda_inputs/lstm.cu and the model programs).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sirius.toolchain import kernel_figures, static_provenance  # noqa: E402
from sirius.core.errors import SiriusError  # noqa: E402
from sirius.pipeline import pass_names  # noqa: E402

DEFAULT = [REPO / "cuda_inputs" / "bert_qkv.cu", REPO / "cuda_inputs" / "lstm.cu",
           *sorted((REPO / "cuda_inputs" / "models").glob("*.cu"))]
FUSED = re.compile(r"sirius_(?:fused|wave)_\d+")
SIRIUS = str(Path(sys.executable).parent / "sirius")


def stages() -> list[tuple[str, str]]:
    """(label, --passes value): fusion alone, then one more pass at a time."""
    names = pass_names()
    return [("fused only", "none")] + [("+ " + n, ",".join(names[:k + 1])) for k, n in enumerate(names)]


def measure(program: Path, passes: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="sirius-ablation-") as tmp:
        out, rep = Path(tmp) / program.name, Path(tmp) / "report.json"
        proc = subprocess.run([SIRIUS, "optimize", str(program), "-o", str(out), "--report", str(rep),
                               "--passes", passes], capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"error: sirius optimize {program.name} --passes {passes}:\n{proc.stderr[-2000:]}")
        report = json.loads(rep.read_text())
        figures = {k: f for k, f in kernel_figures(out.read_text(), program.name).items() if FUSED.search(k)}
    return {"launches_after": report["launches_after"],
            "barriers_placed": sum(g["barriers_inserted"] for g in report["groups"]),
            "fused_kernels": len(figures),
            "sass_instructions": sum(f.instructions for f in figures.values()),
            "bar_sync": sum(f.barriers for f in figures.values()),
            "global_loads": sum(f.ldg_plain + f.ldg_constant for f in figures.values()),
            "global_loads_read_only": sum(f.ldg_constant for f in figures.values()),
            "registers_max": max((f.registers for f in figures.values()), default=0),
            "shared_max": max((f.shared for f in figures.values()), default=0)}


def markdown(rows: list[dict]) -> str:
    lines = ["| program | stage | launches | fused kernels | barriers placed | BAR.SYNC | SASS instructions "
             "| LDG (read-only) | registers (max) | shared bytes (max) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['program']} | {r['stage']} | {r['launches_after']} | {r['fused_kernels']} | "
                     f"{r['barriers_placed']} | {r['bar_sync']} | {r['sass_instructions']} | "
                     f"{r['global_loads']} ({r['global_loads_read_only']}) | {r['registers_max']} | "
                     f"{r['shared_max']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("programs", nargs="*", type=Path, default=DEFAULT)
    ap.add_argument("--json", type=Path, help="write the rows as JSON")
    ap.add_argument("--markdown", type=Path, help="write the table as Markdown")
    args = ap.parse_args(argv)
    rows = []
    try:
        for program in args.programs:
            program = program.resolve()
            name = str(program.relative_to(REPO)) if program.is_relative_to(REPO) else str(program)
            for label, passes in stages():
                row = {"program": name, "stage": label, "passes": passes, **measure(program, passes)}
                rows.append(row)
                print(f"{name:32s} {label:18s} SASS {row['sass_instructions']:7d}  BAR.SYNC {row['bar_sync']:4d}  "
                      f"LDG {row['global_loads']:5d} ({row['global_loads_read_only']:5d})  "
                      f"registers {row['registers_max']:3d}  shared {row['shared_max']:6d}", flush=True)
    except SiriusError as err:
        print(err, file=sys.stderr)
        return 2
    if args.markdown:
        args.markdown.write_text(markdown(rows))
    if args.json:
        args.json.write_text(json.dumps({
            "what": "static figures of the fused kernels per stage of the kernel passes",
            "machine": "CPU only (no GPU): nvcc -arch=sm_90 -cubin -Xptxas -v, cuobjdump -sass",
            **static_provenance(REPO), "command": "scripts/ablation.py " + " ".join(a for a in (argv or sys.argv[1:])),
            "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
