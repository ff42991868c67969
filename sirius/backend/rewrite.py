"""Rewrite a preprocessed CUDA program into C++ the CPU backend compiles.

Input is the program after ``clang -E`` with the backend's headers first on the
include path (so ``__syncthreads()``, ``threadIdx`` and the runtime API are
already what ``sirius/runtime/cpu/include`` makes of them). What macros cannot
express is done here, on the text:

1. ``kernel<<<grid, block[, shmem[, stream]]>>>(args)`` becomes a call of
   ``::__sirius::launch`` (see ``launch.h``) with a lambda that calls the
   kernel, so templates, overloads and default arguments resolve as in CUDA;
2. ``extern __shared__ T name[];`` becomes a reference to the block's dynamic
   shared memory;
3. ``__shared__`` declarations become ``static thread_local`` (all CUDA threads
   of a block run on one OS thread) followed by a call that fills the variable
   with the block's poison pattern the first time a block reaches it;
4. CUDA's declaration keywords (``__global__``, ``__device__``,
   ``__launch_bounds__(...)``, ``__align__(n)``...) become plain C++;
5. a kernel cast to an untyped pointer (``(void*)k``, ``(const void*)&k``,
   ``reinterpret_cast<void*>(k)``), as ``cudaLaunchKernel`` and
   ``cudaLaunchCooperativeKernel`` take it, becomes ``::__sirius::kernel_address(k,
   "k")``: the same pointer, recorded with how to unpack an argument array for
   ``k``'s parameter types (see ``launch.h``), which a ``void*`` no longer tells;
6. each definition of a ``__managed__`` variable (a plain global here, which
   kernels and the host share anyway) is followed by a registration that makes
   it managed memory for the runtime: kernels may be given its address, and its
   bytes go to the copy dump at exit, as a ``cudaMallocManaged`` buffer's do, so
   that ``sirius verify`` compares what the host reads of it.

A launch of a kernel declared with ``__launch_bounds__(N)`` (N a number after
preprocessing) carries N, so that a block larger than N fails as on a GPU; N
is also registered by the kernel's name, for what names a kernel without
``<<<>>>`` (``cudaLaunchCooperativeKernel``, occupancy queries).

It also refuses, with the file and line, what the CPU backend cannot run:
texture and surface objects, multi-device cooperative launches (multi-grid
groups), CUDA graphs, CUDA arrays, inline assembly, and kernel launches from
device code (dynamic parallelism).

Every rewrite keeps the line breaks of the text it replaces, so line markers,
``__LINE__`` and compiler diagnostics still point into the original files.
Needs nothing but the preprocessed text; pure Python.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from sirius.core.errors import InputError, UnsupportedError

# String and character literals (raw strings first), skipped by every scan.
_LITERAL = (
    r'R"(?P<delim>[^()\\\s"]{0,16})\((?:.|\n)*?\)(?P=delim)"'
    r'|"(?:\\.|[^"\\\n])*"'
    r"|'(?:\\.|[^'\\\n])*'"
)
_LINE_MARKER = re.compile(r'^#\s*(\d+)\s+"((?:\\.|[^"\\])*)"([ \d]*)$', re.M)
_IDENT = re.compile(r"[A-Za-z_]\w*")
_DIRECTIVE_LINE = re.compile(r"^[ \t]*#.*$", re.M)
_IDENT_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")

# Identifiers of features the CPU backend cannot run: name -> what (and verb).
_TEXTURE = "texture objects and references are"
_SURFACE = "surface objects and references are"
_MULTI_GRID = "multi-device cooperative launches (multi-grid groups) are"
_UNSUPPORTED_NAMES = {
    **dict.fromkeys(
        ["tex1Dfetch", "tex1D", "tex2D", "tex3D", "tex1DLayered", "tex2DLayered", "texCubemap",
         "tex2Dgather", "tex1DLod", "tex2DLod", "tex3DLod", "tex1DGrad", "tex2DGrad", "tex3DGrad",
         "cudaTextureObject_t", "cudaCreateTextureObject", "cudaBindTexture",
         "cudaBindTexture2D", "cudaBindTextureToArray"], _TEXTURE),
    **dict.fromkeys(
        ["surf1Dread", "surf1Dwrite", "surf2Dread", "surf2Dwrite", "surf3Dread", "surf3Dwrite",
         "cudaSurfaceObject_t", "cudaCreateSurfaceObject"], _SURFACE),
    **dict.fromkeys(
        ["cudaLaunchCooperativeKernelMultiDevice", "this_multi_grid", "multi_grid_group"],
        _MULTI_GRID),
    **dict.fromkeys(
        ["cudaGraphCreate", "cudaGraphLaunch", "cudaGraphInstantiate", "cudaStreamBeginCapture",
         "cudaGraphAddKernelNode"], "CUDA graphs are"),
    **dict.fromkeys(["cudaMallocArray", "cudaMalloc3DArray", "cudaArray_t", "cudaMemcpyToArray"],
                    "CUDA arrays are"),
}
# Names that are unsupported only when followed by this pattern.
_UNSUPPORTED_BEFORE = {
    "texture": (re.compile(r"\s*<"), _TEXTURE),
    "surface": (re.compile(r"\s*<"), _SURFACE),
    "asm": (re.compile(r"\s*(?:volatile\b|__volatile__\b|goto\b)?\s*\("),
            "inline assembly (asm) is"),
}
_UNSUPPORTED_BEFORE["__asm__"] = _UNSUPPORTED_BEFORE["__asm"] = _UNSUPPORTED_BEFORE["asm"]

# CUDA keywords that only annotate declarations.
_KEYWORD = re.compile(
    r"\b(?:__global__|__device__|__host__|__constant__|__managed__|__grid_constant__"
    r"|__forceinline__|__inline_hint__|__noinline__|__shared__)\b"
    r"|\b(?:__launch_bounds__|__maxnreg__|__cluster_dims__|__align__)\s*"
    r"\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)"
)

# `__launch_bounds__(256[, ...]) name(` on a kernel declaration or definition.
_LAUNCH_BOUNDS = re.compile(
    r"\b__launch_bounds__\s*\(\s*(?P<n>\d+)[uUlL]*\s*(?:,[^()]*)?\)\s*(?P<name>[A-Za-z_]\w*)\s*[(<]"
)

_ALIGN_SPEC = re.compile(
    r"\b(?:alignas|__align__)\s*\((?:[^()]|\([^()]*\))*\)"
    r"|\b__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)"
)
_NOT_A_NAME = {"const", "volatile", "unsigned", "signed", "int", "long", "short", "char",
               "float", "double", "bool", "static", "extern", "struct", "class", "union",
               "typename", "restrict", "__restrict__", "__restrict"}


@dataclass
class RewriteResult:
    """The C++ text to compile and what was found on the way."""

    text: str
    kernels_launched: list[str] = field(default_factory=list)
    shared_declarations: int = 0


# ------------------------------------------------------------------ locations


class LineMap:
    """Maps offsets of preprocessed text to (file, line) through its line markers."""

    def __init__(self, text: str):
        self.text = text
        self.starts: list[int] = []  # offset where the marked region starts
        self.entries: list[tuple[str, int, bool]] = []  # (file, line, is system header)
        for m in _LINE_MARKER.finditer(text):
            flags = m.group(3).split()
            name = m.group(2).replace('\\"', '"').replace("\\\\", "\\")
            system = "3" in flags or name.startswith("<")
            self.starts.append(m.end() + 1)
            self.entries.append((name, int(m.group(1)), system))

    def _index(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset) - 1

    def location(self, offset: int) -> tuple[str, int]:
        i = self._index(offset)
        if i < 0:
            return "<input>", self.text.count("\n", 0, offset) + 1
        name, line, _ = self.entries[i]
        return name, line + self.text.count("\n", self.starts[i], offset)

    def is_user(self, offset: int) -> bool:
        i = self._index(offset)
        return i >= 0 and not self.entries[i][2]

    def user_regions(self):
        """(start, end) spans of text from the program's own files."""
        for i, (_, _, system) in enumerate(self.entries):
            if system:
                continue
            end = self.starts[i + 1] if i + 1 < len(self.starts) else len(self.text)
            yield self.starts[i], end


