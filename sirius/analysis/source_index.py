"""Source facts from libclang: kernels, launch expressions, allocations.

LLVM IR knows values; the source knows names and ranges. This index gives
kernel parameter names, the exact text and byte range of every launch
expression ``k<<<g, b, smem, stream>>>(args)`` (what code generation
rewrites), and the variable each ``cudaMalloc`` fills, keyed by line so
the IR models (compiled with line tables) can be joined to it.
"""

from __future__ import annotations

import functools
from collections import Counter
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import re

import clang.cindex as ci

from sirius.analysis.frontend import CompileJob
from sirius.analysis.program_ends import EndObserver, ProgramEnds, program_ends
from sirius.analysis.statement_flow import Flow, statement_flow
from sirius.analysis.cursors import cursor_children, cursor_preorder
from sirius.analysis.preamble import parse_with_preamble


@dataclass(frozen=True)
class SourceRange:
    file: str
    line: int
    column: int
    end_line: int
    start_offset: int
    end_offset: int


@dataclass(frozen=True)
class SharedDecl:
    """A static ``__shared__`` variable declared in a kernel's body, by a declaration
    statement of its own: ``element name[d0][d1]...;`` at ``start``..``end`` of the body text."""

    name: str
    element: str  # the element type as written
    dims: tuple[int, ...]  # () for a scalar
    bytes: int
    start: int  # offsets in KernelDecl.body_text of the whole declaration statement
    end: int
    # bytes: its type's alignment, at least 16; where the declaration asks for one, 128 (or
    # what it asks, if more; UNKNOWN_ALIGNMENT when the request is not a number)
    align: int = 16
    # its element type and extents are the same in every build: builtin or system-header
    # types, extents of literals and macros (a guard checks each macro the body uses); not
    # a type or constant the program defines, which a -D value elsewhere may change
    fixed_size: bool = True


@dataclass(frozen=True)
class KernelDecl:
    """A kernel's definition as written; for an instance of a kernel template, the
    template's definition with the instance's arguments and parameter types."""

    name: str
    stub_mangled: str  # mangled name of the host-side stub, as in host IR
    params: tuple[tuple[str, str], ...]  # (name, type spelling; of the instance for a template)
    range: SourceRange  # in range.file, the main file or a header it includes
    params_text: str = ""  # the parameter list as written, without parentheses
    body_text: str = ""  # the compound statement as written, braces included
    callees_read_indices: tuple[str, ...] = ()  # called device functions reading threadIdx & co.
    namespaces: tuple[str, ...] = ()  # enclosing namespaces, outermost first ("" for an anonymous one)
    template_params: str = ""  # "typename T, int K = 1": the template parameter list of a template instance
    template_args: tuple[str, ...] = ()  # the instance's template arguments, as C++ text
    unwritable: str | None = None  # why the kernel cannot be written again as a fragment, if it cannot
    body_line: int = 0  # the line body_text starts at, in range.file
    shared_decls: tuple[SharedDecl, ...] = ()  # static __shared__ variables its body declares one per statement
    shared_unlisted: bool = False  # its body declares a __shared__ variable some other way


@dataclass(frozen=True)
class LaunchSite:
    kernel: str
    function: str  # enclosing host function
    config: tuple[str, ...]  # grid, block[, shmem[, stream]] as written
    args: tuple[str, ...]
    range: SourceRange
    statement: bool = False  # the launch is a whole statement directly inside braces
    macro: str | None = None  # the macro whose expansion wrote the launch (its source text has no ``<<<``)
    callee: str = ""  # the kernel as the launch names it, template arguments included: scale<float, 3>
    block: int | None = None  # with ``statement``: the braces it stands in, an index of SourceIndex.host_blocks
    position: int = 0  # with ``statement``: its place among the statements of those braces
    directive_line: int | None = None  # a preprocessor directive inside the launch expression (#ifdef): its line
    # text written once for several of the launch's values (a macro expanding to ``grid, block``
    # or to two arguments): libclang gives each value that one text
    several_in_one: str | None = None

    @property
    def text(self) -> str:
        return f"{self.kernel}<<<{', '.join(self.config)}>>>({', '.join(self.args)})"


@dataclass(frozen=True)
class HostBlock:
    """Braces of a host function that hold a launch statement: how control leaves each of
    the statements directly inside them, in order (``analysis.statement_flow``)."""

    range: SourceRange
    flows: tuple[Flow, ...]


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
    iterator: str | None = None  # the variable the init statement declares: for (int s = 0; ...)
    # its condition and increment change nothing but the iterator (code that runs the
    # loop's text twice, the waves' check before the loop, would repeat any other effect)
    header_pure: bool = True
    body_range: SourceRange | None = None  # the body statement (braces or one statement)
    iterator_type: str | None = None  # the iterator's type, canonical (what a typedef names)
    # the increment as a step: "+1" for ++i, i++, i += 1; "-2" for i -= 2; None when it is
    # no such form, or the step names the iterator
    step: str | None = None
    # every name the body refers to: its identifiers as written, and what macros expand to
    body_names: frozenset[str] = frozenset()
    body_declared: frozenset[str] = frozenset()  # the variables the body's own statements declare
    body_declares_types: bool = False  # it declares more than variables: a type, an enumeration, a using, a function
    # the variables of ``body_declared`` that a rewrite may give another name: each declared
    # once, and every token of the body spelled as it written there (no macro writes one or
    # takes one as an argument) and naming that variable; with those tokens' offsets
    body_renamable: tuple[tuple[str, tuple[int, ...]], ...] = ()
    # the header after the iterator's name (its initializer, condition and increment), the
    # iterator written ``@``: two loops with one such text count alike
    header_text: str | None = None


@dataclass(frozen=True)
class IncludedProgramFile:
    """A file of the program's own that one ``#include`` of the translation unit names, in
    the main file or in another such file: its host code is indexed as the main file's,
    and launches in it are rewritten in a copy of its text that the emitted program holds
    in place of that ``#include`` (in the copy of the file holding it)."""

    path: str  # as the translation unit names it
    start: int  # the #include directive in ``parent``: its first byte (the ``#``)
    end: int  # and the byte after its file name
    line: int  # the #include's line in ``parent``
    parent: str  # the file the #include is written in: the main file, or another of these
    # in its text, what the copy changes: its ``#pragma once`` directives (start, end), and
    # its quoted #includes whose search from the main file's folder could find another
    # file (a file of that name there, or the one found beside this file): the file name's
    # literal (start, end) and the file clang found
    pragma_once: tuple[tuple[int, int], ...] = ()
    repoint: tuple[tuple[int, int, str], ...] = ()


@dataclass(frozen=True)
class MacroUse:
    """A use of one of the program's own macros (defined in its files or with ``-D``)."""

    name: str
    file: str
    offset: int


