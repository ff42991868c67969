"""Which early ends of a host program run code of the program's own, read from clang's AST.

Fusing two launches defers the first to where the second is. On a path that leaves the
program between them (an error check's ``exit``) nothing later sees the difference, unless
the program runs code of its own on the way out: that code may copy device memory back and
print it. This module finds, once per translation unit, which ways of leaving are observed
and by what:

- ``Ending.EXIT`` (``exit``): handlers registered with ``atexit``, ``on_exit`` or
  ``__cxa_atexit``; destructors of objects of static or thread storage duration.
- ``Ending.RETURN`` (``return`` in ``main``): those, and destructors of ``main``'s own
  objects.
- ``Ending.QUICK_EXIT`` (``quick_exit``): handlers registered with ``at_quick_exit``.
- ``Ending.ABORT`` (``abort``, a failed ``assert``, ``std::terminate``): signal handlers
  installed with ``signal`` or ``sigaction``; a terminate handler.
- ``Ending.THROW`` (an exception, or ``longjmp``): a ``try`` of the program's own (a catch
  may observe what ran before the throw), a terminate handler; a ``setjmp`` (where a
  ``longjmp`` lands).

``_Exit`` runs nothing of the program's. A destructor counts unless the type's destructors
run only library code that frees host memory (``_only_frees_host_memory``).

``endings(node, ends)`` says how evaluating an expression may leave early: its direct calls
of the C library's leaving functions, ``throw``, calls of the program's own functions (their
bodies read, transitively), and calls of functions without a body the program can read
(a C function or the CUDA runtime does not throw; another C++ function without ``noexcept``
may; a function the program only declares may do anything).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import clang.cindex as ci

_K = ci.CursorKind


class Ending(Enum):
    """A way control may leave the program before its end."""

    EXIT = "exit"
    RETURN = "return from main"
    QUICK_EXIT = "quick_exit"
    ABORT = "abort"
    THROW = "an exception"


ALL_ENDINGS = frozenset(Ending)

# the C library's functions that end the program, and the ending each is
_LEAVING = {"exit": Ending.EXIT, "quick_exit": Ending.QUICK_EXIT, "abort": Ending.ABORT,
            "__assert_fail": Ending.ABORT, "__assert_rtn": Ending.ABORT, "terminate": Ending.ABORT,
            "longjmp": Ending.THROW, "_longjmp": Ending.THROW, "siglongjmp": Ending.THROW,
            "__longjmp_chk": Ending.THROW}

# functions that register code to run at an ending, and the endings it runs at
_REGISTERING = {"atexit": (Ending.EXIT, Ending.RETURN), "on_exit": (Ending.EXIT, Ending.RETURN),
                "__cxa_atexit": (Ending.EXIT, Ending.RETURN), "at_quick_exit": (Ending.QUICK_EXIT,),
                "signal": (Ending.ABORT,), "sigaction": (Ending.ABORT,), "bsd_signal": (Ending.ABORT,),
                "set_terminate": (Ending.ABORT, Ending.THROW),
                "setjmp": (Ending.THROW,), "_setjmp": (Ending.THROW,), "sigsetjmp": (Ending.THROW,),
                "__sigsetjmp": (Ending.THROW,)}

# standard classes whose destructors may run code of the program's whatever their
# arguments: a type-erased deleter or callable, a thread (terminate when joinable)
_RUNS_CALLBACKS = frozenset({"shared_ptr", "weak_ptr", "function", "move_only_function", "copyable_function",
                             "any", "thread", "jthread", "packaged_task", "future", "shared_future", "promise"})

_FUNCTIONS = (_K.FUNCTION_DECL, _K.CXX_METHOD, _K.CONSTRUCTOR, _K.DESTRUCTOR, _K.CONVERSION_FUNCTION,
              _K.FUNCTION_TEMPLATE)
_NOTHROW = (ci.ExceptionSpecificationKind.BASIC_NOEXCEPT, ci.ExceptionSpecificationKind.DYNAMIC_NONE)


@dataclass(frozen=True)
class EndObserver:
    """Code of the program that runs at some endings: what registers it, and where."""

    endings: tuple[Ending, ...]
    line: int
    what: str  # "atexit(report)", "try", "Logger log (destroyed at exit)"


@dataclass
class ProgramEnds:
    """The endings of one program that run its own code, and what observes each."""

    observers: tuple[EndObserver, ...] = ()
    _function_endings: dict[str, frozenset[Ending]] = field(default_factory=dict, repr=False)

    def observed(self, ending: Ending) -> EndObserver | None:
        """What runs code of the program's own at ``ending`` (None: nothing)."""
        return next((o for o in self.observers if ending in o.endings), None)

    def observed_among(self, endings: frozenset[Ending]) -> EndObserver | None:
        return next((o for o in self.observers if endings.intersection(o.endings)), None)


