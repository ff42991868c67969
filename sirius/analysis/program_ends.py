"""Which early ends of a host program run code of the program's own, read from clang's AST.

Fusing two launches defers the first to where the second is. On a path that leaves the
program between them (an error check's ``exit``) nothing later sees the difference, unless
the program runs code of its own on the way out: that code may copy device memory back and
print it. This module finds, once per translation unit, which ways of leaving are observed
and by what:

- ``Ending.EXIT`` (``exit``): handlers registered with ``atexit``, ``on_exit`` or
  ``__cxa_atexit`` (called, or their address taken); functions marked
  ``__attribute__((destructor))``; destructors of objects of static or thread storage
  duration.
- ``Ending.RETURN`` (``return`` in ``main``): those, and destructors (or
  ``__attribute__((cleanup))`` functions) of ``main``'s own objects.
- ``Ending.QUICK_EXIT`` (``quick_exit``): handlers registered with ``at_quick_exit``.
- ``Ending.ABORT`` (``abort``, a failed ``assert``, ``std::terminate``, an uncaught
  exception): a handler of SIGABRT installed with ``signal`` or ``sigaction``; a terminate
  handler.
- ``Ending.SIGNAL`` (``raise``, ``kill``): a handler of any signal.
- ``Ending.TRAP`` (a statement that faults: a division by zero, a bad pointer, a floating
  point trap): a handler of SIGFPE, SIGSEGV, SIGBUS, SIGILL, SIGTRAP or SIGSYS (or of a
  signal whose number is not a constant). Then every statement that may fault ends a
  region: a call, a division, a dereference (``may_trap``).
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

from sirius.analysis.clang_constants import integer_constant
from sirius.analysis.cursors import cursor_children, cursor_preorder

_K = ci.CursorKind


class Ending(Enum):
    """A way control may leave the program before its end."""

    EXIT = "exit"
    RETURN = "return from main"
    QUICK_EXIT = "quick_exit"
    ABORT = "abort"
    THROW = "an exception"
    SIGNAL = "a signal the program raises"  # raise(), kill(): the handler runs there
    TRAP = "a trap"  # a statement that faults (SIGFPE, SIGSEGV, SIGBUS, SIGILL): the handler runs there


ALL_ENDINGS = frozenset(Ending)

# the C library's functions that end the program, and the ending each is
_LEAVING = {"exit": Ending.EXIT, "quick_exit": Ending.QUICK_EXIT, "abort": Ending.ABORT,
            "__assert_fail": Ending.ABORT, "__assert_rtn": Ending.ABORT, "terminate": Ending.ABORT,
            "longjmp": Ending.THROW, "_longjmp": Ending.THROW, "siglongjmp": Ending.THROW,
            "__longjmp_chk": Ending.THROW, "raise": Ending.SIGNAL, "kill": Ending.SIGNAL,
            "killpg": Ending.SIGNAL, "pthread_kill": Ending.SIGNAL, "tgkill": Ending.SIGNAL}

# functions that register code to run at an ending, and the endings it runs at
_REGISTERING = {"atexit": (Ending.EXIT, Ending.RETURN), "on_exit": (Ending.EXIT, Ending.RETURN),
                "__cxa_atexit": (Ending.EXIT, Ending.RETURN), "at_quick_exit": (Ending.QUICK_EXIT,),
                "set_terminate": (Ending.ABORT, Ending.THROW),
                "setjmp": (Ending.THROW,), "_setjmp": (Ending.THROW,), "sigsetjmp": (Ending.THROW,),
                "__sigsetjmp": (Ending.THROW,)}
_SIGNAL_HANDLERS = frozenset({"signal", "sigaction", "bsd_signal", "sigset", "sysv_signal"})
# signals a statement of the program raises by itself (Linux numbers): SIGILL, SIGTRAP,
# SIGABRT, SIGBUS, SIGFPE, SIGSEGV, SIGSYS; a handler of another (SIGINT, ...) runs only
# when the program raises it or at a time nothing fixes
_SIGABRT = 6
_TRAPS = frozenset({4, 5, 7, 8, 11, 31})

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
        """What runs code of the program's own at one of ``endings``; an exception no catch
        of the program takes ends in ``std::terminate``, which aborts."""
        if Ending.THROW in endings:
            endings = endings | {Ending.ABORT}
        return next((o for o in self.observers if endings.intersection(o.endings)), None)


def program_ends(tu: ci.TranslationUnit) -> ProgramEnds:
    """Find what observes each early ending in ``tu``'s own (not system) code; device
    functions are skipped (they register nothing)."""
    observers: list[EndObserver] = []

    callees: set[int] = set()  # offsets of the names of registering functions that calls call

    def visit(cursor: ci.Cursor, in_main: bool) -> None:
        for c in cursor_children(cursor):
            location = c.location  # (one look-up: each property of a cursor asks clang again)
            if location.is_in_system_header or location.file is None:
                continue
            kind = c.kind
            if kind in _FUNCTIONS and _device_only(c):
                continue
            if kind in (_K.CALL_EXPR, _K.DECL_REF_EXPR):  # called, or its address taken
                target = c.referenced
                name = target.spelling if target is not None else ""
                if target is not None and target.kind == _K.FUNCTION_DECL and target.location.is_in_system_header \
                        and (name in _REGISTERING or name in _SIGNAL_HANDLERS) \
                        and c.extent.start.offset not in callees:
                    call = c if kind == _K.CALL_EXPR else None
                    if call is not None:
                        callees.add(_callee_name(call).extent.start.offset)
                    written = "".join(t.spelling for t in c.get_tokens())
                    what = written if 0 < len(written) <= 60 else f"{name}(...)"
                    endings = _REGISTERING.get(name) or _handled_signal_endings(call)
                    observers.append(EndObserver(endings, c.location.line, what))
            elif kind == _K.FUNCTION_DECL and _has_attribute(c, "destructor"):
                observers.append(EndObserver((Ending.EXIT, Ending.RETURN), c.location.line,
                                             f"__attribute__((destructor)) {c.spelling}"))
            elif kind == _K.CXX_TRY_STMT:
                observers.append(EndObserver((Ending.THROW,), c.location.line, "try"))
            elif kind == _K.VAR_DECL and (not _only_frees_host_memory(c.type) or _has_attribute(c, "cleanup")):
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
    for d in cursor_preorder(node):
        if d.kind == _K.CXX_THROW_EXPR or d.kind == _K.CXX_NEW_EXPR:
            out.add(Ending.THROW)  # new: std::bad_alloc
        elif d.kind == _K.CALL_EXPR:
            callee = d.referenced
            if callee is None or callee.kind not in _FUNCTIONS:
                out |= ALL_ENDINGS  # a call through a pointer, or one clang cannot resolve
            else:
                out |= function_endings(callee, ends)
        elif d.kind == _K.DECL_REF_EXPR and d.referenced is not None and d.referenced.kind in _FUNCTIONS:
            out |= function_endings(d.referenced, ends)  # a function passed on is called by its taker
        record = d.type.get_canonical()
        if d.kind.is_expression() or d.kind == _K.VAR_DECL:
            if record.kind == ci.TypeKind.RECORD:
                # an object made here is destroyed (a temporary at the end of the statement);
                # a callable (a lambda, a functor) passed on is called by its taker
                declaration = record.get_declaration()
                if d.kind in _MAKING_OBJECTS:
                    out |= _destructor_endings(declaration, ends)
                for member in cursor_children(declaration):
                    if member.kind == _K.CXX_METHOD and member.spelling == "operator()":
                        out |= function_endings(member, ends)
    return frozenset(out)


# nodes that may make an object (a call returning one, a temporary, a braced or cast
# initialization, a variable)
_MAKING_OBJECTS = (_K.CALL_EXPR, _K.INIT_LIST_EXPR, _K.CXX_FUNCTIONAL_CAST_EXPR, _K.UNEXPOSED_EXPR, _K.VAR_DECL)


def _destructor_endings(record: ci.Cursor | None, ends: ProgramEnds, depth: int = 0) -> frozenset[Ending]:
    """How destroying an object of the program's class ``record`` may leave early: its
    destructor's body, its members' and bases' destructors (a class of the library runs
    library code: nothing)."""
    if record is None or record.location.is_in_system_header or depth > 4:
        return frozenset()
    out: set[Ending] = set()
    for member in cursor_children(record):
        if member.kind == _K.DESTRUCTOR and not member.is_default_method():
            out |= function_endings(member, ends)
        elif member.kind in (_K.FIELD_DECL, _K.CXX_BASE_SPECIFIER):
            out |= _destructor_endings(member.type.get_canonical().get_declaration(), ends, depth + 1)
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
    if any(ch.kind == _K.CUDAGLOBAL_ATTR for ch in cursor_children(function)):
        return frozenset()  # a launch
    if function.location.is_in_system_header:
        if name in _LEAVING:
            return frozenset({_LEAVING[name]})
        if _c_linkage(function) or _cuda_header(function):  # _Exit, _exit: nothing of the program's runs
            return frozenset()
        # the C++ library's functions may abort (its assertions, with _GLIBCXX_ASSERTIONS)
        return frozenset({Ending.ABORT} if function.exception_specification_kind in _NOTHROW
                         else {Ending.THROW, Ending.ABORT})
    definition = function.get_definition()
    if definition is None:
        return ALL_ENDINGS  # defined elsewhere: anything
    body = [ch for ch in cursor_children(definition) if ch.kind == _K.COMPOUND_STMT or ch.kind.is_expression()]
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
    attrs = {ch.kind for ch in cursor_children(function)}
    return (_K.CUDAGLOBAL_ATTR in attrs or _K.CUDADEVICE_ATTR in attrs) and _K.CUDAHOST_ATTR not in attrs


def _static_storage(var: ci.Cursor) -> bool:
    """A variable destroyed at exit: global, namespace or class member, ``static`` or
    ``thread_local``."""
    return var.semantic_parent.kind not in _FUNCTIONS + (_K.LAMBDA_EXPR,) \
        or var.storage_class == ci.StorageClass.STATIC or var.tls_kind != ci.TLSKind.NONE


def _only_frees_host_memory(t: ci.Type, depth: int = 0, argument: bool = False) -> bool:
    """Destroying an object of type ``t`` runs no code of the program's: a scalar, a pointer
    (as a template's argument, not to a function: a deleter), a class of the program's without a destructor of
    its own whose members and bases are such types, or a standard library class whose
    arguments are (not one that holds a callable or a thread: ``shared_ptr``, ``function``,
    ...). A class of the program's with ``operator()`` is a callable: not such a type when
    it is a template's argument (a deleter)."""
    t = t.get_canonical()
    kind = t.kind
    if kind in (ci.TypeKind.CONSTANTARRAY, ci.TypeKind.INCOMPLETEARRAY):
        return _only_frees_host_memory(t.element_type, depth, argument)
    if kind == ci.TypeKind.POINTER:  # as a template's argument, a pointer to a function is a deleter
        return not argument or t.get_pointee().get_canonical().kind not in (ci.TypeKind.FUNCTIONPROTO,
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
        return all(_only_frees_host_memory(a, depth + 1, argument=True) for a in arguments
                   if a.kind != ci.TypeKind.INVALID)
    for member in cursor_children(decl):
        if member.kind == _K.DESTRUCTOR and not member.is_default_method():
            return False
        if member.kind == _K.CXX_METHOD and member.spelling == "operator()" and argument:
            return False
        if member.kind in (_K.FIELD_DECL, _K.CXX_BASE_SPECIFIER) \
                and not _only_frees_host_memory(member.type, depth + 1):
            return False
    return True


def _closure_only_frees_host_memory(closure: ci.Cursor, depth: int) -> bool:
    """A lambda's closure holds copies of (or references to) the enclosing function's
    variables its body names: destroying it runs no code of the program's when each of
    them only frees host memory."""
    for d in cursor_preorder(closure):
        target = d.referenced if d.kind == _K.DECL_REF_EXPR else None
        if target is not None and target.kind in (_K.VAR_DECL, _K.PARM_DECL) \
                and target.semantic_parent is not None and target.semantic_parent.kind in _FUNCTIONS \
                and not _only_frees_host_memory(target.type, depth + 1):
            return False
    return True


def _callee_name(call: ci.Cursor) -> ci.Cursor:
    """The name a call is made through (under the implicit conversion to a pointer)."""
    node = next(iter(cursor_children(call)), call)
    while node.kind == _K.UNEXPOSED_EXPR:
        inner = next(iter(cursor_children(node)), None)
        if inner is None:
            break
        node = inner
    return node


def _handled_signal_endings(call: ci.Cursor | None) -> tuple[Ending, ...]:
    """The endings a handler installed by ``call`` (``signal(SIGFPE, on_fpe)``) runs at:
    raised signals always, aborts for SIGABRT, traps for the signals a statement raises by
    itself; all of them when the number is not a constant."""
    number = None
    if call is not None:
        arguments = list(call.get_arguments())
        number = integer_constant(arguments[0]) if arguments else None
    if number is None:
        return (Ending.SIGNAL, Ending.ABORT, Ending.TRAP)
    return (Ending.SIGNAL,) + ((Ending.ABORT,) if number == _SIGABRT else ()) + \
        ((Ending.TRAP,) if number in _TRAPS else ())


def _has_attribute(declaration: ci.Cursor, name: str) -> bool:
    """``declaration`` carries ``__attribute__((name...))`` (libclang leaves it unexposed)."""
    return any(ch.kind == _K.UNEXPOSED_ATTR and next((t.spelling for t in ch.get_tokens()), "") == name
               for ch in cursor_children(declaration))


def may_trap(node: ci.Cursor) -> bool:
    """Evaluating ``node`` may fault: it calls a function (not a kernel: a launch), or
    divides, or reads through a pointer (``*p``, ``p[i]``, ``p->f``)."""
    for d in cursor_preorder(node):
        kind = d.kind
        if kind == _K.CALL_EXPR:
            callee = d.referenced
            if callee is None or not (any(ch.kind == _K.CUDAGLOBAL_ATTR for ch in cursor_children(callee))
                                      or callee.spelling == "__cudaPushCallConfiguration"
                                      or callee.kind == _K.CONSTRUCTOR and callee.location.is_in_system_header
                                      and _cuda_header(callee)):
                return True
        elif kind in (_K.ARRAY_SUBSCRIPT_EXPR, _K.CXX_NEW_EXPR, _K.CXX_DELETE_EXPR, _K.CXX_THROW_EXPR):
            return True
        elif kind in (_K.UNARY_OPERATOR, _K.BINARY_OPERATOR, _K.COMPOUND_ASSIGNMENT_OPERATOR, _K.MEMBER_REF_EXPR):
            op = _operator(d)
            if op in ("/", "%", "/=", "%=", "->") or op == "*" and kind == _K.UNARY_OPERATOR:
                return True
    return False


def _operator(node: ci.Cursor) -> str:
    """The operator token of a unary, binary or member expression (after its first
    operand's tokens; a unary's first token)."""
    tokens = [t.spelling for t in node.get_tokens()]
    if not tokens:
        return ""
    if node.kind == _K.UNARY_OPERATOR:
        return tokens[0]
    first = next(iter(cursor_children(node)), None)
    at = len(list(first.get_tokens())) if first is not None else 0
    return tokens[at] if at < len(tokens) else ""


def quiet_noreturn(function: ci.Cursor | None, depth: int = 0) -> bool:
    """``function`` is one of the program's, declared ``[[noreturn]]`` (a ``die()`` or
    ``fatal()`` helper), and nothing it does could see device memory: it calls the C or C++
    library (not the CUDA runtime) and helpers of the same kind only, reads no global
    variable and nothing through a pointer (which could be managed or mapped memory)."""
    if function is None or function.location.is_in_system_header or depth > 4:
        return False
    noreturn = _has_attribute(function, "noreturn") or "__attribute__((noreturn))" in function.type.spelling
    definition = function.get_definition()
    return noreturn and definition is not None and _sees_no_device_memory(definition, depth)


def _sees_no_device_memory(definition: ci.Cursor, depth: int) -> bool:
    for d in cursor_preorder(definition):
        kind = d.kind
        if kind == _K.CALL_EXPR:
            callee = d.referenced
            if callee is None or callee.kind not in _FUNCTIONS:
                return False
            if callee.location.is_in_system_header:
                if _cuda_header(callee):
                    return False
            elif callee != definition:
                inner = callee.get_definition()
                if depth > 4 or inner is None or not _sees_no_device_memory(inner, depth + 1):
                    return False
        elif kind == _K.DECL_REF_EXPR:
            target = d.referenced
            if target is not None and target.kind == _K.VAR_DECL and _static_storage(target) \
                    and not target.location.is_in_system_header:  # (stderr is the library's)
                return False
        elif kind == _K.ARRAY_SUBSCRIPT_EXPR or kind == _K.MEMBER_REF_EXPR and _operator(d) == "->" \
                or kind == _K.UNARY_OPERATOR and _operator(d) == "*":
            return False
    return True
