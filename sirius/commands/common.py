"""Flags shared by subcommands that compile CUDA: as nvcc takes them."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from sirius.core.config import DEFAULT_ARCH, CompileFlags
from sirius.core.errors import InputError


NO_EFFECT = ("--expt-relaxed-constexpr", "--expt-extended-lambda", "--extended-lambda", "-g", "-m64", "-w")


def add_compile_flags(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("compiler flags (as for nvcc)")
    g.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                   help="add DIR to the include search path")
    g.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                   help="define a preprocessor macro")
    g.add_argument("-std", "--std", dest="std", default=None, metavar="STD",
                   help="C++ standard, e.g. c++17")
    g.add_argument("--arch", "-arch", default=DEFAULT_ARCH, metavar="sm_XY",
                   help=f"GPU architecture for device IR (default {DEFAULT_ARCH}; nvcc's -arch=sm_XY works too)")
    g.add_argument("-x", dest="language", default=None, metavar="cu",
                   help="source language, as nvcc takes it: only 'cu' (or 'cuda') is accepted")
    g.add_argument("-O", dest="opt_level", default=None, metavar="LEVEL",
                   help="accepted for nvcc compatibility and ignored: the analysis compiles at -O1, "
                        "the CPU backend at -O2, the GPU backend at -O2")
    g.add_argument("-Xcompiler", "--compiler-options", "-Xptxas", "--ptxas-options", "-Xlinker",
                   "--linker-options", dest="pass_through", action="append", default=[], metavar="OPTS",
                   help="nvcc pass-through options: accepted and ignored (with a note)")
    g.add_argument("--use_fast_math", "-use_fast_math", "--use-fast-math", dest="fast_math", action="store_true",
                   help="given to nvcc for GPU builds; no effect on the analysis or the CPU backend")
    g.add_argument("-G", "--device-debug", dest="device_debug", action="store_true",
                   help="given to nvcc for GPU builds; no effect on the analysis")
    g.add_argument("-lineinfo", "--generate-line-info", dest="lineinfo", action="store_true",
                   help="given to nvcc for GPU builds; no effect on the analysis")
    g.add_argument("-rdc", "--relocatable-device-code", dest="rdc", default=None, metavar="true|false",
                   help="given to nvcc for GPU builds; the analysis sees one translation unit either way")
    g.add_argument("-maxrregcount", "--maxrregcount", dest="maxrregcount", default=None, metavar="N",
                   help="given to nvcc for GPU builds")
    g.add_argument("-gencode", "--generate-code", dest="gencode", action="append", default=[],
                   metavar="arch=compute_XY,code=sm_XY",
                   help="the GPU architecture, as nvcc takes it: its code=sm_XY becomes --arch (the first, "
                        "when several are given)")
    for k, option in enumerate(NO_EFFECT):
        g.add_argument(option, dest="no_effect", action="append_const", const=option, default=[],
                       help=argparse.SUPPRESS if k else f"{', '.join(NO_EFFECT)}: accepted as nvcc takes them, no "
                       "effect on the analysis (clang already allows constexpr host functions and extended "
                       "lambdas in device code)")
    g.add_argument("-ccbin", "--compiler-bindir", dest="ccbin", default=None, metavar="PATH",
                   help="nvcc's host compiler: accepted, no effect (the analysis uses clang)")
    g.add_argument("--default-stream", dest="default_stream", default=None, metavar="legacy|per-thread",
                   help="only 'legacy' (nvcc's default): the analysis orders launches by the legacy default "
                        "stream")
    g.add_argument("--cuda-path", default=None, metavar="DIR",
                   help="CUDA toolkit root (default: $SIRIUS_CUDA_PATH, $CUDA_HOME, /usr/local/cuda)")
    g.add_argument("--clang", default=None, metavar="PATH",
                   help="clang executable (default: $SIRIUS_CLANG or clang-22 on PATH)")


# architectures clang-22 and nvcc 13 both target
_ARCHES = re.compile(r"sm_(?:75|80|86|87|88|89|90a?|100[af]?|101[af]?|103[af]?|110[af]?|120[af]?|121[af]?)")
_STDS = re.compile(r"(?:c|gnu)\+\+(?:11|14|17|20|23|2a|2b|2c|26)")


def compile_flags_from_args(args: argparse.Namespace) -> CompileFlags:
    """The flags, checked: an unknown architecture, standard or language is bad input
    (exit 2, naming it); nvcc options that do not apply are ignored with a note."""
    if not _ARCHES.fullmatch(args.arch):
        raise InputError(f"error: --arch {args.arch}: not a GPU architecture sirius can target "
                         "(sm_75 ... sm_121, e.g. sm_90)")
    if args.std is not None and not _STDS.fullmatch(args.std):
        raise InputError(f"error: -std={args.std}: CUDA sources are C++; use c++11, c++14, c++17, c++20 or c++23")
    if getattr(args, "language", None) not in (None, "cu", "cuda"):
        raise InputError(f"error: -x {args.language}: sirius reads CUDA sources only (-x cu)")
    if getattr(args, "default_stream", None) not in (None, "legacy"):
        raise InputError(f"error: --default-stream {args.default_stream}: not supported; the analysis orders "
                         "launches by the legacy default stream (nvcc's default)")
    arch = _gencode_arch(getattr(args, "gencode", [])) or args.arch
    nvcc = _nvcc_only(args)
    ignored = ([f"-O{args.opt_level}"] if getattr(args, "opt_level", None) is not None else []) \
        + list(getattr(args, "pass_through", [])) + list(getattr(args, "no_effect", [])) \
        + ([f"-ccbin {args.ccbin}"] if getattr(args, "ccbin", None) else [])
    if (ignored or nvcc) and not getattr(args, "_noted", False):
        args._noted = True
        if ignored:
            print(f"note: ignored nvcc option{'s' if len(ignored) > 1 else ''} {' '.join(ignored)}", file=sys.stderr)
        if nvcc:
            print(f"note: {' '.join(nvcc)}: for GPU builds only (no effect on the analysis or the CPU backend)",
                  file=sys.stderr)
    return CompileFlags(
        include_dirs=tuple(args.include_dirs),
        defines=tuple(args.defines),
        std=args.std,
        arch=arch,
        nvcc_options=tuple(nvcc),
    )


def _gencode_arch(gencodes: list[str]) -> str | None:
    """The sm_XY of the first ``-gencode arch=compute_XY,code=sm_XY`` (None without one); a
    value nvcc would not take is bad input."""
    for value in gencodes:
        code = re.search(r"(?:^|,)code=\[?(sm_\w+|compute_\w+)", value)
        if code is None:
            raise InputError(f"error: -gencode {value}: expected arch=compute_XY,code=sm_XY")
        return code.group(1).replace("compute_", "sm_")
    return None


def _nvcc_only(args: argparse.Namespace) -> list[str]:
    """The options that change only nvcc's GPU build, as nvcc spells them."""
    out = ["--use_fast_math"] if getattr(args, "fast_math", False) else []
    out += ["-G"] if getattr(args, "device_debug", False) else []
    out += ["-lineinfo"] if getattr(args, "lineinfo", False) else []
    rdc = getattr(args, "rdc", None)
    if rdc is not None:
        if rdc not in ("true", "false"):
            raise InputError(f"error: -rdc={rdc}: expected true or false")
        out.append(f"-rdc={rdc}")
    regs = getattr(args, "maxrregcount", None)
    if regs is not None:
        if not regs.isdigit() or int(regs) < 1:
            raise InputError(f"error: -maxrregcount {regs}: expected a number of registers")
        out.append(f"-maxrregcount={regs}")
    return out


def input_file(path: str, what: str = "CUDA source file") -> Path:
    """``path`` as an existing, readable file, or a clear error (exit 2)."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"error: no such file: {path}")
    if p.is_dir():
        raise InputError(f"error: {path}: is a directory, expected a {what}")
    if not os.access(p, os.R_OK):
        raise InputError(f"error: {path}: cannot be read (permission denied)")
    return p


def output_file(path: str, option: str) -> Path | None:
    """Where ``option`` writes: a file that can be written, or None for ``-`` (standard
    output); a clear error (exit 2) otherwise, before any work is done."""
    if path == "-":
        return None
    p = Path(path)
    if p.is_dir():
        raise InputError(f"error: {option} {path}: is a directory, expected a file name")
    folder = p.resolve().parent
    if not folder.is_dir():
        raise InputError(f"error: {option} {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise InputError(f"error: {option} {path}: cannot be written (permission denied)")
    return p