def program_ends(tu: ci.TranslationUnit) -> ProgramEnds:
    """Find what observes each early ending in ``tu``'s own (not system) code; device
    functions are skipped (they register nothing)."""
    observers: list[EndObserver] = []

    def visit(cursor: ci.Cursor, in_main: bool) -> None:
        for c in cursor.get_children():
            if c.location.file is None or c.location.is_in_system_header:
                continue
            kind = c.kind
            if kind in _FUNCTIONS and _device_only(c):
                continue
            if kind == _K.CALL_EXPR:
                callee = c.referenced
                name = callee.spelling if callee is not None else ""
                if name in _REGISTERING and callee.location.is_in_system_header:
                    written = "".join(t.spelling for t in c.get_tokens())
                    observers.append(EndObserver(_REGISTERING[name], c.location.line,
                                                 written if 0 < len(written) <= 60 else f"{name}(...)"))
            elif kind == _K.CXX_TRY_STMT:
                observers.append(EndObserver((Ending.THROW,), c.location.line, "try"))
            elif kind == _K.VAR_DECL and not _only_frees_host_memory(c.type):
                if _static_storage(c):
                    observers.append(EndObserver((Ending.EXIT, Ending.RETURN), c.location.line,
                                                 f"{c.type.spelling} {c.spelling} (destroyed at exit)"))
                elif in_main:
                    observers.append(EndObserver((Ending.RETURN,), c.location.line,
                                                 f"{c.type.spelling} {c.spelling} (destroyed when main returns)"))
            visit(c, in_main or (kind == _K.FUNCTION_DECL and c.spelling == "main"
                                 and c.semantic_parent.kind in (_K.TRANSLATION_UNIT, _K.LINKAGE_SPEC)))

    visit(tu.cursor, False)
    return ProgramEnds(tuple(observers))


def endings(node: ci.Cursor, ends: ProgramEnds) -> frozenset[Ending]:
    """How evaluating ``node`` (an expression or declaration, with what it calls) may leave
    the program early; a call of a kernel (a launch) does not."""
    out: set[Ending] = set()
    for d in node.walk_preorder():
        if d.kind == _K.CXX_THROW_EXPR or d.kind == _K.CXX_NEW_EXPR:
            out.add(Ending.THROW)  # new: std::bad_alloc
        elif d.kind == _K.CALL_EXPR:
            callee = d.referenced
            if callee is None or callee.kind not in _FUNCTIONS:
                out |= ALL_ENDINGS  # a call through a pointer, or one clang cannot resolve
            else:
                out |= function_endings(callee, ends)
    return frozenset(out)


def function_endings(function: ci.Cursor, ends: ProgramEnds) -> frozenset[Ending]:
    """How a call of ``function`` may leave the program early (memoised per program; a
    function that calls itself, directly or not, may leave in any way)."""
    key = function.get_usr() or function.mangled_name or function.spelling
    cached = ends._function_endings.get(key)
    if cached is not None:
        return cached
    ends._function_endings[key] = ALL_ENDINGS  # while its body is read: recursion
    result = _function_endings(function, ends)
    ends._function_endings[key] = result
    return result


def _function_endings(function: ci.Cursor, ends: ProgramEnds) -> frozenset[Ending]:
    name = function.spelling
    if any(ch.kind == _K.CUDAGLOBAL_ATTR for ch in function.get_children()):
        return frozenset()  # a launch
    if function.location.is_in_system_header:
        if name in _LEAVING:
            return frozenset({_LEAVING[name]})
        if name in ("_Exit", "_exit") or function.exception_specification_kind in _NOTHROW \
                or _c_linkage(function) or _cuda_header(function):
            return frozenset()
        return frozenset({Ending.THROW})
    definition = function.get_definition()
    if definition is None:
        return ALL_ENDINGS  # defined elsewhere: anything
    body = [ch for ch in definition.get_children() if ch.kind == _K.COMPOUND_STMT or ch.kind.is_expression()]
    out: set[Ending] = set()
    for part in body:
        out |= endings(part, ends)
    if Ending.THROW in out and definition.exception_specification_kind in _NOTHROW:
        out = (out - {Ending.THROW}) | {Ending.ABORT}  # a throw out of noexcept terminates
    return frozenset(out)


