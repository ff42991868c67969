"""Build a CUDA program and run it, on the CPU backend (default) or a GPU.

The CPU backend compiles the program as C++ with the project's CUDA runtime
(blocks on worker threads, CUDA threads as fibers with real barriers, shared
memory per block, warp operations, atomics) and runs it; the program's own
output appears as is. Arguments after ``--`` go to the program.

Exit status: the program's own, or 2 when it cannot be built or the backend
stops it (a divergent barrier, a deadlock, an invalid memory access in a
kernel, an unsupported feature), with a message naming the kernel or the
file and line.
"""

from __future__ import annotations

import argparse
import sys

from sirius.backend import cpu, gpu
from sirius.commands.common import add_compile_flags, compile_flags_from_args, input_file
from sirius.core.errors import SiriusError

HELP = "build and run a CUDA program on the CPU backend (or a GPU)"


def add_backend_arguments(parser: argparse.ArgumentParser,
                          threads_default: str = "one per core") -> None:
    """Options shared by ``run`` and ``verify``."""
    parser.add_argument("--backend", choices=("cpu", "gpu"), default="cpu",
                        help="where the program runs: the CPU backend (default) or a CUDA GPU "
                             "(nvcc)")
    add_compile_flags(parser)
    parser.add_argument("--threads", type=int, default=None, metavar="N",
                        help=f"worker OS threads of the CPU backend (default: {threads_default})")
    parser.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                        help="stop a program that runs longer than this")
    parser.add_argument("--rebuild", action="store_true",
                        help="rebuild even if a cached CPU build exists")


PROGRAM_ARGS_NOTE = "Arguments for the program itself go after --; every option before it is sirius's."


def build(path: str, args: argparse.Namespace) -> cpu.Build:
    """Build ``path`` for the chosen backend (checks for a GPU first)."""
    path = str(input_file(path))
    flags = compile_flags_from_args(args)
    if args.backend == "gpu":
        gpu.require_gpu()
        return gpu.build_program(path, flags, cuda_path=args.cuda_path)
    return cpu.build_program(path, flags, clang=args.clang, rebuild=args.rebuild)


def _add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--time", action="store_true",
                        help="print the build and run times to stderr")
    add_backend_arguments(parser)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("program", help="the CUDA program (.cu)")
    _add_options(parser)
    parser.epilog = PROGRAM_ARGS_NOTE


def execute(args: argparse.Namespace) -> int:
    program_args = list(getattr(args, "program_args", []))
    if args.threads is not None and args.threads < 1:
        raise SiriusError("error: --threads must be at least 1")
    built = build(args.program, args)
    sys.stdout.flush()
    result = cpu.run_program(built.binary, program_args, timeout=args.timeout,
                             threads=args.threads)
    if args.time:
        cached = " (cached)" if built.cached else ""
        print(f"sirius run: build {built.seconds:.2f} s{cached}, run {result.seconds:.3f} s",
              file=sys.stderr)
    if result.timed_out:
        raise SiriusError(f"error: {args.program} timed out after {args.timeout:g} s")
    if result.signal_name:
        raise SiriusError(f"error: {args.program} was terminated by {result.signal_name}")
    return result.returncode