def _where(lines: LineMap, offset: int) -> str:
    name, line = lines.location(offset)
    return f"{name}:{line}"


# ------------------------------------------------------------------ scanning


_LINE_LITERAL = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')


def _inside_literal(text: str, pos: int) -> bool:
    """Whether offset ``pos`` lies in a string or character literal of its line."""
    line_start = text.rfind("\n", 0, pos) + 1
    line_end = text.find("\n", pos)
    for m in _LINE_LITERAL.finditer(text, line_start, len(text) if line_end < 0 else line_end):
        if m.start() >= pos:
            break
        if pos < m.end():
            return True
    return False


def _code_matches(text: str, pattern: str, start: int = 0, end: int | None = None):
    """Matches of ``pattern`` outside string and character literals."""
    rx = re.compile(pattern)
    end = len(text) if end is None else end
    for m in rx.finditer(text, start, end):
        if not _inside_literal(text, m.start()):
            yield m


def _skip_literal(text: str, i: int) -> int:
    """If a literal starts at ``i``, the offset after it; else ``i``."""
    m = re.compile(_LITERAL).match(text, i)
    return m.end() if m else i


def _match_forward(text: str, i: int, close: str) -> int:
    """Offset of the bracket closing the one at ``i`` (``(``, ``[`` or ``{``)."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    depth = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c in "\"'" or (c == "R" and text.startswith('R"', i)):
            j = _skip_literal(text, i)
            if j != i:
                i = j
                continue
        if c in pairs:
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                if c != close:
                    break
                return i
        i += 1
    raise ValueError("unbalanced brackets")


def _find_at_depth0(text: str, i: int, token: str) -> int:
    """First ``token`` at bracket depth 0 from ``i``."""
    depth = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = _skip_literal(text, i)
            if j != i:
                i = j
                continue
        if depth == 0 and text.startswith(token, i):
            return i
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth < 0:
                break
        i += 1
    raise ValueError(f"no {token!r} found")


def _split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split at ``sep`` outside (), [], {} and template angle brackets."""
    parts, depth, angle, last = [], 0, 0, 0
    for i, c in enumerate(text):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and c == "<":
            angle += 1
        elif depth == 0 and c == ">" and angle > 0:
            angle -= 1
        elif c == sep and depth == 0 and angle == 0:
            parts.append(text[last:i])
            last = i + 1
    parts.append(text[last:])
    return parts


