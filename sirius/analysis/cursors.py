"""A libclang cursor's children and its preorder walk, each asked of libclang once per
translation unit.

The index of one program walks the same kernel bodies and top-level declarations many times
(its shared declarations, its callees, the indices its callees read, ...); libclang's Python
bindings rebuild every child through a ctypes callback on each walk, which was most of the
index's time beside clang's own parse. Here a cursor's children (and its preorder) are kept
on the translation unit they belong to, keyed by the cursor's bytes (its kind and libclang's
pointers, which ``clang_equalCursors`` compares), and dropped with it.
"""

from __future__ import annotations

_CHILDREN = "_sirius_children"
_PREORDER = "_sirius_preorder"


def _table(cursor, name: str) -> dict | None:
    tu = getattr(cursor, "_tu", None)
    if tu is None:
        return None
    table = tu.__dict__.get(name)
    if table is None:
        table = tu.__dict__[name] = {}
    return table


def cursor_children(cursor) -> tuple:
    """The children of ``cursor``, as ``cursor.get_children()`` gives them."""
    table = _table(cursor, _CHILDREN)
    if table is None:
        return tuple(cursor.get_children())
    key = bytes(cursor)
    found = table.get(key)
    if found is None:
        found = table[key] = tuple(cursor.get_children())
    return found


def cursor_preorder(cursor) -> tuple:
    """``cursor`` and its descendants depth first, as ``cursor.walk_preorder()`` gives them."""
    table = _table(cursor, _PREORDER)
    key = bytes(cursor) if table is not None else None
    if table is not None and key in table:
        return table[key]
    out, work = [], [cursor]
    while work:
        node = work.pop()
        out.append(node)
        work.extend(reversed(cursor_children(node)))
    found = tuple(out)
    if table is not None:
        table[key] = found
    return found
