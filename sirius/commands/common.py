"""Flags shared by subcommands that compile CUDA: as nvcc takes them."""

from __future__ import annotations

import argparse

from sirius.config import DEFAULT_ARCH, CompileFlags


def add_compile_flags(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("compiler flags (as for nvcc)")
    g.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                   help="add DIR to the include search path")
    g.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                   help="define a preprocessor macro")
    g.add_argument("-std", "--std", dest="std", default=None, metavar="STD",
                   help="C++ standard, e.g. c++17")
    g.add_argument("--arch", default=DEFAULT_ARCH,
                   help=f"GPU architecture for device IR (default {DEFAULT_ARCH})")
    g.add_argument("--cuda-path", default=None, metavar="DIR",
                   help="CUDA toolkit root (default: $SIRIUS_CUDA_PATH, $CUDA_HOME, /usr/local/cuda)")
    g.add_argument("--clang", default=None, metavar="PATH",
                   help="clang executable (default: $SIRIUS_CLANG or clang-22 on PATH)")


def compile_flags_from_args(args: argparse.Namespace) -> CompileFlags:
    return CompileFlags(
        include_dirs=tuple(args.include_dirs),
        defines=tuple(args.defines),
        std=args.std,
        arch=args.arch,
    )