# ------------------------------------------------------------------ scopes

_HEAD_NAMESPACE = re.compile(r'\bnamespace\b[^;{}()]*$|\bextern\s*"C(?:\+\+)?"\s*$')
_HEAD_CLASS = re.compile(r"\b(?:struct|class|union|enum)\b[^;{}()=]*$")
_HEAD_INIT = re.compile(r"(?:=|,|\(|\[|\breturn)\s*$")


def _classify_head(head: str) -> str:
    head = "\n".join(l for l in head.splitlines() if not l.lstrip().startswith("#")).strip()
    if _HEAD_NAMESPACE.search(head):
        return "namespace"
    if _HEAD_CLASS.search(head):
        return "class"
    if not head or _HEAD_INIT.search(head):
        return "init" if head else "code"
    return "code"


@dataclass(frozen=True)
class Scope:
    """Enclosing braces of a point: (kind, head text) from the outermost in."""

    braces: tuple[tuple[str, str], ...]

    @property
    def in_function(self) -> bool:
        return any(kind == "code" for kind, _ in self.braces)

    @property
    def function_head(self) -> str:
        for kind, head in self.braces:
            if kind == "code":
                return head
        return ""


def _scopes_at(text: str, points: list[int], spans: list[tuple[int, int]]) -> dict[int, Scope]:
    """The brace scope at each of ``points``, from one pass over ``spans`` (the
    program's own text: system headers are balanced and are skipped)."""
    result: dict[int, Scope] = {}
    if not points:
        return result
    todo = sorted(set(points))
    k = 0
    stack: list[tuple[str, str]] = []
    rx = re.compile(f"{_LITERAL}|(?P<p>[{{}}])")
    for span_start, span_end in spans:
        for m in rx.finditer(text, span_start, span_end):
            if m.group("p") is None:
                continue
            pos = m.start()
            while k < len(todo) and todo[k] < pos:
                result[todo[k]] = Scope(tuple(stack))
                k += 1
            if m.group("p") == "{":
                last_end = max(text.rfind(";", 0, pos), text.rfind("{", 0, pos),
                               text.rfind("}", 0, pos)) + 1
                head = text[last_end:pos]
                kind = _classify_head(head)
                if kind == "init" or (kind == "code" and not head.strip()):
                    # brace-init lists and nested blocks take the enclosing kind
                    kind, head = stack[-1] if stack else (kind, head)
                stack.append((kind, head))
            elif stack:
                stack.pop()
        while k < len(todo) and todo[k] < span_end:
            result[todo[k]] = Scope(tuple(stack))
            k += 1
    while k < len(todo):
        result[todo[k]] = Scope(tuple(stack))
        k += 1
    return result


