"""Regions: runs of launches in host code that may be fused, and what ends a region.

A region is a run of launch statements in one host loop body of one host function with
nothing but straight-line host code between them: no other CUDA runtime call but
synchronizations the host observes nothing through (``analysis.host_observation``), no
statement of the host model at all, and no control flow. Inside a region launches may
be reordered as long as every same-iteration dependence keeps its direction
(``fusion.scheduler``); where a region ends, the two launches on either side are kept
apart with the reason.

Control flow is read from clang's AST (``analysis.statement_flow``): two launches are in
straight-line code when they are statements of the same braces, the first before the
second, and every statement between them passes control on to the next one or leaves
the program (an error check) without running code of the program's own on the way out
(``analysis.program_ends``). Whatever the AST does not prove so ends the region.
"""

from __future__ import annotations

from pathlib import Path

from sirius.analysis.host_model import HostStatement
from sirius.analysis.host_observation import WAITING_SYNCS, Observer, observes_nothing, sync_observers
from sirius.analysis.program_model import ProgramModel
from sirius.analysis.source_index import LaunchSite, SourceIndex
from sirius.analysis.statement_flow import Flow, weakest_flow
from sirius.core.target import target_for
from sirius.fusion.fragments import fragment_problem
from sirius.fusion.schedule import Problem, Refusal, RefusalKind, Region


def find_regions(model: ProgramModel) -> tuple[list[Region], list[Refusal]]:
    """Runs of launches that may be fused, and why each pair of launches that follow
    one another is kept apart where a region ends between them: a host statement
    (copy, memset, synchronization the host may observe device work through, a call
    the model does not see into, ...), a different host loop nest or host function,
    or control flow in the source (see ``_flow_between``). A synchronization that observes nothing
    (``analysis.host_observation``) stays where it is and does not end a region."""
    stmts = model.host.statements
    inst = model.instances()
    observers = sync_observers(model)
    regions: list[Region] = []
    refusals: list[Refusal] = []
    current: list[int] = []
    crossed: list[int] = []  # waiting synchronizations inside the current region
    previous: int | None = None  # the last launch statement seen
    between: list[HostStatement] = []  # the statements since that launch
    waits: list[int] = []  # the waiting synchronizations since that launch

    def close():
        if current:
            regions.append(Region(len(regions), tuple(current), stmts[current[0]].loops, tuple(crossed)))
        current.clear()
        crossed.clear()

    reached: dict[int, frozenset[int]] = {}  # basic block of a launch -> the blocks control may reach from it
    for s in stmts:
        if observes_nothing(s, observers):
            waits.append(s.index)
            continue
        if s.kind != "launch" or s.index not in inst:
            if _never_after(model, stmts[previous] if previous is not None else None, s, reached):
                continue  # the exception cleanup of an earlier statement, which clang's block order puts here
            close()
            between.append(s)
            continue
        problem = fragment_problem(model, inst[s.index])
        separator = _separator(model.source, stmts, inst, previous, s, between, observers) or \
            _status_read_between(model, current, previous, s)
        if separator is not None:
            refusals.append(Refusal.of((previous, s.index), separator))
        if current and separator is None and problem is None:
            crossed.extend(waits)
        previous, between, waits = s.index, [], []
        if problem is not None:
            close()
            refusals.append(Refusal.of((s.index,), problem))
            continue
        if separator is not None:
            close()
        current.append(s.index)
    close()
    return regions, refusals


def launch_may_fail(stmt: HostStatement, arch: str) -> str | None:
    """Why the launch may fail to launch for its configuration, which the next launch-status
    query reports (None: its grid, block and shared memory are constants the device takes;
    a launch over its kernel's ``__launch_bounds__`` is no fragment, so in no region)."""
    grid, block = (d.constant() if d else None for d in (stmt.grid, stmt.block))
    if grid is None or block is None:
        return f"its {'grid' if grid is None else 'block'} is computed at run time"
    if stmt.shmem is None or stmt.shmem.constant_value() is None:
        return "its dynamic shared memory is computed at run time"
    if min(grid) < 1 or max(grid[1:]) > 65535 or grid[0] > 2**31 - 1:
        return f"its grid {grid} is not one the device launches"
    if min(block) < 1 or block[2] > 64 or block[0] * block[1] * block[2] > target_for(arch).max_block_threads:
        return f"its block {block} is not one the device launches"
    return None


def _status_read_between(model: ProgramModel, region: list[int], previous: int | None,
                         launch: HostStatement) -> Problem | None:
    """A launch-status query (``cudaGetLastError``) between ``previous`` and ``launch``, where a
    launch of the region before it may fail to launch: the fused launch stands where the
    region's last launch is, so that failure would be reported at another query (or none)."""
    if previous is None or not region:
        return None
    queries = model.host.status_queries_between(previous, launch.index)
    if not queries:
        return None
    failing = next(((i, why) for i in region if (why := launch_may_fail(model.host.statements[i], model.arch))
                    is not None), None)
    if failing is None:
        return None
    inst, query = model.launch(failing[0]), queries[0]
    return Problem(RefusalKind.STATUS_QUERY,
                   f"{query.call} (line {query.line}) reads the launch status, and the launch of {inst.kernel.name} "
                   f"({inst.where}) may fail to launch ({failing[1]}): fused, the failure would be reported at "
                   "another call")


