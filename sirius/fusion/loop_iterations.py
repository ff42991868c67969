"""Successive iterations of a host loop: why they stay in different launches.

A launch statement in a host loop runs once per iteration. The schedule fuses launches
within one iteration (``fusion.regions``: a region never spans two iterations), and a
loop's iterations become one launch only as waves of cells run persistently
(``--cooperative --persistent``, ``fusion.cell_waves``). Everywhere else the last launch of
iteration k and the first launch of iteration k + 1 (one statement with itself, for a loop
around one launch) are two launches that follow one another and end in different launches
of the optimized program, like any two; ``loop_pairs`` lists them, one per host loop, and
``iteration_refusals`` gives each the reason, from the facts the analysis has:

* host statements of the loop body between the two (a copy, a memset, a synchronization
  the host may observe device work through) order them (``HOST_STATEMENT``);
* a global dependence of the UAR from the last launch to the first, carried by the loop
  from an iteration to the next (outer loops' iterations equal): only a grid-wide barrier
  orders them (``LOOP_CARRIED``);
* else no dependence, or only thread- or block-level ones, joins them: one launch could
  run both, and what keeps them apart is the mode: every arrangement launches each
  iteration of a host loop, a wavefront one anti-diagonal per launch, waves of cells one
  wave per launch without ``--persistent`` (``LOOP_ITERATIONS``, a choice, not a legality
  problem).

Each refusal carries the loop (``Refusal.loop``) so that the pipeline's check that every
pair left apart has a reason (``pipeline.pairs_without_reason``) covers these pairs too. A
loop whose first or last launch cannot be a fragment has that refusal already.
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from sirius.analysis.evaluate import LoopInfo
from sirius.analysis.host_observation import observes_nothing, sync_observers
from sirius.analysis.program_model import ProgramModel, host_domain
from sirius.analysis.uar import UAR, Dependence
from sirius.fusion.schedule import Problem, Refusal, RefusalKind, Schedule

_IN, _OUT = isl.dim_type.in_, isl.dim_type.out


@dataclass(frozen=True)
class LoopPair:
    """The last launch statement of an iteration of ``loop`` and the first of the next one."""

    loop: LoopInfo
    last: int
    first: int
    prefix: tuple[str, ...]  # the host loops around the body, outermost first, ending with ``loop``

    @property
    def launches(self) -> tuple[int, int]:
        return self.last, self.first


def loop_pairs(model: ProgramModel) -> list[LoopPair]:
    """One pair per host loop that holds launches and may run more than one iteration
    (for some iteration of the loops around it)."""
    insts = model.instances()
    stmts = model.host.statements
    pairs = []
    for info in model.host.loops:
        launches = [s.index for s in stmts if info.iterator in s.loops and s.kind == "launch" and s.index in insts]
        if not launches:
            continue
        first, last = stmts[launches[0]], stmts[launches[-1]]
        prefix = first.loops[:first.loops.index(info.iterator) + 1]
        if last.loops[:len(prefix)] != prefix:  # not one nest (the model would not say so)
            continue
        pair = LoopPair(info, last.index, first.index, prefix)
        following = _next_iteration(model, pair)
        if following is None or not following.is_empty():
            pairs.append(pair)
    return pairs


def in_one_launch(schedule: Schedule, pair: LoopPair) -> bool:
    """Both launches belong to a loop the optimized program runs as one launch: waves of
    cells, persistent."""
    return any(plan.persistent and {pair.last, pair.first} <= {i for row in plan.repetition.statements for i in row}
               for plan in schedule.cell_waves.values())


def iteration_refusals(model: ProgramModel, uar: UAR, schedule: Schedule, cooperative: bool,
                       persistent: bool) -> list[Refusal]:
    """A refusal for each loop pair the optimized program leaves in different launches (see
    the module docstring); none where the first or the last launch cannot be a fragment."""
    alone = {r.launches[0] for r in schedule.refusals if r.kind is RefusalKind.NOT_A_FRAGMENT}
    out = []
    for pair in loop_pairs(model):
        if in_one_launch(schedule, pair) or {pair.last, pair.first} & alone:
            continue
        problem = _problem(model, uar, schedule, pair, cooperative, persistent)
        out.append(Refusal.of(pair.launches, problem, pair.loop.iterator))
    return out


def _problem(model: ProgramModel, uar: UAR, schedule: Schedule, pair: LoopPair, cooperative: bool,
             persistent: bool) -> Problem:
    insts = model.instances()
    a, b = insts[pair.last], insts[pair.first]
    where = f"the host loop at line {pair.loop.line}" if pair.loop.line is not None else "a host loop"
    if pair.last == pair.first:
        head = f"{a.kernel.name} ({a.where}) in successive iterations of {where}"
    else:
        head = (f"{a.kernel.name} ({a.where}) ending an iteration of {where} and {b.kernel.name} "
                f"({b.where}) beginning the next")
    between = _host_statements_between(model, pair)
    if between:
        shown = "; ".join(s.describe() for s in between[:3]) + ("; ..." if len(between) > 3 else "")
        return Problem(RefusalKind.HOST_STATEMENT, f"{head}: host statements between them order them: {shown}")
    deps = _carried(model, uar, pair)
    wide = [d for d in deps if d.width not in ("thread", "block")]
    if wide:
        return Problem(RefusalKind.LOOP_CARRIED,
                       f"{head}: a global dependence on {_buffers(wide)} joins them, carried by the loop: only a "
                       f"grid-wide barrier orders them; {_mode(schedule, pair, cooperative, persistent, True)}")
    if deps:
        widths = sorted({d.width for d in deps}, key=("thread", "block").index)
        joined = f"only {' and '.join(widths)}-level dependences on {_buffers(deps)} join them"
    else:
        joined = "no dependence joins them"
    return Problem(RefusalKind.LOOP_ITERATIONS, f"{head}: {joined}, so one launch could run both; "
                                                f"{_mode(schedule, pair, cooperative, persistent, False)}")


def _buffers(deps: list[Dependence]) -> str:
    names = list(dict.fromkeys(d.buffer for d in deps))
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]


def _mode(schedule: Schedule, pair: LoopPair, cooperative: bool, persistent: bool, carried: bool) -> str:
    """What runs the loop's iterations as separate launches in this run, and what would run
    the loop as one (with a grid barrier between steps, for a ``carried`` dependence)."""
    both = {pair.last, pair.first}
    for plan in schedule.cell_waves.values():
        if both <= {i for row in plan.repetition.statements for i in row}:
            return ("the loop runs as waves of cells, one launch per wave (--persistent runs every wave in one "
                    "launch" + (", a grid barrier between two waves)" if carried else ")"))
    for group in schedule.groups:
        if group.id in schedule.wavefronts and both <= set(group.launches):
            return "the wavefront runs the loop nest one anti-diagonal of iterations per launch"
    if cooperative and persistent:
        refused = next((r for r in schedule.refusals if r.kind is RefusalKind.NO_WAVES and set(r.launches) & both),
                       None)
        if refused is not None:
            return f"the loop is not one launch with --cooperative --persistent: {refused.reason}"
        waved = [plan.repetition.loop.range.line for plan in schedule.cell_waves.values()]
        return ("with --cooperative --persistent only the first host loop that launches kernels is tried as one "
                "launch" + (f" (the loop at line {waved[0]})" if waved else ""))
    needs = "--persistent" if cooperative else "--cooperative --persistent"
    return (f"each arrangement launches every iteration of a host loop, only waves of cells ({needs}) run the "
            "loop as one launch" + (", a grid barrier between steps" if carried else ""))


def _host_statements_between(model: ProgramModel, pair: LoopPair):
    """The statements of the loop body after its last launch or before its first that order
    the launches around them (every statement but a synchronization that observes nothing)."""
    observers = sync_observers(model)
    insts = model.instances()
    return [s for s in model.host.statements
            if pair.loop.iterator in s.loops and (s.index > pair.last or s.index < pair.first)
            and (s.kind != "launch" or s.index not in insts) and not observes_nothing(s, observers)]


def _next_iteration(model: ProgramModel, pair: LoopPair) -> isl.Map | None:
    """``{ [outer, k] -> [outer, k'] }``: each iteration of the pair's loop in which its last
    launch runs, to the next iteration in which its first launch runs, the outer loops'
    iterations equal (empty when the loop runs once); None when the domains are not known."""
    stmts = model.host.statements
    doms = [host_domain(stmts[i]) for i in (pair.last, pair.first)]
    if any(d is None for d in doms):
        return None
    n = len(pair.prefix)
    src, dst = (d.project_out(isl.dim_type.set, n, d.dim(isl.dim_type.set) - n).reset_tuple_id() for d in doms)
    src, dst = src.align_params(dst.get_space()), dst.align_params(src.get_space())
    outer = "".join(f"p{j} = o{j} and " for j in range(n - 1))
    later = isl.Map(f"{{ [{', '.join(f'o{j}' for j in range(n))}] -> [{', '.join(f'p{j}' for j in range(n))}] : "
                    f"{outer}p{n - 1} > o{n - 1} }}")
    return later.align_params(src.get_space()).intersect_domain(src).intersect_range(dst).lexmin()


def _carried(model: ProgramModel, uar: UAR, pair: LoopPair) -> list[Dependence]:
    """The UAR's dependences from the last launch of an iteration to the first launch of the
    next iteration of the pair's loop (every one from the last launch to the first, where
    the domains are not known). The dependence's width is the UAR's, over all its instances."""
    following = _next_iteration(model, pair)
    n = len(pair.prefix)
    out = []
    for d in uar.edges_between(pair.last, pair.first):
        if following is not None:
            rel = isl.Map(d.relation)
            rel = rel.project_out(_IN, n, rel.dim(_IN) - n).project_out(_OUT, n, rel.dim(_OUT) - n)
            rel = rel.reset_tuple_id(_IN).reset_tuple_id(_OUT)
            step = following.align_params(rel.get_space())
            if rel.align_params(step.get_space()).intersect(step).is_empty():
                continue
        out.append(d)
    return out
