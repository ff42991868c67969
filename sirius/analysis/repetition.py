"""Repeated launch patterns: a loop body of k copies of one launch sequence, as a loop.

DNN compilers unroll stacked layers: TVM's LSTM has one host loop over time steps
whose body is ten copies of the same eight launches, one copy per layer, with
pointers that advance by a fixed stride per layer. ``find_repetition`` recognises
such a body and describes it as what it is, a second loop: every launch of the body
is the instance ``(step, layer)`` of one of the pattern's ``period`` statements, and
each argument of the pattern's ``j``-th launch is a function of ``layer``:

* ``affine``: one allocation, the byte offset affine in the layer (and the step), the
  same formula for every copy (a scalar: equal, or affine, in every copy);
* ``peeled``: the first copy reads a loop input (an allocation no launch of the loop
  writes) where the other copies read the affine formula: the first layer's input;
* ``private``: the copy's own temporary. TVM's memory plan reuses a few storages for
  every layer, alternating them, so the copies do not differ by a stride there; but a
  temporary a copy writes before it reads it, and whose values no other copy reads, can
  be given a fresh place per layer, which *is* affine (``fusion.privatisation`` decides
  where). Such an argument names the pattern's write whose bytes it reaches (``write``,
  the (position, argument) of that write; its own for a write) and its ``distance`` in
  bytes from that write's pointer; each write of the pattern into a private temporary is
  described by the bytes it covers from its pointer and where each copy's pointer points
  at the last step (``PrivateWrite``).

What is proven for a private allocation A (else the body is not taken as a loop, with
the reason): every access to A by a launch of the loop is exact (isl knows its bytes,
and no scalar the analysis does not know decides which bytes a write covers); in every
copy, each argument that reads A reads only bytes the copy wrote before, through one
argument of one earlier launch (its *write*), with no later write of the copy in between,
at a constant distance from that argument's pointer; no launch reaches the bytes it
writes of A through a second pointer; every copy resolves the same reads to the same
writes; each write covers an interval of bytes from its pointer, and that pointer is a
constant at the last step; the last step writes every byte of A any step writes (so the
last step's values, put back after the loop, leave A as the original program does).

Not a loop, with a reason: a copy whose argument differs by another stride (or in
another way than the above), copies among other launches of the body (a head or a
tail: seq2seq's attention), a body that holds anything but launches and declarations.
A body whose launches do not repeat with the same kernels and launch shapes is no
candidate at all (None).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import islpy as isl

from sirius.analysis.host_model import ArgValue, HostStatement
from sirius.analysis.program_model import LaunchInstance, ProgramModel, host_domain
from sirius.analysis.source_index import ForLoop
from sirius.analysis.symbolic import Expr

# the recognised loop's iterator in the pattern's formulas: no C identifier, so no symbol of
# the program's can be taken for it (the code generator gives it a name of its own)
LAYER = "$layer"
# the search for copies among other launches (only to say why a body is not a loop) is cubic:
# bodies and copies larger than these are not searched
MAX_SCANNED_BODY = 256
MAX_SCANNED_PERIOD = 32


@dataclass(frozen=True)
class PatternArgument:
    """One argument of the pattern's j-th launch, as a function of the layer."""

    kind: str  # "affine", "peeled", "private", "scalar"
    buffer: str | None = None  # affine/peeled: the allocation the copies point into
    offset: Expr | None = None  # bytes: in the step iterator and ``LAYER`` (affine, peeled)
    first: ArgValue | None = None  # peeled: what the first copy passes
    write: tuple[int, int] | None = None  # private: (position, argument) of the write whose bytes it reaches
    distance: int | None = None  # private: bytes from that write's pointer to this one
    value: Expr | None = None  # scalar: in the step iterator and ``LAYER``
    text: str = ""  # scalar without a value (a float constant): the same in every copy


@dataclass(frozen=True)
class PrivateWrite:
    """A write of the pattern into a private temporary: the bytes it covers from its pointer
    (an interval in every copy and step, proven) and where the pointer is at the last step."""

    key: tuple[int, int]  # (position, argument) in the pattern
    first: int  # bytes from the pointer: the first and the last byte a copy writes, over every copy
    last: int
    at_last_step: tuple[tuple[str, int], ...]  # per copy: the allocation and the pointer's byte offset into it