def _declaration_start(text: str, i: int) -> int:
    """Start of the declaration holding offset ``i``: after the previous ; { } or
    preprocessor line."""
    j = max(text.rfind(";", 0, i), text.rfind("{", 0, i), text.rfind("}", 0, i)) + 1
    for m in _DIRECTIVE_LINE.finditer(text, j, i):
        j = m.end() + 1
    return j


# ------------------------------------------------------------------ launches


def _callee_start(text: str, p: int) -> int:
    """Start of the kernel expression that ends right before ``<<<`` at ``p``."""
    i = p
    while i > 0 and text[i - 1].isspace():
        i -= 1
    while True:
        if i > 0 and text[i - 1] == ")":
            depth = 0
            j = i - 1
            while j >= 0:
                if text[j] == ")":
                    depth += 1
                elif text[j] == "(":
                    depth -= 1
                    if depth == 0:
                        return j
                j -= 1
            raise ValueError("unbalanced parentheses before <<<")
        if i > 0 and text[i - 1] == ">":
            depth = 0
            j = i - 1
            while j >= 0:
                if text[j] == ">":
                    depth += 1
                elif text[j] == "<":
                    depth -= 1
                    if depth == 0:
                        break
                elif text[j] in ";{}":
                    raise ValueError("unbalanced template arguments before <<<")
                j -= 1
            i = j
            while i > 0 and text[i - 1].isspace():
                i -= 1
        end = i
        while i > 0 and text[i - 1] in _IDENT_CHARS:
            i -= 1
        if i == end or text[i].isdigit():
            raise ValueError("no kernel name before <<<")
        j = i
        while j > 0 and text[j - 1].isspace():
            j -= 1
        if j >= 2 and text[j - 2 : j] == "::":
            i = j - 2
            while i > 0 and text[i - 1].isspace():
                i -= 1
            if i > 0 and (text[i - 1] in _IDENT_CHARS or text[i - 1] == ">"):
                continue
            return j - 2
        return i


def _c_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass
class _Edit:
    start: int
    end: int
    text: str


def _launch_bounds(text: str, spans: list[tuple[int, int]]) -> dict[str, int]:
    """Kernel name -> maximum threads per block from ``__launch_bounds__``
    (names declared with different bounds are left out)."""
    bounds: dict[str, int] = {}
    conflicting: set[str] = set()
    for start, end in spans:
        for m in _LAUNCH_BOUNDS.finditer(text, start, end):
            name, n = m.group("name"), int(m.group("n"))
            if bounds.get(name, n) != n:
                conflicting.add(name)
            bounds[name] = n
    for name in conflicting:
        del bounds[name]
    return bounds


def _bounds_registrations(bounds: dict[str, int]) -> str:
    """Lines registering each kernel's ``__launch_bounds__`` with the runtime
    (appended after the program, so no line of it moves)."""
    return "".join(
        f"\nstatic ::__sirius::LaunchBoundsRegistration __sirius_bounds_{k}"
        f"({_c_string(name)}, {n});"
        for k, (name, n) in enumerate(sorted(bounds.items()))
    )


def _base_name(callee: str) -> str:
    """``k`` of ``ns::k<float, 4>``."""
    head = callee.split("<", 1)[0]
    names = _IDENT.findall(head)
    return names[-1] if names else ""


