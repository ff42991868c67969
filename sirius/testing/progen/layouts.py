"""Layouts of real programs (issue 31), drawn with ``generate_program(layouts=True)``: the
same program, computing the same, laid out as application code lays it out.

Each layout is decided by a fourth random stream (``Layouts.rng``), consulted only when
layouts are asked for, so that a program generated without them is, for every seed, the
one earlier versions generated; and with them, the palette's and the other constructs'
choices stay those of the other streams (the launches, host statements and dependences
the generator describes are the same either way):

- ``pointer_array``: the buffers are the elements of an array of device pointers,
  ``float* d_bufs[K]``, allocated by index (``cudaMalloc(&d_bufs[k], ...)`` in a loop, or
  at each constant index) and used as ``d_bufs[k]`` wherever ``main`` names them;
- ``included_kernels``: the first kernels (with the device globals, macros and device
  helpers they need) are written in a second file the main file ``#include``s
  (``GeneratedProgram.files``);
- ``host_helpers``: runs of consecutive launch statements of ``main`` are moved into host
  functions ``main`` calls (static, inline, kept out of line or with external linkage;
  some call a second helper for the rest of the run), their pointers and sizes passed as
  parameters of the same names;
- ``crlf``: the main file (and, drawn apart, the included file) ends its lines in CRLF.

With both ``included_kernels`` and ``host_helpers``, the helpers that launch only kernels of
the included file may be written there too (drawn once per program), as benchmark suites
write a kernel file with the host function that launches its kernels.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

LAYOUTS = ("pointer_array", "included_kernels", "host_helpers", "crlf")

P_POINTER_ARRAY = 0.35    # the buffers in an array of device pointers (programs without a pool)
P_INCLUDED = 0.35         # kernels in a file the main file includes
P_HOST_HELPERS = 0.4      # launches of main moved into host helpers
P_CRLF = 0.3              # the main file in CRLF
P_CRLF_INCLUDED = 0.5     # the included file in CRLF, drawn apart from the main file's
P_NESTED_HELPER = 0.4     # a helper of two or more launches calls another for the rest
P_HELPERS_INCLUDED = 0.6  # helpers launching only the included file's kernels written in that file
MAX_HELPERS = 3

HELPER_KINDS = ("static ", "static inline ", "__attribute__((noinline)) static ", "")

_LAUNCH = re.compile(r"^  [A-Za-z_]\w*(?:<[^<>]*>)?<<<.*>>>\(.*\);$")
_NAME = re.compile(r"(?<![\w.])[A-Za-z_]\w*")
_BUFFER = re.compile(r"\bd_(b\d+)\b")
# what a launch of main may name besides its buffers and sizes: types, keywords, and what
# is declared at file scope (kernels, device globals, program macros, ``threads``)
_KEYWORDS = {"float", "int", "unsigned", "const", "char", "short", "sizeof", "dim3", "threads"}


@dataclass
class Layouts:
    """The layouts of one program (empty: none), from their own random stream."""

    rng: random.Random | None = None
    chosen: set[str] = field(default_factory=set)
    crlf_included: bool = False

    @classmethod
    def draw(cls, seed: int, enabled: bool) -> "Layouts":
        if not enabled:
            return cls()
        rng = random.Random(seed * 104723 + 1299709)
        out = cls(rng)
        for name, p in (("pointer_array", P_POINTER_ARRAY), ("included_kernels", P_INCLUDED),
                        ("host_helpers", P_HOST_HELPERS), ("crlf", P_CRLF)):
            if rng.random() < p:
                out.chosen.add(name)
        out.crlf_included = rng.random() < P_CRLF_INCLUDED
        return out

    def __contains__(self, name: str) -> bool:
        return name in self.chosen


def split_included(file_scope: list[str], kernels_at: list[int], rng: random.Random) -> int:
    """Where the included file ends in the file-scope lines: after the first 1..all of the
    kernels (each starts at an index of ``kernels_at``), so that the globals, macros and
    device helpers before them go with them."""
    k = rng.randint(1, len(kernels_at))
    return kernels_at[k] if k < len(kernels_at) else len(file_scope)


def included_file(name: str, lines: list[str]) -> str:
    guard = re.sub(r"\W", "_", name).upper()
    return "\n".join([f"// kernels of the generated program, in a file its main file includes",
                      f"#ifndef {guard}", f"#define {guard}", *lines, f"#endif  // {guard}"]) + "\n"


_KERNEL_LAUNCHED = re.compile(r"\b([A-Za-z_]\w*)(?:<[^<>]*>)?<<<")
_HELPER_CALLED = re.compile(r"\b(run_part\w*)\(")
_DEFINED = re.compile(r"\bvoid ([A-Za-z_]\w*)\(")


def helpers_with_included_kernels(helpers: list[str], included: list[str], main: list[str], rng: random.Random
                                  ) -> tuple[list[str], list[str]]:
    """Of the host ``helpers`` (definitions, in the order they must be written), those to
    write in the included file (``included``: its lines; ``main``: the main file's), and
    the rest: with probability ``P_HELPERS_INCLUDED``, every helper whose launches are of
    kernels only the included file defines (no overload of the name in the main file) and
    whose calls are of helpers written there too."""
    if rng.random() >= P_HELPERS_INCLUDED:
        return [], helpers
    defined = lambda lines: set(_DEFINED.findall("\n".join(l for l in lines if "__global__" in l)))
    kernels = defined(included) - defined(main)
    moved, kept, names = [], [], set()
    for code in helpers:
        name = _DEFINED.search(code).group(1)
        if set(_KERNEL_LAUNCHED.findall(code)) <= kernels and set(_HELPER_CALLED.findall(code)) - {name} <= names:
            moved.append(code)
            names.add(name)
        else:
            kept.append(code)
    return moved, kept


def host_helpers(body: list[str], file_names: set[str], rng: random.Random) -> tuple[list[str], list[str]]:
    """``body`` with up to ``MAX_HELPERS`` runs of consecutive launch statements of ``main``
    (its own lines, not in a loop or a branch) replaced by a call of a host helper holding
    them; and the helpers' definitions, in the order they must be written."""
    runs: list[list[int]] = []
    for k, line in enumerate(body):
        if _LAUNCH.match(line) and _movable(line, file_names):
            if runs and runs[-1][-1] == k - 1:
                runs[-1].append(k)
            else:
                runs.append([k])
    if not runs:
        return body, []
    chosen = sorted(rng.sample(runs, min(len(runs), rng.randint(1, MAX_HELPERS))))
    out, defs = list(body), []
    for number, run in reversed(list(enumerate(chosen))):
        first = rng.randrange(len(run))
        last = rng.randrange(first, min(len(run), first + 3))
        lines = [body[k].strip() for k in run[first:last + 1]]
        name = f"run_part{number}"
        nested = len(lines) > 1 and rng.random() < P_NESTED_HELPER
        kind = rng.choice(HELPER_KINDS)
        if nested:
            inner_kind = rng.choice(HELPER_KINDS)
            defs[:0] = [_helper(f"{name}_rest", inner_kind, lines[1:], []),
                        _helper(name, kind, lines[:1], [_call(f"{name}_rest", lines[1:])])]
        else:
            defs[:0] = [_helper(name, kind, lines, [])]
        out[run[first]:run[last] + 1] = ["  " + _call(name, lines)]
    return out, defs


def _movable(line: str, file_names: set[str]) -> bool:
    """A launch of main names nothing local but buffers and sizes (``n``, ``side``)."""
    return all(name in file_names or name in _KEYWORDS or name in ("n", "side") or _BUFFER.fullmatch(name)
               for name in _NAME.findall(line))


def _params(lines: list[str]) -> list[tuple[str, str]]:
    text = "\n".join(lines)
    buffers = sorted({m.group(0) for m in _BUFFER.finditer(text)}, key=lambda b: int(b[3:]))
    sizes = [s for s in ("n", "side") if re.search(rf"(?<![\w.]){s}\b", text)]
    return [("float*", b) for b in buffers] + [("int", s) for s in sizes]


def _call(name: str, lines: list[str]) -> str:
    return f"{name}({', '.join(p for _, p in _params(lines))});"


def _helper(name: str, kind: str, lines: list[str], calls: list[str]) -> str:
    params = _params(lines + calls)
    signature = ", ".join(f"{t} {p}" for t, p in params)
    return f"{kind}void {name}({signature}) {{\n" + "".join(f"  {l}\n" for l in lines + calls) + "}\n"


def pointer_array_allocation(buffers: list[str], rng: random.Random) -> list[str]:
    """The lines of main allocating ``buffers`` as elements of ``d_bufs``, by index."""
    nb = len(buffers)
    if rng.random() < 0.5:
        return [f"  float* d_bufs[{nb}] = {{}};",
                f"  for (int k = 0; k < {nb}; ++k) cudaMalloc(&d_bufs[k], n * sizeof(float));"]
    return [f"  float* d_bufs[{nb}];"] + [f"  cudaMalloc(&d_bufs[{k}], n * sizeof(float));" for k in range(nb)]


def pointer_array_free(buffers: list[str], rng: random.Random) -> list[str]:
    nb = len(buffers)
    if rng.random() < 0.5:
        return [f"  for (int k = 0; k < {nb}; ++k) cudaFree(d_bufs[k]);"]
    return [f"  cudaFree(d_bufs[{k}]);" for k in range(nb)]


def as_elements(lines: list[str]) -> list[str]:
    """Main's lines naming each buffer ``d_b<k>`` as the element ``d_bufs[k]``."""
    return [_BUFFER.sub(lambda m: f"d_bufs[{m.group(1)[1:]}]", line) for line in lines]


def crlf(text: str) -> str:
    return text.replace("\n", "\r\n")
