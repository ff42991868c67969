"""Sibling host loops fused as loops: ``for (i) A(i); for (j) B(j);`` runs as one loop.

Launches of different host loop nests never share a region (``fusion.regions``), so a loop
of one kernel followed by a loop of another keeps every launch. Two (or more) ``for``
statements that follow one another directly in the same braces, over the same sequence of
iterations, become one loop whose body runs the first body, then the second with its
iterator declared equal to the first's (nothing declared where the names are one):

    for (int i = 0; i < n; ++i) {          for (int i = 0; i < n; ++i) {
      a<<<g, b>>>(x, i);                      a<<<g, b>>>(x, i);
    }
    for (int j = 0; j < n; ++j) {   --->    int j = i;
      b<<<g, b>>>(x, y, j);                   b<<<g, b>>>(x, y, j);
    }                                        }

The rewrite keeps every line where it was, so what the pipeline reports about the program,
run again on the rewritten text, names the original's lines. There the launches of one
fused iteration are statements of one loop body (one block: a region may hold them), and
the schedule fuses them as any body's.

Legal (``plan_loop_fusion``, each refusal a ``LoopFusionRefusal``) when:

* the loops are consecutive statements of one block (nothing but blanks and comments
  between), each body in braces holding nothing but launches whose arguments change nothing
  and declarations without effects, every launch a fragment (no device ``printf``, ...);
  the host statements of each loop are its launches alone;
* each header changes nothing but its iterator, declared in its init; the second's init and
  condition never run in the fused loop;
* the iterations are the same sequence: the same iterator type (canonical: a wrapping
  ``unsigned char`` and an ``int`` count alike, their values do not) or integer types
  whose loops run exactly known, equal iterations of values both types hold, the value
  after the last included (``int`` and ``unsigned`` from 0 to 99), the same initializer
  as written, the same step (``ForLoop.step``), and equal iteration domains (exact: every
  exit of both loops understood) or exits that compare the iterators alike with the same
  values computed before the loops (``LoopInfo.exits``: a trip count from argv or data);
* no dependence of the UAR runs from an iteration of an earlier loop to an earlier iteration
  of a later one (the outer loops' iterations equal): the fused loop runs ``A(i)`` before
  ``B(j)`` exactly when ``i <= j``, the original for every ``i``, ``j``;
* the bodies declare only variables, and a later body neither names nor declares a name
  declared before it in the merged body (an earlier body's variable, a later iterator, the
  first iterator where the names differ), nor declares a name an earlier body uses (the
  fused launch, and the original launches its guard falls back to, stand after it); but a
  variable a later body declares is first given a new name where the merged body before it
  declares or names that name too, if every token of the body spelled so is written there
  (no macro writes or takes it) and names it (``_renamed``: both bodies' ``dim3 grid``);
* no launch of the loops may fail to launch where the program reads launch statuses (the
  failures would be reported in another order);
* the merge is proven for this build, and is not guarded at run time as a fused launch is:
  no preprocessor directive stands in a loop, and no macro of the loops' text or of the
  kernels they launch is one another build may define otherwise (given with ``-D``,
  defined inside a conditional block, ``#undef``'d or defined twice: ``#ifndef STEPS``).

Profitable (the policy): the loops are fused only when some launch of the first body and
some launch of a later one are not joined by a global dependence within an iteration, so
that the schedule may fuse them.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from dataclasses import dataclass

import islpy as isl

from sirius.analysis.evaluate import LoopInfo
from sirius.analysis.program_model import ProgramModel, host_domain
from sirius.analysis.source_index import ForLoop
from sirius.analysis.uar import UAR
from sirius.fusion.fragments import fragment_problem
from sirius.fusion.regions import launch_may_fail

_IN, _OUT = isl.dim_type.in_, isl.dim_type.out
_BLANK = re.compile(rb"\s*(?:(?://[^\n]*\n|/\*.*?\*/)\s*)*", re.S)


@dataclass(frozen=True)
class HostLoop:
    """A host ``for`` statement of the entry with launches: its source facts and its model."""

    source: ForLoop
    info: LoopInfo
    launches: tuple[int, ...]  # its launch statements, in program order
    # variables its body declares that the merged body names otherwise: (name, new name),
    # written so by ``rewrite_loops`` (``source`` names the new names)
    renames: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class LoopChain:
    """Sibling loops run as one: the first's header, then each body in turn."""

    loops: tuple[HostLoop, ...]

    @property
    def lines(self) -> tuple[int, ...]:
        return tuple(loop.source.range.line for loop in self.loops)