@dataclass
class SourceIndex:
    main_file: str = ""
    kernels: dict[str, KernelDecl] = field(default_factory=dict)  # by stub mangled name
    launches: list[LaunchSite] = field(default_factory=list)
    host_blocks: list[HostBlock] = field(default_factory=list)  # the braces launch statements stand in
    allocations: list[AllocSite] = field(default_factory=list)
    functions_with_launches: set[str] = field(default_factory=set)
    # a header's kernels are visible in the main file after this byte offset (the end of
    # the line of the #include that brings the header in)
    visible_after: dict[str, int] = field(default_factory=dict)
    # host functions with bodies (a member function defined in its class: the outermost class),
    # from their first attribute; and the declaration at file scope each is in
    function_ranges: dict[str, SourceRange] = field(default_factory=dict)
    function_tops: dict[str, SourceRange] = field(default_factory=dict)
    for_loops: list[ForLoop] = field(default_factory=list)
    device_function_ranges: list[SourceRange] = field(default_factory=list)  # __device__ functions with bodies
    macro_uses: list[MacroUse] = field(default_factory=list)
    # the program's macros: name -> the names its definition mentions (to follow a use
    # through another macro); which of them take arguments
    macros: dict[str, tuple[str, ...]] = field(default_factory=dict)
    function_like_macros: set[str] = field(default_factory=set)
    redefined_macros: set[str] = field(default_factory=set)  # defined twice, #undef'd or pushed
    included: tuple[str, ...] = ()  # every file the translation unit includes (the frontend cache checks them)
    # code of the program's own that runs when it leaves early (atexit handlers, a catch, ...)
    end_observers: tuple[EndObserver, ...] = ()
    # why clang's line numbers are not the main file's ("" when they are): #line
    # directives, or a line ended by a lone carriage return (a line end to clang, not to the index)
    renumbered: str = ""
    # offsets of the conditional directives (#if, #else, #endif, ...) of the main file and
    # program files: a launch on one side of one, another on the other side, are built apart
    conditionals: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # offsets of the directives that change macros (#define, #undef, #pragma push_macro, an
    # #include, ...) of the same files: a launch's macros after one may mean something else
    macro_directives: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # macros a build may define otherwise: given with -D, defined inside a conditional block
    # of a file of the program (#ifndef STEPS), or #undef'd or defined twice
    build_dependent_macros: frozenset[str] = frozenset()
    # the builtins of source positions (__builtin_COLUMN, __builtin_LINE, source_location) each
    # file names anywhere: a default argument may read them where a launch calls a function
    position_builtins: dict[str, frozenset[str]] = field(default_factory=dict)
    # files whose launches are rewritten besides the main file's, by path; and, for each
    # other file of the program's own with host code, why its launches are not
    program_files: dict[str, IncludedProgramFile] = field(default_factory=dict)
    not_rewritten: dict[str, str] = field(default_factory=dict)

    def rewritten_file(self, file: str | None) -> bool:
        """Whether launches written in ``file`` are rewritten where they are written."""
        return file is not None and (file == self.main_file or file in self.program_files)

    def program_order(self, file: str, offset: int) -> tuple[int, ...]:
        """Where byte ``offset`` of ``file`` (the main file or one of ``program_files``)
        comes in the emitted program, as a key to compare positions across the files: the
        offsets of the #includes that lead to it, each followed by 1, then ``offset``."""
        key: tuple[int, ...] = (offset, 0)
        while file in self.program_files:
            key = (self.program_files[file].start, 1) + key
            file = self.program_files[file].parent
        return key

    def include_depth(self, file: str) -> int:
        """How many #includes lead from the main file to ``file``."""
        depth = 0
        while file in self.program_files:
            file, depth = self.program_files[file].parent, depth + 1
        return depth

    def directive_in(self, where: SourceRange, conditionals: bool = True) -> int | None:
        """The line of the first directive written inside ``where`` that changes macros
        (#define, #undef, #pragma, #include), or a conditional one (#if...) unless not
        ``conditionals``; None when there is none."""
        tables = (self.macro_directives,) + ((self.conditionals,) if conditionals else ())
        inside = [at for table in tables for at in table.get(where.file, ())
                  if where.start_offset <= at < where.end_offset]
        if not inside:
            return None
        return Path(where.file).read_bytes().count(b"\n", 0, min(inside)) + 1

    def macros_in(self, ranges: list[SourceRange], objects_only: bool = True) -> list[str]:
        """The program's object-like macros (all, without ``objects_only``) used in
        ``ranges``, directly or through the definition of another macro used there, in
        order of first use."""
        found: list[str] = []
        work = [u.name for u in self.macro_uses
                if any(r.file == u.file and r.start_offset <= u.offset < r.end_offset for r in ranges)]
        while work:
            name = work.pop(0)
            if name in found or name not in self.macros:
                continue
            found.append(name)
            work.extend(n for n in self.macros[name] if n in self.macros)
        return [n for n in found if not objects_only or n not in self.function_like_macros]

    def visible_from(self, decl: KernelDecl) -> int | None:
        """The first offset in the main file where ``decl``'s kernel is declared (None for a
        header whose #include the index did not see)."""
        if decl.range.file == self.main_file:
            return decl.range.end_offset
        return self.visible_after.get(decl.range.file)

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


_ATTRIBUTE_BEFORE = re.compile(rb"\[\[[^\[\]]*\]\]\s*$")


def _declaration_range(cursor, source: bytes) -> SourceRange:
    """``cursor``'s range from the first of the ``[[attributes]]`` written before it, which
    clang's extent leaves out (what is inserted before a function goes before them)."""
    out = _range(cursor)
    start = out.start_offset
    while True:
        m = _ATTRIBUTE_BEFORE.search(source, max(0, start - 400), start)
        if m is None:
            return replace(out, start_offset=start)
        start = m.start()


def _text(source: bytes, cursor) -> str:
    ext = cursor.extent
    return source[ext.start.offset:ext.end.offset].decode("utf-8", "replace").strip()


def _allocated_variable(source: bytes, cursor) -> str | None:
    """What an allocation call's first argument (``&d_x``, ``(void**)&bufs[1]``) fills: the
    variable, or an element of an array as written (``bufs[1]``), so that the allocations of
    an array of device pointers are told apart."""
    node = cursor
    while node is not None and node.kind != ci.CursorKind.ARRAY_SUBSCRIPT_EXPR:
        if node.kind == ci.CursorKind.DECL_REF_EXPR or node.kind == ci.CursorKind.MEMBER_REF_EXPR:
            break
        node = next(iter(cursor_children(node)), None)
    if node is not None and node.kind == ci.CursorKind.ARRAY_SUBSCRIPT_EXPR:
        return re.sub(r"\s+", "", _text(source, node))
    return _referenced_variable(cursor)


def _referenced_variable(cursor) -> str | None:
    for node in cursor_preorder(cursor):
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


def _called_code(callee) -> list:
    """What a call of ``callee`` runs besides the caller's own text: the definition (its
    default arguments, a constructor's initializers and body) and the declaration the call
    names (default arguments written on a prototype), and for a constructor the default
    initializers of its class's members."""
    parts = [callee]
    definition = callee.get_definition()
    if definition is not None and definition != callee:
        parts.append(definition)
    if callee.kind == ci.CursorKind.CONSTRUCTOR and callee.semantic_parent is not None:
        parts += [f for f in cursor_children(callee.semantic_parent) if f.kind == ci.CursorKind.FIELD_DECL]
    return parts


_FUNCTION_KINDS = (ci.CursorKind.FUNCTION_DECL, ci.CursorKind.CXX_METHOD, ci.CursorKind.CONSTRUCTOR,
                   ci.CursorKind.FUNCTION_TEMPLATE)
@functools.lru_cache(maxsize=1)  # (held: no other translation unit is taken for it at its address)
def _program_functions(tu) -> dict[str, list]:
    """The functions the program's own files define or declare, by name (for calls a template
    leaves unresolved until it is instantiated)."""
    table: dict[str, list] = {}
    work = list(cursor_children(tu.cursor))
    while work:
        c = work.pop()
        location = c.location
        if location.file is None or location.is_in_system_header:
            continue
        if c.kind in _FUNCTION_KINDS:
            table.setdefault(c.spelling, []).append(c)
        elif c.kind in (ci.CursorKind.NAMESPACE, ci.CursorKind.STRUCT_DECL, ci.CursorKind.CLASS_DECL,
                        ci.CursorKind.LINKAGE_SPEC, ci.CursorKind.CLASS_TEMPLATE):
            work.extend(cursor_children(c))
    return table


def _callees(body):
    """Each function ``body`` calls or names, with the call: resolved calls, and in a template
    a call its arguments leave unresolved (every function of the program of that name)."""
    for node in cursor_preorder(body):
        if node.kind == ci.CursorKind.CALL_EXPR and node.referenced is not None:
            yield node.referenced
        elif node.kind == ci.CursorKind.OVERLOADED_DECL_REF or (node.kind == ci.CursorKind.CALL_EXPR
                                                                 and node.referenced is None and node.spelling):
            yield from _program_functions(node.translation_unit).get(node.spelling, ())