@dataclass(frozen=True)
class Repetition:
    """A loop body recognised as ``copies`` copies of a ``period``-launch pattern."""

    loop: ForLoop  # the source loop whose body repeats
    iterator: str  # the loop's iterator in the host model (``h0``)
    steps: int  # trips of the loop, from 0
    statements: tuple[tuple[int, ...], ...]  # [copy][position] -> statement index
    arguments: tuple[tuple[PatternArgument, ...], ...]  # [position][argument]
    private: tuple[str, ...] = ()  # allocations whose values stay within a copy
    writes: tuple[PrivateWrite, ...] = ()  # the pattern's writes into them, in (position, argument) order

    @property
    def copies(self) -> int:
        return len(self.statements)

    @property
    def period(self) -> int:
        return len(self.statements[0])

    def cell_of(self, statement: int) -> tuple[int, int] | None:
        """(copy, position) of a statement of the body."""
        for c, row in enumerate(self.statements):
            if statement in row:
                return c, row.index(statement)
        return None


@dataclass(frozen=True)
class NotALoop:
    """Why a loop body that repeats launches is not taken as a loop."""

    loop_line: int | None
    statements: tuple[int, ...]
    reason: str


# ------------------------------------------------------------------ byte footprints

def byte_footprint(inst: LaunchInstance, param: str, kind: str, iterator: str) -> isl.Set | None:
    """The bytes of its allocation that the launch's accesses of ``kind`` ("read" or
    "write") through parameter ``param`` touch, as a set ``{ [step, byte] }``; None when
    some such access is not exact. Reads may be more bytes than are read (the values of
    scalars the analysis does not know are projected out); writes are exactly the bytes
    written (None where they depend on such a scalar), as the proof of private
    temporaries needs."""
    out = isl.Set("{ [s, b] : 1 = 0 }")
    for m in inst.maps:
        a = m.access
        if a.buffer != param or a.space == "shared":
            continue
        if (kind == "read") != (a.kind == "load") and a.kind != "atomic":
            continue
        if not m.exact:
            return None
        got = m.byte_map().range()
        pos = got.find_dim_by_name(isl.dim_type.param, iterator)
        if pos >= 0:
            got = got.move_dims(isl.dim_type.set, 0, isl.dim_type.param, pos, 1)
        else:
            got = got.insert_dims(isl.dim_type.set, 0, 1)
        if kind == "write" and got.dim(isl.dim_type.param) and not _one_value(got.params()):
            return None  # bytes written for some value of a scalar the analysis does not know: not all written
        got = got.project_out(isl.dim_type.param, 0, got.dim(isl.dim_type.param)).reset_tuple_id()
        out = out.union(got)
    return out


def _one_value(params: isl.Set) -> bool:
    """The parameters can take one value only (a kernel loop's exit value, say)."""
    params = params.move_dims(isl.dim_type.set, 0, isl.dim_type.param, 0, params.dim(isl.dim_type.param))
    return params.is_singleton()


def _shift(footprint: isl.Set, offset: Expr, iterator: str) -> isl.Set:
    """``footprint`` ({ [step, byte] }) in bytes from a pointer ``offset`` bytes into the allocation."""
    off = str(offset.subs({iterator: Expr.sym("s")}))
    return footprint.apply(isl.Map(f"{{ [s, b] -> [s, r] : r = b - ({off}) }}"))


# ------------------------------------------------------------------ recognition

def _loop_statements(model: ProgramModel, iterator: str) -> list[HostStatement]:
    return [s for s in model.host.statements if iterator in s.loops]


def _same_shape(a: HostStatement, b: HostStatement) -> bool:
    shape = lambda s: (s.grid.constant() if s.grid else None, s.block.constant() if s.block else None,
                       s.shmem.constant_value() if s.shmem is not None else None, s.stream)
    return a.kernel == b.kernel and shape(a) == shape(b) and shape(a)[0] is not None and shape(a)[1] is not None


