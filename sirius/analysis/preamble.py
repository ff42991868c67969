"""Precompiled headers of what clang reads before a program's first line.

Every program the front end analyses starts with the same few hundred headers that clang's
CUDA mode includes on its own (the CUDA runtime wrapper and the C and C++ libraries it pulls
in) and the analysis's managed-variable header: most of each of its three parses (the
libclang index, the device IR, the host IR), against little for a program's own lines.
Each parse loads those headers from a precompiled header instead (``-include-pch``), built
once per kind of parse, clang, set of flags and header text, and kept under
``$SIRIUS_CACHE/pch`` (``$SIRIUS_FRONTEND_CACHE/pch`` where that is set). Loading one is
the same as reading the headers (the guards they define make the implicit includes
no-ops): the IR clang emits is the same, byte for byte.

A folder of the program's on the include path (``-I``) is searched before the system's, so it
could hold a header of the same name as one the preamble read. A precompiled header is built
without the program's folders and used only where none of them holds a file under a name
the preamble's headers include or probe (``#include``, ``__has_include``, in any branch);
otherwise, and where one cannot be built or loaded, the program is parsed from its headers.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import clang.cindex as ci

from sirius.analysis.managed_variables import MANAGED_HEADER
from sirius.core.config import cache_folder

if TYPE_CHECKING:  # the front end's compile job (which imports this module to compile)
    from sirius.analysis.frontend import CompileJob

VERSION = 1  # of the folder's layout
_NAMED = re.compile(rb"(?:#\s*include(?:_next)?\s*|__has_include(?:_next)?\s*\(\s*)[<\"]([^>\"\n]+)[>\"]")
_HEADER = "preamble.pch"
_NAMES = "names.txt"  # the names the preamble's headers include or probe, one a line
_FAILED = "failed.txt"  # the build failed (a flag breaks a system header): parse from the headers


def _named_in(headers: set[str]) -> set[str] | None:
    """Every name the ``headers`` include or probe (None when one cannot be read)."""
    names: set[str] = set()
    for header in headers:
        try:
            names.update(m.decode("utf-8", "replace").strip() for m in _NAMED.findall(Path(header).read_bytes()))
        except OSError:
            return None
    return names


def _build_index_preamble(empty: Path, args: list[str], out: Path) -> set[str] | None:
    tu = ci.Index.create().parse(str(empty), args=args,
                                 options=ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD
                                 | ci.TranslationUnit.PARSE_INCOMPLETE)
    tu.save(str(out))
    return _named_in({str(inc.include) for inc in tu.get_includes() if inc.include is not None})


def _build_compile_preamble(empty: Path, command: list[str], out: Path) -> set[str] | None:
    deps = out.with_suffix(".d")
    proc = subprocess.run([*command, "-Xclang", "-emit-pch", "-S", str(empty), "-o", str(out), "-MD", "-MF", str(deps)],
                          capture_output=True, text=True)
    if proc.returncode != 0 or not deps.is_file():
        return None
    words = deps.read_text().replace("\\\n", " ").split()[1:]  # after "target:"
    return _named_in({w for w in words if w != str(empty)})


def _preamble_folder() -> Path:
    """Where preambles are kept: the front end's cache where one is set (the test suite shares
    one among its workers, whatever cache folder a test takes), else the cache folder."""
    shared = os.environ.get("SIRIUS_FRONTEND_CACHE")
    return Path(shared) / "pch" if shared else cache_folder() / "pch"


def _preamble(job: CompileJob, kind: str) -> Path | None:
    """The precompiled header of ``kind`` (``index``, ``device``, ``host``) for ``job``,
    built on first use; None where none can stand for the headers."""
    bare = dataclasses.replace(job, flags=dataclasses.replace(job.flags, include_dirs=()))
    if kind == "index":
        args = bare.libclang_args()
    else:  # the compile's options, without the program and its output
        args = bare.compile_options(kind)
    clang = os.stat(job.toolchain.clang)
    key = hashlib.sha256("\0".join([str(VERSION), kind, *args, job.toolchain.clang, str(clang.st_size),
                                    str(clang.st_mtime_ns), hashlib.sha256(MANAGED_HEADER.read_bytes()).hexdigest()
                                    ]).encode()).hexdigest()[:24]
    folder = _preamble_folder() / key
    header, names_file = folder / _HEADER, folder / _NAMES
    if (folder / _FAILED).is_file():
        return None
    if not (header.is_file() and names_file.is_file()):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            empty = folder / "empty.cu"  # kept: clang checks on loading that its inputs are as they were
            if not empty.is_file():
                empty.write_text("")
            with tempfile.TemporaryDirectory(dir=folder) as tmp:
                built = Path(tmp) / _HEADER
                names = (_build_index_preamble(empty, args, built) if kind == "index"
                         else _build_compile_preamble(empty, [job.toolchain.clang, *args], built))
                if names is None or not built.is_file():
                    (folder / _FAILED).write_text("the precompiled header could not be built\n")
                    return None
                (Path(tmp) / _NAMES).write_text("\n".join(sorted(names)) + "\n")
                os.replace(Path(tmp) / _NAMES, names_file)  # whole or not at all: processes share it
                os.replace(built, header)
        except (OSError, ci.TranslationUnitLoadError, ci.TranslationUnitSaveError):
            return None
    names = names_file.read_text().split("\n")
    if any((Path(d) / name).exists() for d in job.flags.include_dirs for name in names if name):
        return None
    return header


def preamble_args(job: CompileJob, kind: str) -> list[str]:
    """``["-include-pch", PATH]`` for a parse of ``kind`` of ``job``, or ``[]``."""
    header = _preamble(job, kind)
    return ["-include-pch", str(header)] if header is not None else []


def forget(args: list[str]) -> None:
    """Remove the precompiled header ``args`` load (clang could not: a header changed since
    it was built), so that the next parse builds it again."""
    if "-include-pch" in args:
        Path(args[args.index("-include-pch") + 1]).unlink(missing_ok=True)


def pch_failure(diagnostics: str, args: list[str]) -> bool:
    """Whether a parse given ``args`` failed at loading its precompiled header."""
    return "-include-pch" in args and ("precompiled header" in diagnostics or "PCH file" in diagnostics
                                       or args[args.index("-include-pch") + 1] in diagnostics)


def parse_with_preamble(index, job: CompileJob, options: int):
    """libclang's translation unit of ``job``'s main file, its headers read from the
    precompiled preamble where one stands for them, else from the headers."""
    preamble = preamble_args(job, "index")
    if preamble:
        try:
            tu = index.parse(str(job.path), args=job.libclang_args() + preamble, options=options)
            if not any(d.severity >= ci.Diagnostic.Fatal and pch_failure(d.spelling, preamble)
                       for d in tu.diagnostics):
                return tu
        except ci.TranslationUnitLoadError:
            pass
        forget(preamble)
    return index.parse(str(job.path), args=job.libclang_args(), options=options)
