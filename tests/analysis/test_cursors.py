"""The cursor tree asked of libclang once: the same children and the same preorder as the
bindings' own walks, each computed once per translation unit."""

from __future__ import annotations

import clang.cindex as ci

from sirius.analysis.cursors import cursor_children, cursor_preorder

SOURCE = """
struct Pair { int a; float b; };
static int twice(int x) { return 2 * x; }
int main(int argc, char **argv) {
    int total = 0;
    for (int i = 0; i < argc; ++i) {
        if (argv[i][0] == '-') continue;
        total += twice(i);
    }
    Pair p = {total, 1.5f};
    return p.a;
}
"""


def _translation_unit():
    return ci.Index.create().parse("t.cpp", args=["-std=c++17"], unsaved_files=[("t.cpp", SOURCE)])


def _spelled(cursors) -> list[tuple[str, str, int]]:
    return [(c.kind.name, c.spelling, c.extent.start.offset) for c in cursors]


def test_children_and_preorder_are_the_bindings_own():
    tu = _translation_unit()
    main = next(c for c in tu.cursor.get_children() if c.spelling == "main")
    assert _spelled(cursor_children(main)) == _spelled(main.get_children())
    assert _spelled(cursor_preorder(main)) == _spelled(main.walk_preorder())
    assert len(cursor_preorder(main)) > 20  # a real walk: parameters, the loop, the calls


def test_each_cursor_is_asked_of_libclang_once_per_translation_unit():
    tu = _translation_unit()
    first = next(c for c in cursor_children(tu.cursor) if c.spelling == "main")
    again = next(c for c in cursor_children(tu.cursor) if c.spelling == "main")
    assert first is again  # answered from the table the translation unit holds
    assert cursor_preorder(first) is cursor_preorder(again)
    other = _translation_unit()  # another unit of the same text keeps its own table
    elsewhere = next(c for c in cursor_children(other.cursor) if c.spelling == "main")
    assert elsewhere is not first and _spelled(cursor_preorder(elsewhere)) == _spelled(cursor_preorder(first))
