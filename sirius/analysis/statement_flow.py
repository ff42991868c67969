"""How control leaves a statement of a host block, read from clang's AST.

Two launches may join one fusion region only when control runs from the first to the
second through the statements between them, or leaves the program on the way (then no
later statement sees what the first launch did). For one statement of a compound
statement this module proves one of:

- ``Flow.NEXT``: control always goes on to the next statement. A declaration, an
  expression or an empty statement holding no statement (no lambda body, no statement
  expression), no ``throw`` and no call that leaves the program; or braces, or a
  ``do ... while (0)``, around such statements.
- ``Flow.NEXT_OR_EXIT``: control goes on to the next statement or leaves the program: an
  error check, an ``if`` without ``else``, init-statement or condition variable whose
  branch holds such statements and ends by leaving the program (a call to the C library's
  ``exit``, ``_Exit``, ``_exit``, ``quick_exit`` or ``abort``, a ``[[noreturn]]`` helper of
  the program's that sees no device memory (``program_ends.quiet_noreturn``), or
  ``return`` in ``main``); or braces,
  or a ``do ... while (0)`` (the usual ``CHECK(call)`` macro), around error checks and
  statements of the kind above.
- ``Flow.OBSERVED_EXIT``: as one of the two above, but the way it may leave the program
  (``exit``, ``return`` from ``main``, an exception, a call of a function that does) runs
  code of the program's own (an ``atexit`` handler, a destructor, a ``catch``:
  ``analysis.program_ends``), which may observe device memory.
- ``Flow.OTHER``: anything else, or not proven: a branch with ``else``, a loop, a
  ``switch``, a jump (``return``, ``break``, ``continue``, ``goto``), a label, ``try``,
  ``asm``, a statement libclang does not expose, a lone call that leaves the program.

The facts are clang's reading of the program: a comment, a string literal or a macro is
what the compiler makes of it, not text that looks like a keyword.
"""

from __future__ import annotations

from enum import Enum

import clang.cindex as ci

from sirius.analysis.clang_constants import integer_constant
from sirius.analysis.program_ends import Ending, ProgramEnds, endings, may_trap, quiet_noreturn
from sirius.analysis.cursors import cursor_children, cursor_preorder

_K = ci.CursorKind

# functions of the C library after whose call no statement of the program runs
LEAVING_FUNCTIONS = frozenset({"exit", "_Exit", "_exit", "quick_exit", "abort"})


class Flow(Enum):
    """Where control goes after one statement of a host block."""

    NEXT = "next"
    NEXT_OR_EXIT = "next-or-exit"
    OBSERVED_EXIT = "next-or-observed-exit"
    OTHER = "other"


_ORDER = (Flow.NEXT, Flow.NEXT_OR_EXIT, Flow.OBSERVED_EXIT, Flow.OTHER)  # each weaker than the one before


def weakest_flow(flows) -> Flow:
    """The weakest of ``flows`` (Flow.NEXT for none): how control leaves a run of statements."""
    return max(flows, key=_ORDER.index, default=Flow.NEXT)


def statement_flow(stmt: ci.Cursor, returns_leave_program: bool, ends: ProgramEnds) -> Flow:
    """How control leaves ``stmt``, a statement of a compound statement;
    ``returns_leave_program``: the statement is in ``main``'s body, where ``return``
    ends the program; ``ends``: which ways of leaving run the program's own code."""
    kind = stmt.kind
    if kind == _K.IF_STMT:
        return _error_check(stmt, returns_leave_program, ends)
    if kind == _K.DO_STMT:  # do body while (0): the body, once
        parts = list(cursor_children(stmt))
        once = len(parts) == 2 and integer_constant(parts[1]) == 0
        return statement_flow(parts[0], returns_leave_program, ends) if once else Flow.OTHER
    if kind == _K.COMPOUND_STMT:
        return weakest_flow(statement_flow(s, returns_leave_program, ends) for s in cursor_children(stmt))
    return _plain(stmt, ends)