@dataclass(frozen=True)
class LoopFusionRefusal:
    """Why the loop at ``lines[1]`` does not join the loop at ``lines[0]``."""

    lines: tuple[int, int]
    reason: str


@dataclass(frozen=True)
class LoopFusionPlan:
    chains: tuple[LoopChain, ...] = ()
    refusals: tuple[LoopFusionRefusal, ...] = ()


def plan_loop_fusion(model: ProgramModel, uar: UAR) -> LoopFusionPlan:
    """The chains of sibling loops of the entry that may run as one loop, and why each other
    pair of consecutive sibling loops with launches stays two loops (see the module)."""
    loops = _loops_with_launches(model)
    text = {}
    chains, refusals = [], []
    current: list[HostLoop] = []
    for previous, loop in zip(loops, loops[1:]):
        file = loop.source.range.file
        if file not in text:
            with open(file, "rb") as handle:
                text[file] = handle.read()
        if not _consecutive(text[file], previous.source, loop.source):
            between = _between(text[file], previous.source, loop.source)
            if between is not None:
                refusals.append(LoopFusionRefusal((previous.source.range.line, loop.source.range.line), between))
            _close(current, chains)
            continue
        joining = _renamed(current or [previous], loop, text[file])
        problem = _sibling_problem(model, uar, current or [previous], joining)
        if problem is not None:
            refusals.append(LoopFusionRefusal((previous.source.range.line, loop.source.range.line), problem))
            _close(current, chains)
            continue
        current = current or [previous]
        current.append(joining)
    _close(current, chains)
    refusals += _on_shared_lines(model, loops, text)
    profitable = []
    for chain in chains:
        reason = _unprofitable(model, uar, chain)
        if reason is None:
            profitable.append(chain)
        else:
            refusals.append(LoopFusionRefusal(chain.lines[:2], reason))
    return LoopFusionPlan(tuple(profitable), tuple(refusals))


def rewrite_loops(text: bytes, chains: tuple[LoopChain, ...]) -> bytes:
    """``text`` (the main file) with each chain's loops as one loop, every line kept where it
    was: the first loop's closing brace, each later loop's header and opening brace go, each
    later iterator declared equal to the first's (none where the names are one), each renamed
    variable of a later body written with its new name."""
    renamed = {at: (len(old.encode()), new.encode()) for chain in chains for loop in chain.loops
               for old, new in loop.renames for at in dict(loop.source.body_renamable)[new]}

    def piece(start: int, end: int) -> bytes:
        out, at = [], start
        for site in sorted(o for o in renamed if start <= o < end):
            length, name = renamed[site]
            out += [text[at:site], name]
            at = site + length
        return b"".join(out) + text[at:end]

    out, at = [], 0
    for chain in sorted(chains, key=lambda c: c.loops[0].source.range.start_offset):
        first = chain.loops[0].source
        end = first.body_range.end_offset - 1  # the first body's closing brace
        for loop in chain.loops[1:]:
            src = loop.source
            header = text[src.range.start_offset:src.body_range.start_offset + 1]  # with the opening brace
            declared = "" if src.iterator == first.iterator else \
                f"{src.iterator_type} {src.iterator} = {first.iterator}; "
            out += [piece(at, end), text[end + 1:src.range.start_offset], declared.encode(),
                    b"\n" * header.count(b"\n")]
            at, end = src.body_range.start_offset + 1, src.body_range.end_offset - 1
        out.append(piece(at, end))
        at = end
    out.append(text[at:])
    return b"".join(out)


