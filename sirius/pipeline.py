"""The optimization pipeline, listed in one place.

Each stage is a named step over a shared state; ``sirius optimize
--print-after NAME`` dumps the state after that stage. The order matters:
the UAR needs the program model, the schedule needs the UAR, code
generation needs the schedule.

The pipeline has no back-edges. A legality fact found after the schedule (a fragment's
read-only-cache load that another fragment would write, found by the promises stage; a
promise or launch limit the emitted program breaks, found by the check) is returned by
its stage as a ``LateFact``; ``run_pipeline`` then runs ``PIPELINE`` again from the
schedule, whose stages honour every late fact found so far. Another arrangement, policy
or mode (``rearrange``) is ``PIPELINE`` run from the schedule too.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable

from sirius.analysis.build_macros import macro_expansions
from sirius.analysis.frontend import CompileJob
from sirius.analysis.program_model import ProgramModel, analyze_program, launch_count, statement_runs
from sirius.analysis.uar import UAR, build_uar
from sirius.core.config import cache_folder
from sirius.core.errors import InputError, SiriusError
from sirius.fusion.barriers import place_barriers
from sirius.fusion.check import CheckResult, check_program
from sirius.fusion.code_motion import interleave_fragments
from sirius.analysis.repetition import NotALoop, find_repetition
from sirius.fusion.cell_waves import install_cell_waves, narrowest_block, no_waves, plan_cell_waves
from sirius.fusion.cooperative import plan_cooperative
from sirius.fusion.codegen import generate
from sirius.fusion.fragment_text import line_file_name
from sirius.fusion.guards import guard_program
from sirius.fusion.host_constants import propagate_host_constants
from sirius.fusion.host_loops import LoopFusionPlan, LoopFusionRefusal, plan_loop_fusion, rewrite_loops
from sirius.fusion.kernel_ir import CellWavesLaunch, FusedProgram, KernelIR
from sirius.fusion.loop_iterations import in_one_launch, iteration_refusals, loop_pairs
from sirius.fusion.lowering import lower
from sirius.fusion.promises import BrokenPromise, keep_promises
from sirius.fusion.read_once import read_shared_inputs_once
from sirius.fusion.redundant_barriers import eliminate_redundant_barriers
from sirius.fusion.region_paths import regions_of
from sirius.fusion.policies import FusionPolicy, Greedy, policy_name
from sirius.fusion.schedule import Refusal, RefusalKind, Schedule
from sirius.fusion.scheduler import build_schedule, split_group, wavefront_declined, waves_declined
from sirius.fusion.shared_overlay import overlay_shared_memory
from sirius.fusion.verify_ir import ir_violations
from sirius.fusion.wavefront import Wavefront, plan_wavefront


@dataclass(frozen=True)
class PassFacts:
    """What the stages after lowering read besides the fused-kernel IR: the program model,
    the UAR, and the program's macros as this build expands them. Each pass takes the IR
    and the one fact it needs from here (never the pipeline's state)."""

    model: ProgramModel
    uar: UAR
    macros: dict[str, str]


@dataclass(frozen=True)
class KernelPass:
    """A transformation of the fused kernels after fusion, which can be switched off:
    ``run(kernels, facts)`` returns the kernels and one line per change it made."""

    name: str
    run: Callable[[list[KernelIR], PassFacts], tuple[list[KernelIR], list[str]]]
    summary: str


KERNEL_PASSES: tuple[KernelPass, ...] = (
    KernelPass("code-motion", lambda kernels, facts: interleave_fragments(kernels, facts.uar),
               "independent fragments of a lane are reordered to share barriers"),
    KernelPass("redundant-barriers", lambda kernels, facts: eliminate_redundant_barriers(kernels, facts.model),
               "barriers that order no dependence go: fragments' own, and those placed between fragments"),
    KernelPass("shared-overlay", lambda kernels, facts: overlay_shared_memory(kernels, facts.model),
               "fragments' static shared arrays share one region, with a barrier between users"),
    KernelPass("host-constants", lambda kernels, facts: propagate_host_constants(kernels, facts.model),
               "integer arguments, pointer distances and launch shapes the guard checks become constants"),
    KernelPass("read-once", lambda kernels, facts: read_shared_inputs_once(kernels, facts.model),
               "an input several fragments read and none writes is read through one restrict base"),
)


def pass_names() -> list[str]:
    return [p.name for p in KERNEL_PASSES]


class LateScope(Enum):
    """What a late fact takes back."""

    GROUP = "group"  # the group's launches run unfused
    COOPERATIVE = "cooperative"  # the region's groups are not one cooperative launch
    CELL_WAVES = "cell waves"  # the loop does not run as waves of cells


@dataclass(frozen=True)
class LateFact:
    """A legality fact found after the schedule: the launches it concerns (a group's, a
    region's, a loop's) and the reason the report gives."""

    scope: LateScope
    launches: tuple[int, ...]
    reason: str

    def concerns(self, launches) -> bool:
        return not set(self.launches).isdisjoint(launches)


@dataclass
class OptimizeState:
    job: CompileJob
    entry: str = "main"
    arrangement: str = "auto"
    passes: tuple[str, ...] = tuple(p.name for p in KERNEL_PASSES)  # kernel passes switched on
    cooperative: bool = False  # a region's groups as phases of one cooperative launch (fusion.cooperative)
    policy: FusionPolicy = field(default_factory=Greedy)  # chooses among the legal merges (fusion.policies)
    persistent: bool = False  # waves of cells as one launch, a grid barrier between waves (fusion.cell_waves)
    source: str = ""
    # the program analysed, where it is not the user's file: its sibling loops fused (``host-loops``)
    analyzed_job: CompileJob | None = None
    loop_fusion: LoopFusionPlan = field(default_factory=LoopFusionPlan)
    model: ProgramModel | None = None
    uar: UAR | None = None
    schedule: Schedule | None = None
    program: FusedProgram = field(default_factory=FusedProgram)  # the fused launches, as the passes leave them
    promises_dropped: dict[int, tuple[BrokenPromise, ...]] = field(default_factory=dict)  # group -> restrict taken back
    output: str = ""
    fused: list[KernelIR] = field(default_factory=list)  # the kernels as printed, with their run-time guards
    check: CheckResult | None = None
    check_findings: list = field(default_factory=list)  # violations found (and undone) on earlier attempts
    pass_changes: dict[str, list[str]] = field(default_factory=dict)  # kernel pass -> what it changed
    macro_expansions: dict[str, str] = field(default_factory=dict)  # the program's macros as this build expands them
    late_facts: tuple[LateFact, ...] = ()  # found after the schedule, honoured when it runs again
    # check the kernel IR's invariants after every stage and pass that changes it (--verify-each)
    verify_each: bool = field(default_factory=lambda: os.environ.get("SIRIUS_VERIFY_EACH") == "1")

    @property
    def facts(self) -> PassFacts:
        """What the stages after lowering may read besides the IR."""
        return PassFacts(self.model, self.uar, self.macro_expansions)

    def late(self, scope: LateScope) -> list[LateFact]:
        return [f for f in self.late_facts if f.scope is scope]

    @property
    def kernels(self) -> list[KernelIR]:
        """The fused kernels of ``program``, in the schedule's order."""
        return self.program.kernels()

    def change_kernels(self, change: Callable[[list[KernelIR]], tuple]) -> tuple:
        """``change`` applied to the fused kernels: ``program`` takes the kernels it returns
        first; the rest of what it returns is returned."""
        kernels, *rest = change(self.kernels)
        self.program = self.program.with_kernels(kernels)
        return tuple(rest)


@dataclass(frozen=True)
class Stage:
    """A step of the pipeline: ``run`` updates the state and returns the late facts it
    found (none: the pipeline goes on)."""

    name: str
    run: Callable[[OptimizeState], tuple[LateFact, ...] | None]
    summary: str


def _analyze(st: OptimizeState) -> None:
    job = st.analyzed_job or st.job
    # as bytes: clang's offsets count a CRLF line end as two (read_text would make it one)
    st.source = job.path.read_bytes().decode()
    st.model = analyze_program(job, entry=st.entry)
    index = st.model.source
    used = [d.range for d in st.model.kernel_decls.values()] + [s.range for s in index.launches]
    st.macro_expansions = macro_expansions(job, index.macros_in(used + index.device_function_ranges))


def _uar(st: OptimizeState) -> None:
    st.uar = build_uar(st.model, barriers=False, reindexed_widths=False)


def _host_loops(st: OptimizeState) -> None:
    plan = plan_loop_fusion(st.model, st.uar)
    st.loop_fusion = plan
    if not plan.chains:
        return
    before = (st.source, st.model, st.macro_expansions, st.uar)
    st.analyzed_job = loop_fused_job(st.job, rewrite_loops(st.job.path.read_bytes(), plan.chains))
    try:
        _analyze(st)
    except (InputError, SiriusError) as err:  # a case the legality above missed: the loops stay as written
        st.analyzed_job = None
        st.source, st.model, st.macro_expansions, st.uar = before
        first = str(err).strip().splitlines()
        st.loop_fusion = LoopFusionPlan((), plan.refusals + tuple(
            LoopFusionRefusal(chain.lines[:2], "internal error caught: the merged loops do not compile"
                              + (f" ({first[1][:200]})" if len(first) > 1 else "")) for chain in plan.chains))
        return
    _uar(st)


def loops_fused(plan: LoopFusionPlan) -> list[dict]:
    """The report's ``loops_fused``: each chain's lines, and the variables renamed."""
    return [{"lines": list(chain.lines)}
            | ({"renamed": [{"line": loop.source.range.line, "name": name, "now": now}
                            for loop in chain.loops for name, now in loop.renames]}
               if any(loop.renames for loop in chain.loops) else {})
            for chain in plan.chains]


def loop_fused_job(job: CompileJob, text: bytes) -> CompileJob:
    """``job`` compiling ``text`` instead of its file: the text written under the file's name
    in a folder of the cache named by its content, the file's folder first on the include
    path (where the file's own includes are found)."""
    folder = cache_folder() / "loop-fusion" / hashlib.sha256(text).hexdigest()[:20]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / job.path.name
    if not path.is_file() or path.read_bytes() != text:
        path.write_bytes(text)
    flags = dataclasses.replace(job.flags, include_dirs=(str(job.path.resolve().parent),) + job.flags.include_dirs)
    return CompileJob(path, flags, job.toolchain)


def _schedule(st: OptimizeState) -> None:
    schedule = build_schedule(st.model, st.uar, st.arrangement, st.policy)
    for fact in st.late(LateScope.GROUP):
        for group in [g for g in schedule.groups if len(g.launches) > 1 and fact.concerns(g.launches)]:
            schedule = split_group(schedule, group, fact.reason)
    st.schedule = schedule


def _wavefront(st: OptimizeState) -> None:
    wavefronts, refusals = {}, []
    for region in st.schedule.regions:
        groups = [g for g in st.schedule.groups if g.region == region.id]
        if len(groups) != 1 or len(groups[0].launches) < 1:
            continue
        plan = plan_wavefront(st.model, st.uar, region, groups[0])
        if isinstance(plan, Wavefront):
            refused = wavefront_declined(st.model, st.policy, groups[0])
            if refused is None:
                wavefronts[groups[0].id] = plan
            else:
                refusals.append(refused)
        elif plan is not None:
            refusals.append(plan)
    st.schedule = dataclasses.replace(st.schedule, wavefronts=wavefronts).refused(*refusals)


def _cell_waves(st: OptimizeState) -> None:
    if st.cooperative:
        st.schedule = _with_cell_waves(st, st.schedule)


def _with_cell_waves(st: OptimizeState, schedule: Schedule) -> Schedule:
    """``schedule`` with the loop of repeated layers run as waves of cells, or with the
    reason it is not."""
    found = find_repetition(st.model, whole_body=st.persistent)
    if isinstance(found, NotALoop):
        waved = {i for g in schedule.groups if g.id in schedule.wavefronts for i in g.launches}
        if set(found.statements) & waved:  # a loop nest the wavefront already runs by anti-diagonals
            return schedule
        return schedule.refused(no_waves(found.statements, f"the repeated launches are not one loop: {found.reason}"))
    if found is None:
        return schedule
    loop = [i for row in found.statements for i in row]
    withheld = next((f for f in st.late(LateScope.CELL_WAVES) if f.concerns(loop)), None)
    if withheld is not None:
        return schedule.refused(no_waves(loop, withheld.reason))
    plan = plan_cell_waves(st.model, schedule, found)
    if isinstance(plan, Refusal):
        return schedule.refused(plan)
    refused = waves_declined(st.model, st.policy, [list(row) for row in found.statements])
    if refused is not None:
        return schedule.refused(refused)
    return install_cell_waves(schedule, dataclasses.replace(plan, persistent=st.persistent))


def _cooperative(st: OptimizeState) -> None:
    if not st.cooperative:
        return
    plans, refusals = plan_cooperative(st.model, st.schedule)
    regions = {r.id: r for r in st.schedule.regions}
    for plan in list(plans):
        launches = regions[plan.region].launches
        withheld = next((f for f in st.late(LateScope.COOPERATIVE) if f.concerns(launches)), None)
        if withheld is not None:
            plans.remove(plan)
            refusals.append(Refusal((launches[0], launches[-1]), withheld.reason))
    st.schedule = dataclasses.replace(st.schedule, cooperative={p.region: p for p in plans}).refused(*refusals)


def _iterations(st: OptimizeState) -> None:
    st.schedule = st.schedule.refused(*iteration_refusals(st.model, st.uar, st.schedule, st.cooperative,
                                                          st.persistent))


def _lower(st: OptimizeState) -> None:
    st.program = lower(st.model, st.schedule)


def _barriers(st: OptimizeState) -> None:
    st.change_kernels(lambda kernels: (place_barriers(kernels, st.facts.uar),))


def _cell_block(st: OptimizeState) -> None:
    st.program = dataclasses.replace(st.program, launches=tuple(
        dataclasses.replace(launch, plan=narrowest_block(st.facts.model, launch.plan, list(launch.phases)))
        if isinstance(launch, CellWavesLaunch) else launch for launch in st.program.launches))


def _promises(st: OptimizeState) -> tuple[LateFact, ...]:
    st.promises_dropped, unfused = st.change_kernels(lambda kernels: keep_promises(kernels, st.facts.model))
    return tuple(LateFact(LateScope.GROUP, tuple(sorted(group.launches)), reason) for group, reason in unfused)


def _passes(st: OptimizeState) -> None:
    st.pass_changes = {}
    facts = st.facts
    for kernel_pass in KERNEL_PASSES:
        if kernel_pass.name in st.passes:
            st.pass_changes[kernel_pass.name], = st.change_kernels(lambda kernels: kernel_pass.run(kernels, facts))
            _verify_ir(st, f"pass {kernel_pass.name}")


def _verify_ir(st: OptimizeState, after: str) -> None:
    """With ``verify_each``, the kernel IR's invariants (``fusion.verify_ir``) after ``after``."""
    if not st.verify_each:
        return
    broken = ir_violations(st.program)
    if broken:
        raise SiriusError(f"internal error: the kernel IR after {after} breaks its invariants: " + "; ".join(broken))


def _guards(st: OptimizeState) -> None:
    facts = st.facts
    st.program = guard_program(facts.model, st.program, facts.macros)


def _codegen(st: OptimizeState) -> None:
    st.output, st.fused = generate(st.model, st.program, st.source)
    if st.analyzed_job is not None:  # #line directives name the user's file, not the loop-fused copy analysed
        analyzed, named = (f'"{line_file_name(str(job.path))}"' for job in (st.analyzed_job, st.job))
        st.output = re.sub(r"^(#line \d+ )" + re.escape(analyzed) + r"$", lambda m: m.group(1) + named, st.output,
                           flags=re.M)


def _check(st: OptimizeState) -> tuple[LateFact, ...]:
    """The promise check on the program about to be written; a fused kernel that breaks a
    promise or a launch limit is an internal error, taken back as a late fact: cooperative
    launches and waves first (an option), else the group, with the violation as the reason."""
    if not st.fused:
        st.check = None
        return ()
    st.check = check_program(st.job, st.entry, source=st.output)
    if not st.check.violations:
        return ()
    st.check_findings += st.check.violations
    facts = _taken_back(st, st.check.violations)
    if not facts:
        raise SiriusError("internal error: the promise check finds violations in no fused launch: "
                          + "; ".join(v.message for v in st.check.violations))
    return facts


def _taken_back(st: OptimizeState, violations) -> tuple[LateFact, ...]:
    """What the violations of the check take back: every loop run as waves of cells and the
    cooperative regions they name (all, when they name none); without those, the groups
    they name (every fused group, for a violation that names none)."""
    sched = st.schedule
    if sched.cooperative or sched.cell_waves:
        why = "; ".join(v.message for v in violations)
        facts = [LateFact(LateScope.CELL_WAVES, tuple(i for row in plan.repetition.statements for i in row),
                          f"the promise check found: {why}") for plan in sched.cell_waves.values()]
        named = {v.group for v in violations if v.kernel.startswith("sirius_coop_")}
        regions = {r.id: r for r in sched.regions}
        for region in sorted(named & set(sched.cooperative) or sched.cooperative):
            why = "; ".join(v.message for v in violations if v.group == region) or violations[0].message
            facts.append(LateFact(LateScope.COOPERATIVE, regions[region].launches,
                                  f"not one cooperative launch: the promise check found: {why}"))
        return tuple(facts)
    facts = {}
    for v in violations:
        for group in sched.groups:
            if len(group.launches) > 1 and v.group in (group.id, -1):
                facts.setdefault(group.id, LateFact(LateScope.GROUP, tuple(sorted(group.launches)),
                                                    f"internal error caught by the promise check: {v.message}"))
    return tuple(facts.values())


PIPELINE: tuple[Stage, ...] = (
    Stage("analyze", _analyze, "compile to IR, model kernels and host statements"),
    Stage("uar", _uar, "dependences between statement instances, with widths"),
    Stage("host-loops", _host_loops, "sibling host loops over the same iterations run as one loop where no "
                                     "dependence runs backwards; the program so rewritten is analysed again"),
    Stage("schedule", _schedule, "group launches: vertical (P1), isl time steps (P2), horizontal within a step "
                                 "(P3), never across a global dependence; the fusion policy (--policy) chooses "
                                 "among the legal merges"),
    Stage("wavefront", _wavefront, "skew a fused loop nest so each anti-diagonal is one launch (isl AST)"),
    Stage("cell-waves", _cell_waves, "with --cooperative: a loop body of copies of one launch pattern as a second "
                                     "loop (layers), each anti-diagonal of (step, layer) cells one cooperative launch"),
    Stage("cooperative", _cooperative, "with --cooperative: a region's groups as phases of one cooperative launch, "
                                       "grid barriers between them"),
    Stage("iterations", _iterations, "why successive iterations of each host loop stay in different launches "
                                     "(a carried dependence, host statements, or the mode)"),
    Stage("lower", _lower, "one fused kernel per group: parameters, lanes, fragments, shared arrays (kernel IR)"),
    Stage("barriers", _barriers, "the __syncthreads() each lane needs, with what it orders"),
    Stage("cell-block", _cell_block, "waves of cells: the smallest block the phases allow, their barriers known"),
    Stage("promises", _promises, "keep only the __restrict__ promises the alias facts prove; split groups "
                                 "whose read-only-cache loads another fragment would write"),
    Stage("passes", _passes, "the kernel passes switched on (--passes): " + ", ".join(pass_names())),
    Stage("guards", _guards, "the run-time conditions of each fused launch: the build's macros, the shapes, "
                             "arguments and pointer distances analysed, the values folded into kernels"),
    Stage("codegen", _codegen, "print fragments and fused kernels, rewrite the launch regions"),
    Stage("check", _check, "analyse the emitted program: every promise of a fused kernel holds, every launch "
                           "fits the GPU (ptxas figures); a violation leaves its group unfused"),
)


def stage_names() -> list[str]:
    return [s.name for s in PIPELINE]


MAX_RERUNS = 4  # runs from the schedule after late facts, before the pipeline gives up
IR_STAGES = ("lower", "barriers", "cell-block", "promises", "guards")  # stages that change the kernel IR (and each pass)


def run_pipeline(state: OptimizeState, print_after: str | None = None,
                 dump: Callable[[str, OptimizeState], None] | None = None,
                 start: str = "analyze", entering: Callable[[str], None] | None = None) -> OptimizeState:
    """Run ``PIPELINE`` from the stage ``start`` on ``state``; a stage that returns late
    facts stops the run, and the pipeline runs again from the schedule with them.
    ``entering(name)`` is called before each stage runs (progress)."""
    names = stage_names()
    stages = PIPELINE[names.index(start):]
    for _ in range(MAX_RERUNS + 1):
        for stage in stages:
            if entering is not None:
                entering(stage.name)
            facts = tuple(stage.run(state) or ())
            found = tuple(f for f in facts if f not in state.late_facts)
            if facts and not found:
                raise SiriusError(f"internal error: the {stage.name} stage found again what an earlier run took "
                                  "back: " + "; ".join(f.reason for f in facts))
            if stage.name in IR_STAGES:
                _verify_ir(state, f"the {stage.name} stage")
            if print_after == stage.name and dump is not None:
                dump(stage.name, state)
            if found:
                state.late_facts += found
                break
        else:
            return state
        stages = PIPELINE[names.index("schedule"):]
    raise SiriusError(f"internal error: legality facts were still found after {MAX_RERUNS} runs from the "
                      f"schedule ({len(state.late_facts)} taken back: "
                      + "; ".join(f.reason for f in state.late_facts[-3:]) + ")")


def rearrange(state: OptimizeState, arrangement: str, passes: tuple[str, ...] | None = None,
              cooperative: bool | None = None, policy: FusionPolicy | None = None,
              persistent: bool | None = None) -> OptimizeState:
    """The same analysis scheduled with another arrangement (and other kernel passes,
    cooperative launches on or off, another fusion policy, waves of cells in one launch or
    not, if given): ``PIPELINE`` from the schedule on."""
    other = OptimizeState(state.job, state.entry, arrangement, state.passes if passes is None else passes,
                          state.cooperative if cooperative is None else cooperative,
                          state.policy if policy is None else policy,
                          state.persistent if persistent is None else persistent,
                          source=state.source, analyzed_job=state.analyzed_job, loop_fusion=state.loop_fusion,
                          model=state.model, uar=state.uar,
                          macro_expansions=state.macro_expansions)
    return run_pipeline(other, start="schedule")


def pairs_without_reason(state: OptimizeState) -> list[tuple[int, int]]:
    """Launches that follow one another and end in different launches of the optimized
    program, with no refusal that explains it. Two launches of one iteration, in program
    order: a refusal naming a launch of each side, or one refusing either launch as a
    fragment. The last launch of a host loop's iteration and the first of the next (one
    statement twice, for a loop around one launch; ``fusion.loop_iterations``), unless the
    loop runs as one launch: a refusal of that loop's iterations naming both, or one
    refusing either launch as a fragment. The optimizer's promise is that this list is
    empty."""
    sched = state.schedule
    side = {i: ("group", g.id) for g in sched.groups for i in g.launches}
    side.update({i: ("cooperative", g.region) for g in sched.groups if g.region in sched.cooperative
                 for i in g.launches})
    side.update({i: ("cells", region) for region, plan in sched.cell_waves.items()
                 for row in plan.repetition.statements for i in row})
    order = sorted(i.statement.index for i in state.model.launches)
    side.update({i: ("alone", i) for i in order if i not in side})
    linked = set()
    for r in sched.refusals:
        if r.loop is not None:  # about two iterations, not about launches of one
            continue
        if len(r.launches) == 1:
            linked.add(("alone", r.launches[0]))
        sides = {side.get(i) for i in r.launches}
        linked |= {(x, y) for x in sides for y in sides if x != y}
    missing = [(a, b) for a, b in zip(order, order[1:]) if side[a] != side[b]
               and (side[a], side[b]) not in linked and ("alone", a) not in linked and ("alone", b) not in linked]
    iterations = {(r.loop, r.launches) for r in sched.refusals if r.loop is not None}
    missing += [pair.launches for pair in loop_pairs(state.model)
                if not in_one_launch(sched, pair) and (pair.loop.iterator, pair.launches) not in iterations
                and ("alone", pair.last) not in linked and ("alone", pair.first) not in linked]
    return missing


REPORT_SCHEMA = "sirius-report/4"  # sirius/schemas/report-4.json: a changed shape is a new version


def report(state: OptimizeState) -> dict[str, Any]:
    """What the optimizer did, in the shape ``--report`` writes (``REPORT_SCHEMA``)."""
    model, sched = state.model, state.schedule
    insts = model.instances()

    def per_run(idx: int) -> int | None:
        return statement_runs(insts[idx].statement)

    grouped = {i for g in sched.groups for i in g.launches}
    grouped |= {i for plan in sched.cell_waves.values() for row in plan.repetition.statements for i in row}
    # a cooperative region is one launch per run of its first group; waves of cells, one per wave
    phases_after_first = {p for plan in sched.cooperative.values() for p in plan.phases[1:]}
    phases_after_first |= {p for plan in sched.cell_waves.values() for p in plan.phases}
    after_counts = [sched.wavefronts[g.id].waves if g.id in sched.wavefronts else per_run(g.launches[0])
                    for g in sched.groups if g.id not in phases_after_first]
    after_counts += [plan.launches for plan in sched.cell_waves.values()]
    joined = [set(i for g in sched.groups if g.id in plan.phases for i in g.launches)
              for plan in sched.cooperative.values()]
    joined += [{i for row in plan.repetition.statements for i in row} for plan in sched.cell_waves.values()]
    after_counts += [per_run(i) for i in insts if i not in grouped]
    after = None if any(c is None for c in after_counts) else sum(after_counts)
    kernels_after = {fk.name for fk in state.fused}
    kernels_after |= {insts[g.launches[0]].kernel.mangled for g in sched.groups if len(g.launches) == 1}
    kernels_after |= {insts[i].kernel.mangled for i in insts if i not in grouped}
    return {
        "schema": REPORT_SCHEMA,
        "program": str(state.job.path),
        "arrangement": state.arrangement,
        "loops_fused": loops_fused(state.loop_fusion),
        "loops_kept_apart": [{"lines": list(r.lines), "reason": r.reason} for r in state.loop_fusion.refusals],
        "policy": policy_name(state.policy),
        "launches_counted_per": model.counted_per,
        "launches_before": launch_count(model),
        "launches_after": after,
        "launch_statements_before": len(insts),
        "launch_statements_after": len(sched.groups) + len([i for i in insts if i not in grouped]),
        "kernels_before": len({i.kernel.mangled for i in model.launches}),
        "kernels_after": len(kernels_after),
        "groups": [{
            "id": g.id, "kernel": next((fk.name for fk in state.fused if fk.group.id == g.id), None),
            "arrangement": g.arrangement + (" + wavefront" if g.id in sched.wavefronts else ""),
            "barriers_inserted": next((k.barriers for k in state.fused if k.group.id == g.id), 0),
            "region": g.region, "step": g.step,
            "lanes": [[_launch_ref(insts[i])
                       for i in lane.launches] for lane in g.lanes],
            "across_syncs": _syncs_crossed(state, g),
            **_kernel_facts(state, g.id),
        } for g in sched.groups if len(g.launches) > 1],
        "cooperative": [{
            "region": plan.region, "kernel": plan.name, "threads": plan.threads, "grid_barriers": len(plan.phases) - 1,
            "phases": [[_launch_ref(insts[i])
                        for i in g.launches] for g in sched.groups if g.id in plan.phases]}
            for plan in sched.cooperative.values()],
        "cell_waves": [{
            "kernel": plan.name, "threads": plan.threads, "steps": plan.repetition.steps,
            "persistent": plan.persistent, "independent": plan.independent, "launches": plan.launches,
            "layers": plan.repetition.copies, "launches_per_layer": plan.repetition.period, "waves": plan.waves,
            "grid_barriers_per_wave": len(plan.phases) - 1, "private": list(plan.repetition.private),
            "scratch_bytes": plan.scratch.bytes,
            "phases": [[_launch_ref(insts[i])
                        for i in g.launches] for g in sched.groups if g.id in plan.phases]}
            for plan in (launch.plan for launch in state.program.of_kind(CellWavesLaunch))],
        # refusals between launches a cooperative launch joined after all are left out (not those
        # of a loop's successive iterations, which waves of cells run in different launches)
        "refused": [{"launches": [_launch_ref(insts[i])
                                  for i in r.launches if i in insts], "reason": r.reason}
                    for r in sched.refusals if r.kind is RefusalKind.NO_WAVES or r.loop is not None
                    or not (len(r.launches) > 1 and any(set(r.launches) <= j for j in joined))],
        # launches that follow one another, left apart with no refusal naming them (must stay empty)
        "apart_without_reason": [[_launch_ref(insts[i])
                                  for i in pair] for pair in pairs_without_reason(state)],
        # what the optimized program's path counters count (region_paths): verify's counts refer to these
        "fused_regions": [r.as_record() for r in regions_of(state.output)],
        "passes": [{"name": p.name, "enabled": p.name in state.passes,
                    "changes": state.pass_changes.get(p.name, [])} for p in KERNEL_PASSES],
        "promise_check": None if state.check is None and not state.check_findings else {
            "kernels_checked": state.check.kernels_checked if state.check else 0,
            "ptxas": bool(state.check and state.check.ptxas),
            "registers_bounded": bool(state.check and state.check.bounded),
            "violations_undone": [{"kernel": v.kernel, "what": v.what, "message": v.message}
                                  for v in state.check_findings],
            "notes": state.check.notes if state.check else []},
    }


def _launch_ref(inst) -> dict:
    """A launch as the report names it; ``file`` only where it is written in another file
    than the main file (an included file whose launches are rewritten there)."""
    ref = {"launch": inst.index, "kernel": inst.kernel.name, "line": inst.line}
    if inst.file:
        ref["file"] = inst.file
    return ref


def _syncs_crossed(state: OptimizeState, group) -> list[dict[str, Any]]:
    """The synchronizations that observe nothing between the group's first and last launch
    (they stay in the program; the fused launch runs after them)."""
    region = next(r for r in state.schedule.regions if r.id == group.region)
    first, last = min(group.launches), max(group.launches)
    stmts = state.model.host.statements
    return [{"call": stmts[i].detail, "line": stmts[i].line} for i in region.crossed if first < i < last]


def _grid_domain(fk, insts) -> dict[str, Any]:
    """``{"domain": ...}`` for a fused kernel proven for every grid the host computes at run
    time (the guard then checks its fragments' grids equal); nothing where every launch
    shape is a constant."""
    run_time = [f for lane in fk.lanes for f in lane.fragments if f.grid is None]
    if not run_time:
        return {}
    if len(fk.lanes) == 1:
        launches = ", ".join(f"{insts[f.launch].kernel.name} ({insts[f.launch].where})"
                             for lane in fk.lanes for f in lane.fragments)
        return {"domain": f"every grid the host computes at run time, where {launches} have one grid "
                          "(checked before the fused launch)"}
    lanes = "; ".join(", ".join(f"{insts[f.launch].kernel.name} ({insts[f.launch].where})" for f in lane.fragments)
                      + (" (one grid)" if len(lane.fragments) > 1 else "") for lane in fk.lanes)
    return {"domain": f"every grid the host computes at run time, side by side: {lanes}; where each grid is one "
                      "its launch can run in and all their blocks fit one grid (checked before the fused launch)"}


def _kernel_facts(state: OptimizeState, group: int) -> dict[str, Any]:
    """What a fused kernel promises and needs: the restrict qualifiers it keeps and those
    taken back (with why), its launch bound and shared memory."""
    fk = next((f for f in state.fused if f.group.id == group), None)
    if fk is None:
        return {}
    insts = state.model.instances()
    dropped = {b.pointer: b for b in state.promises_dropped.get(group, ()) if b.promise == "restrict"}
    return {"pointer_params": sum(p.is_pointer for i in fk.group.launches for p in insts[i].kernel.params),
            "restrict_kept": sorted(fk.restrict),
            "restrict_dropped": [{"parameter": b.pointer, "also_reached_by": b.other, "buffer": b.buffer,
                                  "why": b.describe()} for b in dropped.values()],
            "assumes": list(fk.assumptions),
            **_grid_domain(fk, insts),
            "launch_bounds": fk.threads, "static_shared": fk.static_shared, "dynamic_shared": fk.dynamic_shared,
            "shared_opt_in": fk.shared_opt_in}