def _reached_code(body, seen: set[str] | None = None):
    """``(callee, code)`` for every function ``body`` calls, transitively, and each piece of
    code a call of it runs (``_called_code``), each callee once."""
    seen = seen if seen is not None else set()
    for callee in _callees(body):
        key = callee.get_usr() or callee.spelling
        if key in seen:
            continue
        seen.add(key)
        for part in _called_code(callee):
            if part.location.file is not None:
                yield callee, part
                yield from _reached_code(part, seen)


def _callees_reading_indices(body) -> set[str]:
    """Device functions called (transitively) from ``body`` that read the index builtins: in
    their bodies, default arguments, constructor initializers, or their class's member
    initializers (a ``ThreadCtx t;`` constructed in the kernel). Each runs outside the
    fragment's text, where its own indices are the fused kernel's."""
    return {callee.spelling for callee, part in _reached_code(body)
            if any(n.kind == ci.CursorKind.DECL_REF_EXPR and n.spelling in _INDEX_BUILTINS
                   for n in cursor_preorder(part))}


def _callee_naming_its_caller(body) -> str | None:
    """A function called (transitively) from ``body`` whose default argument names the
    function it is called from (``__builtin_FUNCTION()``, ``source_location::current()``):
    in a fragment that is the fragment."""
    return next((callee.spelling for callee, part in _reached_code(body)
                 for param in cursor_children(part) if param.kind == ci.CursorKind.PARM_DECL
                 and any(t.spelling in ("__builtin_FUNCTION", "source_location") for t in param.get_tokens())), None)


def _is_launch(c) -> bool:
    children = list(cursor_children(c))
    return (c.kind == ci.CursorKind.CALL_EXPR and len(children) >= 2
            and children[1].kind == ci.CursorKind.CALL_EXPR and children[1].spelling == "__cudaPushCallConfiguration")


_CHANGING_TOKENS = frozenset(("=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--"))
_EFFECT_NODES = (ci.CursorKind.COMPOUND_ASSIGNMENT_OPERATOR, ci.CursorKind.CXX_NEW_EXPR,
                 ci.CursorKind.CXX_DELETE_EXPR, ci.CursorKind.CXX_THROW_EXPR)


def _builds_a_dim3(call) -> bool:
    """``call`` constructs a ``dim3`` (``dim3 grid(n / 256);``, a copy): CUDA's header
    declares its constructors, which only store their arguments (its arguments' effects are
    their own nodes)."""
    constructor = call.referenced
    return (constructor is not None and constructor.kind == ci.CursorKind.CONSTRUCTOR
            and constructor.semantic_parent.spelling == "dim3" and constructor.location.is_in_system_header)


def _pure_declaration(stmt, changing_macros: frozenset[str]) -> bool:
    """A declaration whose initializers change nothing but the variables it declares:
    judged on clang's AST, so ``int row = (cursor += 1) - 1;`` is not pure however it is
    spelled. No call, compound assignment, ``new``/``delete``, increment, decrement or
    assignment in them, and no macro (``changing_macros``) whose expansion has one."""
    return _changes_only(stmt, frozenset(), changing_macros)


def _changes_only(node, variables: frozenset[str], changing_macros: frozenset[str], scan: bool = True) -> bool:
    """``node`` (clang's AST) changes nothing but ``variables``: no call, ``new``/``delete``,
    and assignments, increments and decrements only of those variables (named directly);
    no macro of ``changing_macros`` in its text."""
    for n in cursor_preorder(node):
        kind = n.kind
        if kind == ci.CursorKind.CALL_EXPR and n.spelling and not _builds_a_dim3(n) or kind in _EFFECT_NODES[1:]:
            return False
        changes = kind == ci.CursorKind.COMPOUND_ASSIGNMENT_OPERATOR
        if kind == ci.CursorKind.UNARY_OPERATOR:
            changes = any(t.spelling in ("++", "--") for t in n.get_tokens())
        if kind == ci.CursorKind.BINARY_OPERATOR:
            children = list(cursor_children(n))
            tokens = [t.spelling for t in n.get_tokens()]
            at = len(list(children[0].get_tokens())) if children else 0
            # the operator follows its left operand's tokens (inside a macro's expansion the
            # node's tokens are the macro's use: the macro's definition decides below)
            changes = at < len(tokens) and tokens[at] == "="
        if changes:
            target = next(iter(cursor_children(n)), None)
            if target is None or target.kind != ci.CursorKind.DECL_REF_EXPR or target.spelling not in variables:
                return False
    # (a node a macro wrote has the tokens of the macro's definition: ``scan`` off, the
    # caller scans the statement's own tokens)
    return not scan or not any(t.spelling in changing_macros for t in node.get_tokens())


def _changing_macros(tu) -> frozenset[str]:
    """The program's macros whose expansion (through other macros too) assigns,
    increments or decrements something, or calls a function."""
    bodies: dict[str, list] = {}
    for c in cursor_children(tu.cursor):
        if c.kind == ci.CursorKind.MACRO_DEFINITION:
            location = c.location
            if not location.is_in_system_header and location.file is not None:
                bodies[c.spelling] = list(c.get_tokens())[1:]
    changing = set()
    for name, tokens in bodies.items():
        spelled = [t.spelling for t in tokens]
        calls = any(a.kind == ci.TokenKind.IDENTIFIER and b == "(" and a.spelling not in bodies
                    and a.spelling != "dim3"  # CUDA's constructor only stores its arguments
                    for a, b in zip(tokens, spelled[1:]))
        if calls or _CHANGING_TOKENS & set(spelled):
            changing.add(name)
    grew = True
    while grew:
        grew = False
        for name, tokens in bodies.items():
            if name not in changing and any(t.spelling in changing for t in tokens):
                changing.add(name)
                grew = True
    return frozenset(changing)


def _loop_iterator(for_stmt) -> str | None:
    init = next(iter(cursor_children(for_stmt)), None)
    if init is None or init.kind != ci.CursorKind.DECL_STMT:
        return None
    names = [v.spelling for v in cursor_children(init) if v.kind == ci.CursorKind.VAR_DECL]
    return names[0] if len(names) == 1 else None


def _loop_step(for_stmt, iterator: str | None) -> str | None:
    """The increment of ``for (init; cond; inc)`` as a signed step (see ``ForLoop.step``)."""
    children = list(cursor_children(for_stmt))
    if iterator is None or len(children) != 4:  # init, condition, increment and body, all written
        return None
    tokens = [t.spelling for t in children[2].get_tokens()]
    if tokens in (["++", iterator], [iterator, "++"]):
        return "+1"
    if tokens in (["--", iterator], [iterator, "--"]):
        return "-1"
    if tokens[:1] == [iterator] and tokens[1:2] in (["+="], ["-="]) and len(tokens) > 2 \
            and iterator not in tokens[2:]:
        return tokens[1][0] + " ".join(tokens[2:])
    return None


def _header_text(for_stmt, iterator: str | None) -> str | None:
    children = list(cursor_children(for_stmt))
    if iterator is None or len(children) != 4:
        return None
    tokens = [t.spelling for t in for_stmt.get_tokens()]
    body_tokens = len(list(children[3].get_tokens()))
    header = tokens[:len(tokens) - body_tokens] if body_tokens else tokens
    if iterator not in header:
        return None
    return " ".join("@" if t == iterator else t for t in header[header.index(iterator) + 1:])


def _names_in(node) -> frozenset[str]:
    referred = {n.spelling for n in cursor_preorder(node) if n.kind == ci.CursorKind.DECL_REF_EXPR}
    written = {t.spelling for t in node.get_tokens() if t.kind == ci.TokenKind.IDENTIFIER}
    return frozenset(referred | written)


def _declarations_in(body) -> tuple[frozenset[str], bool]:
    """The variables the statements of ``body`` declare, and whether they declare anything else."""
    stmts = cursor_children(body) if body.kind == ci.CursorKind.COMPOUND_STMT else ()
    declared = [d for st in stmts if st.kind == ci.CursorKind.DECL_STMT for d in cursor_children(st)]
    variables = frozenset(d.spelling for d in declared if d.kind == ci.CursorKind.VAR_DECL)
    return variables, any(d.kind != ci.CursorKind.VAR_DECL for d in declared)