def _renamed(earlier: list[HostLoop], later: HostLoop, text: bytes) -> HostLoop:
    """``later`` as it joins the ``earlier`` loops: each variable its body declares that the
    merged body before it declares or names too (``_name_clash``), given a new name where the
    body allows (``ForLoop.body_renamable``), one the file does not hold. The two bodies'
    ``dim3 grid(...)``: the second's is ``grid_l66``, as are its uses."""
    src = later.source
    before = {name for loop in earlier for name in loop.source.body_declared | loop.source.body_names}
    before |= {loop.source.iterator for loop in earlier}
    renamable = {name: sites for name, sites in src.body_renamable}
    clashing = sorted(name for name in src.body_declared & before if name in renamable)
    if not clashing:
        return later
    renames = []
    for name in clashing:
        new = f"{name}_l{src.range.line}"
        while re.search(rb"\b" + new.encode() + rb"\b", text):
            new += "_"
        renames.append((name, new))
    table = dict(renames)
    names = frozenset(table.get(n, n) for n in src.body_names)
    declared = frozenset(table.get(n, n) for n in src.body_declared)
    sites = tuple((table.get(n, n), s) for n, s in src.body_renamable)
    source = dataclasses.replace(src, body_names=names, body_declared=declared, body_renamable=sites)
    return dataclasses.replace(later, source=source, renames=later.renames + tuple(renames))


def _close(current: list[HostLoop], chains: list[LoopChain]) -> None:
    if len(current) > 1:
        chains.append(LoopChain(tuple(current)))
    current.clear()


def _loops_with_launches(model: ProgramModel) -> list[HostLoop]:
    """The entry's ``for`` loops that hold launches, in source order, with their models."""
    stmts = model.host.statements
    out = []
    lines = [info.line for info in model.host.loops]
    for info in model.host.loops:
        source = model.source.for_loop_at(info.line)
        if source is None or lines.count(info.line) > 1 \
                or sum(f.range.line == info.line for f in model.source.for_loops) > 1:
            continue  # loops are matched by their lines: two on one line cannot be told apart
        inside = [s for s in stmts if info.iterator in s.loops]
        launches = tuple(s.index for s in inside if s.kind == "launch")
        if launches:
            out.append(HostLoop(source, info, launches))
    return sorted(out, key=lambda lp: (lp.source.range.file, lp.source.range.start_offset))


def _on_shared_lines(model: ProgramModel, loops: list[HostLoop], text: dict[str, bytes]) -> list[LoopFusionRefusal]:
    """A refusal for each loop with launches right after another (``loops``) that stands on
    a line with another ``for`` statement: the analysis tells loops apart by their lines,
    and leaves such loops out of ``loops``."""
    lines = Counter(f.range.line for f in model.source.for_loops if f.range.file == model.source.main_file)
    out = []
    for loop in loops:
        file = loop.source.range.file
        if file not in text:
            with open(file, "rb") as handle:
                text[file] = handle.read()
        for other in model.source.for_loops:
            if lines[other.range.line] > 1 and other.range.file == file and _consecutive(text[file], loop.source, other):
                out.append(LoopFusionRefusal((loop.source.range.line, other.range.line),
                                             f"another for statement stands on line {other.range.line}: the optimizer "
                                             "tells host loops apart by their lines"))
    return out


def _consecutive(text: bytes, first: ForLoop, second: ForLoop) -> bool:
    """``second`` is the statement right after ``first`` in the same braces: only blanks and
    comments between them."""
    if first.range.file != second.range.file or first.function != second.function \
            or first.range.end_offset > second.range.start_offset:
        return False
    between = text[first.range.end_offset:second.range.start_offset]
    if not text[first.body_range.start_offset:first.body_range.start_offset + 1] == b"{":
        between = between.removeprefix(b";")  # clang's extent of a statement body ends before its semicolon
    blank = _BLANK.match(between)
    return blank is not None and blank.end() == len(between)