def _periods(launches: list[HostStatement]) -> list[int]:
    """Periods m (k = n/m >= 2 copies) whose copies have the same kernels and launch shapes."""
    n = len(launches)
    return [m for m in range(1, n // 2 + 1) if n % m == 0
            and all(_same_shape(launches[i], launches[i % m]) for i in range(m, n))]


def _affine_in_layer(values: list[Expr], first: int) -> Expr | None:
    """The formula ``values[first] + (LAYER - first) * stride`` when every value from
    ``first`` on is one stride past the one before (None otherwise)."""
    if len(values) - first < 1:
        return None
    stride = (values[first + 1] - values[first]) if len(values) - first > 1 else Expr.const(0)
    if stride.constant_value() is None:
        return None
    if any((values[c] - values[c - 1] - stride).constant_value() != 0 for c in range(first + 1, len(values))):
        return None
    return values[first] + (Expr.sym(LAYER) - first) * stride.constant_value()


class _PrivateTemporaries:
    """The private-temporary proof of the module docstring, for one candidate pattern."""

    def __init__(self, insts: dict[int, LaunchInstance], table: list[list[int]], iterator: str, steps: int):
        self.insts, self.table, self.iterator, self.steps = insts, table, iterator, steps
        self.domain = isl.Set(f"{{ [s, b] : 0 <= s < {steps} }}")
        self._footprints: dict[tuple[int, str, str], isl.Set | None] = {}
        self.extents: dict[tuple[int, int], tuple[int, int]] = {}  # write -> (first, last) byte from the pointer

    def footprint(self, idx: int, param: str, kind: str) -> isl.Set | None:
        key = (idx, param, kind)
        if key not in self._footprints:
            got = byte_footprint(self.insts[idx], param, kind, self.iterator)
            self._footprints[key] = None if got is None else got.intersect(self.domain)
        return self._footprints[key]

    def resolve(self, allocs: set[str]) -> tuple[dict, dict[str, str]]:
        """For each (position, argument) pointing into one of ``allocs``: ("def", write, 0)
        for a write, ("use", write, distance) for a read, where ``write`` is the (position,
        argument) of the write whose bytes it reaches; the same in every copy, whichever
        allocation a copy uses. Also, per allocation that cannot be private, why."""
        refused: dict[str, str] = {}
        while True:
            per_copy = [self._copy_resolution(row, allocs - set(refused), refused) for row in self.table]
            if not any(p is None for p in per_copy):
                break
        if any(p != per_copy[0] for p in per_copy[1:]):
            refused.update({a: "its copies use the temporaries in different ways" for a in allocs if a not in refused})
            return {}, refused
        return per_copy[0], refused

    def _copy_resolution(self, row: list[int], allocs: set[str], refused: dict[str, str]) -> dict | None:
        """One copy's resolution over ``allocs``; None after adding an allocation to ``refused``."""
        written: list[tuple[str, tuple[int, int], isl.Set, Expr]] = []  # allocation, write, bytes, pointer
        resolved: dict[tuple[int, int], tuple[str, tuple[int, int], int]] = {}
        for j, idx in enumerate(row):
            inst = self.insts[idx]
            here = f"{inst.kernel.name} ({inst.where})"
            mine = [(p, name, arg) for p, (name, arg) in enumerate(inst.bindings)
                    if arg.kind == "buffer" and arg.buffer in allocs]
            touched = {}
            for p, name, arg in mine:
                r, w = self.footprint(idx, name, "read"), self.footprint(idx, name, "write")
                problem = None
                if r is None or w is None or arg.offset is None:
                    problem = f"an access of {here} to it is not exact"
                elif r.is_empty() and w.is_empty():
                    problem = f"{here} passes it without using it"
                elif not r.is_empty() and not w.is_empty():
                    problem = f"{here} reads and writes it through one pointer"
                if problem is not None:
                    refused[arg.buffer] = problem
                    return None
                touched[p] = (r, w)
            for p, name, arg in mine:
                r, w = touched[p]
                others = [touched[q][0].union(touched[q][1]) for q, _, b in mine if q != p and b.buffer == arg.buffer]
                if any(not w.intersect(bytes_).is_empty() for bytes_ in others):
                    refused[arg.buffer] = f"{here} reaches the bytes it writes of it through another pointer too"
                    return None
                if r.is_empty():
                    continue
                source = next(((key, bytes_, off) for alloc, key, bytes_, off in reversed(written)
                               if alloc == arg.buffer and not bytes_.intersect(r).is_empty()), None)
                distance = None if source is None else (arg.offset - source[2]).constant_value()
                if source is None or not r.is_subset(source[1]) or distance is None:
                    refused[arg.buffer] = (f"{here} reads values of it its copy did not write before it "
                                           "(through one pointer, at a constant distance)")
                    return None
                resolved[(j, p)] = ("use", source[0], distance)
            for p, name, arg in mine:
                r, w = touched[p]
                if w.is_empty():
                    continue
                rel = _shift(w, arg.offset, self.iterator).project_out(isl.dim_type.set, 0, 1)
                if not rel.is_bounded():
                    refused[arg.buffer] = f"{here} writes it over a range with no bound the analysis knows"
                    return None
                lo = rel.lexmin().plain_get_val_if_fixed(isl.dim_type.set, 0).to_python()
                hi = rel.lexmax().plain_get_val_if_fixed(isl.dim_type.set, 0).to_python()
                if lo < 0 or not rel.is_equal(isl.Set(f"{{ [r] : {lo} <= r <= {hi} }}")):
                    refused[arg.buffer] = f"{here} writes it before its pointer or with holes"
                    return None
                self.extents[(j, p)] = (min(self.extents.get((j, p), (lo, hi))[0], lo),
                                        max(self.extents.get((j, p), (lo, hi))[1], hi))
                resolved[(j, p)] = ("def", (j, p), 0)
                written.append((arg.buffer, (j, p), w, arg.offset))
        return resolved

    def last_step_covers(self, alloc: str) -> bool:
        """The copies at the last step write every byte of ``alloc`` any copy writes."""
        every, last = None, None
        for row in self.table:
            for idx in row:
                for name, arg in self.insts[idx].bindings:
                    if arg.kind != "buffer" or arg.buffer != alloc:
                        continue
                    w = self.footprint(idx, name, "write")
                    flat = w.project_out(isl.dim_type.set, 0, 1)
                    at_end = w.intersect(isl.Set(f"{{ [s, b] : s = {self.steps - 1} }}")).project_out(
                        isl.dim_type.set, 0, 1)
                    every = flat if every is None else every.union(flat)
                    last = at_end if last is None else last.union(at_end)
        return every is None or (last is not None and every.is_subset(last))


def _written_in_loop(insts: dict[int, LaunchInstance], statements: list[int]) -> set[str]:
    out = set()
    for idx in statements:
        inst = insts[idx]
        binding = dict(inst.bindings)
        for a in inst.kernel.accesses:
            arg = binding.get(a.buffer)
            if a.kind != "load" and a.space != "shared" and arg is not None and arg.kind == "buffer":
                out.add(arg.buffer)
    return out


def _arguments(insts, table: list[list[int]], iterator: str, steps: int
               ) -> tuple[tuple[tuple[PatternArgument, ...], ...], tuple[str, ...], tuple[PrivateWrite, ...]] | str:
    """The pattern's arguments (module docstring), or why the copies are not one loop."""
    k, m = len(table), len(table[0])
    flat = [idx for row in table for idx in row]
    written = _written_in_loop(insts, flat)
    # allocations whose pointers do not advance by a stride: candidates for private temporaries
    irregular: set[str] = set()
    for j in range(m):
        for p in range(len(insts[table[0][j]].bindings)):
            args = [insts[table[c][j]].bindings[p][1] for c in range(k)]
            if all(a.kind == "buffer" for a in args) and (
                    len({a.buffer for a in args}) > 1 or any(a.offset is None for a in args)
                    or _affine_in_layer([a.offset for a in args], 0) is None):
                irregular |= {a.buffer for a in args if a.buffer in written}
    proof = _PrivateTemporaries(insts, table, iterator, steps)
    candidates, refused = set(irregular), {}
    while True:
        resolved, why = proof.resolve(candidates)
        refused.update(why)
        uncovered = {a: "the copies at the last step do not write every byte the loop writes"
                     for a in sorted(candidates - set(why)) if not proof.last_step_covers(a)}
        if not uncovered:
            break
        refused.update(uncovered)
        candidates -= set(uncovered)
    private = sorted(irregular - set(refused))
    out: list[tuple[PatternArgument, ...]] = []
    for j in range(m):
        row_args: list[PatternArgument] = []
        first = insts[table[0][j]]
        for p, (name, _) in enumerate(first.bindings):
            args = [insts[table[c][j]].bindings[p][1] for c in range(k)]
            where = f"argument {name} of {first.kernel.name} ({first.where})"
            kinds = {a.kind for a in args}
            if kinds == {"scalar"}:
                if all(a.value is not None for a in args):
                    value = _affine_in_layer([a.value for a in args], 0)
                    if value is None:
                        return f"{where} is not the same or one stride apart in every copy"
                    if value.to_c() is None:
                        return f"{where} is not a formula in the step a kernel can compute ({value})"
                    row_args.append(PatternArgument("scalar", value=value))
                elif len({(a.text, str(a.value)) for a in args}) == 1:
                    row_args.append(PatternArgument("scalar", text=args[0].text))
                else:
                    return f"{where} is not the same in every copy"
                continue
            if kinds != {"buffer"} or any(a.offset is None for a in args):
                return f"{where} is not an allocation plus a known offset in every copy"
            alloc = args[-1].buffer
            if all(a.buffer in private for a in args) and (j, p) in resolved:
                _, write, distance = resolved[(j, p)]
                row_args.append(PatternArgument("private", buffer=alloc, write=write, distance=distance))
                continue
            same = len({a.buffer for a in args}) == 1
            offset = _affine_in_layer([a.offset for a in args], 0) if same else None
            if offset is not None and offset.to_c() is None:
                return f"{where} points into {alloc} at an offset not a formula in the step a kernel can compute"
            if offset is not None:
                row_args.append(PatternArgument("affine", buffer=alloc, offset=offset))
                continue
            rest_same = len({a.buffer for a in args[1:]}) == 1
            if rest_same and args[0].buffer != alloc and args[0].buffer not in written:
                offset = _affine_in_layer([a.offset for a in args], 1)
                if offset is not None:
                    row_args.append(PatternArgument("peeled", buffer=alloc, offset=offset, first=args[0]))
                    continue
            if alloc in refused:
                return (f"{where}: its copies point into {alloc} without a stride, and {alloc} is not private: "
                        f"{refused[alloc]}")
            return f"{where} does not advance by one stride per copy"
        out.append(tuple(row_args))
    # where each write lands at the last step: the values the original leaves in the temporaries
    defs = sorted(key for key, (what, _, _) in resolved.items() if what == "def")
    at_last_step: dict[tuple[int, int], list[tuple[str, int]]] = {key: [] for key in defs}
    for row in table:
        for j, p in defs:
            arg = insts[row[j]].bindings[p][1]
            start = arg.offset.subs({iterator: steps - 1}).constant_value()
            if start is None:
                return f"a pointer into {arg.buffer} is not a constant at the last step"
            at_last_step[(j, p)].append((arg.buffer, start))
    writes = tuple(PrivateWrite(key, *proof.extents[key], tuple(at_last_step[key])) for key in defs)
    return tuple(out), tuple(private), writes


def _copies_inside(launches: list[HostStatement]) -> tuple[int, int, int] | None:
    """The longest run of two or more copies of one launch sequence inside a body that is not
    all copies: (first launch, launches per copy, copies)."""
    n, best = len(launches), None
    if n > MAX_SCANNED_BODY:
        return None
    for m in range(1, min(n // 2, MAX_SCANNED_PERIOD) + 1):
        for start in range(n - 2 * m + 1):
            k = 1
            while start + (k + 1) * m <= n and all(_same_shape(launches[start + k * m + i], launches[start + i])
                                                   for i in range(m)):
                k += 1
            if k >= 2 and (best is None or k * m > best[1] * best[2]):
                best = (start, m, k)
    return best


def find_repetition(model: ProgramModel, whole_body: bool = False) -> Repetition | NotALoop | None:
    """The first host loop whose body is copies of one launch pattern (module docstring):
    a ``Repetition``; ``NotALoop`` with the reason when its launches repeat in kernels and
    shapes but the copies are not one loop; None when no loop body repeats. With
    ``whole_body`` (the loop is wanted in one kernel), a body of launches that are not
    copies of a shorter pattern, or whose copies are not one loop, is one copy of itself:
    a loop of one layer, each step one cell."""
    insts = model.instances()
    for info in model.host.loops:
        stmts = _loop_statements(model, info.iterator)
        launches = [s for s in stmts if s.kind == "launch"]
        periods = _periods(launches) if len(launches) >= 2 else []
        if whole_body and launches and len(launches) not in periods:
            periods.append(len(launches))
        indices = tuple(s.index for s in launches)
        why = lambda r: NotALoop(info.line, indices, r)
        inside = _copies_inside(launches) if not periods and len(launches) >= 4 else None
        if inside is not None:
            start, m, k = inside
            return why(f"{k} copies of {m} launch{'es' if m > 1 else ''} (lines {launches[start].line}-{launches[start + k * m - 1].line}) "
                       f"with {len(launches) - k * m} other launches around them in the loop body: only a body "
                       "made entirely of copies is taken as a loop")
        if not periods:
            continue
        if len(stmts) != len(launches):
            return why("the loop body holds statements other than launches: " +
                       next(s.describe() for s in stmts if s.kind != "launch"))
        if any(s.loops != (info.iterator,) for s in launches):
            return why("the launches are in a nest of loops")
        if any(s.index not in insts or insts[s.index].site is None for s in launches):
            return why("a launch of the body is not found in the source")
        loop = model.source.for_loop_at(info.line)
        if loop is None or loop.iterator is None:
            return why("the loop statement (with its own iterator variable) is not found in the source")
        if any(kind not in ("decl", "launch") for kind, _ in loop.body) or \
                sum(kind == "launch" for kind, _ in loop.body) != len(launches):
            return why("the loop body holds statements other than declarations and launches that change nothing")
        if not loop.header_pure:
            return why("the loop's condition or increment changes more than its iterator")
        dom = host_domain(launches[0])
        if dom is None or not dom.is_bounded() or dom.is_empty() or dom.dim_min_val(0).to_python() != 0 or \
                not dom.is_equal(isl.Set(f"{{ [{info.iterator}] : 0 <= {info.iterator} <= "
                                         f"{dom.dim_max_val(0).to_python()} }}")):
            return why("the loop's domain is not a constant range from 0")
        steps = dom.dim_max_val(0).to_python() + 1
        reasons = []
        for m in periods:
            table = [list(indices[c * m:(c + 1) * m]) for c in range(len(indices) // m)]
            got = _arguments(insts, table, info.iterator, steps)
            if isinstance(got, str):
                reasons.append(f"as {len(table)} copies of {m} launch{'es' if m > 1 else ''}: {got}")
                continue
            arguments, private, writes = got
            return Repetition(loop, info.iterator, steps, tuple(tuple(r) for r in table), arguments, private, writes)
        return why("; ".join(reasons[:2]))
    return None


def format_repetition(rep: Repetition, model: ProgramModel,
                      show_private: Callable[[PatternArgument], str] | None = None) -> str:
    """The loop body as the loop it is read as: one line per launch of the pattern, each
    argument as a function of ``step`` and ``layer``; a private argument as the write whose
    bytes it reaches, or as ``show_private`` gives it (where the privatisation put it)."""
    insts = model.instances()
    step = {rep.iterator: Expr.sym("step"), LAYER: Expr.sym("layer")}

    def written_by(a: PatternArgument) -> str:
        j, p = a.write
        inst = insts[rep.statements[0][j]]
        return f"private: {inst.kernel.name}'s {inst.bindings[p][0]} + {a.distance} bytes"

    def show(a: PatternArgument) -> str:
        if a.kind == "scalar":
            return str(a.value.subs(step)) if a.value is not None else a.text
        if a.kind == "private":
            return (show_private or written_by)(a)
        general = f"{a.buffer} + {a.offset.subs(step)} bytes"
        if a.kind == "peeled":
            return f"layer == 0 ? {a.first.buffer} + {a.first.offset.subs(step)} bytes : {general}"
        return general

    lines = [f"loop at line {rep.loop.range.line}: {rep.copies} copies (layers) of {rep.period} launches, "
             f"{rep.steps} steps: for step < {rep.steps}, for layer < {rep.copies}:"]
    for j, idx in enumerate(rep.statements[0]):
        inst = insts[idx]
        args = ", ".join(f"{name} = {show(a)}" for (name, _), a in zip(inst.bindings, rep.arguments[j]))
        lines.append(f"  {inst.kernel.name}<<<{inst.statement.grid}, {inst.statement.block}>>>({args})")
    return "\n".join(lines) + "\n"
