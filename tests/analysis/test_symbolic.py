"""The index language: arithmetic, quasi-affine atoms, substitution, isl text."""

import islpy as isl

from sirius.analysis.symbolic import Expr, ge, lt

bx, tx, n, ntx = (Expr.sym(s) for s in ("bx", "tx", "n", "ntx"))


def test_linear_arithmetic_collects_terms():
    e = 256 * bx + tx + 3 - tx
    assert str(e) == "256bx + 3"
    assert e.is_affine()
    assert e.coefficient("bx") == 256


def test_products_of_symbols_are_not_affine_until_substituted():
    e = ntx * bx + tx
    assert not e.is_affine()
    assert e.subs({"ntx": 128}).is_affine()
    assert str(e.subs({"ntx": 128})) == "128bx + tx"


def test_floor_division_simplifies_when_exact():
    assert str((4 * tx + 8).floordiv(4)) == "tx + 2"
    assert str(Expr.const(17).floordiv(4)) == "4"
    e = (tx + 1).floordiv(4)
    assert e.is_affine() and "floor" in str(e)


def test_modulo_is_quasi_affine_and_parses_in_isl():
    e = (256 * bx + tx).mod(768)
    s = isl.Set(f"{{ [bx, tx] : {lt(e, Expr.const(10))} and 0 <= tx < 256 and 0 <= bx < 4 }}")
    # elements whose index mod 768 is below 10: the first ten of block 0 and of block 3
    assert s.count_val().to_python() == 20


def test_constraints_print_as_isl_comparisons():
    c = lt(256 * bx + tx, n)
    assert str(c) == "256bx + tx < n"
    assert str(ge(tx, Expr.const(0))) == "0 <= tx"
    isl.Set(f"[n] -> {{ [bx, tx] : {c} }}")  # parses


def test_symbolic_divisor_resolves_after_substitution():
    from sirius.analysis.symbolic import SymDiv
    e = Expr.atom(SymDiv(256 * bx + tx, Expr.sym("cols"), is_mod=True))
    assert not e.is_affine()
    resolved = e.subs({"cols": 768})
    assert resolved.is_affine()
    assert str(resolved) == "((256bx + tx) mod 768)"