def _renamable_in(body, macro_extents: list[tuple[int, int]]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """The variables ``body``'s own statements declare that a rewrite may give another name,
    with the offsets of the tokens naming them (``ForLoop.body_renamable``): a name declared
    once there, whose tokens in the body are its declaration's and references to it, none
    inside a macro's use (a macro may write the name, or paste or quote its argument)."""
    stmts = cursor_children(body) if body.kind == ci.CursorKind.COMPOUND_STMT else ()
    declared = [d for st in stmts if st.kind == ci.CursorKind.DECL_STMT for d in cursor_children(st)
                if d.kind == ci.CursorKind.VAR_DECL]
    counts = Counter(d.spelling for d in declared)
    tokens: dict[str, set[int]] = {}
    previous = None
    for t in body.get_tokens():
        after, previous = previous, t.spelling
        if t.kind == ci.TokenKind.IDENTIFIER and after not in (".", "->", "::"):  # (a member's name, a qualified one)
            # a token written otherwise than its name (split by a line splice, a \u escape) is
            # not the name's bytes: it counts as another
            written = t.extent.end.offset - t.extent.start.offset == len(t.spelling.encode())
            tokens.setdefault(t.spelling if written else "", set()).add(t.location.offset)
    nodes = list(cursor_preorder(body))
    out = []
    for decl in declared:
        name = decl.spelling
        # one declaration of it, of a variable without linkage (``extern`` names another's)
        if counts[name] != 1 or decl.storage_class == ci.StorageClass.EXTERN:
            continue
        named = {decl.location.offset} | {n.location.offset for n in nodes
                                          if n.kind == ci.CursorKind.DECL_REF_EXPR and n.referenced == decl}
        if named != tokens.get(name) or any(a <= at < b for at in named for a, b in macro_extents):
            continue
        out.append((name, tuple(sorted(named))))
    return tuple(out)


def _loop_body(for_stmt, changing_macros: frozenset[str]) -> tuple[tuple[str, SourceRange], ...]:
    children = list(cursor_children(for_stmt))
    body = children[-1] if children else None
    if body is None:
        return ()
    stmts = list(cursor_children(body)) if body.kind == ci.CursorKind.COMPOUND_STMT else [body]
    out = []
    for st in stmts:
        if st.kind == ci.CursorKind.DECL_STMT:
            out.append(("decl" if _pure_declaration(st, changing_macros) else "other", _range(st)))
        elif _is_launch(st):
            # its configuration and arguments are evaluated twice too (the waves' check, then
            # the loop as written): ``<<<blocks_for(n), 32>>>`` counting its calls would count twice
            children = list(cursor_children(st))
            args = children[2:] + list(cursor_children(children[1]))[1:]
            tokens = [t.spelling for t in st.get_tokens()]
            written = tokens[tokens.index("<<<") + 1:] if "<<<" in tokens else tokens
            pure = all(_changes_only(a, frozenset(), changing_macros, scan=False) for a in args) \
                and not changing_macros & set(written)
            out.append(("launch" if pure else "other", _range(st)))
        elif st.kind == ci.CursorKind.FOR_STMT:
            out.append(("for", _range(st)))
        else:
            out.append(("other", _range(st)))
    return tuple(out)


_TEMPLATE_PARAMS = (ci.CursorKind.TEMPLATE_TYPE_PARAMETER, ci.CursorKind.TEMPLATE_NON_TYPE_PARAMETER,
                    ci.CursorKind.TEMPLATE_TEMPLATE_PARAMETER)
_UNNAMED = ("(anonymous", "(unnamed", "(lambda")


def _written(spelling: str) -> str:
    """A canonical type spelling as code at file scope writes it: what an anonymous
    namespace declares is named without it (unqualified lookup sees through it)."""
    return spelling.replace("(anonymous namespace)::", "")


def _namespaces(cursor) -> tuple[str, ...]:
    """The namespaces around ``cursor``, outermost first ("" for an anonymous one)."""
    out = []
    parent = cursor.semantic_parent
    while parent is not None and parent.kind != ci.CursorKind.TRANSLATION_UNIT:
        if parent.kind == ci.CursorKind.NAMESPACE:
            out.append(parent.spelling)
        parent = parent.semantic_parent
    return tuple(reversed(out))


def _is_program_entry(function) -> bool:
    """``function`` is the program's ``main``, in whose body ``return`` ends the program."""
    return function.kind == ci.CursorKind.FUNCTION_DECL and function.spelling == "main" and \
        function.semantic_parent.kind in (ci.CursorKind.TRANSLATION_UNIT, ci.CursorKind.LINKAGE_SPEC)


def _is_kernel(c) -> bool:
    return any(ch.kind == ci.CursorKind.CUDAGLOBAL_ATTR for ch in cursor_children(c))


UNKNOWN_ALIGNMENT = 1 << 30  # a requested alignment that is not a number: more than any pool gives
_ALIGNMENT_REQUEST = re.compile(r"\b(?:alignas|__align__|aligned)\s*\(\s*([^()]*?)\s*\)")
# scopes inside a kernel body that are functions of their own: a declaration there is not
# one of the kernel's statements
_NESTED_FUNCTIONS = (ci.CursorKind.LAMBDA_EXPR, ci.CursorKind.CXX_METHOD, ci.CursorKind.STRUCT_DECL,
                     ci.CursorKind.CLASS_DECL, ci.CursorKind.UNION_DECL)


def _requested_alignment(text: str) -> int:
    """The alignment a declaration asks for (0: none): 128 for a number up to 128 (the
    pool's own), the number when larger, ``UNKNOWN_ALIGNMENT`` when it is not a number."""
    asked = [m[1] for m in _ALIGNMENT_REQUEST.finditer(text)]
    if any(not a.isdigit() for a in asked):
        return UNKNOWN_ALIGNMENT
    return max((max(128, int(a)) for a in asked), default=0)


def _fixed_size(node) -> bool:
    """Whether the variable's element type and extents are the same in every build: no
    type the program itself declares (a system header's, such as ``__half``, is fixed) and
    no named constant in an extent (a macro expands to its literal)."""
    for n in cursor_preorder(node):
        if n is node:
            continue
        if n.kind == ci.CursorKind.DECL_REF_EXPR:
            return False
        if n.kind in (ci.CursorKind.TYPE_REF, ci.CursorKind.TEMPLATE_REF):
            ref = n.referenced
            if ref is None or ref.location.file is None or not ref.location.is_in_system_header:
                return False
    return True


def _shared_decls(body, source: bytes) -> tuple[tuple[SharedDecl, ...], bool]:
    """The static ``__shared__`` variables ``body`` declares one per declaration statement,
    and whether it declares any other way (several in one statement, ``extern``, a type
    that is not a fixed-size array or a scalar, inside a lambda or a local class)."""
    out, other = [], False
    origin = body.extent.start.offset
    nested = [(n.extent.start.offset, n.extent.end.offset) for n in cursor_preorder(body)
              if n.kind in _NESTED_FUNCTIONS]
    for node in cursor_preorder(body):
        if node.kind != ci.CursorKind.VAR_DECL or \
                not any(ch.kind == ci.CursorKind.CUDASHARED_ATTR for ch in cursor_children(node)):
            continue
        if any(a <= node.extent.start.offset < b for a, b in nested):
            other = True
            continue
        stmt = next((st for st in cursor_preorder(body) if st.kind == ci.CursorKind.DECL_STMT
                     and st.extent.start.offset <= node.extent.start.offset
                     and node.extent.end.offset <= st.extent.end.offset), None)
        t, dims = node.type, []
        while t.kind == ci.TypeKind.CONSTANTARRAY:
            dims.append(t.get_array_size())
            t = t.get_array_element_type()
        single = stmt is not None and sum(1 for ch in cursor_children(stmt) if ch.kind == ci.CursorKind.VAR_DECL) == 1
        if not single or node.storage_class == ci.StorageClass.EXTERN or t.kind == ci.TypeKind.INCOMPLETEARRAY \
                or node.type.get_size() <= 0 or t.is_const_qualified():
            other = True
            continue
        text = source[stmt.extent.start.offset:stmt.extent.end.offset].decode("utf-8", "replace")
        if "__shared__" not in text or node.spelling not in text or not text.rstrip().endswith(";"):
            other = True  # written through a macro: its text is not the declaration
            continue
        out.append(SharedDecl(node.spelling, t.spelling, tuple(dims), node.type.get_size(),
                              stmt.extent.start.offset - origin, stmt.extent.end.offset - origin,
                              max(16, t.get_align(), _requested_alignment(text)), _fixed_size(node)))
    return tuple(out), other


def _kernel_decl(c, source: bytes, main_file: str, **instance) -> KernelDecl:
    """The definition ``c`` of a kernel (a kernel template's, with ``instance`` naming the
    instance: its stub, parameters and template arguments)."""
    body = next((ch for ch in cursor_children(c) if ch.kind == ci.CursorKind.COMPOUND_STMT), None)
    namespaces = _namespaces(c)
    params = instance.pop("params", None)
    if params is None:
        # inside a namespace a type is written relative to it: spell it in full
        spell = (lambda t: _written(t.get_canonical().spelling)) if namespaces else (lambda t: t.spelling)
        params = tuple((p.spelling, spell(p.type)) for p in c.get_arguments() or [])
    unwritable = instance.pop("unwritable", None)
    shared = _shared_decls(body, source) if body is not None else ((), False)
    unnamed = next((t for _, t in params if any(u in t for u in _UNNAMED)), None)
    if unwritable is None and unnamed is not None:
        unwritable = f"a parameter's type {unnamed} has no name it can be written with outside the kernel"
    if unwritable is None and body is not None and re.search(r"^[ \t]*#(?![ \t]*pragma\b)", _text(source, body), re.M):
        # (#pragma unroll is the same in a copy)
        unwritable = "its body holds a preprocessor directive, which would act again where a copy is written"
    body_text = _text(source, body) if body is not None else ""
    named = re.search(r"\b(" + "|".join(_FUNCTION_NAMES) + r")\b", body_text)
    if unwritable is None and named:  # in a fragment it names the fragment
        unwritable = f"its body uses {named.group(1)}, the name of the function it is in"
    unwritable = unwritable or _kernel_unwritable(c, source, body, body_text)
    return KernelDecl(c.spelling, instance.pop("stub", c.mangled_name or c.spelling), params, _range(c),
                      _params_text(source, c, body), _text(source, body) if body else "",
                      tuple(sorted(_callees_reading_indices(body))) if body else (),
                      namespaces, unwritable=unwritable, body_line=body.extent.start.line if body else 0,
                      shared_decls=shared[0], shared_unlisted=shared[1], **instance)


_QUALIFIED_INDEX = re.compile(r"::\s*(threadIdx|blockIdx|blockDim|gridDim)\b")


def _kernel_unwritable(c, source: bytes, body, body_text: str) -> str | None:
    """Why a copy of the kernel's body as a fragment would not do what the kernel does."""
    if body is None:
        return None
    head = source[c.extent.start.offset:body.extent.start.offset].decode("utf-8", "replace")
    if "cluster_dims" in head:
        return "it is declared with __cluster_dims__: a fused kernel launches no clusters"
    plain = re.sub(r"//[^\n]*|/\*.*?\*/", " ", body_text, flags=re.S)
    if re.search(r"\bstatic\b", plain):
        return "its body declares a static variable: a fragment would hold a second one"
    qualified = _QUALIFIED_INDEX.search(plain)
    if qualified is not None:
        return (f"its body reads ::{qualified.group(1)}, which names the fused kernel's own index where a fragment "
                "has its own")
    caller = _callee_naming_its_caller(body)
    if caller is not None:
        return f"it calls {caller}, whose default argument names the function it is called from: a fragment is another"
    return None


def _template_instance(pattern, instance, source: bytes, main_file: str) -> KernelDecl:
    """The kernel template instance ``instance`` (a function specialization cursor), written
    as the template ``pattern`` with explicit arguments."""
    tparams = [p for p in cursor_children(pattern) if p.kind in _TEMPLATE_PARAMS]
    texts = [_text(source, p) for p in tparams]
    problem = None
    if any(p.kind == ci.CursorKind.TEMPLATE_TEMPLATE_PARAMETER for p in tparams) or any("..." in t for t in texts):
        problem = "the kernel template has a parameter pack or a template template parameter"
    args: list[str] = []
    count = instance.get_num_template_arguments()
    for i in range(count if count == len(tparams) and problem is None else 0):
        try:
            kind = instance.get_template_argument_kind(i)
        except ValueError:  # a kind this libclang binding has no name for (a pack, say)
            kind = None
        if kind == ci.TemplateArgumentKind.TYPE:
            args.append(_written(instance.get_template_argument_type(i).get_canonical().spelling))
        elif kind == ci.TemplateArgumentKind.INTEGRAL:
            ptype = _written(tparams[i].type.get_canonical().spelling)
            if "unsigned" in ptype:
                args.append(f"({ptype}){instance.get_template_argument_unsigned_value(i)}ULL")
            else:
                args.append(f"({ptype})({instance.get_template_argument_value(i)}LL)")
        else:
            problem = problem or f"template argument {i + 1} is neither a type nor an integer"
    if count != len(tparams) and problem is None:
        problem = "the instance's template arguments could not be read"
    unnamed = next((a for a in args if any(u in a for u in _UNNAMED)), None)
    if unnamed is not None:
        problem = problem or f"the template argument {unnamed} has no name it can be written with"
    params = tuple((a.spelling, _written(a.type.get_canonical().spelling)) for a in instance.get_arguments() or [])
    return _kernel_decl(pattern, source, main_file, stub=instance.mangled_name, params=params,
                        template_params=", ".join(texts), template_args=tuple(args), unwritable=problem)


def _with_unwritable_macros(decl: KernelDecl, index: SourceIndex) -> KernelDecl:
    """``decl``, not to be written again when the macros its definition uses say so: one
    expanding to ``__COUNTER__`` (a copy takes other values), or one the program defines
    again or #undefs (the value at the kernel is not the one a run-time check sees)."""
    if decl.unwritable is not None:
        return decl
    used = index.macros_in([decl.range], objects_only=False)
    if "__COUNTER__" in decl.body_text or any("__COUNTER__" in index.macros[m] for m in used):
        return replace(decl, unwritable="it uses __COUNTER__, which a copy of it would expand to other values")
    named = next((n for m in used for n in index.macros[m] if n in _FUNCTION_NAMES), None)
    if named is not None:  # in a fragment it names the fragment
        return replace(decl, unwritable=f"it uses {named} (through a macro), the name of the function it is in")
    qualified = next((n for m in used for n in index.macros[m] if n.startswith("::")), None)
    if qualified is not None:
        return replace(decl, unwritable=f"it reads {qualified} (through a macro), which names the fused kernel's own "
                                        "index where a fragment has its own")
    unstable = next((m for m in used if m in index.redefined_macros and m not in index.function_like_macros), None)
    if unstable is not None:
        return replace(decl, unwritable=f"it uses the macro {unstable}, which the program defines again or "
                                        "#undefs: a rebuild with another value could not be told")
    return decl


def _index_macros(tu, defines: tuple[str, ...], out: SourceIndex, source: str) -> None:
    """The program's own macros (``#define`` in its files, ``-D`` on the command line) and
    where its files use them (a use inside another macro's expansion is not a cursor:
    ``macros_in`` follows definitions instead)."""
    given = {d.split("=", 1)[0]: d.split("=", 1)[1] if "=" in d else "1" for d in defines}
    for name, value in given.items():
        bare = name.split("(", 1)[0]
        out.macros[bare] = tuple(re.findall(r"[A-Za-z_]\w*", value))
        if bare != name:
            out.function_like_macros.add(bare)
    out.redefined_macros = set(re.findall(r"^[ \t]*#[ \t]*undef[ \t]+(\w+)", source, re.M))
    out.redefined_macros |= set(re.findall(r"push_macro[ \t]*\([ \t]*\"(\w+)\"", source))
    conditional = set()  # defined inside an #if block of a file (include guards aside)
    depths: dict[str, Callable[[int], int]] = {}
    for c in cursor_children(tu.cursor):
        kind = c.kind
        if kind != ci.CursorKind.MACRO_DEFINITION and kind != ci.CursorKind.MACRO_INSTANTIATION:
            continue
        location = c.location  # (one look-up: each property of a cursor asks clang again)
        if location.is_in_system_header or location.file is None:
            continue
        if kind == ci.CursorKind.MACRO_DEFINITION and c.spelling in out.macros:
            out.redefined_macros.add(c.spelling)
        if kind == ci.CursorKind.MACRO_DEFINITION:
            file = str(location.file)
            if file not in depths:
                depths[file] = _conditional_depth(Path(file).read_bytes())
            if depths[file](c.extent.start.offset) > 0:
                conditional.add(c.spelling)
        if kind == ci.CursorKind.MACRO_DEFINITION and c.spelling not in given:
            tokens = list(c.get_tokens())
            function_like = len(tokens) > 1 and tokens[1].spelling == "(" \
                and tokens[1].extent.start.offset == tokens[0].extent.end.offset
            # (and keywords of the implementation: __func__ is one)
            out.macros[c.spelling] = tuple(t.spelling for t in tokens[1:] if t.kind == ci.TokenKind.IDENTIFIER
                                           or (t.kind == ci.TokenKind.KEYWORD and t.spelling.startswith("__")))
            # ``::blockIdx``: the global index, which a fragment's own does not hide
            out.macros[c.spelling] += tuple(f"::{b.spelling}" for a, b in zip(tokens, tokens[1:])
                                            if a.spelling == "::" and b.spelling in _INDEX_BUILTINS)
            if function_like:
                out.function_like_macros.add(c.spelling)
        elif kind == ci.CursorKind.MACRO_INSTANTIATION:
            out.macro_uses.append(MacroUse(c.spelling, str(location.file), c.extent.start.offset))
    out.build_dependent_macros = frozenset(conditional | out.redefined_macros
                                           | {name.split("(", 1)[0] for name in given})


def _conditional_depth(text: bytes) -> Callable[[int], int]:
    """How many ``#if`` blocks of ``text`` hold an offset, the file's include guard (an
    ``#ifndef G`` first, ``#define G`` next, its ``#endif`` last) not counted."""
    marks = [(m.start(), m.group().strip()) for m in _CONDITIONAL.finditer(text)]
    guard = re.match(rb"\s*(?:(?://[^\n]*|/\*.*?\*/)\s*)*#[ \t]*ifndef[ \t]+(\w+)\s*#[ \t]*define[ \t]+(\w+)", text, re.S)
    guarded = guard is not None and guard.group(1) == guard.group(2) and marks and _CLOSES.match(marks[-1][1])

    def depth(offset: int) -> int:
        level = -1 if guarded else 0
        for at, mark in marks:
            if at >= offset:
                break
            level += 1 if _OPENS.match(mark) else -1 if _CLOSES.match(mark) else 0
        return level
    return depth


def _include_points(tu, main_file: str, source: bytes) -> dict[str, int]:
    """For each header of the translation unit: the offset in the main file just after the
    line of the #include through which the header comes in."""
    parent: dict[str, tuple[str, int]] = {}
    for inc in tu.get_includes():
        if inc.source is not None and inc.include is not None:
            parent.setdefault(str(inc.include), (str(inc.source), inc.location.offset))
    # where each #include of the main file ends (a comment after it may go on over lines)
    directives = [(c.extent.start.offset, c.extent.end.offset) for c in cursor_children(tu.cursor)
                  if c.kind == ci.CursorKind.INCLUSION_DIRECTIVE and c.location.file is not None
                  and str(c.location.file) == main_file]
    points: dict[str, int] = {}
    for header in parent:
        here, seen = header, set()
        while here in parent and parent[here][0] != main_file and here not in seen:
            seen.add(here)
            here = parent[here][0]
        # (a header included inside a namespace, a function or a class: its kernels are not
        # visible at file scope after the #include, where generated code goes)
        if here in parent and parent[here][0] == main_file:
            offset = parent[here][1]
            start, after = next(((a, b) for a, b in directives if a <= offset <= b), (offset, None))
            if _enclosing(tu, main_file, start) is not None:
                continue
            end = source.find(b"\n", offset)
            end = len(source) if end < 0 else end + 1
            # after the line of the #include, or right after it when more follows on that line
            points[header] = end if after is None or not source[after:end].strip() else after
    return points


_FUNCTION_NAMES = ("__func__", "__FUNCTION__", "__PRETTY_FUNCTION__", "__builtin_FUNCTION")
_CALLER_FILE = re.compile(rb"\b(?:__builtin_FILE|__builtin_FILE_NAME|source_location)\b")
_POSITION_BUILTINS = re.compile(rb"\b(__builtin_COLUMN|__builtin_LINE|source_location)\b")
_CONDITIONAL = re.compile(rb"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b", re.M)
_MACRO_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*(?:define|undef|pragma|include|include_next|import)\b", re.M)
_OPENS, _CLOSES = re.compile(rb"#[ \t]*if"), re.compile(rb"#[ \t]*endif")
_CONTEXT_NAMES = {"__has_include", "__has_include_next", "__INCLUDE_LEVEL__", "__FILE__", "__FILE_NAME__",
                  "__BASE_FILE__", "__builtin_FILE", "__builtin_FILE_NAME", "source_location"}
_AT_FILE_SCOPE = {ci.CursorKind.NO_DECL_FOUND, ci.CursorKind.TRANSLATION_UNIT, ci.CursorKind.INCLUSION_DIRECTIVE,
                  ci.CursorKind.MACRO_DEFINITION, ci.CursorKind.MACRO_INSTANTIATION}


def _enclosing(tu, file: str, offset: int) -> str | None:
    """What an #include at ``offset`` of ``file`` puts the included text inside (a
    namespace, ``extern "C"``, a function, a class), or None at file scope: clang's cursor
    at the character before the directive."""
    if offset == 0:
        return None
    c = ci.Cursor.from_location(tu, ci.SourceLocation.from_offset(tu, tu.get_file(file), offset - 1))
    if c.kind in _AT_FILE_SCOPE:
        return None
    if c.kind == ci.CursorKind.NAMESPACE:
        return f"namespace {c.spelling}" if c.spelling else "an anonymous namespace"
    if c.kind == ci.CursorKind.LINKAGE_SPEC:
        return 'extern "C"'
    return c.spelling if c.kind.is_declaration() and c.spelling else "a function or a declaration"


def _context_macros(tu) -> frozenset[str]:
    """The program's own macros whose expansion (through its other macros too) names
    something that means something else where a file's text is read from
    (``_CONTEXT_NAMES``): used in a copy, they would expand to other values there."""
    bodies: dict[str, set[str]] = {}
    for c in cursor_children(tu.cursor):
        if c.kind == ci.CursorKind.MACRO_DEFINITION:
            location = c.location
            if not location.is_in_system_header and location.file is not None:
                bodies[c.spelling] = {t.spelling for t in list(c.get_tokens())[1:]}
    found = {name for name, names in bodies.items() if names & _CONTEXT_NAMES}
    grew = True
    while grew:
        more = {name for name, names in bodies.items() if name not in found and names & found}
        found |= more
        grew = bool(more)
    return frozenset(found)


def _copy_facts(tu, path: str, text: bytes, main_file: str, directives: list, context_macros: frozenset[str]
                ) -> tuple[str | None, tuple[tuple[int, int], ...], tuple[tuple[int, int, str], ...]]:
    """For a file whose copy would stand in the main file: why its text would mean
    something else there (None when it would not), its ``#pragma once`` directives, and
    the quoted #includes to re-point (``IncludedProgramFile``). Read from clang's tokens,
    so that text in a string literal or a comment is never taken for a directive; the
    tokens of branches not taken count too (another build may take them)."""
    line = lambda offset: text.count(b"\n", 0, offset) + 1
    lone_cr = re.search(rb"\r(?!\n)", text)
    if lone_cr:  # clang counts it as a line end, the line numbers the copy's #line directives give do not
        return f"which ends line {line(lone_cr.start())} with a lone carriage return", (), ()
    file = tu.get_file(path)
    extent = ci.SourceRange.from_locations(ci.SourceLocation.from_offset(tu, file, 0),
                                           ci.SourceLocation.from_offset(tu, file, len(text)))
    try:
        tokens = [(t.spelling, t.kind, t.location.line, t.extent.start.offset, t.extent.end.offset)
                  for t in tu.get_tokens(extent=extent)]
    except UnicodeDecodeError:
        return "which is not UTF-8 text", (), ()
    pragma_once: list[tuple[int, int]] = []
    included: list[tuple[str, int, int]] = []  # quoted #includes: the name, its literal's start and end
    for k, (spelling, kind, at, start, end) in enumerate(tokens):
        if spelling in _CONTEXT_NAMES or spelling in context_macros:
            through = "" if spelling in _CONTEXT_NAMES else ", a macro that names what a file's place decides"
            return (f"whose text uses {spelling} (line {at}){through}, which means something else where the main "
                    "file holds it"), (), ()
        first = spelling == "#" and (k == 0 or tokens[k - 1][2] != at)
        following = [u for u in tokens[k + 1:k + 3] if u[2] == at]
        if not first or not following:
            continue
        directive = following[0][0]
        if following[0][1] == ci.TokenKind.LITERAL:  # # 12 "f.c"
            return f"which has a line marker (line {at}), which renumbers its lines", (), ()
        if directive in ("include_next", "line"):
            return f"which has a #{directive} directive (line {at})", (), ()
        if directive in ("include", "import"):
            if len(following) < 2 or (following[1][1] != ci.TokenKind.LITERAL and following[1][0] != "<"):
                return (f"which names a file to include with a macro (line {at}): from the main file's folder it "
                        "could be another"), (), ()
            if following[1][1] == ci.TokenKind.LITERAL:
                included.append((following[1][0].strip('"'), following[1][3], following[1][4]))
        if [u[0] for u in following] == ["pragma", "once"]:
            pragma_once.append((start, following[1][4]))
    here, main_dir = Path(path).resolve().parent, Path(main_file).resolve().parent
    found = {c.extent.end.offset: c.get_included_file() for c in directives}  # where clang took the #include
    repoint = []
    for name, start, end in included:
        if here == main_dir or Path(name).is_absolute():
            continue
        target = found.get(end)
        if target is None and (here / name).exists():  # a branch not taken: searched beside the file first
            target = here / name
        elif target is None and (main_dir / name).exists():
            return (f"whose #include \"{name}\" in a branch not taken (line {line(start)}) would find another file "
                    "from the main file's folder"), (), ()
        if target is not None and ((here / name).exists() or (main_dir / name).exists()):
            repoint.append((start, end, str(target)))
    return None, tuple(pragma_once), tuple(repoint)


def _program_files(tu, main_file: str) -> tuple[dict[str, IncludedProgramFile], dict[str, str]]:
    """The files of the program's own (not system headers) that one ``#include`` of the
    translation unit names (one file however its name is written), at file scope of the
    main file or of another such file, whose text means the same where the main file holds
    it: a copy of such a file's text can stand in place of that line (in the copy of the
    file holding it). For the others, why not."""
    directives: dict[object, list] = {}  # by the file's identity
    written_in: dict[str, list] = {}  # the directives in each file, by its name
    names: dict[object, str] = {}  # identity -> the name clang gives the file
    ids: dict[str, object] = {}

    def real_path(name: str):  # a file's identity: its inode (hard links and symbolic ones are one file)
        if name not in ids:
            try:
                st = os.stat(name)
                ids[name] = (st.st_dev, st.st_ino)
            except OSError:
                ids[name] = os.path.realpath(name)
        return ids[name]

    main_real = real_path(main_file)
    context_macros = _context_macros(tu)
    for c in cursor_children(tu.cursor):
        if c.kind == ci.CursorKind.INCLUSION_DIRECTIVE and c.location.file is not None:
            written_in.setdefault(str(c.location.file), []).append(c)
            target = c.get_included_file()
            if target is not None and real_path(str(target)) != main_real:
                real = real_path(str(target))
                directives.setdefault(real, []).append(c)
                names.setdefault(real, str(target))
    rewritten: dict[str, IncludedProgramFile] = {}
    why: dict[str, str] = {}

    def decide(real, seen: frozenset) -> bool:
        path = names[real]
        if path in rewritten or path in why:
            return path in rewritten
        uses = directives[real]
        if len(uses) != 1:
            why[path] = f"which the program includes {len(uses)} times"
            return False
        use = uses[0]
        parent = str(use.location.file)
        parent_real = real_path(parent)
        if parent_real != main_real and (parent_real in seen or parent_real not in directives
                                         or not decide(parent_real, seen | {real})):
            why[path] = f"which {Path(parent).name} includes, " + why.get(names.get(parent_real, parent),
                                                                           "a file not rewritten")
            return False
        inside = _enclosing(tu, parent, use.extent.start.offset)
        if inside is not None:
            why[path] = f"which is included inside {inside} (line {use.location.line})"
            return False
        left_open = _enclosing(tu, parent, use.extent.end.offset + 1)
        if left_open is not None:  # what follows the #include is inside something the file opened
            why[path] = f"which leaves {left_open} open after it"
            return False
        text = Path(path).read_bytes()
        problem, pragma_once, repoint = _copy_facts(tu, path, text, main_file, written_in.get(path, []),
                                                    context_macros)
        if problem is not None:
            why[path] = problem
            return False
        rewritten[path] = IncludedProgramFile(path, use.extent.start.offset, use.extent.end.offset,
                                              use.location.line, parent, pragma_once, repoint)
        return True

    own = [real for real, uses in directives.items()
           if not (ci.SourceLocation.from_position(tu, uses[0].get_included_file(), 1, 1).is_in_system_header
                   or any(c.location.is_in_system_header for c in uses))]
    # a function of the program's may read the file it is called from (a default argument
    # __builtin_FILE(), std::source_location): then a call in a copy would name another file
    for name in (main_file, *(names[real] for real in own)):
        caller_file = _CALLER_FILE.search(Path(name).read_bytes())
        if caller_file is not None:
            for real in own:
                why[names[real]] = (f"and the program names {caller_file.group(0).decode()} (in {Path(name).name}), "
                                    "which a function reads where it is called from")
            return rewritten, why
    for real in own:
        decide(real, frozenset())
    return rewritten, why


def build_source_index(job: CompileJob, bodies: bool = True) -> SourceIndex:
    """Index kernels, launches and allocations of the main file of ``job``, and the kernels
    of the headers it includes (not system headers). A kernel template is indexed once per
    instance the program launches. Without ``bodies`` only declarations are read (kernels'
    parameters; no launch sites, allocations or kernel bodies), many times faster on large
    generated files."""
    path = str(job.path)
    source = Path(path).read_bytes()
    index = ci.Index.create()
    options = ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD if bodies \
        else ci.TranslationUnit.PARSE_SKIP_FUNCTION_BODIES
    tu = parse_with_preamble(index, job, options)
    main_file = str(Path(path))
    out = SourceIndex(main_file=main_file)
    ends = program_ends(tu) if bodies else ProgramEnds()
    out.end_observers = ends.observers
    files: dict[str, bytes] = {main_file: source}
    templates: dict[tuple[str, int, int], object] = {}  # kernel templates by the location of their name
    instances: dict[str, object] = {}  # launched template instances by stub name

    def text_of_file(name: str) -> bytes:
        if name not in files:
            files[name] = Path(name).read_bytes()
        return files[name]

    def text_of(c) -> bytes:
        return text_of_file(str(c.location.file))

    if bodies:
        out.program_files, out.not_rewritten = _program_files(tu, main_file)

    def in_main(c) -> bool:
        return c.location.file is not None and str(c.location.file) == main_file

    @functools.lru_cache(maxsize=None)
    def main_macro_extents() -> list[tuple[int, int]]:  # the main file's macro uses, with their arguments
        return [(c.extent.start.offset, c.extent.end.offset) for c in cursor_children(tu.cursor)
                if c.kind == ci.CursorKind.MACRO_INSTANTIATION and in_main(c)]

    def in_program(c) -> bool:  # host code indexed: the main file's, and program files'
        return c.location.file is not None and out.rewritten_file(str(c.location.file))

    def kernel(c) -> None:
        if c.kind == ci.CursorKind.FUNCTION_TEMPLATE:
            if c.is_definition() or not bodies:
                templates[(str(c.location.file), c.location.line, c.location.column)] = c
        elif c.is_definition() or not bodies:  # a skipped body reads as a declaration
            decl = _kernel_decl(c, text_of(c), main_file)
            out.kernels[decl.stub_mangled] = decl

    changing_macros = _changing_macros(tu) if bodies else frozenset()

    records = (ci.CursorKind.STRUCT_DECL, ci.CursorKind.CLASS_DECL, ci.CursorKind.UNION_DECL,
               ci.CursorKind.CLASS_TEMPLATE)

    def visit(cursor, function: str | None, returns_leave_program: bool = False, record=None, top=None) -> None:
        # ``record``: the outermost class ``cursor`` is in (what goes before a member function goes
        # before it); ``top``: the declaration at file scope it is in
        in_braces = cursor.kind == ci.CursorKind.COMPOUND_STMT
        if record is None and cursor.kind in records:
            record = cursor
        block: int | None = None  # where out.host_blocks holds ``cursor``'s statements, once a launch is among them
        for position, c in enumerate(cursor_children(cursor)):
            location = c.location
            if location.is_in_system_header or location.file is None:
                continue
            outer = top if cursor.kind != ci.CursorKind.TRANSLATION_UNIT else c
            kind = c.kind
            if kind in (ci.CursorKind.FUNCTION_DECL, ci.CursorKind.FUNCTION_TEMPLATE) and _is_kernel(c):
                kernel(c)
                continue
            if not in_program(c):  # a header of the program's own: only its kernels
                if kind in (ci.CursorKind.NAMESPACE, ci.CursorKind.LINKAGE_SPEC):
                    visit(c, function, top=outer)
                continue
            if kind in (ci.CursorKind.FUNCTION_DECL, ci.CursorKind.FUNCTION_TEMPLATE, ci.CursorKind.CXX_METHOD):
                if c.is_definition() and any(ch.kind == ci.CursorKind.CUDADEVICE_ATTR for ch in cursor_children(c)):
                    out.device_function_ranges.append(_range(c))
                if c.is_definition():
                    out.function_ranges.setdefault(c.spelling, _declaration_range(record or c, text_of(c)))
                    out.function_tops.setdefault(c.spelling, _declaration_range(outer, text_of(c)))
                visit(c, c.spelling, _is_program_entry(c), record, outer)
                continue
            # loops by line are the main file's (the IR's loop lines are where main calls a helper)
            if kind == ci.CursorKind.FOR_STMT and function is not None and in_main(c):
                iterator = _loop_iterator(c)
                header = list(cursor_children(c))[:-1]
                pure = all(_changes_only(h, frozenset({iterator} if iterator else ()), changing_macros)
                           for h in header)
                init = next(iter(cursor_children(c)), None)
                declared = next((v for v in cursor_children(init) if v.kind == ci.CursorKind.VAR_DECL), None) \
                    if iterator is not None and init is not None else None
                body = list(cursor_children(c))[-1]
                variables, others = _declarations_in(body)
                out.for_loops.append(ForLoop(_range(c), function, _loop_body(c, changing_macros), iterator, pure,
                                             _range(body),
                                             declared.type.get_canonical().spelling if declared else None,
                                             _loop_step(c, iterator), _names_in(body), variables, others,
                                             _renamable_in(body, main_macro_extents()), _header_text(c, iterator)))
            if kind == ci.CursorKind.CALL_EXPR and function is not None:
                children = list(cursor_children(c))
                if len(children) >= 2 and children[1].kind == ci.CursorKind.CALL_EXPR \
                        and children[1].spelling == "__cudaPushCallConfiguration":
                    text = text_of(c)
                    written_config = [a for a in children[1].get_arguments() if a.extent.start.line > 0 and _text(text, a)]
                    config = tuple(_text(text, a) for a in written_config)
                    args = tuple(_text(text, a) for a in children[2:])
                    valued = [a for a in written_config + children[2:] if a.extent.start.line > 0 and _text(text, a)]
                    spans = [(a.extent.start.offset, a.extent.end.offset) for a in valued]
                    several = next((_text(text, a) for a, span in zip(valued, spans) if spans.count(span) > 1), None)
                    written = _text(text, c)
                    macro = None if "<<<" in written else written.split("(", 1)[0].strip()
                    callee = written.split("<<<", 1)[0].strip() if macro is None else (c.spelling or "")
                    if in_braces and block is None:
                        block = len(out.host_blocks)
                        out.host_blocks.append(HostBlock(_range(cursor), tuple(
                            statement_flow(s, returns_leave_program, ends) for s in cursor_children(cursor))))
                    inner = re.search(rb"[\r\n][ \t]*#", text[c.extent.start.offset:c.extent.end.offset])
                    out.launches.append(LaunchSite(c.spelling or _text(text, children[0]), function,
                                                   config, args, _range(c), in_braces, macro, callee, block,
                                                   position, None if inner is None else text.count(
                                                       b"\n", 0, c.extent.start.offset + inner.start()) + 2,
                                                   several))
                    out.functions_with_launches.add(function)
                    target = c.referenced
                    if target is not None and target.get_num_template_arguments() >= 0 and target.mangled_name:
                        instances.setdefault(target.mangled_name, target)
                elif c.spelling in _ALLOC_FUNCS and in_main(c):  # named by line: the main file's
                    args = list(c.get_arguments())
                    var = _allocated_variable(source, args[0]) if args else None
                    size = _text(source, args[1]) if len(args) > 1 else ""
                    out.allocations.append(AllocSite(c.spelling, var, c.location.line, size))
            visit(c, function, returns_leave_program and kind != ci.CursorKind.LAMBDA_EXPR, record, outer)

    visit(tu.cursor, None)
    if bodies:
        _index_macros(tu, job.flags.defines, out, "\n".join(
            text_of_file(f).decode("utf-8", "replace") for f in (main_file, *out.program_files)))
        out.kernels = {stub: _with_unwritable_macros(d, out) for stub, d in out.kernels.items()}
    for stub, target in instances.items():
        pattern = templates.get((str(target.location.file), target.location.line, target.location.column))
        if pattern is not None:
            out.kernels[stub] = _template_instance(pattern, target, text_of(pattern), main_file)
    headers = {d.range.file for d in out.kernels.values() if d.range.file != main_file}
    if headers:
        points = _include_points(tu, main_file, source)
        out.visible_after = {h: points[h] for h in headers if h in points}
    out.included = tuple(sorted({str(inc.include) for inc in tu.get_includes() if inc.include is not None}))
    out.conditionals = {f: tuple(m.start() for m in _CONDITIONAL.finditer(text_of_file(f)))
                        for f in (main_file, *out.program_files)}
    out.macro_directives = {f: tuple(m.start() for m in _MACRO_DIRECTIVE.finditer(text_of_file(f)))
                            for f in (main_file, *out.program_files)}
    out.position_builtins = {f: frozenset(m.decode() for m in _POSITION_BUILTINS.findall(text_of_file(f)))
                             for f in (main_file, *out.program_files)}
    lone_cr = re.search(rb"\r(?!\n)", source)
    if re.search(rb"^[ \t]*#[ \t]*line\b", source, re.MULTILINE):
        out.renumbered = "the program's #line directives renumber its lines, and clang reports the numbers they give"
    elif lone_cr:
        line = source[:lone_cr.start()].count(b"\n") + 1
        out.renumbered = (f"the main file ends line {line} with a lone carriage return, a line end to clang but "
                          "not to the lines the index counts")
    return out