def _never_after(model: ProgramModel, launch: HostStatement | None, stmt: HostStatement,
                 reached: dict[int, frozenset[int]]) -> bool:
    """``stmt`` runs neither after ``launch`` (the last launch before it in block order) nor
    on the way to it: no path of the entry leads from the launch's basic block to the
    statement's, nor back (``reached`` caches what each block reaches)."""
    if launch is None or launch.basic_block is None or stmt.basic_block is None or not model.host.successors:
        return False
    for block in (launch.basic_block, stmt.basic_block):
        if block not in reached:
            reached[block] = model.host.reachable_from(block)
    return stmt.basic_block not in reached[launch.basic_block] and launch.basic_block not in reached[stmt.basic_block]


def _separator(index: SourceIndex, stmts, inst, previous: int | None, launch: HostStatement,
               between: list[HostStatement], observers: list[Observer]) -> Problem | None:
    """Why ``launch`` cannot join the region of the launch before it (None: it can)."""
    if previous is None:
        return None
    if between:
        shown = "; ".join(s.describe() for s in between[:3]) + ("; ..." if len(between) > 3 else "")
        if observers and any(s.kind == "sync" and s.detail in WAITING_SYNCS for s in between):
            shown += f" (the host may observe device work there: {observers[0].describe()})"
        return Problem(RefusalKind.HOST_STATEMENT, f"host statements between the launches order them: {shown}")
    a, b = inst[previous], inst[launch.index]
    if a.site is None or b.site is None:
        unplaced = a if a.site is None else b
        stmt = unplaced.statement
        if stmt.call is not None:  # the program's own cudaLaunchKernel: no <<<>>> to rewrite
            where, why = "", f"it is a {stmt.call} call, not <<<>>>"
        elif unplaced.unplaced:
            where, why = "", unplaced.unplaced
        else:
            where = f" in {stmt.inlined_from}" if stmt.inlined_from else ""
            why = "its launch expression is not in the source"
        return Problem(RefusalKind.UNREWRITABLE_LAUNCH,
                       f"the launch of {unplaced.kernel.name}{where} at {unplaced.where} cannot be rewritten ({why})")
    if stmts[previous].loops != launch.loops:
        return Problem(RefusalKind.LOOP_NEST, "they are in different host loop nests")
    if a.site.function != b.site.function:
        return Problem(RefusalKind.HOST_FUNCTION,
                       f"they are in different host functions ({a.site.function}, {b.site.function})")
    where = "" if a.site.range.file == index.main_file else f"{Path(a.site.range.file).name} "
    split = _directive_between(index.conditionals, a.site, b.site)
    if split is not None:
        return Problem(RefusalKind.CONTROL_FLOW, f"a preprocessor conditional ({where}line {split}) is between them: "
                                                 "another build may leave one out")
    split = _directive_between(index.macro_directives, a.site, b.site)
    if split is not None:
        return Problem(RefusalKind.CONTROL_FLOW, f"a preprocessor directive ({where}line {split}) is between them: "
                                                 "it may change what a macro of the first launch means where the "
                                                 "fused launch (or the original launches it falls back to) stands")
    flow = _flow_between(index, a.site, b.site)
    if flow is Flow.OBSERVED_EXIT:
        named = list(dict.fromkeys(f"{o.what} at line {o.line}" for o in index.end_observers))
        which = named[0] if len(named) == 1 else "one of: " + "; ".join(named[:3]) + ("; ..." if len(named) > 3 else "")
        return Problem(RefusalKind.CONTROL_FLOW,
                       "the program may leave between them and runs code of its own as it leaves "
                       f"({which}), which may see the first launch's results")
    if flow is Flow.OTHER:
        return Problem(RefusalKind.CONTROL_FLOW, "control flow between them in the source")
    return None


def _directive_between(directives: dict[str, tuple[int, ...]], a: LaunchSite, b: LaunchSite) -> int | None:
    """The line of a directive of ``directives`` (by file: the conditionals, #if, #else,
    #endif...; or those that change macros, #define, #undef...) between launch ``a`` and
    launch ``b``, written in one file: the fused launch stands where ``b`` is, and a build
    that leaves either out must run the other alone; ``a``'s text written there would
    expand the macros as they are defined there."""
    if a.range.file != b.range.file:
        return None
    for offset in directives.get(a.range.file, ()):
        if min(a.range.end_offset, b.range.end_offset) <= offset < max(a.range.start_offset, b.range.start_offset):
            return Path(a.range.file).read_bytes().count(b"\n", 0, offset) + 1
    return None


def _flow_between(index: SourceIndex, a: LaunchSite, b: LaunchSite) -> Flow:
    """How control runs from launch ``a`` to launch ``b``, the launches included (their
    arguments are evaluated where the fused launch is): Flow.NEXT or Flow.NEXT_OR_EXIT when
    through nothing but statements that pass it on, or leave the program on the way (an
    error check: on that path no later statement observes what ``a`` did, so deferring it
    to a fused launch is invisible); Flow.OBSERVED_EXIT when the program runs code of its
    own as it leaves (an ``atexit`` handler, a ``catch``), which may observe it; Flow.OTHER
    for anything else. Both must be statements of the same braces, ``a`` first."""
    if a.block is None or a.block != b.block or a.position >= b.position:
        return Flow.OTHER
    return weakest_flow(index.host_blocks[a.block].flows[a.position:b.position + 1])
