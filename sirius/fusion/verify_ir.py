"""The invariants of the fused-kernel IR, checked after a stage (``sirius optimize
--verify-each``, or ``SIRIUS_VERIFY_EACH=1``, which the test suite sets).

What every ``KernelIR`` between lowering and printing must be, whatever pass made it:

- its parameters have distinct names; one the kernel defines itself is a constant or an
  offset from a parameter the host passes, never both; a restrict one is a pointer the
  host passes whose type declares ``__restrict__``; a kernel run as waves keeps no restrict promise;
- each lane holds fragments, starts where the lane before it ends, and has no more
  threads than the kernel's block, which fits the target;
- every launch of the group is one fragment, in exactly one lane; a fragment's
  arguments are the kernel's parameters of its launch, in their order;
- barriers sit between fragments (never two in a row), and each says what it orders;
- shared arrays have distinct symbols and are used by launches of the group.

And every fused launch of the ``FusedProgram``:

- holds kernels of its kind (``KernelRole``): a fused kernel one of role FUSED, a
  wavefront one of WAVEFRONT with one lane, a cooperative launch the phases of its plan
  (role PHASE) and waves of cells the phases of its plan (role CELL_PHASE), in order;
- no group is in two launches, and no two launches use one kernel name;
- once guarded (``fusion.guards``), a region's guard compares every value folded into a
  kernel it issues: a value baked in that no condition checks would run the fused path
  for values it was not proven for.

``ir_violations`` returns what is broken (nothing: the IR is well formed).
"""

from __future__ import annotations

from sirius.core.target import MAX_BLOCK_THREADS
from sirius.fusion.guards import folded_conditions
from sirius.fusion.fragment_text import RESTRICT
from sirius.fusion.kernel_ir import (LaneBarrier, CellWavesLaunch, CooperativeLaunch, FusedKernelLaunch, FusedLaunch,
                                     FusedProgram, KernelIR, KernelRole, WavefrontLaunch)


def kernel_violations(k: KernelIR) -> list[str]:
    """What ``k`` breaks of the invariants above (empty: none)."""
    found: list[str] = []
    say = lambda what: found.append(f"{k.name}: {what}")  # noqa: E731
    names = [p.name for p in k.params]
    if len(set(names)) != len(names):
        say(f"parameter names repeat: {sorted(n for n in set(names) if names.count(n) > 1)}")
    passed = {p.name for p in k.params if p.passed}
    for p in k.params:
        if p.constant is not None and p.base is not None:
            say(f"parameter {p.name} is both a constant and an offset from {p.base}")
        if p.base is not None and p.base not in passed:
            say(f"parameter {p.name} is an offset from {p.base}, which the host does not pass")
        if p.restrict and not p.pointer:
            say(f"parameter {p.name} is restrict but not a pointer")
        if p.restrict and not RESTRICT.search(p.ctype):
            say(f"parameter {p.name} is restrict but its type {p.ctype!r} does not declare it")
        if p.restrict and k.role.per_cell:
            say(f"parameter {p.name} is restrict in a kernel run as waves")
    if not 0 < k.threads <= MAX_BLOCK_THREADS:
        say(f"{k.threads} threads per block")
    launches = list(k.group.launches)
    seen: list[int] = []
    start = k.lanes[0].first_block if k.lanes else 0
    for n, lane in enumerate(k.lanes):
        if lane.first_block != start:
            say(f"lane {n} starts at block {lane.first_block}, not {start} where the lane before ends")
        start = lane.first_block + (lane.blocks or 0)
        if lane.threads > k.threads:
            say(f"lane {n} has {lane.threads} threads, more than the kernel's {k.threads}")
        if not lane.fragments:
            say(f"lane {n} runs no fragment")
        for a, b in zip(lane.body, lane.body[1:]):
            if isinstance(a, LaneBarrier) and isinstance(b, LaneBarrier):
                say(f"lane {n} has two barriers in a row")
        for step in lane.body:
            if isinstance(step, LaneBarrier):
                if not step.orders:
                    say(f"lane {n} has a barrier that orders nothing")
                continue
            seen.append(step.launch)
            expected = tuple(p.name for p in k.params_of(step.launch))
            if step.args != expected:
                say(f"fragment S{step.launch} takes {list(step.args)}, not its parameters {list(expected)}")
    if sorted(seen) != sorted(launches):
        say(f"fragments {sorted(seen)} are not the group's launches {sorted(launches)}")
    symbols = [a.symbol for a in k.shared]
    if len(set(symbols)) != len(symbols):
        say(f"shared arrays repeat: {sorted(s for s in set(symbols) if symbols.count(s) > 1)}")
    for a in k.shared:
        if not set(a.users) <= set(launches):
            say(f"shared array {a.symbol} is used by launches outside the group: "
                f"{sorted(set(a.users) - set(launches))}")
    return found


def launch_violations(launch: FusedLaunch) -> list[str]:
    """What ``launch`` breaks of the invariants of its kind (empty: none)."""
    role = {FusedKernelLaunch: KernelRole.FUSED, WavefrontLaunch: KernelRole.WAVEFRONT,
            CooperativeLaunch: KernelRole.PHASE, CellWavesLaunch: KernelRole.CELL_PHASE}[type(launch)]
    found = [f"{k.name}: a kernel of role {k.role.value} in a {role.value} launch"
             for k in launch.kernels if k.role is not role]
    if isinstance(launch, WavefrontLaunch) and len(launch.kernel.lanes) != 1:
        found.append(f"{launch.kernel.name}: a wavefront kernel of {len(launch.kernel.lanes)} lanes")
    if isinstance(launch, (CooperativeLaunch, CellWavesLaunch)):
        groups = [k.group.id for k in launch.phases]
        if sorted(groups) != sorted(launch.plan.phases):
            found.append(f"{launch.plan.name}: phases of groups {groups}, not the plan's {list(launch.plan.phases)}")
    return found


def ir_violations(program: FusedProgram) -> list[str]:
    """Every invariant the program's launches or kernels break, and kernel names used twice."""
    found = [v for launch in program.launches for v in launch_violations(launch)]
    found += [v for k in program.kernels() for v in kernel_violations(k)]
    groups = [k.group.id for k in program.kernels()]
    if len(set(groups)) != len(groups):
        found.append(f"groups in two launches: {sorted(g for g in set(groups) if groups.count(g) > 1)}")
    names = [launch.kernel.name if isinstance(launch, (FusedKernelLaunch, WavefrontLaunch)) else launch.plan.name
             for launch in program.launches]
    if len(set(names)) != len(names):
        found.append(f"kernel names repeat: {sorted(n for n in set(names) if names.count(n) > 1)}")
    by_group = {k.group.id: k for k in program.kernels()}
    for region in (r for r in program.regions if r.guard):
        for k in (by_group[i.group] for i in region.issued if i.group in by_group):
            missing = [c for c in folded_conditions(k) if c not in region.guard]
            if missing:
                found.append(f"{k.name}: region {region.region}'s guard does not check the values folded into it: "
                             + "; ".join(missing))
    return found
