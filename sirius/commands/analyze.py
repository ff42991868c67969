"""Analyze a CUDA program: kernels, memory accesses as isl maps, host launches.

Compiles the program with clang-22 to device and host LLVM IR, models every
kernel (parameters, shared memory, barriers, early exits, loops, accesses)
and the launch sequence of the entry function (grid, block, arguments
resolved to allocations and offsets, host loops as iteration domains), and
prints a summary. Nothing is changed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from sirius.analysis.frontend import CompileJob
from sirius.analysis.program_model import analyze_program
from sirius.analysis_report import model_to_json, render_text
from sirius.commands.common import add_compile_flags, compile_flags_from_args
from sirius.config import resolve_toolchain

HELP = "analyze a CUDA program and print its kernels, accesses and launches"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("program", metavar="PROGRAM.cu", help="CUDA source file (one translation unit)")
    parser.add_argument("--entry", default="main", help="host function whose launches are modelled (default main)")
    parser.add_argument("--json", metavar="FILE", help="also write the analysis as JSON to FILE ('-' for stdout)")
    parser.add_argument("--quiet", action="store_true", help="do not print the summary")
    add_compile_flags(parser)


def execute(args: argparse.Namespace) -> int:
    toolchain = resolve_toolchain(args.clang, args.cuda_path)
    job = CompileJob(Path(args.program), compile_flags_from_args(args), toolchain)
    model = analyze_program(job, entry=args.entry)
    data = model_to_json(model)
    if args.json == "-":
        print(json.dumps(data, indent=2))
    elif args.json:
        Path(args.json).write_text(json.dumps(data, indent=2) + "\n")
    if not args.quiet and args.json != "-":
        print(render_text(model, data), end="")
    return 0