_DIRECTIVE = re.compile(rb"[ \t]*#[^\n]*(?:\\\n[^\n]*)*\n?")
_LABEL = re.compile(rb"[ \t]*[A-Za-z_]\w*[ \t]*:(?!:)[ \t]*;?[ \t]*\n?")


def _between(text: bytes, first: ForLoop, second: ForLoop) -> str | None:
    """Why two loops that only preprocessor directives or labels separate are not consecutive
    (None: other code separates them, or they are not in one function)."""
    if first.range.file != second.range.file or first.function != second.function \
            or first.range.end_offset > second.range.start_offset:
        return None
    at, end = first.range.end_offset, second.range.start_offset
    if text[at:at + 1] == b";":
        at += 1
    found = None
    while at < end:
        blank = _BLANK.match(text, at, end)
        at = blank.end() if blank else at
        if at >= end:
            break
        for pattern, what in ((_DIRECTIVE, "a preprocessor directive"), (_LABEL, "a label")):
            m = pattern.match(text, at, end)
            if m and m.end() > at:
                found = found or (what, text.count(b"\n", 0, at) + 1)
                at = _past_conditional(text, at, end) if pattern is _DIRECTIVE else m.end()
                break
        else:
            return None
    if found is None:
        return None
    what, line = found
    return (f"{what} (line {line}) stands between them: " + ("another build may put code between them"
            if what.startswith("a pre") else "a jump to it would land inside the merged loop"))


def _past_conditional(text: bytes, at: int, end: int) -> int:
    """Past the directive at ``at``, and past its block to the matching ``#endif`` when it
    opens a conditional (the text of a branch a build leaves out is no code of this one)."""
    depth = 0
    while at < end:
        m = _DIRECTIVE.match(text, at, end)
        if m is None or m.end() == at:
            line_end = text.find(b"\n", at, end)
            at = end if line_end < 0 else line_end + 1
            continue
        word = re.match(rb"[ \t]*#[ \t]*(\w*)", text[at:m.end()]).group(1)
        depth += word in (b"if", b"ifdef", b"ifndef")
        depth -= word == b"endif"
        at = m.end()
        if depth <= 0:
            return at
    return at


def _sibling_problem(model: ProgramModel, uar: UAR, earlier: list[HostLoop], loop: HostLoop) -> str | None:
    """Why ``loop`` cannot run in one loop with the ``earlier`` loops before it (None: it can)."""
    first = earlier[0]
    for candidate in (first, loop):
        why = _loop_problem(model, candidate)
        if why is not None:
            return why
    src, head = loop.source, first.source
    if src.step is None or head.step is None:
        return "the step of one of them is not one the optimizer understands (++, --, += or -= a value)"
    if src.step != head.step:
        return f"their iterations may run in other orders: the steps differ ({head.step}, {src.step})"
    if src.iterator_type != head.iterator_type and not _values_fit_both(model, first, loop):
        return (f"their iterators have other types ({head.iterator_type}, {src.iterator_type}): equal counts of "
                "iterations need not give equal values")
    if src.iterator_type != head.iterator_type and src.iterator == head.iterator:
        return (f"their iterators are both {src.iterator} but of other types ({head.iterator_type}, "
                f"{src.iterator_type}): merged, the later body would compute with the first one's type")
    if _initial(head) is None or _initial(head) != _initial(src):
        return (f"their iterators start from other values ({_initial(head) or 'not understood'}, "
                f"{_initial(src) or 'not understood'})")
    if not _same_iterations(model, first, loop):
        if not (first.info.exact and loop.info.exact) and None in (first.info.exits, loop.info.exits):
            return "the iterations one of them runs are not known (an exit the analysis does not understand)"
        return "they run different iterations (their trip counts may differ)"
    clash = _name_clash([lp.source for lp in earlier], src)
    if clash is not None:
        return clash
    for other in earlier:
        backwards = _backward_dependence(model, uar, other, loop)
        if backwards is not None:
            return backwards
    if model.host.status_queries:
        for candidate in (*earlier, loop):
            for index in candidate.launches:
                why = launch_may_fail(model.host.statements[index], model.arch)
                if why is not None:
                    query = model.host.status_queries[0]
                    return (f"the launch at line {model.host.statements[index].line} may fail to launch ({why}) and "
                            f"{query.call} (line {query.line}) reads launch statuses: fused, failures would be "
                            "reported in another order")
    return None


