"""Source facts from libclang: kernels, launch expressions, allocations.

LLVM IR knows values; the source knows names and ranges. This index gives
kernel parameter names, the exact text and byte range of every launch
expression ``k<<<g, b, smem, stream>>>(args)`` (what code generation
rewrites), and the variable each ``cudaMalloc`` fills, keyed by line so
the IR models (compiled with line tables) can be joined to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import clang.cindex as ci

from sirius.analysis.frontend import CompileJob


@dataclass(frozen=True)
class SourceRange:
    file: str
    line: int
    column: int
    end_line: int
    start_offset: int
    end_offset: int


@dataclass(frozen=True)
class KernelDecl:
    name: str
    stub_mangled: str  # mangled name of the host-side stub, as in host IR
    params: tuple[tuple[str, str], ...]  # (name, type spelling)
    range: SourceRange
    is_template: bool = False
    params_text: str = ""  # the parameter list as written, without parentheses
    body_text: str = ""  # the compound statement as written, braces included
    callees_read_indices: tuple[str, ...] = ()  # called device functions reading threadIdx & co.


@dataclass(frozen=True)
class LaunchSite:
    kernel: str
    function: str  # enclosing host function
    config: tuple[str, ...]  # grid, block[, shmem[, stream]] as written
    args: tuple[str, ...]
    range: SourceRange
    statement: bool = False  # the launch is a whole statement directly inside braces
    macro: str | None = None  # the macro whose expansion wrote the launch (its source text has no ``<<<``)

    @property
    def text(self) -> str:
        return f"{self.kernel}<<<{', '.join(self.config)}>>>({', '.join(self.args)})"


@dataclass(frozen=True)
class AllocSite:
    function: str  # runtime function, e.g. cudaMalloc
    variable: str | None
    line: int
    size_text: str


@dataclass(frozen=True)
class ForLoop:
    """A host ``for`` statement: its range, and what its body holds."""

    range: SourceRange
    function: str
    # body statements: ("decl", range) for side-effect-free declarations,
    # ("launch", range), ("for", range), or ("other", range)
    body: tuple[tuple[str, SourceRange], ...]


@dataclass
class SourceIndex:
    kernels: dict[str, KernelDecl] = field(default_factory=dict)  # by stub mangled name
    launches: list[LaunchSite] = field(default_factory=list)
    allocations: list[AllocSite] = field(default_factory=list)
    functions_with_launches: set[str] = field(default_factory=set)
    function_ranges: dict[str, SourceRange] = field(default_factory=dict)  # host functions with bodies
    for_loops: list[ForLoop] = field(default_factory=list)

    def for_loop_at(self, line: int | None) -> ForLoop | None:
        return next((f for f in self.for_loops if f.range.line == line), None)

    def allocation_at(self, line: int | None) -> AllocSite | None:
        return next((a for a in self.allocations if a.line == line), None)

    def launches_at(self, line: int | None) -> list[LaunchSite]:
        return [l for l in self.launches if l.range.line == line]


_ALLOC_FUNCS = {"cudaMalloc", "cudaMallocManaged", "cudaMallocAsync", "cudaMallocHost", "cudaHostAlloc",
                "cudaMallocPitch"}


def _range(cursor) -> SourceRange:
    ext = cursor.extent
    return SourceRange(str(ext.start.file), ext.start.line, ext.start.column, ext.end.line,
                       ext.start.offset, ext.end.offset)


def _text(source: bytes, cursor) -> str:
    ext = cursor.extent
    return source[ext.start.offset:ext.end.offset].decode("utf-8", "replace").strip()


def _referenced_variable(cursor) -> str | None:
    for node in cursor.walk_preorder():
        if node.kind == ci.CursorKind.DECL_REF_EXPR:
            return node.spelling
        if node.kind == ci.CursorKind.MEMBER_REF_EXPR:
            return node.spelling
    return None


_INDEX_BUILTINS = {"threadIdx", "blockIdx", "blockDim", "gridDim"}


def _params_text(source: bytes, fn, body) -> str:
    """Text between the parentheses of the declarator of ``fn``."""
    start = fn.extent.start.offset
    end = body.extent.start.offset if body is not None else fn.extent.end.offset
    text = source[start:end].decode("utf-8", "replace")
    depth, open_at = 0, None
    for i, ch in enumerate(text):
        if ch == "(":
            if depth == 0 and text[:i].rstrip().endswith(fn.spelling):
                open_at = i
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0 and open_at is not None:
                return text[open_at + 1:i].strip()
    return ""


def _callees_reading_indices(body, main_file: str, seen: set[str] | None = None) -> set[str]:
    """Device functions called (transitively) from ``body`` that read the index builtins."""
    seen = seen if seen is not None else set()
    found: set[str] = set()
    for node in body.walk_preorder():
        if node.kind != ci.CursorKind.CALL_EXPR or node.referenced is None:
            continue
        callee = node.referenced
        key = callee.get_usr() or callee.spelling
        if key in seen:
            continue
        seen.add(key)
        definition = callee.get_definition()
        if definition is None or definition.location.file is None:
            continue
        inner = next((ch for ch in definition.get_children() if ch.kind == ci.CursorKind.COMPOUND_STMT), None)
        if inner is None:
            continue
        if any(n.kind == ci.CursorKind.DECL_REF_EXPR and n.spelling in _INDEX_BUILTINS
               for n in inner.walk_preorder()):
            found.add(callee.spelling)
        found |= _callees_reading_indices(inner, main_file, seen)
    return found


def _is_launch(c) -> bool:
    children = list(c.get_children())
    return (c.kind == ci.CursorKind.CALL_EXPR and len(children) >= 2
            and children[1].kind == ci.CursorKind.CALL_EXPR and children[1].spelling == "__cudaPushCallConfiguration")


def _pure_declaration(stmt, source: bytes) -> bool:
    """A declaration whose initializers call nothing and assign nothing else."""
    import re as _re

    for node in stmt.walk_preorder():
        if node.kind == ci.CursorKind.CALL_EXPR and node.spelling:
            return False
    text = _text(source, stmt)
    if "++" in text or "--" in text:
        return False
    assignments = len(_re.findall(r"(?<![=!<>+\-*/%&|^])=(?!=)", text))
    initialized = sum(1 for v in stmt.get_children() if v.kind == ci.CursorKind.VAR_DECL
                      and any(True for _ in v.get_children()))
    return assignments <= initialized


def _loop_body(for_stmt, source: bytes) -> tuple[tuple[str, SourceRange], ...]:
    children = list(for_stmt.get_children())
    body = children[-1] if children else None
    if body is None:
        return ()
    stmts = list(body.get_children()) if body.kind == ci.CursorKind.COMPOUND_STMT else [body]
    out = []
    for st in stmts:
        if st.kind == ci.CursorKind.DECL_STMT:
            out.append(("decl" if _pure_declaration(st, source) else "other", _range(st)))
        elif _is_launch(st):
            out.append(("launch", _range(st)))
        elif st.kind == ci.CursorKind.FOR_STMT:
            out.append(("for", _range(st)))
        else:
            out.append(("other", _range(st)))
    return tuple(out)


def build_source_index(job: CompileJob, bodies: bool = True) -> SourceIndex:
    """Index kernels, launches and allocations of the main file of ``job``. Without
    ``bodies`` only declarations are read (kernels' parameters; no launch sites,
    allocations or kernel bodies), many times faster on large generated files."""
    path = str(job.path)
    source = Path(path).read_bytes()
    index = ci.Index.create()
    tu = index.parse(path, args=job.libclang_args(),
                     options=0 if bodies else ci.TranslationUnit.PARSE_SKIP_FUNCTION_BODIES)
    out = SourceIndex()
    main_file = str(Path(path))

    def in_main(c) -> bool:
        return c.location.file is not None and str(c.location.file) == main_file

    def visit(cursor, function: str | None) -> None:
        in_braces = cursor.kind == ci.CursorKind.COMPOUND_STMT
        for c in cursor.get_children():
            if not in_main(c):
                continue
            kind = c.kind
            if kind in (ci.CursorKind.FUNCTION_DECL, ci.CursorKind.FUNCTION_TEMPLATE, ci.CursorKind.CXX_METHOD):
                is_kernel = any(ch.kind == ci.CursorKind.CUDAGLOBAL_ATTR for ch in c.get_children())
                if is_kernel and (c.is_definition() or not bodies):  # a skipped body reads as a declaration
                    params = tuple((p.spelling, p.type.spelling) for p in c.get_arguments() or [])
                    if kind == ci.CursorKind.FUNCTION_TEMPLATE:
                        params = tuple((p.spelling, p.type.spelling) for p in c.get_children()
                                       if p.kind == ci.CursorKind.PARM_DECL)
                    body = next((ch for ch in c.get_children() if ch.kind == ci.CursorKind.COMPOUND_STMT), None)
                    decl = KernelDecl(c.spelling, c.mangled_name or c.spelling, params, _range(c),
                                      kind == ci.CursorKind.FUNCTION_TEMPLATE,
                                      _params_text(source, c, body), _text(source, body) if body else "",
                                      tuple(sorted(_callees_reading_indices(body, main_file))) if body else ())
                    out.kernels[decl.stub_mangled] = decl
                    continue
                if c.is_definition():
                    out.function_ranges.setdefault(c.spelling, _range(c))
                visit(c, c.spelling)
                continue
            if kind == ci.CursorKind.FOR_STMT and function is not None:
                out.for_loops.append(ForLoop(_range(c), function, _loop_body(c, source)))
            if kind == ci.CursorKind.CALL_EXPR and function is not None:
                children = list(c.get_children())
                if len(children) >= 2 and children[1].kind == ci.CursorKind.CALL_EXPR \
                        and children[1].spelling == "__cudaPushCallConfiguration":
                    config = tuple(_text(source, a) for a in children[1].get_arguments()
                                   if a.extent.start.line > 0 and _text(source, a))
                    args = tuple(_text(source, a) for a in children[2:])
                    written = _text(source, c)
                    macro = None if "<<<" in written else written.split("(", 1)[0].strip()
                    out.launches.append(LaunchSite(c.spelling or _text(source, children[0]), function,
                                                   config, args, _range(c), in_braces, macro))
                    out.functions_with_launches.add(function)
                elif c.spelling in _ALLOC_FUNCS:
                    args = list(c.get_arguments())
                    var = _referenced_variable(args[0]) if args else None
                    size = _text(source, args[1]) if len(args) > 1 else ""
                    out.allocations.append(AllocSite(c.spelling, var, c.location.line, size))
            visit(c, function)

    visit(tu.cursor, None)
    return out
