"""Integer expressions over symbols: the index language of the models.

An :class:`Expr` is a polynomial with integer coefficients whose atoms are
named symbols (``tx``, ``bx``, ``ntx``, loop iterators, scalar parameters)
or quasi-affine atoms ``floor(e / k)`` and ``e mod k`` with constant ``k``.
Products of symbols are kept (``ntx*bx`` before the launch fixes ``ntx``);
:meth:`Expr.is_affine` tells whether the result can be handed to isl.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Union


@dataclass(frozen=True, order=True)
class Sym:
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class FloorDiv:
    num: "Expr"
    den: int

    def __str__(self) -> str:
        return f"floor(({self.num})/{self.den})"


@dataclass(frozen=True)
class Mod:
    num: "Expr"
    den: int

    def __str__(self) -> str:
        return f"(({self.num}) mod {self.den})"


@dataclass(frozen=True)
class SymDiv:
    """``floor(num / den)`` or ``num mod den`` with a symbolic divisor.

    Not affine by itself; becomes a quasi-affine atom once substitution
    (e.g. a launch's constant scalar argument) makes ``den`` a constant.
    """

    num: "Expr"
    den: "Expr"
    is_mod: bool = False

    def __str__(self) -> str:
        return f"(({self.num}) mod ({self.den}))" if self.is_mod else f"floor(({self.num})/({self.den}))"


Atom = Union[Sym, FloorDiv, Mod, SymDiv]
Monomial = tuple  # sorted tuple of atoms; () is the constant term


def _mono_key(mono: Monomial) -> tuple:
    return tuple(str(a) for a in mono)


@dataclass(frozen=True)
class Expr:
    terms: tuple[tuple[Monomial, int], ...]  # sorted, no zero coefficients

    # ----------------------------------------------------------- construction
    @staticmethod
    def _make(d: dict) -> "Expr":
        items = [(m, c) for m, c in d.items() if c != 0]
        items.sort(key=lambda mc: (len(mc[0]) == 0, len(mc[0]), _mono_key(mc[0])))
        return Expr(tuple(items))

    @staticmethod
    def const(value: int) -> "Expr":
        return Expr._make({(): int(value)})

    @staticmethod
    def sym(name: str) -> "Expr":
        return Expr._make({(Sym(name),): 1})

    @staticmethod
    def atom(atom: Atom) -> "Expr":
        return Expr._make({(atom,): 1})

    # ------------------------------------------------------------- arithmetic
    def __add__(self, other: "Expr | int") -> "Expr":
        other = _lift(other)
        d = dict(self.terms)
        for m, c in other.terms:
            d[m] = d.get(m, 0) + c
        return Expr._make(d)

    __radd__ = __add__

    def __neg__(self) -> "Expr":
        return Expr._make({m: -c for m, c in self.terms})

    def __sub__(self, other: "Expr | int") -> "Expr":
        return self + (-_lift(other))

    def __rsub__(self, other: "Expr | int") -> "Expr":
        return _lift(other) - self

    def __mul__(self, other: "Expr | int") -> "Expr":
        other = _lift(other)
        d: dict = {}
        for m1, c1 in self.terms:
            for m2, c2 in other.terms:
                m = tuple(sorted(m1 + m2, key=str))
                d[m] = d.get(m, 0) + c1 * c2
        return Expr._make(d)

    __rmul__ = __mul__

    def floordiv(self, k: int) -> "Expr":
        """floor(self / k) for a positive constant k, simplified where exact."""
        if k == 1:
            return self
        if all(c % k == 0 for _, c in self.terms):
            return Expr._make({m: c // k for m, c in self.terms})
        value = self.constant_value()
        if value is not None:
            return Expr.const(value // k)
        return Expr.atom(FloorDiv(self, k))

    def mod(self, k: int) -> "Expr":
        if k == 1:
            return Expr.const(0)
        value = self.constant_value()
        if value is not None:
            return Expr.const(value % k)
        if all(c % k == 0 for _, c in self.terms):
            return Expr.const(0)
        return Expr.atom(Mod(self, k))

    # ---------------------------------------------------------------- queries
    def constant_value(self) -> int | None:
        if not self.terms:
            return 0
        if len(self.terms) == 1 and self.terms[0][0] == ():
            return self.terms[0][1]
        return None

    def is_affine(self) -> bool:
        return all(len(m) <= 1 and all(_atom_affine(a) for a in m) for m, _ in self.terms)

    def symbols(self) -> set[str]:
        out: set[str] = set()
        for m, _ in self.terms:
            for a in m:
                if isinstance(a, Sym):
                    out.add(a.name)
                elif isinstance(a, SymDiv):
                    out |= a.num.symbols() | a.den.symbols()
                else:
                    out |= a.num.symbols()
        return out

    def coefficient(self, name: str) -> int:
        return dict(self.terms).get((Sym(name),), 0)

    def subs(self, mapping: Mapping[str, "Expr | int"]) -> "Expr":
        """Replace symbols by expressions (e.g. ``ntx`` by the launch's 256)."""
        result = Expr.const(0)
        for m, c in self.terms:
            term = Expr.const(c)
            for a in m:
                term = term * _subs_atom(a, mapping)
            result = result + term
        return result

    # --------------------------------------------------------------- printing
    def to_c(self) -> str | None:
        """C text of a linear expression over plain symbols (None for other atoms)."""
        parts = []
        for m, c in self.terms:
            if any(not isinstance(a, Sym) for a in m):
                return None
            body = " * ".join(a.name for a in m)
            parts.append(f"({c})" if not body else (body if c == 1 else f"({c}) * {body}"))
        return " + ".join(parts) if parts else "0"

    def to_c_floored(self) -> str | None:
        """C text of a quasi-affine expression (floors and remainders by constants too),
        in ``long long`` arithmetic; floors through the emitted program's ``sirius_floord``
        (C's ``/`` rounds toward zero), a remainder as ``n - d * floor(n / d)``. None for
        a symbolic divisor."""
        parts = []
        for m, c in self.terms:
            factors = []
            for a in m:
                if isinstance(a, Sym):
                    factors.append(f"(long long)({a.name})")
                    continue
                num = a.num.to_c_floored() if isinstance(a, (FloorDiv, Mod)) else None
                if num is None:
                    return None
                floor = f"sirius_floord({num}, {a.den}LL)"
                factors.append(floor if isinstance(a, FloorDiv) else f"(({num}) - {a.den}LL * {floor})")
            parts.append(" * ".join([f"({c}LL)", *factors]) if c != 1 or not factors else " * ".join(factors))
        return f"({' + '.join(parts)})" if parts else "0LL"

    def __str__(self) -> str:
        if not self.terms:
            return "0"
        parts = []
        for m, c in self.terms:
            body = "*".join(str(a) for a in m)
            if not body:
                text = str(abs(c))
            elif abs(c) == 1:
                text = body
            elif len(m) == 1 and isinstance(m[0], Sym):
                text = f"{abs(c)}{body}"  # isl's and the reader's "256bx"
            else:
                text = f"{abs(c)}*{body}"
            sign = "-" if c < 0 else "+"
            parts.append((sign, text))
        first_sign, first = parts[0]
        out = ("-" if first_sign == "-" else "") + first
        for sign, text in parts[1:]:
            out += f" {sign} {text}"
        return out


def _lift(x: "Expr | int") -> Expr:
    return x if isinstance(x, Expr) else Expr.const(x)


def _atom_affine(a: Atom) -> bool:
    if isinstance(a, SymDiv):
        return False
    return isinstance(a, Sym) or a.num.is_affine()


def _subs_atom(a: Atom, mapping: Mapping[str, "Expr | int"]) -> Expr:
    if isinstance(a, Sym):
        return _lift(mapping[a.name]) if a.name in mapping else Expr.atom(a)
    inner = a.num.subs(mapping)
    if isinstance(a, SymDiv):
        den = a.den.subs(mapping)
        k = den.constant_value()
        if k is not None and k > 0:
            return inner.mod(k) if a.is_mod else inner.floordiv(k)
        return Expr.atom(SymDiv(inner, den, a.is_mod))
    return inner.floordiv(a.den) if isinstance(a, FloorDiv) else inner.mod(a.den)


@dataclass(frozen=True)
class Constraint:
    """``lhs OP 0`` with OP one of ``>=``, ``=``, or ``!=`` kept only for printing."""

    expr: Expr
    op: str  # ">=", "=", "!="

    def subs(self, mapping: Mapping[str, "Expr | int"]) -> "Constraint":
        return Constraint(self.expr.subs(mapping), self.op)

    def is_affine(self) -> bool:
        return self.expr.is_affine() and self.op in (">=", "=")

    def __str__(self) -> str:
        return _pretty_constraint(self.expr, self.op)


def _pretty_constraint(expr: Expr, op: str) -> str:
    """Print ``e >= 0`` as ``A < B`` / ``A <= B`` with positive terms on each side."""
    const = dict(expr.terms).get((), 0)
    pos = Expr._make({m: c for m, c in expr.terms if c > 0 and m != ()})
    neg = Expr._make({m: -c for m, c in expr.terms if c < 0 and m != ()})
    if op == ">=":
        if const < 0:
            return f"{neg + (-const - 1)} < {pos}"
        return f"{neg} <= {pos + const}"
    return f"{neg} {'=' if op == '=' else '!='} {pos + const}"


def ge(a: Expr, b: Expr) -> Constraint:
    return Constraint(a - b, ">=")


def lt(a: Expr, b: Expr) -> Constraint:
    return Constraint(b - a - 1, ">=")


def eq(a: Expr, b: Expr) -> Constraint:
    return Constraint(a - b, "=")
