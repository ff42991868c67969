"""Integer constants as clang folds them (``clang_Cursor_Evaluate``, which the Python
bindings leave undeclared)."""

from __future__ import annotations

import ctypes
import functools

import clang.cindex as ci


def integer_constant(expression: ci.Cursor) -> int | None:
    """The integer value clang folds ``expression`` to (None when it is not an integer constant)."""
    lib = _libclang_evaluation()
    result = lib.clang_Cursor_Evaluate(expression)
    if not result:
        return None
    try:
        return lib.clang_EvalResult_getAsLongLong(result) if lib.clang_EvalResult_getKind(result) == _EVAL_INT \
            else None
    finally:
        lib.clang_EvalResult_dispose(result)


_EVAL_INT = 1  # CXEval_Int


@functools.cache
def _libclang_evaluation():
    """libclang with ``clang_Cursor_Evaluate`` and its result declared (the Python bindings
    leave them undeclared)."""
    lib = ci.conf.lib
    for name, argtypes, restype in (("clang_Cursor_Evaluate", [ci.Cursor], ctypes.c_void_p),
                                    ("clang_EvalResult_getKind", [ctypes.c_void_p], ctypes.c_int),
                                    ("clang_EvalResult_getAsLongLong", [ctypes.c_void_p], ctypes.c_longlong),
                                    ("clang_EvalResult_dispose", [ctypes.c_void_p], None)):
        function = getattr(lib, name)
        function.argtypes, function.restype = argtypes, restype
    return lib