# the values of the integer types an iterator is declared with (canonical spellings, LP64)
_INTEGER_VALUES = {
    "char": (-2**7, 2**7 - 1), "signed char": (-2**7, 2**7 - 1), "unsigned char": (0, 2**8 - 1),
    "short": (-2**15, 2**15 - 1), "unsigned short": (0, 2**16 - 1),
    "int": (-2**31, 2**31 - 1), "unsigned int": (0, 2**32 - 1),
    "long": (-2**63, 2**63 - 1), "unsigned long": (0, 2**64 - 1),
    "long long": (-2**63, 2**63 - 1), "unsigned long long": (0, 2**64 - 1),
}


def _values_fit_both(model: ProgramModel, first: HostLoop, second: HostLoop) -> bool:
    """Iterators of two integer types run the same values: both loops' iterations are known
    exactly and are one set, both start from one integer literal and step by one literal,
    and every value ``start + k * step`` of the iterations, and the one after the last, is
    one of both types (so neither wraps, and the later iterator, declared equal to the
    first, holds the value it held).
    (The domains count iterations: clang's IR may number a loop's iterations its own way.)"""
    ranges = [_INTEGER_VALUES.get(loop.source.iterator_type or "") for loop in (first, second)]
    start, step = _literal((_initial(first.source) or "").removeprefix("=")), _literal(first.source.step or "")
    if None in ranges or start is None or step is None or _initial(first.source) != _initial(second.source) \
            or not (first.info.exact and second.info.exact) or not _same_iterations(model, first, second):
        return False
    domain = host_domain(model.host.statements[first.launches[0]])
    last = domain.dim(isl.dim_type.set) - 1
    values = domain.project_out(isl.dim_type.set, 0, last)  # the iterator's own, over every outer iteration
    if not values.is_bounded():
        return False
    trips = values.count_val().to_python()
    ends = (start, start + trips * step)  # the value after the last iteration too: the step computes it
    return all(lo <= min(ends) and max(ends) <= hi for lo, hi in ranges)


def _literal(text: str) -> int | None:
    """The value of an integer literal as written in a header (``0``, ``-2``, ``+4u``,
    ``16UL``); None for anything else."""
    m = re.fullmatch(r"\s*([+-]?)\s*(0x[0-9a-fA-F]+|0|[1-9]\d*)[uUlL]*\s*", text)  # (not 010: octal)
    if m is None:
        return None
    value = int(m.group(2), 0) if m.group(2).startswith("0x") else int(m.group(2))
    return -value if m.group(1) == "-" else value


def _initial(loop: ForLoop) -> str | None:
    """The iterator's initializer as written (``= 0``): loops after one another in one block
    whose initializers are written alike start from one value (they change nothing, and
    nothing runs between them)."""
    if loop.header_text is None or " ; " not in loop.header_text:
        return None
    return loop.header_text.split(" ; ", 1)[0]


