"""Wavefront scheduling of a fused group across a two-deep host loop nest.

The LSTM pattern (paper figure 9): a loop nest ``for o … for i …`` whose body
is one fused group, where iteration (o, i) depends on (o, i-1) and (o-1, i)
only. isl's scheduler returns the permutable band [o, i] with no parallel
member; skewing it to [o + i, i] makes the inner member parallel, so all
iterations on one anti-diagonal ``o + i = w`` run in one launch and the
nest becomes a loop over waves (isl's AST generator builds it).

isl's scheduler is asked for the schedule first, with the dependences
carried across iterations as validity and proximity constraints: it must
return one permutable band over both loops. Legality of the skew is then
proven on the UAR: every such dependence must go to a strictly later wave
(``o' + i' > o + i``). Preconditions, each refused with a reason otherwise:
the nest holds nothing but side-effect-free declarations and the group's
launches; the loop domains are constant rectangles; every argument is an
allocation plus an affine offset in the iterators, or a constant.
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from sirius.analysis.program_model import ProgramModel
from sirius.analysis.source_index import ForLoop
from sirius.analysis.uar import UAR
from sirius.fusion.fragments import helper_reason, index_helpers
from sirius.fusion.schedule import FusionGroup, Refusal, Region


@dataclass(frozen=True)
class Wavefront:
    group: int  # FusionGroup id
    outer: str  # host iterator names
    inner: str
    outer_loop: ForLoop  # the source loop nest replaced
    wave_for: str  # C text of the generated wave loop header, iterator sirius_w
    lo: str  # C expression of the first inner index of wave sirius_w
    hi: str
    waves: int
    allocations: tuple[str, ...]  # base pointers the wave kernel needs
    extents: tuple[int, int] = (0, 0)  # trips of the outer and inner loop (from 0)
    source_iterators: tuple[str, str] = ("", "")  # the loops' variables as the source names them


def _rect(domain_text: str, names: list[str]) -> tuple[int, int] | None:
    s = isl.Set(f"{{ [{', '.join(names)}] : {domain_text} }}")
    if not s.is_bounded() or s.is_empty():
        return None
    extents = []
    for k in range(2):
        lo = s.dim_min_val(k).to_python() if hasattr(s, "dim_min_val") else None
        hi = s.dim_max_val(k).to_python() if hasattr(s, "dim_max_val") else None
        if lo != 0 or hi is None:
            return None
        extents.append(hi + 1)
    box = isl.Set(f"{{ [{names[0]}, {names[1]}] : 0 <= {names[0]} < {extents[0]} and 0 <= {names[1]} < {extents[1]} }}")
    return (extents[0], extents[1]) if s.is_equal(box) else None


def permutable_band(domain: isl.UnionSet, carried: list[isl.Map]) -> bool:
    """Whether isl's scheduler, given the carried dependences between instances of
    ``domain`` (one statement ``S``) as validity and proximity constraints, returns
    one permutable band over both loops (the precondition for skewing them into waves)."""
    deps = isl.UnionMap("{ }")
    for rel in carried:
        deps = deps.union(isl.UnionMap.from_map(rel.set_tuple_name(isl.dim_type.in_, "S")
                                                .set_tuple_name(isl.dim_type.out, "S")))
    tree = isl.ScheduleConstraints.on_domain(domain).set_validity(deps).set_proximity(deps).compute_schedule()
    band = tree.get_root().child(0)
    return (band.get_type() == isl.schedule_node_type.band and band.band_n_member() == 2
            and band.band_get_permutable())


def wave_loop(outer: str, inner: str, domain: str) -> tuple[str, str, str]:
    """The loop over anti-diagonals of the nest ``{ [outer, inner] : domain }``, from isl's
    AST generator over the skewed schedule ``[outer, inner] -> [outer + inner, inner]``:
    the C header of the wave loop (iterator ``sirius_w``) and C expressions of the first
    and last ``inner`` index of wave ``sirius_w``."""
    dom = isl.UnionSet(f"{{ S[{outer}, {inner}] : {domain} }}")
    sched = isl.UnionMap(f"{{ S[{outer}, {inner}] -> [{outer} + {inner}, {inner}] }}").intersect_domain(dom)
    node = isl.AstBuild.from_context(isl.Set("{ : }")).node_from_schedule_map(sched)
    body = node.for_get_body()
    fix = lambda t: t.replace("min(", "sirius_min(").replace("max(", "sirius_max(")
    it = node.for_get_iterator().to_C_str()
    wave_for = (f"for (int sirius_w = {node.for_get_init().to_C_str()}; "
                f"{node.for_get_cond().to_C_str().replace(it, 'sirius_w')}; sirius_w += 1)")
    lo = fix(body.for_get_init().to_C_str().replace(it, "sirius_w"))
    hi = fix(body.for_get_cond().op_get_arg(1).to_C_str().replace(it, "sirius_w"))
    return wave_for, lo, hi


def plan_wavefront(model: ProgramModel, uar: UAR, region: Region, group: FusionGroup) -> Wavefront | Refusal | None:
    """A wavefront for ``group`` when it is legal and useful (see the module docstring)."""
    if len(region.loops) != 2 or set(group.launches) != set(region.launches):
        return None
    first = model.launch(group.launches[0])
    o, i = region.loops
    why = lambda r: Refusal(tuple(group.launches), f"no wavefront over host loops: {r}")
    if len(group.lanes) != 1:
        return why("the group is not a single vertical lane")
    if any(model.launch(i).statement.grid is None or model.launch(i).statement.grid.constant() is None
           for i in group.launches):  # the wave kernel counts each cell's blocks as a constant
        return why("a grid is computed at run time")
    helper = next((model.launch(i) for i in group.launches if index_helpers(model, model.launch(i))), None)
    if helper is not None:
        return why(helper_reason(model, helper))
    stmt = first.statement
    if stmt.domain is None or not stmt.domain.is_affine():
        return why("loop domain is not affine")
    rect = _rect(stmt.domain.to_isl(), [o, i])
    if rect is None:
        return why("loop domain is not a constant rectangle starting at 0")
    outer_line = next((lp.line for lp in model.host.loops if lp.iterator == o), None)
    inner_line = next((lp.line for lp in model.host.loops if lp.iterator == i), None)
    outer_loop = model.source.for_loop_at(outer_line)
    inner_loop = model.source.for_loop_at(inner_line)
    if outer_loop is None or inner_loop is None:
        return why("loop statements not found in the source")
    if [k for k, _ in outer_loop.body] != ["for"] or outer_loop.body[0][1].line != inner_loop.range.line:
        return why("the outer loop holds more than the inner loop")
    if outer_loop.iterator is None or inner_loop.iterator is None:
        return why("a loop does not declare its own iterator variable")
    directive = model.source.directive_in(outer_loop.range, conditionals=False)
    if directive is not None:  # (a conditional reads alike in both copies)
        return why(f"a preprocessor directive (line {directive}) stands in the loop nest, whose text the emitted "
                   "program writes twice (its values checked, then the nest as written): in the second copy its "
                   "macros would be those the first left")
    if not (outer_loop.header_pure and inner_loop.header_pure):
        return why("a loop's condition or increment changes more than its iterator")
    if any(k not in ("decl", "launch") for k, _ in inner_loop.body) or \
            sum(k == "launch" for k, _ in inner_loop.body) != len(group.launches):
        return why("the loop body holds statements other than declarations and the fused launches")
    allocations: set[str] = set()
    for inst in map(model.launch, group.launches):
        for name, arg in inst.bindings:
            if arg.kind == "buffer" and arg.offset is not None and arg.offset.to_c() is not None:
                allocations.add(arg.buffer)
            elif arg.kind == "scalar" and ((arg.value is not None and arg.value.to_c() is not None) or arg.text):
                continue
            else:
                return why(f"argument {name} of {inst.kernel.name} is not an allocation plus affine offset")
    alloc_lines = {a.name: a.line for a in model.host.allocations}
    if any((alloc_lines.get(a) or 0) >= outer_loop.range.line for a in allocations):
        return why("an allocation is made after the loop starts")
    # the dependences between different iterations, as relations between (o, i) pairs:
    # every dependence of the nest counts, also one that links the same iteration too
    # (its same-iteration part stays inside one fused cell, in the lane's order)
    members = set(group.launches)
    carried: list[tuple[str, isl.Map]] = []
    for d in uar.dependences:
        if d.src in members and d.dst in members:
            rel = isl.Map(d.relation)
            rel = rel.project_out(isl.dim_type.in_, 2, rel.dim(isl.dim_type.in_) - 2)
            rel = rel.project_out(isl.dim_type.out, 2, rel.dim(isl.dim_type.out) - 2)
            rel = rel.reset_tuple_id(isl.dim_type.in_).reset_tuple_id(isl.dim_type.out)
            rel = rel.intersect(isl.Map("{ [a0, a1] -> [b0, b1] : a0 != b0 or a1 != b1 }"))
            if rel.is_empty():
                continue
            if rel.dim(isl.dim_type.param):
                return why(f"dependence on {d.buffer} depends on a runtime value")
            carried.append((d.buffer, rel))
    dom = isl.UnionSet(f"{{ S[{o}, {i}] : {stmt.domain.to_isl()} }}")
    if not permutable_band(dom, [rel for _, rel in carried]):
        return why("isl's scheduler finds no permutable band over the two loops")
    # legality of the skew: every carried dependence goes to a strictly later wave
    later_wave = isl.Map("{ [a0, a1] -> [b0, b1] : b0 + b1 > a0 + a1 }")
    for buffer, rel in carried:
        if not rel.is_subset(later_wave):
            return why(f"dependence on {buffer} is not carried to a later anti-diagonal")
    wave_for, lo, hi = wave_loop(o, i, stmt.domain.to_isl())
    return Wavefront(group.id, o, i, outer_loop, wave_for, lo, hi, rect[0] + rect[1] - 1,
                     tuple(sorted(allocations)), rect, (outer_loop.iterator, inner_loop.iterator))