def _rewrite_launch(text: str, p: int, lines: LineMap, scope: Scope, edits: list, names: list,
                    bounds: dict[str, int]):
    where = _where(lines, p)
    head = scope.function_head
    if re.search(r"\b__global__\b", head) or (
        re.search(r"\b__device__\b", head) and not re.search(r"\b__host__\b", head)
    ):
        raise UnsupportedError(
            f"{where}: error: dynamic parallelism (a kernel launch in device code) is "
            "unsupported by the CPU backend"
        )
    try:
        cs = _callee_start(text, p)
        q = _find_at_depth0(text, p + 3, ">>>")
        r = q + 3
        while r < len(text) and text[r].isspace():
            r += 1
        if r >= len(text) or text[r] != "(":
            raise ValueError("expected '(' after >>>")
        close = _match_forward(text, r, ")")
    except ValueError as err:
        raise InputError(f"{where}: error: cannot read this kernel launch: {err}") from None
    callee = " ".join(text[cs:p].split())
    names.append(callee)
    args_empty = not text[r + 1 : close].strip()
    bound = bounds.get(_base_name(callee))
    config_end = ")" if bound is None else f").max_threads({bound})"
    edits.append(_Edit(cs, p + 3, "::__sirius::launch(::__sirius::LaunchConfig("))
    edits.append(
        _Edit(
            q,
            r + 1,
            f"{config_end}, {_c_string(callee)}, "
            f"[=](auto... __sirius_a) {{ {callee}(__sirius_a...); }}"
            + ("" if args_empty else ", "),
        )
    )
    # a braced argument ({n, 2.0f}) has no type of its own to pass on: it is given the
    # kernel's parameter type
    at, index = r + 1, 0
    while at < close:
        while at < close and text[at].isspace():
            at += 1
        if at < close and text[at] == "{":
            edits.append(_Edit(at, at, f"decltype(::__sirius::kernel_parameter<{index}>(&{callee}))"))
        try:
            at, index = _find_at_depth0(text, at, ",") + 1, index + 1
        except ValueError:  # the last argument
            break


# ------------------------------------------------------------------ kernel pointers

_KERNEL_HEAD_SKIP = re.compile(
    r"\b(?:__launch_bounds__|__maxnreg__|__cluster_dims__|__attribute__|__declspec|alignas|__align__)\s*"
    r"\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)|\[\[(?:[^\]]|\][^\]])*\]\]"
)
_VOID_POINTER = r"(?:const\s+)?void\s*(?:const\s*)?\*"
# `(void*)`, `(const void*)`, `reinterpret_cast<void*>(` / `static_cast<const void*>(` before a name
_CAST_TO_VOID = re.compile(
    rf"\(\s*{_VOID_POINTER}\s*\)\s*(?P<paren>\(\s*)?"
    rf"|\b(?:reinterpret_cast|static_cast)\s*<\s*{_VOID_POINTER}\s*>\s*\(\s*"
)
_QUALIFIED_NAME = re.compile(r"&?\s*(?:::\s*)?(?:[A-Za-z_]\w*\s*::\s*)*(?P<base>[A-Za-z_]\w*)")
_CLOSING_PARENTHESIS = re.compile(r"\s*\)")


def _kernel_names(text: str, spans: list[tuple[int, int]]) -> set[str]:
    """Names of the kernels the program declares (``k`` of ``__global__ void k(...)``)."""
    names = set()
    for start, end in spans:
        for m in _code_matches(text, r"\b__global__\b", start, end):
            head = _KERNEL_HEAD_SKIP.sub(" ", text[m.end(): m.end() + 2000])
            declared = re.search(r"([A-Za-z_]\w*)\s*(?:<[^;{}()]*>)?\s*\(", head)
            if declared is not None:
                names.add(declared.group(1))
    return names


def _template_arguments_end(text: str, i: int) -> int:
    """``i`` past the template argument list starting at ``i`` (``<float, 4>``), if one does."""
    j = i
    while j < len(text) and text[j].isspace():
        j += 1
    if j >= len(text) or text[j] != "<":
        return i
    depth = 0
    for k in range(j, min(len(text), j + 2000)):
        c = text[k]
        if c in "<(":
            depth += 1
        elif c in ">)":
            depth -= 1
            if depth == 0:
                return k + 1 if c == ">" else i
        elif c in ";{}":
            return i
    return i


def _rewrite_kernel_casts(text: str, spans: list[tuple[int, int]], kernels: set[str], edits: list) -> None:
    """``(void*)k`` -> ``::__sirius::kernel_address(k, "k")`` for every kernel ``k`` (see the
    module docstring); casts of anything else are left alone."""
    if not kernels:
        return
    for start, end in spans:
        for cast in _code_matches(text, _CAST_TO_VOID.pattern, start, end):
            name = _QUALIFIED_NAME.match(text, cast.end())
            if name is None or name.group("base") not in kernels:
                continue
            stop = close = _template_arguments_end(text, name.end())
            if cast.group("paren") is not None or not cast.group(0).startswith("("):
                # `(void*)(k)` and the C++ casts end with the parenthesis after the name
                paren = _CLOSING_PARENTHESIS.match(text, stop)
                if paren is None:
                    continue
                close = paren.end()
            kernel = " ".join(text[name.start():stop].split())
            spelled = kernel.lstrip("&").strip()
            edits.append(_Edit(cast.start(), close,
                               f"::__sirius::kernel_address({kernel}, {_c_string(spelled)})"))