def _name_clash(earlier: list[ForLoop], later: ForLoop) -> str | None:
    """Why ``later``'s body, written after the ``earlier`` bodies in one body, would mean
    something else or not compile: a name it uses or declares that is declared before it
    there (an earlier body's variable, a later iterator declared equal to the first's, or
    the first iterator where the names differ), or a name it declares that an earlier body
    uses (the fused launch, and the original launches the guard falls back to, stand after
    it)."""
    first = earlier[0]
    declared = {name for loop in earlier for name in loop.body_declared}
    declared |= {loop.iterator for loop in earlier[1:] if loop.iterator != first.iterator}
    if later.iterator != first.iterator:
        declared.add(first.iterator)
    if later.iterator != first.iterator and later.iterator in declared:
        return (f"the iterator {later.iterator} of the loop at line {later.range.line} would be declared twice in the "
                f"loop at line {first.range.line}")
    mine = later.body_names | later.body_declared | ({later.iterator} if later.iterator != first.iterator else set())
    seen = sorted(declared & mine)
    if seen and seen[0] in later.body_declared:
        return (f"the body of the loop at line {later.range.line} declares {seen[0]} as the merged body before it "
                f"does, and it cannot be given another name: it is declared extern, or not every mention of it "
                f"there is written as its name and names it (one before the declaration names another, a macro "
                f"writes or takes one, a line splice divides one)")
    if seen:
        return (f"the body of the loop at line {later.range.line} names {seen[0]}, which means another variable "
                f"after the body of the loop at line {first.range.line}")
    used = sorted(later.body_declared & {name for loop in earlier for name in loop.body_names})
    if used:
        return (f"the body of the loop at line {later.range.line} declares {used[0]}, which the launches before it "
                f"name, and it cannot be given another name (it is declared extern, or a mention of it there "
                f"names another variable or is not written as its name): merged, the fused launch after it would "
                f"see its {used[0]}")
    return None


def _loop_problem(model: ProgramModel, loop: HostLoop) -> str | None:
    """What about one loop alone keeps it from being fused with a sibling."""
    src, line = loop.source, loop.source.range.line
    if src.iterator is None or src.iterator_type is None:
        return f"the loop at line {line} does not declare one iterator in its init"
    if not src.header_pure:
        return f"the header of the loop at line {line} changes more than its iterator"
    if src.body_declares_types:
        return (f"the body of the loop at line {line} declares more than variables (a type, an enumeration, an alias, a "
                "using, a function): merged, it would change what the names of the bodies after it mean")
    if src.body_range is None or not _braced(src):
        return f"the body of the loop at line {line} is not in braces"
    if any(kind not in ("launch", "decl") for kind, _ in src.body):
        return (f"the body of the loop at line {line} holds other statements than launches and declarations "
                "without effects")
    directive = model.source.directive_in(src.range)
    if directive is not None:
        return (f"a preprocessor directive (line {directive}) stands in the loop at line {line}: another build may "
                "compile the loop otherwise, or its macros mean another thing where the merged loop writes them")
    built = _build_dependent(model, loop)
    if built:
        return (f"the loop at line {line} or a kernel it launches uses {built[0]}, a macro another build may define "
                "otherwise (given with -D, defined under a condition, or redefined): the merged loop is proven for "
                "this build only")
    stmts = [s for s in model.host.statements if loop.info.iterator in s.loops]
    other = next((s for s in stmts if s.kind != "launch"), None)
    if other is not None:
        return f"the loop at line {line} holds a host statement: {other.describe()}"
    instances = model.instances()
    body = src.body_range
    if len(loop.launches) != sum(kind == "launch" for kind, _ in src.body):
        return f"the launches the loop at line {line} runs are not the launches written in its body"
    for index in loop.launches:
        inst = instances.get(index)
        if inst is None or inst.site is None:
            return f"a launch of the loop at line {line} is not one the optimizer rewrites"
        where = inst.site.range
        if where.file != body.file or not body.start_offset <= where.start_offset < body.end_offset:
            return f"the launches the loop at line {line} runs are not the launches written in its body"
        problem = fragment_problem(model, inst)
        if problem is not None:
            return f"{inst.kernel.name} ({inst.where}) cannot be fused: {problem.text}"
    return None


