"""Analyze a CUDA program: kernels, memory accesses as isl maps, host launches.

Compiles the program with clang-22 to device and host LLVM IR, models every
kernel (parameters, shared memory, barriers, early exits, loops, accesses)
and the launch sequence of the entry function (grid, block, arguments
resolved to allocations and offsets, host loops as iteration domains), builds
the unified abstract representation (dependences between statement instances
with their widths), and prints a summary. Nothing is changed.
"""

from __future__ import annotations

import argparse
import json
import sys

from sirius.analysis.frontend import CompileJob
from sirius.analysis_report import model_to_json, render_text, render_uar, uar_to_dot, uar_to_json, virtual_to_json
from sirius.api import analyze_job
from sirius.commands.common import add_compile_flags, compile_flags_from_args, input_file, output_file
from sirius.core.config import resolve_toolchain

HELP = "analyze a CUDA program and print its kernels, accesses and launches"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("program", metavar="PROGRAM.cu", help="CUDA source file (one translation unit)")
    parser.add_argument("--entry", default="main", help="host function whose launches are modelled (default main)")
    parser.add_argument("--json", metavar="FILE", help="also write the analysis as JSON to FILE ('-' for stdout)")
    parser.add_argument("--quiet", action="store_true", help="do not print the summary")
    parser.add_argument("--uar", action="store_true",
                        help="print the unified abstract representation: statements, dependences, widths")
    parser.add_argument("--uar-dot", metavar="FILE", help="write the UAR as a Graphviz file (edge style = width)")
    add_compile_flags(parser)


def execute(args: argparse.Namespace) -> int:
    toolchain = resolve_toolchain(args.clang, args.cuda_path)
    json_file = output_file(args.json, "--json") if args.json else None
    dot_file = output_file(args.uar_dot, "--uar-dot") if args.uar_dot else None
    job = CompileJob(input_file(args.program), compile_flags_from_args(args), toolchain)
    analysis = analyze_job(job, args.entry)
    model, uar = analysis.model, analysis.uar
    data = model_to_json(model)
    data["dependences"] = uar_to_json(uar)
    data["barriers"] = virtual_to_json(uar)
    if args.json == "-":
        print(json.dumps(data, indent=2))
    elif json_file is not None:
        json_file.write_text(json.dumps(data, indent=2) + "\n")
    if args.uar_dot:
        if dot_file is None:
            sys.stdout.write(uar_to_dot(uar))
        else:
            dot_file.write_text(uar_to_dot(uar))
    if not args.quiet and args.json != "-":
        print(render_uar(uar) if args.uar else render_text(model, data), end="")
    return 0