# ------------------------------------------------------------------ __managed__


def _rewrite_managed(text: str, p: int, lines: LineMap, scope: Scope, edits: list, counter: int) -> None:
    """After the definition holding the ``__managed__`` at ``p``, register each variable it
    defines as managed memory (``::__sirius::ManagedVariable``). CUDA allows them at
    namespace scope only; elsewhere the program stays as it is."""
    if any(kind != "namespace" for kind, _ in scope.braces):
        return
    start = _declaration_start(text, p)
    try:
        semi = _find_at_depth0(text, p, ";")
    except ValueError:
        raise InputError(f"{_where(lines, p)}: error: cannot read this __managed__ declaration") from None
    decl = _KEYWORD.sub(" ", text[start:semi])
    if re.search(r"\bextern\b", decl):
        return  # defined elsewhere, registered there
    decl = _ALIGN_SPEC.sub(" ", decl)
    names = [_declarator_name(d) for d in _split_top_level(decl)]
    if not all(names):
        raise InputError(f"{_where(lines, p)}: error: cannot read the names this __managed__ declaration "
                         "defines")
    registration = "".join(f" static ::__sirius::ManagedVariable __sirius_managed{counter}_{k}({name}, "
                           f"{_c_string(name)});" for k, name in enumerate(names))
    edits.append(_Edit(semi + 1, semi + 1, registration))


# ------------------------------------------------------------------ __shared__


def _declarator_name(declarator: str) -> str | None:
    """The declared name in ``float a[4]``, ``*p``, ``T x`` (None if unsure)."""
    d = declarator
    eq = _find_top(d, "=")
    if eq >= 0:
        d = d[:eq]
    br = _find_top(d, "[")
    if br >= 0:
        d = d[:br]
    names = [n for n in _IDENT.findall(d) if n not in _NOT_A_NAME]
    if not names:
        return None
    name = names[-1]
    if not re.search(rf"\b{name}\s*$", d.strip()):
        return None
    return name


def _find_top(text: str, ch: str) -> int:
    depth = 0
    angle = 0
    for i, c in enumerate(text):
        if c == ch and depth == 0 and angle == 0:
            return i
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "<" and depth == 0:
            angle += 1
        elif c == ">" and depth == 0 and angle:
            angle -= 1
    return -1


def _keep_newlines(old: str, new: str) -> str:
    missing = old.count("\n") - new.count("\n")
    return new + "\n" * missing if missing > 0 else new


def _rewrite_shared(text: str, p: int, lines: LineMap, scope: Scope, edits: list, counter: int):
    """Rewrite the declaration holding the ``__shared__`` at ``p``."""
    where = _where(lines, p)
    start = _declaration_start(text, p)
    try:
        semi = _find_at_depth0(text, p, ";")
    except ValueError:
        raise InputError(f"{where}: error: cannot read this __shared__ declaration") from None
    decl = text[start:p] + text[p + len("__shared__") : semi]
    aligns = [a.replace("__align__", "alignas") for a in _ALIGN_SPEC.findall(decl)]
    rest = _ALIGN_SPEC.sub(" ", decl)
    is_extern = re.search(r"\bextern\b", rest) is not None
    rest = re.sub(r"\b(?:extern|static)\b", " ", rest)
    rest = " ".join(rest.split())
    front = " ".join(aligns)

    if is_extern:
        m = re.fullmatch(r"(?P<spec>.+?)\s*\b(?P<name>[A-Za-z_]\w*)\s*\[\s*\]", rest)
        if not m or not m.group("spec").strip():
            raise UnsupportedError(
                f"{where}: error: this extern __shared__ declaration is unsupported by the CPU "
                "backend (expected 'extern __shared__ T name[];')"
            )
        spec, name = m.group("spec").strip(), m.group("name")
        ref = (
            f"{spec} (&{name})[] = *reinterpret_cast<{spec} (*)[]>"
            "(::__sirius::dynamic_shared());"
        )
        if not scope.in_function:
            ref = "static thread_local " + ref
        new = ref
    else:
        decls = _split_top_level(rest)
        names = [_declarator_name(d) for d in decls]
        new = f"{front} static thread_local {rest};".lstrip()
        if all(names):
            gen = f"__sirius_sg{counter}"
            if scope.in_function:
                new += f" static thread_local unsigned long long {gen}[{len(names)}];"
                for k, name in enumerate(names):
                    new += (
                        f" ::__sirius::shared_fresh(__builtin_addressof({name}), sizeof({name}),"
                        f" &{gen}[{k}]);"
                    )
            else:
                for k, name in enumerate(names):
                    new += (
                        f" static ::__sirius::SharedRegistration {gen}_{k}("
                        f"[]() -> void* {{ return (void*)__builtin_addressof({name}); }},"
                        f" sizeof({name}));"
                    )
    lead = re.match(r"\s*", text[start:semi]).group(0)
    edits.append(_Edit(start, semi + 1, _keep_newlines(text[start : semi + 1], lead + new)))