def _c_linkage(function: ci.Cursor) -> bool:
    """Declared ``extern "C"``: its name is not mangled (C functions do not throw)."""
    mangled = function.mangled_name or ""
    return bool(mangled) and not mangled.startswith("_Z")


def _cuda_header(function: ci.Cursor) -> bool:
    """Declared in the CUDA toolkit's headers (the runtime's C++ wrappers do not throw)."""
    name = str(function.location.file or "")
    return "/cuda" in name or name.rsplit("/", 1)[-1].startswith(("cuda", "driver_", "vector_", "crt", "__clang_cuda"))


def _device_only(function: ci.Cursor) -> bool:
    attrs = {ch.kind for ch in function.get_children()}
    return (_K.CUDAGLOBAL_ATTR in attrs or _K.CUDADEVICE_ATTR in attrs) and _K.CUDAHOST_ATTR not in attrs


def _static_storage(var: ci.Cursor) -> bool:
    """A variable destroyed at exit: global, namespace or class member, ``static`` or
    ``thread_local``."""
    return var.semantic_parent.kind not in _FUNCTIONS + (_K.LAMBDA_EXPR,) \
        or var.storage_class == ci.StorageClass.STATIC or var.tls_kind != ci.TLSKind.NONE


def _only_frees_host_memory(t: ci.Type, depth: int = 0) -> bool:
    """Destroying an object of type ``t`` runs no code of the program's: a scalar, a pointer
    (as a template's argument, not to a function: a deleter), a class of the program's without a destructor of
    its own whose members and bases are such types, or a standard library class whose
    arguments are (not one that holds a callable or a thread: ``shared_ptr``, ``function``,
    ...). A class of the program's with ``operator()`` is a callable: not such a type when
    it is a template's argument (a deleter)."""
    t = t.get_canonical()
    kind = t.kind
    if kind in (ci.TypeKind.CONSTANTARRAY, ci.TypeKind.INCOMPLETEARRAY):
        return _only_frees_host_memory(t.element_type, depth)
    if kind == ci.TypeKind.POINTER:  # as a template's argument, a pointer to a function is a deleter
        return depth == 0 or t.get_pointee().get_canonical().kind not in (ci.TypeKind.FUNCTIONPROTO,
                                                                          ci.TypeKind.FUNCTIONNOPROTO)
    if kind in (ci.TypeKind.LVALUEREFERENCE, ci.TypeKind.RVALUEREFERENCE, ci.TypeKind.ENUM, ci.TypeKind.MEMBERPOINTER):
        return True
    if kind != ci.TypeKind.RECORD:
        return t.is_pod()
    decl = t.get_declaration()
    if depth > 8 or decl is None or decl.kind == _K.NO_DECL_FOUND:
        return False
    if decl.spelling.startswith("(lambda"):
        return _closure_only_frees_host_memory(decl, depth)
    if decl.location.is_in_system_header:
        if decl.spelling in _RUNS_CALLBACKS:
            return False
        arguments = (t.get_template_argument_type(i) for i in range(max(t.get_num_template_arguments(), 0)))
        return all(_only_frees_host_memory(a, depth + 1) for a in arguments if a.kind != ci.TypeKind.INVALID)
    for member in decl.get_children():
        if member.kind == _K.DESTRUCTOR and not member.is_default_method():
            return False
        if member.kind == _K.CXX_METHOD and member.spelling == "operator()" and depth > 0:
            return False
        if member.kind in (_K.FIELD_DECL, _K.CXX_BASE_SPECIFIER) \
                and not _only_frees_host_memory(member.type, depth + 1):
            return False
    return True


def _closure_only_frees_host_memory(closure: ci.Cursor, depth: int) -> bool:
    """A lambda's closure holds copies of (or references to) the enclosing function's
    variables its body names: destroying it runs no code of the program's when each of
    them only frees host memory."""
    for d in closure.walk_preorder():
        target = d.referenced if d.kind == _K.DECL_REF_EXPR else None
        if target is not None and target.kind in (_K.VAR_DECL, _K.PARM_DECL) \
                and target.semantic_parent is not None and target.semantic_parent.kind in _FUNCTIONS \
                and not _only_frees_host_memory(target.type, depth + 1):
            return False
    return True