def _error_check(stmt: ci.Cursor, returns_leave_program: bool, ends: ProgramEnds) -> Flow:
    """``stmt`` (an ``if``) as an error check ``if (condition) { ...; exit(1); }``: no
    ``else``, no init-statement or condition variable, a plain condition, and a branch of
    statements that pass control on and whose last leaves the program; Flow.OTHER when it
    is not one."""
    # libclang lists a condition variable and an init-statement, if any, then the condition,
    # the branch and the else branch, if any: two parts are a condition and a branch
    parts = list(cursor_children(stmt))
    if len(parts) != 2 or not parts[0].kind.is_expression():
        return Flow.OTHER
    branch = parts[1]
    body = list(cursor_children(branch)) if branch.kind == _K.COMPOUND_STMT else [branch]
    if not body:
        return Flow.OTHER
    leaving = _leaves_program(body[-1], returns_leave_program, ends)
    if leaving is Flow.OTHER:
        return Flow.OTHER
    return weakest_flow([_plain(parts[0], ends), leaving,
                         *(statement_flow(s, returns_leave_program, ends) for s in body[:-1])])


def _leaves_program(stmt: ci.Cursor, returns_leave_program: bool, ends: ProgramEnds) -> Flow:
    """Whether ``stmt`` is a call of a function that leaves the program, or ``return`` in
    ``main``, with nothing that jumps inside its operands: Flow.NEXT_OR_EXIT, or
    Flow.OBSERVED_EXIT when the way it leaves runs code of the program's own; Flow.OTHER
    when it is not."""
    if stmt.kind == _K.RETURN_STMT:
        if not returns_leave_program:
            return Flow.OTHER
        operands = weakest_flow(_plain(operand, ends) for operand in cursor_children(stmt))
        if operands is Flow.OTHER:
            return Flow.OTHER
        return Flow.OBSERVED_EXIT if ends.observed(Ending.RETURN) else weakest_flow([operands, Flow.NEXT_OR_EXIT])
    if not (_leaving_call(stmt) or stmt.kind == _K.CALL_EXPR and quiet_noreturn(stmt.referenced)) \
            or _holds_control(stmt):
        return Flow.OTHER
    # the leaving function's own ending (none for _Exit), and those of its argument
    return Flow.OBSERVED_EXIT if ends.observed_among(endings(stmt, ends)) else Flow.NEXT_OR_EXIT


def _leaving_call(node: ci.Cursor) -> bool:
    """A call of ``exit``, ``_Exit``, ``_exit``, ``quick_exit`` or ``abort`` as the C library declares them."""
    if node.kind != _K.CALL_EXPR:
        return False
    callee = node.referenced
    return callee is not None and callee.kind == _K.FUNCTION_DECL and callee.spelling in LEAVING_FUNCTIONS \
        and callee.location.is_in_system_header


def _plain(node: ci.Cursor, ends: ProgramEnds) -> Flow:
    """Flow.NEXT for a declaration, an expression or an empty statement after which control
    goes on; Flow.OBSERVED_EXIT when, on the way, a call may leave the program in a way its
    own code observes; Flow.OTHER for anything else."""
    if node.kind not in (_K.DECL_STMT, _K.NULL_STMT) and not node.kind.is_expression():
        return Flow.OTHER
    if _leaving_call(node) or node.kind == _K.CXX_THROW_EXPR or _holds_control(node):
        return Flow.OTHER
    if ends.observers and (ends.observed_among(endings(node, ends))
                           or ends.observed(Ending.TRAP) and may_trap(node)):
        return Flow.OBSERVED_EXIT
    return Flow.NEXT


def _holds_control(node: ci.Cursor) -> bool:
    """Something under ``node`` may send control elsewhere: a statement (a lambda's body,
    a statement expression, a local class's methods), a ``throw``, a call that leaves the
    program."""
    return any(d.kind.is_statement() or d.kind == _K.CXX_THROW_EXPR or _leaving_call(d)
               for child in cursor_children(node) for d in cursor_preorder(child))