# ------------------------------------------------------------------ keywords


def _keyword(m: re.Match) -> str:
    word = m.group(0)
    text = m.string
    if word == "__forceinline__" or word == "__inline_hint__":
        return "inline".ljust(len(word))
    if word == "__noinline__":
        j = m.start() - 1
        while j >= 0 and text[j].isspace():
            j -= 1
        if j >= 0 and text[j] in "(,":
            return word  # already inside __attribute__((...))
        return "__attribute__((noinline))"
    if word == "__shared__":
        return "static thread_local"
    if word.startswith("__align__"):
        inner = word[word.index("(") :]
        return f"__attribute__((aligned{inner}))"
    return "".join(c if c == "\n" else " " for c in word)


# ------------------------------------------------------------------ driver


def _check_unsupported(text: str, lines: LineMap) -> None:
    for start, end in lines.user_regions():
        for m in _IDENT.finditer(text, start, end):
            name = m.group(0)
            what = _UNSUPPORTED_NAMES.get(name)
            if what is None and name in _UNSUPPORTED_BEFORE:
                follow, kind = _UNSUPPORTED_BEFORE[name]
                if follow.match(text, m.end()):
                    what = kind
            if what is None or _inside_literal(text, m.start()):
                continue
            if m.start() > 0 and text[m.start() - 1] in _IDENT_CHARS:
                continue
            raise UnsupportedError(
                f"{_where(lines, m.start())}: error: {what} unsupported by the CPU backend "
                f"(found '{name}')"
            )


def rewrite_preprocessed(text: str) -> RewriteResult:
    """Rewrite the preprocessed program ``text`` (see the module docstring).

    Raises UnsupportedError (exit 2) for constructs the CPU backend cannot run
    and InputError for launches or declarations it cannot read, both naming
    the file and line.
    """
    lines = LineMap(text)
    _check_unsupported(text, lines)

    spans = list(lines.user_regions())
    launches = [m.start() for a, b in spans for m in _code_matches(text, r"<<<", a, b)]
    shared = [m.start() for a, b in spans for m in _code_matches(text, r"\b__shared__\b", a, b)]
    managed = [m.start() for a, b in spans for m in _code_matches(text, r"\b__managed__\b", a, b)]
    scopes = _scopes_at(text, launches + shared + managed, spans)

    edits: list[_Edit] = []
    names: list[str] = []
    bounds = _launch_bounds(text, spans)
    for p in launches:
        _rewrite_launch(text, p, lines, scopes[p], edits, names, bounds)
    done_until = -1
    for k, p in enumerate(shared):
        if p < done_until:
            continue  # second __shared__ in one declaration
        before = len(edits)
        _rewrite_shared(text, p, lines, scopes[p], edits, k)
        done_until = edits[before].end
    for k, p in enumerate(managed):
        _rewrite_managed(text, p, lines, scopes[p], edits, k)
    _rewrite_kernel_casts(text, spans, _kernel_names(text, spans), edits)

    edits.sort(key=lambda e: e.start)
    out: list[str] = []
    pos = 0
    for e in edits:
        if e.start < pos:
            raise InputError(
                f"{_where(lines, e.start)}: error: overlapping CUDA constructs the CPU backend "
                "cannot rewrite"
            )
        out.append(text[pos : e.start])
        out.append(_keep_newlines(text[e.start : e.end], e.text))
        pos = e.end
    out.append(text[pos:])
    result = _KEYWORD.sub(_keyword, "".join(out)) + _bounds_registrations(bounds)
    return RewriteResult(result, names, len(shared))