def _build_dependent(model: ProgramModel, loop: HostLoop) -> list[str]:
    """The macros of the loop's text (its header, its body) and of the kernels and device
    functions it launches that another build may define otherwise: its iterations, its
    launches' arguments and the kernels' accesses, and so the dependences that make the
    merge legal, may differ there, and the merge is not guarded as a fused launch is."""
    instances = model.instances()
    ranges = [loop.source.range] + [d.range for d in (model.kernel_decls.get(instances[i].kernel.mangled)
                                                     for i in loop.launches if i in instances) if d is not None]
    used = model.source.macros_in(ranges + model.source.device_function_ranges, objects_only=False)
    return [name for name in used if name in model.source.build_dependent_macros]


def _braced(src: ForLoop) -> bool:
    with open(src.range.file, "rb") as handle:
        handle.seek(src.body_range.start_offset)
        return handle.read(1) == b"{"


def _same_iterations(model: ProgramModel, first: HostLoop, second: HostLoop) -> bool:
    """The two loops run the same iterations (the outer loops' iterations as they are): their
    domains are exact and one set, or their exits compare their iterators alike with the same
    values computed before them (a bound from argv or data: ``LoopInfo.exits``)."""
    stmts = model.host.statements
    a, b = stmts[first.launches[0]], stmts[second.launches[0]]
    if a.loops[:-1] != b.loops[:-1] or a.loops[-1] != first.info.iterator or b.loops[-1] != second.info.iterator:
        return False
    if first.info.exits is not None and first.info.exits == second.info.exits \
            and first.source.header_text is not None and first.source.header_text == second.source.header_text:
        return True  # (the headers alike too: the compiler's form of the exits need not show the entry test)
    if not (first.info.exact and second.info.exact):
        return False
    da, db = host_domain(a), host_domain(b)
    return da is not None and db is not None and da.is_equal(db)


def _backward_dependence(model: ProgramModel, uar: UAR, earlier: HostLoop, later: HostLoop) -> str | None:
    """A dependence from an iteration of ``earlier`` to an earlier iteration of ``later``, in
    one iteration of the loops around both: the order the fused loop would reverse."""
    outer = len(model.host.statements[earlier.launches[0]].loops) - 1
    mine, theirs = set(earlier.launches), set(later.launches)
    for dep in uar.dependences:
        if dep.src not in mine or dep.dst not in theirs:
            continue
        rel = isl.Map(dep.relation)
        for pos in range(outer):
            rel = rel.equate(_IN, pos, _OUT, pos)
        if not rel.order_gt(_IN, outer, _OUT, outer).is_empty():
            article = "an" if dep.kind[0] in "aeiou" else "a"
            return (f"{article} {dep.kind} dependence on {dep.buffer} runs from an iteration of the loop at line "
                    f"{earlier.source.range.line} (line {model.host.statements[dep.src].line}) to an earlier "
                    f"iteration of the loop at line {later.source.range.line} (line "
                    f"{model.host.statements[dep.dst].line}): fused, it would run the other way")
    return None


def _unprofitable(model: ProgramModel, uar: UAR, chain: LoopChain) -> str | None:
    """None when some launch of the first loop and some launch of a later one are joined by
    no dependence across blocks in one fused iteration (the schedule may fuse them), else
    why the loops are left as they are."""
    outer = len(model.host.statements[chain.loops[0].launches[0]].loops) - 1
    for later in chain.loops[1:]:
        for a in chain.loops[0].launches:
            for b in later.launches:
                if not any(_across_blocks(isl.Map(d.relation), outer) for d in uar.edges_between(a, b)):
                    return None
    return ("fusing the loops gains nothing: within one iteration every launch of the first loop depends across "
            "blocks on every launch of the others")


def _across_blocks(relation: isl.Map, outer: int) -> bool:
    """Instances of one fused iteration (the loops' iterators equal, outer ones too) that the
    relation joins across blocks (the three block coordinates follow the iterators)."""
    same = relation
    for pos in range(outer + 1):
        same = same.equate(_IN, pos, _OUT, pos)
    block = same
    for pos in range(outer + 1, outer + 4):
        block = block.equate(_IN, pos, _OUT, pos)
    return not same.is_subset(block)
