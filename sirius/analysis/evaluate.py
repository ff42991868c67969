"""Symbolic evaluation of SSA values into index expressions and conditions.

Integers become :class:`Expr` polynomials, pointers become a base plus a byte
offset, branch conditions become :class:`Formula` trees of affine constraints.
Anything the evaluator cannot express is ``None``: callers must then
over-approximate (an unknown index touches the whole buffer, an unknown
guard constrains nothing). Loop header phis that step by a constant become
``init + step * k`` over the loop's iterator symbol ``k``.

Device and host code share this evaluator; each supplies the meaning of
leaves (special registers and parameters on the device, allocation slots and
runtime calls on the host) by overriding :meth:`Evaluator.leaf`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sirius.analysis.cfg import Loop, dominates, dominators, natural_loops, structured_order
from sirius.analysis.ir import Arg, Block, Const, Function, Instr, TypeLayout, Value, branch_targets, gep_source_type, split_top_level
from sirius.analysis.symbolic import Constraint, Expr, FloorDiv, Sym, SymDiv, eq, ge, lt


@dataclass(frozen=True)
class Pointer:
    """A pointer: ``base`` (a hashable provenance key) plus a byte offset."""

    base: object
    offset: Expr | None  # None: somewhere in the object pointed to by ``base``


# ------------------------------------------------------------------ formulas

@dataclass(frozen=True)
class Formula:
    """Boolean combination of constraints: op is "atom", "and", "or"."""

    op: str
    atom: Constraint | None = None
    parts: tuple["Formula", ...] = ()

    @staticmethod
    def of(c: Constraint) -> "Formula":
        return Formula("atom", atom=c)

    def negate(self) -> "Formula | None":
        if self.op == "atom":
            c = self.atom
            assert c is not None
            if c.op == ">=":
                return Formula.of(Constraint(-c.expr - 1, ">="))
            if c.op == "=":
                return Formula.of(Constraint(c.expr, "!="))
            return Formula.of(Constraint(c.expr, "="))
        negs = [p.negate() for p in self.parts]
        if any(n is None for n in negs):
            return None
        return Formula("or" if self.op == "and" else "and", parts=tuple(negs))  # type: ignore[arg-type]

    def subs(self, mapping) -> "Formula":
        if self.op == "atom":
            return Formula.of(self.atom.subs(mapping))  # type: ignore[union-attr]
        parts = tuple(p.subs(mapping) for p in self.parts)
        if self.op == "and":
            return conjunction(list(parts)) or Formula.of(Constraint(Expr.const(0), ">="))
        return Formula(self.op, parts=parts)

    def is_affine(self) -> bool:
        if self.op == "atom":
            return self.atom.is_affine()  # type: ignore[union-attr]
        return all(p.is_affine() for p in self.parts)

    def symbols(self) -> set[str]:
        if self.op == "atom":
            return self.atom.expr.symbols()  # type: ignore[union-attr]
        out: set[str] = set()
        for p in self.parts:
            out |= p.symbols()
        return out

    def to_isl(self) -> str:
        if self.op == "atom":
            c = self.atom
            assert c is not None
            if c.op == "!=":
                return f"({c.expr} < 0 or {c.expr} > 0)"
            return str(c)
        joiner = " and " if self.op == "and" else " or "
        return "(" + joiner.join(p.to_isl() for p in self.parts) + ")"

    def __str__(self) -> str:
        text = self.to_isl()
        return text[1:-1] if text.startswith("(") and self.op != "atom" else text


def _trivially_true(f: Formula) -> bool:
    if f.op != "atom" or f.atom is None:
        return False
    value = f.atom.expr.constant_value()
    if value is None:
        return False
    return {">=": value >= 0, "=": value == 0, "!=": value != 0}[f.atom.op]


def conjunction(formulas: list[Formula]) -> Formula | None:
    """``and`` of the formulas, flattened, with constant-true atoms dropped."""
    flat: list[Formula] = []
    for f in formulas:
        flat.extend(p for p in (f.parts if f.op == "and" else [f]) if not _trivially_true(p))
    if not flat:
        return None
    return flat[0] if len(flat) == 1 else Formula("and", parts=tuple(flat))


# ------------------------------------------------------------------- loops

@dataclass(frozen=True)
class LoopInfo:
    """A loop with its iterator symbol and iteration domain (over ``iterator``)."""

    name: str
    iterator: str
    domain: Formula | None  # constraints on the iterator (and outer symbols); None: unbounded
    line: int | None
    header_label: str
    # the domain is the iterations that run, whatever the data (every exit's
    # condition known; not a superset), so a write in every iteration covers its bytes
    exact: bool = False
    # every exit's condition, where each is known or compares the iterator with values computed
    # before the loop that the analysis cannot express (argv, data): two loops of one function
    # with equal ``exits`` and the same step run the same iterations, whatever those values
    # are (SSA values do not change). None where an exit is neither.
    exits: tuple[tuple, ...] | None = None


_SIGNED = {"slt": "lt", "sle": "le", "sgt": "gt", "sge": "ge", "eq": "eq", "ne": "ne",
           "ult": "lt", "ule": "le", "ugt": "gt", "uge": "ge"}


class Evaluator:
    """Evaluates SSA values of one function symbolically (memoized)."""

    def __init__(self, func: Function, layout: TypeLayout, loop_prefix: str = "k"):
        self.func = func
        self.layout = layout
        self.idom = dominators(func)
        self.loops: list[Loop] = natural_loops(func, self.idom)
        # number loops in program order, so names follow the source
        position = {b: i for i, b in enumerate(structured_order(func, self.loops))}
        self.loops.sort(key=lambda lp: position.get(lp.header, len(position)))
        for i, lp in enumerate(self.loops):
            lp.name = f"{loop_prefix}{i}"
        self.loop_of_header = {lp.header: lp for lp in self.loops}
        self.cache: dict[int, object] = {}
        self._in_progress: set[int] = set()
        self.loop_infos: dict[str, LoopInfo] = {}
        self.counted_loops: set[str] = set()  # loops with a recognized induction variable
        self._loops_in_progress = 0
        self._dominating: dict[Block, dict[Block, Formula | None]] = {}

    # ------------------------------------------------------------- leaves
    def leaf(self, value: Value):
        """Meaning of arguments, calls, loads and globals: overridden per side."""
        return None

    # ------------------------------------------------------------- values
    def value(self, v: Value):
        if isinstance(v, Block):
            return None
        if isinstance(v, Const):
            if "@" in v.text:
                return self._constant_pointer(v.text)
            if isinstance(v.value, int) and not isinstance(v.value, bool) and v.type != "ptr":
                return Expr.const(v.value)
            if v.type.startswith("i1") and isinstance(v.value, bool):
                return Expr.const(int(v.value))
            return None
        key = id(v)
        if key in self.cache:
            return self.cache[key]
        if key in self._in_progress:
            return None
        self._in_progress.add(key)
        try:
            result = self._compute(v)
        finally:
            self._in_progress.discard(key)
        self.cache[key] = result
        return result

    def per_edge(self, v: Value) -> list | None:
        """``v`` evaluated once per incoming edge of the one merge block whose phis it
        depends on: code a compiler sank out of several branches into a common block
        (the tail of identical fragments, say) selects its operands with phis that all
        choose by the edge taken. None when ``v`` depends on no such block, or on more
        than one."""
        slice_ids, saved, phis, work = set(), {}, [], [v]
        while work:
            x = work.pop()
            if not isinstance(x, Instr) or id(x) in slice_ids:
                continue
            if self.cache.get(id(x)) is not None:
                continue  # known without the phis
            slice_ids.add(id(x))
            if x.opcode == "phi":
                if x.block not in self.loop_of_header:
                    phis.append(x)
                continue
            work.extend(x.operands)
        blocks = {id(p.block) for p in phis}
        if len(blocks) != 1:
            return None
        edges = list(dict.fromkeys(phis[0].incoming))
        chosen = {id(p): {b: p.operands[k] for k, b in enumerate(p.incoming)} for p in phis}
        if any(set(c) != set(edges) for c in chosen.values()):
            return None
        saved = {k: self.cache[k] for k in slice_ids if k in self.cache}
        results = []
        try:
            for edge in edges:
                incoming = [(p, self.value(chosen[id(p)][edge])) for p in phis]
                for k in slice_ids:
                    self.cache.pop(k, None)
                for p, val in incoming:
                    self.cache[id(p)] = val
                results.append(self.value(v))
        finally:
            for k in slice_ids:
                self.cache.pop(k, None)
            self.cache.update(saved)
        return results

    def expr(self, v: Value) -> Expr | None:
        r = self.value(v)
        return r if isinstance(r, Expr) else None

    def _compute(self, v: Value):
        if not isinstance(v, Instr):
            return self.leaf(v)
        op = v.opcode
        ops = v.operands
        if op in ("sext", "zext", "trunc", "freeze", "bitcast", "addrspacecast"):
            return self.value(ops[0])
        if op == "xor" and isinstance(ops[1], Const) and ops[1].value == -1:
            a = self.expr(ops[0])
            return None if a is None else -a - 1  # ~x
        if op in ("add", "sub", "mul", "shl", "or", "sdiv", "udiv", "lshr", "ashr", "srem", "urem", "and"):
            return self._binary(v)
        if op == "getelementptr":
            return self._gep(v)
        if op == "phi":
            return self._phi(v)
        if op in ("call", "load", "alloca", "extractvalue", "ptrtoint", "inttoptr"):
            return self.leaf(v)
        return None

    def _binary(self, v: Instr):
        a, b = (self.expr(o) for o in v.operands[:2])
        if a is None or b is None:
            return None
        op = v.opcode
        kb = b.constant_value()
        if op == "add":
            return a + b
        if op == "sub":
            return a - b
        if op == "mul":
            return a * b
        if op == "shl" and kb is not None and 0 <= kb < 63:
            return a * (1 << kb)
        if op == "or" and " or disjoint " in f" {v.text} ":
            return a + b
        if op in ("sdiv", "srem") and kb is not None and kb > 0 and not _nonnegative(a):
            return None  # C's division truncates: floor only where the dividend is never negative
        if op in ("sdiv", "udiv") and kb is not None and kb > 0:
            return a.floordiv(kb)
        if op in ("sdiv", "udiv", "srem", "urem") and kb is None:
            return Expr.atom(SymDiv(a, b, is_mod=op in ("srem", "urem")))
        if op in ("lshr", "ashr") and kb is not None and 0 <= kb < 63:
            return a.floordiv(1 << kb)
        if op in ("srem", "urem") and kb is not None and kb > 0:
            return a.mod(kb)
        if op == "and" and kb is not None and kb > 0 and (kb & (kb + 1)) == 0:
            return a.mod(kb + 1)
        return None

    def _gep(self, v: Instr):
        base = self.value(v.operands[0])
        source = gep_source_type(v)
        if not isinstance(base, Pointer) or source is None:
            return None
        return self._step(base, source, [self.expr(o) for o in v.operands[1:]])

    def _step(self, base: Pointer, source: str, indices: list[Expr | None]) -> Pointer:
        """Offset of a GEP: the first index strides ``source``, later ones step inside it."""
        offset = base.offset
        if offset is None:
            return base
        cur = source
        for i, idx in enumerate(indices):
            if i > 0:
                m = re.fullmatch(r"[\[<](\d+) x (.+)[\]>]", cur.strip())
                if not m:
                    field = None if idx is None else idx.constant_value()
                    fields = self.layout.struct_fields(cur)
                    fo = None if field is None or fields is None else self.layout.field_offset(cur, field)
                    if fo is None:
                        return Pointer(base.base, None)
                    offset = offset + fo
                    cur = fields[field]  # type: ignore[index]
                    continue
                cur = m.group(2)
            stride = self.layout.size(cur)
            if stride is None or idx is None:
                return Pointer(base.base, None)
            offset = offset + idx * stride
        return Pointer(base.base, offset)

    def _constant_pointer(self, text: str):
        """Constant pointer expressions: ``@g``, casts of it, and constant GEPs into it."""
        body = text.split(" ", 1)[1] if text.startswith("ptr") else text
        body = body.strip()
        m = re.fullmatch(r"(?:addrspace\(\d+\) )?@([\w.$]+|\"[^\"]+\")", body)
        if m:
            return Pointer(("global", m.group(1).strip('"')), Expr.const(0))
        m = re.fullmatch(r"addrspacecast \((?:ptr addrspace\(\d+\)|ptr) (.+) to ptr(?: addrspace\(\d+\))?\)", body)
        if m:
            return self._constant_pointer(m.group(1))
        m = re.fullmatch(r"getelementptr (?:(?:inbounds|nuw|nusw)\s+)*\((.*)\)", body)
        if m:
            parts = split_top_level(m.group(1))
            if len(parts) < 2:
                return None
            inner = self._constant_pointer(parts[1].split(" ", 1)[1] if parts[1].startswith("ptr") else parts[1])
            if not isinstance(inner, Pointer):
                return None
            idx = []
            for p in parts[2:]:
                num = re.fullmatch(r"i\d+ (-?\d+)", p.strip())
                idx.append(Expr.const(int(num.group(1))) if num else None)
            return self._step(inner, parts[0], idx)
        return None

    def _phi(self, v: Instr):
        lp = self.loop_of_header.get(v.block)  # type: ignore[arg-type]
        if lp is not None and len(v.operands) == 2:
            inside = [i for i, b in enumerate(v.incoming) if b in lp.blocks]
            outside = [i for i, b in enumerate(v.incoming) if b not in lp.blocks]
            if len(inside) == 1 and len(outside) == 1:
                iv = self._induction(v, lp, v.operands[outside[0]], v.operands[inside[0]])
                if iv is not None:
                    return iv
            return self._phi_web(v)
        values = [self.value(o) for o in v.operands]
        if values and all(x is not None and x == values[0] for x in values):
            return values[0]
        bases = {x.base for x in values if isinstance(x, Pointer)}
        if len(bases) == 1 and all(isinstance(x, Pointer) for x in values):
            return Pointer(bases.pop(), None)  # same object, offsets differ
        return self.merge(v, values)

    def _phi_web(self, v: Instr):
        """Join of every non-phi value that flows into ``v`` through a web of phis
        (pointers rotated between variables in a loop, say)."""
        seen: set[int] = set()
        leaves: list = []
        work: list[Value] = [v]
        while work:
            x = work.pop()
            if id(x) in seen:
                continue
            seen.add(id(x))
            if isinstance(x, Instr) and x.opcode == "phi":
                work.extend(x.operands)
                continue
            value = self.value(x)
            if value is None:
                return None
            if value not in leaves:
                leaves.append(value)
        if len(leaves) == 1:
            return leaves[0]
        return self.merge(v, leaves)

    def merge(self, v: Instr, values: list):
        """Join of differing incoming values (host code keeps may-point-to sets)."""
        return None

    def _induction(self, phi: Instr, lp: Loop, init_v: Value, next_v: Value):
        init = self.value(init_v)
        if init is None:
            return None
        marker_name = f"__phi{id(phi)}"
        marker = Expr.sym(marker_name)
        probe = Pointer(init.base, marker) if isinstance(init, Pointer) else marker
        self.cache[id(phi)] = probe
        # next values must be re-evaluated with the phi bound to the marker
        saved, saved_progress = dict(self.cache), self._in_progress
        self._in_progress = {id(phi)}
        nxt = self.value(next_v)
        self.cache, self._in_progress = saved, saved_progress
        del self.cache[id(phi)]
        k = Expr.sym(lp.name)
        if isinstance(init, Pointer) and isinstance(nxt, Pointer) and nxt.base == init.base:
            step = None if nxt.offset is None or init.offset is None else (nxt.offset - marker).constant_value()
            if step is not None:
                self._note_loop(lp)
                return Pointer(init.base, init.offset + k * step)
            return Pointer(init.base, None)
        if isinstance(init, Expr) and isinstance(nxt, Expr):
            step = nxt - marker
            if marker_name not in step.symbols():
                # a loop-invariant step, constant or symbolic (``j += blockDim.x``)
                self._note_loop(lp)
                return init + k * step
        return None

    # --------------------------------------------------------- conditions
    def condition(self, v: Value) -> Formula | None:
        if isinstance(v, Const):
            return None
        if not isinstance(v, Instr):
            return None
        if v.opcode == "icmp":
            a, b = (self.expr(o) for o in v.operands[:2])
            pred = v.predicate
            if a is None or b is None or pred not in _SIGNED:
                return None
            kind = _SIGNED[pred]
            if pred.startswith("u") and kind in ("gt", "ge"):
                return None  # unsigned >= also holds for "negative" values: no affine form
            c = {"lt": lt(a, b), "le": ge(b, a), "gt": lt(b, a), "ge": ge(a, b), "eq": eq(a, b),
                 "ne": Constraint(a - b, "!=")}[kind]
            return Formula.of(c)
        if v.opcode in ("and", "or") and v.type == "i1":
            parts = [self.condition(o) for o in v.operands[:2]]
            if v.opcode == "and":
                known = [p for p in parts if p is not None]
                return conjunction(known)
            if any(p is None for p in parts):
                return None
            return Formula("or", parts=tuple(parts))  # type: ignore[arg-type]
        if v.opcode == "xor" and v.type == "i1":
            a, b = v.operands[:2]
            if isinstance(b, Const) and b.value in (1, True, -1):
                inner = self.condition(a)
                return None if inner is None else inner.negate()
        if v.opcode == "select" and v.type == "i1":
            # select c, x, false  ==  c and x ;  select c, true, x  ==  c or x
            c, x, y = v.operands[:3]
            if isinstance(y, Const) and y.value in (0, False):
                return conjunction([f for f in (self.condition(c), self.condition(x)) if f is not None])
        return None

    def branch_guards(self, block: Block) -> list[Formula]:
        """Conditions known to hold whenever ``block`` runs (from dominating branches).

        A condition is recorded only when one successor edge of a dominating
        branch dominates ``block``; an unknown condition is dropped, which
        widens the guarded region (safe).
        """
        return [f for f in self.dominating_conditions(block).values() if f is not None]

    def dominating_conditions(self, block: Block) -> dict[Block, Formula | None]:
        """The branches one of whose edges dominates ``block``, outermost first, each
        with the condition under which that edge is taken (None when unknown). Kept per
        block, except while a value or a loop is being evaluated (a condition read then
        may be a placeholder's)."""
        known = self._dominating.get(block)
        if known is not None:
            return dict(known)
        found = self._dominating_conditions(block)
        if not self._in_progress and not self._loops_in_progress:
            self._dominating[block] = found
        return dict(found)

    def _dominating_conditions(self, block: Block) -> dict[Block, Formula | None]:
        found: list[tuple[Block, Formula | None]] = []
        cur = block
        while True:
            parent = self.idom.get(cur)
            if parent is None:
                break
            bt = branch_targets(parent.terminator)
            if bt is not None:
                cond, t, f = bt
                if t is not f:
                    if len(t.preds) == 1 and dominates(self.idom, t, block):
                        found.append((parent, self.condition(cond)))
                    elif len(f.preds) == 1 and dominates(self.idom, f, block):
                        c = self.condition(cond)
                        found.append((parent, None if c is None else c.negate()))
            cur = parent
        return dict(reversed(found))

    # --------------------------------------------------------------- loops
    def _note_loop(self, lp: Loop) -> None:
        self.counted_loops.add(lp.name)

    def loop_info(self, lp: Loop) -> LoopInfo:
        """The iteration domain of ``lp`` over its iterator (computed once)."""
        if lp.name not in self.loop_infos:
            # placeholder first: evaluating exit conditions re-enters through the phis
            self.loop_infos[lp.name] = LoopInfo(lp.name, lp.name, None, None, lp.header.label)
            self._loops_in_progress += 1
            try:
                self.loop_infos[lp.name] = self._loop_info(lp)
            finally:
                self._loops_in_progress -= 1
        return self.loop_infos[lp.name]

    def _loop_info(self, lp: Loop) -> LoopInfo:
        k = lp.name
        constraints: list[Formula] = [Formula.of(ge(Expr.sym(k), Expr.const(0)))]
        exact = True  # cleared by every exit whose condition is dropped or widened
        exits: list[tuple] | None = []
        for exiting, outside in lp.exits():
            bt = branch_targets(exiting.terminator)
            stay = None
            if bt is not None:
                cond, t, f = bt
                stay = None if _may_wrap(cond) else self.condition(cond)
                if stay is not None and t is outside:
                    stay = stay.negate()
                key = self._exit_key(lp, cond, t is outside, exiting in lp.latches)
                exits = None if exits is None or key is None else exits + [key]
            else:
                exits = None
            if stay is None:
                exact = False  # a bound from the data (or a switch): the domain is a superset
                continue
            stay = _canonical_exit(stay, k)
            if exiting in lp.latches:
                # a latch decides whether iteration k+1 runs: iteration k runs if
                # k = 0 or the condition held at k-1 (a superset of the exact
                # "held at every j < k", and equal to it for a halfspace)
                exact = exact and stay.op == "atom" and stay.atom.op == ">="  # type: ignore[union-attr]
                shifted = stay.subs({k: Expr.sym(k) - 1})
                first = Formula.of(eq(Expr.sym(k), Expr.const(0)))
                stay = _simplest(Formula("or", parts=(first, shifted)), shifted, k)
            elif exiting is not lp.header:
                exact = False
                continue  # a break in the middle: ignoring it over-approximates
            constraints.append(stay)
        line = next((b.terminator.loop_line for b in lp.latches if b.terminator.loop_line), None) \
            or next((i.line for i in lp.header.instrs if i.line), None)
        return LoopInfo(lp.name, k, conjunction(constraints), line, lp.header.label, exact,
                        None if exits is None else tuple(sorted(exits)))

    def _exit_key(self, lp: Loop, cond: Value, leaves_when_true: bool, at_latch: bool) -> tuple | None:
        """An exit's condition as data comparable across loops of this function: the
        comparison, each operand as an expression of the loop's iterator (named ``@``) or as
        the SSA value computed before the loop; None for any other condition."""
        if not isinstance(cond, Instr) or cond.opcode != "icmp" or len(cond.operands) < 2:
            return None
        operands = []
        for operand in cond.operands[:2]:
            expr = self.expr(operand)
            if expr is not None:
                operands.append(("expr", str(expr.subs({lp.name: Expr.sym("@")}))))
            elif isinstance(operand, Arg) or isinstance(operand, Instr) and operand.block is not None \
                    and operand.block not in lp.blocks and _ssa_name(operand):
                operands.append(("value", self.func.name, _ssa_name(operand)))
            else:
                return None
        return (cond.predicate, leaves_when_true, at_latch, *operands)


# symbols that never take a negative value: thread and block indices, launch dimensions,
# loop trip indices (of kernel and host loops, counted from 0)
_NONNEGATIVE_SYMBOL = re.compile(r"(?:n?t|n?b)[xyz]|[kh]\d+")


def _nonnegative(e: Expr) -> bool:
    """``e`` is at least 0 for every value of its symbols (a sufficient test: non-negative
    coefficients over symbols, floors and remainders that never are negative)."""
    for monomial, coefficient in e.terms:
        if coefficient < 0:
            return False
        for atom in monomial:
            if isinstance(atom, Sym) and not _NONNEGATIVE_SYMBOL.fullmatch(atom.name):
                return False
            if isinstance(atom, FloorDiv) and not _nonnegative(atom.num) or isinstance(atom, SymDiv):
                return False
    return True


_RESULT = re.compile(r"\s*(%[-\w.$]+)\s*=")


def _ssa_name(v: Value) -> str:
    """The name an argument or an instruction's result has in its function (``%99``)."""
    if v.name:
        return v.name
    m = _RESULT.match(v.text)
    return m.group(1) if m else ""


def _canonical_exit(stay: Formula, k: str) -> Formula:
    """``iv != bound`` as a loop's stay condition means ``iv < bound`` (or ``>``).

    Clang emits ``icmp eq`` exits for counted loops whose bound it proved
    reachable; with the iterator stepping towards the bound the two agree.
    """
    if stay.op != "atom" or stay.atom is None or stay.atom.op != "!=":
        return stay
    e = stay.atom.expr
    c = e.coefficient(k)
    if c > 0:
        return Formula.of(Constraint(-e - 1, ">="))
    if c < 0:
        return Formula.of(Constraint(e - 1, ">="))
    return stay


def _may_wrap(cond: Value) -> bool:
    """Whether a loop exit compares integers that may wrap where the analysis counts without
    bounds: values of a type narrower than ``int`` (C computes in ``int`` and truncates on
    the assignment: a ``short`` or ``unsigned char`` iterator wraps at its type's end, and
    the loop goes on), or an unsigned comparison with a constant that reads as negative (an
    unsigned bound at or above 2^31 for a 32-bit value). Such an exit is not understood: the
    loop's domain is then a superset, not exact."""
    if not isinstance(cond, Instr):
        return False
    if cond.opcode == "icmp":
        operands = cond.operands[:2]
        unsigned = (cond.predicate or "").startswith("u")
        if unsigned and any(isinstance(o, Const) and isinstance(o.value, int) and o.value < 0 for o in operands):
            return True
        return any(_narrow(o) for o in operands)
    if cond.opcode in ("and", "or", "xor") and cond.type == "i1":
        return any(_may_wrap(o) for o in cond.operands[:2])
    return False


_NARROW = ("i8", "i16")


def _narrow(v: Value, depth: int = 0) -> bool:
    """Whether ``v`` is, or is computed from, a value of a type narrower than ``int``."""
    if not isinstance(v, Instr) or depth > 8:
        return False
    if v.type in _NARROW or v.opcode == "trunc":
        return True
    if v.opcode in ("sext", "zext", "freeze", "add", "sub", "mul", "shl"):
        return any(_narrow(o, depth + 1) for o in v.operands[:2])
    return False


def _simplest(exact: Formula, simple: Formula, k: str) -> Formula:
    """``simple`` when, together with ``k >= 0``, it describes the same set as ``exact``."""
    import islpy as isl

    if not (exact.is_affine() and simple.is_affine()):
        return exact
    params = sorted((exact.symbols() | simple.symbols()) - {k})
    head = f"[{', '.join(params)}] -> " if params else ""
    try:
        a = isl.Set(f"{head}{{ [{k}] : {k} >= 0 and {exact.to_isl()} }}")
        b = isl.Set(f"{head}{{ [{k}] : {k} >= 0 and {simple.to_isl()} }}")
    except isl.Error:
        return exact
    return simple if a.is_equal(b) else exact
