"""The host side of the optimized program, printed from the fused-kernel IR: a rewritten
region's launches evaluated into temporaries where they stood and issued, under their
guard, at the last one's place; the cooperative launch with its occupancy query; the wave
loops of wavefronts and of waves of cells with their checking pass over the loop; the
readable form of each guard condition the path counters (``region_paths``) report.
"""

from __future__ import annotations

import re

from sirius.analysis.program_model import LaunchInstance
from sirius.core.target import needs_shared_opt_in
from sirius.fusion import kernel_ir as ir
from sirius.fusion.fragment_text import line_directive, strip_restrict
from sirius.fusion.kernel_ir import CellWavesLaunch, KernelIR, LoopGuard, WavefrontLaunch, base_pointer, phases_shared
from sirius.fusion.region_paths import PathKind, RegionSlots, RegionTable


def cooperative_grid(name: str, threads: int, static: int, dynamic: int, blocks: int | str) -> str:
    """Host code setting ``sirius_coop`` (the device launches cooperative kernels) and
    ``sirius_grid``: as many blocks of ``name`` as are resident at once, at most ``blocks``
    (a constant, or the name of an unsigned variable).
    A block holding more than 48 KB of shared memory (``static`` plus ``dynamic`` bytes)
    needs the kernel's own opt-in (the program's, for its kernels, does not carry over),
    first: the occupancy query, made with the launch's dynamic size, and the launch see it."""
    opt_in = shared_opt_in(name, dynamic, name.removeprefix("sirius_")) if needs_shared_opt_in(static, dynamic) else ""
    most = f"{blocks}u" if isinstance(blocks, int) else blocks
    return (f"{opt_in}int sirius_dev = 0, sirius_coop = 0, sirius_sms = 0, sirius_per_sm = 0; "
            "cudaGetDevice(&sirius_dev); "
            "cudaDeviceGetAttribute(&sirius_coop, cudaDevAttrCooperativeLaunch, sirius_dev); "
            "cudaDeviceGetAttribute(&sirius_sms, cudaDevAttrMultiProcessorCount, sirius_dev); "
            f"cudaOccupancyMaxActiveBlocksPerMultiprocessor(&sirius_per_sm, {name}, {threads}, {dynamic}); "
            "unsigned sirius_grid = (unsigned)(sirius_per_sm * sirius_sms); "
            f"if (sirius_grid > {most}) sirius_grid = {most}; "
            # a build may bound what runs at once (the CPU backend runs each block on a thread of its own)
            "\n#ifdef SIRIUS_COOPERATIVE_MAX_BLOCKS\n"
            "if (sirius_grid > (unsigned)SIRIUS_COOPERATIVE_MAX_BLOCKS) sirius_grid = (unsigned)SIRIUS_COOPERATIVE_MAX_BLOCKS;"
            "\n#endif\n#ifdef SIRIUS_COOPERATIVE_MAX_THREADS\n"
            f"if (sirius_grid > (unsigned)SIRIUS_COOPERATIVE_MAX_THREADS / {threads}u) "
            f"sirius_grid = (unsigned)SIRIUS_COOPERATIVE_MAX_THREADS / {threads}u;"
            "\n#endif\n")


def cooperative_launch(plan, phases: list[KernelIR]) -> str:
    """Host code launching a cooperative kernel over as many blocks as are resident at once
    (and no more than its largest phase has, counted at run time where a phase's grid is
    computed then); false in ``sirius_coop_done`` when the device
    cannot launch it cooperatively, so the original launches run instead."""
    constant = max((sum(lane.blocks for lane in k.lanes) for k in phases if not k.run_time_lanes), default=0)
    # a phase's grids computed at run time: their blocks as the host computed them (the guard bounds them)
    run_time = [ir.lane_ranges(k, ir.host_grid)[-1][1] for k in phases if k.run_time_lanes]
    largest = "".join(f"if ({c} > sirius_most) sirius_most = {c}; " for c in run_time)
    most = f"unsigned sirius_most = {constant}u; {largest}" if run_time else ""
    blocks = "sirius_most" if run_time else constant
    static, dynamic = phases_shared(phases)
    passed = ir.passed_in_order(phases)
    typed = "".join(f"{strip_restrict(p.ctype)} sirius_c{n} = sirius_a{p.launch}_{p.position}; "
                    for n, p in enumerate(passed) if isinstance(p, ir.FusedParam))
    args = ", ".join(f"(void*)&sirius_c{n}" if isinstance(p, ir.FusedParam) else f"(void*)&{ir.host_grid(p)}"
                     for n, p in enumerate(passed)) or "nullptr"
    name = plan.name
    return ("bool sirius_coop_done = false; { " + most + cooperative_grid(name, plan.threads, static, dynamic, blocks) +
            f"{typed}void* sirius_args[] = {{{args}}}; "
            f"if (sirius_coop && sirius_grid > 0) {{ sirius_coop_done = cudaLaunchCooperativeKernel({name}, "
            f"dim3(sirius_grid), dim3({plan.threads}), sirius_args, {dynamic}, 0) == cudaSuccess; "
            "if (!sirius_coop_done) (void)cudaGetLastError(); /* ours: the original launches run instead */ } }")


def cell_checks(launch: CellWavesLaunch, insts, source: bytes, slots: RegionSlots) -> str:
    """The guard of waves of cells (``fusion.guards``): the allocations' base pointers, then
    ``checked_loop``."""
    bases = "".join(f"char* {base_pointer(a)} = nullptr; " for a in launch.plan.allocations)
    return bases + checked_loop(launch.plan.repetition.loop.range, launch.guard, "waves", insts, source, slots)


def checked_loop(loop, guard: LoopGuard, what: str, insts, source: bytes, slots: RegionSlots) -> str:
    """Host code setting ``sirius_cells_ok``: the guard's build conditions, then the loop
    nest (range ``loop``) once with its launches replaced by the guard's checks
    (``_checking_nest``), then that it issued the launches expected; each condition counted
    in ``slots`` when it fails."""
    head = f"bool sirius_cells_ok = {slots.guard(list(guard.build))}; long long sirius_checked = 0;\n"
    nest = _checking_nest(loop, [(insts[c.launch], c.declare, [slots.holds(x) for x in c.conditions])
                                 for c in guard.checks], source)
    return (head + f"  /* sirius: the loop once without launching, to check the values the {what} assume */\n"
            f"  if (sirius_cells_ok) {nest.decode()}\n"
            f"  sirius_cells_ok = sirius_cells_ok && {slots.holds(f'sirius_checked == {guard.expected}LL')};\n")


def cell_wave_host(plan, phases: list[KernelIR], guard: str, source: bytes, slots: RegionSlots,
                   file: str | None = None) -> str:
    """The host code replacing the loop: ``guard`` (``cell_checks``), then the wave loop,
    one cooperative launch per wave, where the loop's values are those the waves assume and
    the device launches cooperative kernels; else the loop as written. The path taken is
    counted in ``slots``."""
    rep = plan.repetition
    blocks = plan.most_blocks if plan.grids else \
        max(sum(lane.blocks for lane in k.lanes) for k in phases) * min(rep.steps, rep.copies)
    static, dynamic = phases_shared(phases)
    loop = rep.loop.range
    original = source[loop.start_offset:loop.end_offset].decode()
    bases = [f"(void*)&{base_pointer(a)}" for a in plan.allocations]
    wave_args = ["(void*)&sirius_w", "(void*)&sirius_lo", "(void*)&sirius_hi"]
    if plan.persistent:  # one launch: where it fails, nothing ran, and the loop runs as written
        launch = (f"  {{ void* sirius_args[] = {{{', '.join(bases) or 'nullptr'}}};\n"
                  f"    sirius_waves_ran = cudaLaunchCooperativeKernel({plan.name}, dim3(sirius_grid), "
                  f"dim3({plan.threads}), sirius_args, {dynamic}, 0) == cudaSuccess;\n"
                  "    if (!sirius_waves_ran) (void)cudaGetLastError(); /* ours: the loop as written instead */ }\n")
    else:
        launch = (f"  {plan.wave_for} {{\n"
                  f"    int sirius_lo = {plan.lo};\n"
                  f"    int sirius_hi = {plan.hi};\n"
                  f"    void* sirius_args[] = {{{', '.join(wave_args + bases)}}};\n"
                  f"    cudaLaunchCooperativeKernel({plan.name}, dim3(sirius_grid), dim3({plan.threads}), sirius_args, "
                  f"{dynamic}, 0);\n  }}\n  sirius_waves_ran = true;\n")
    how = "in one cooperative launch, a grid barrier between two waves" if plan.persistent else \
        "every cell (step, layer) on one anti-diagonal runs in one cooperative launch"
    what = (f"the loop in one kernel: its {rep.period} launches per step are phases" if rep.copies == 1 else
            f"waves of cells: the loop body is {rep.copies} copies (layers) of {rep.period} launches")
    return (f"{{ /* sirius: {what}; {how} */\n  " + guard +
            "  " + cooperative_grid(plan.name, plan.threads, static, dynamic, blocks) +
            "  bool sirius_waves_ran = false;\n"
            "  if (sirius_cells_ok && sirius_coop && sirius_grid > 0) {\n" + launch +
            f"  }}\n  if (sirius_waves_ran) {{ {slots.took(PathKind.WAVES)} }}\n"
            "  else { /* sirius: not the values optimized for, or no cooperative launches: the loop as written */\n"
            f"  if (sirius_cells_ok) {slots.took(PathKind.NO_COOPERATIVE)} else {slots.fell_back()}\n"
            f"{line_directive(loop.line, file)}{' ' * (loop.column - 1)}{original}\n  }}\n}}")


# a value the host computes has the bits of the constant a generated kernel bakes in
# (-0.0 is not 0.0, and a NaN is never taken for the NaN optimized for)
SAME_BITS_HELPER = ("#ifndef sirius_same_bits\n#define sirius_same_bits(value, constant) ([&]() { "
                    "auto sirius_v = (value); decltype(sirius_v) sirius_c = (constant); "
                    "return __builtin_memcmp(&sirius_v, &sirius_c, sizeof sirius_v) == 0; }())\n#endif\n")


def shared_opt_in(kernel: str, dynamic: int, tag) -> str:
    """Once per program run: allow the launches of ``kernel`` ``dynamic`` bytes of dynamic
    shared memory, more than the 48 KB a launch gets by default (``tag`` names the variable
    holding the call's result)."""
    return (f"static const cudaError_t sirius_opt_in_{tag} = cudaFuncSetAttribute({kernel}, "
            f"cudaFuncAttributeMaxDynamicSharedMemorySize, {dynamic}); (void)sirius_opt_in_{tag}; ")


def temporaries(inst: LaunchInstance, config_used: bool) -> str:
    """Arguments (and, where the new launch uses it, the configuration) as evaluated here."""
    idx = inst.statement.index
    site = inst.site
    cfg = list(site.config)
    parts = []
    if config_used:
        parts = [f"dim3 sirius_g{idx} = dim3({cfg[0]})", f"dim3 sirius_b{idx} = dim3({cfg[1]})"]
        if len(cfg) > 2:
            parts.append(f"size_t sirius_s{idx} = (size_t)({cfg[2]})")
    for j, a in enumerate(site.args):
        parts.append(f"auto sirius_a{idx}_{j} = ({a})")
    return "; ".join(parts)


def original_launch(inst: LaunchInstance) -> str:
    """The launch as written, from the temporaries its arguments were evaluated into."""
    idx = inst.statement.index
    shm = f", sirius_s{idx}" if len(inst.site.config) > 2 else ""
    args = ", ".join(f"sirius_a{idx}_{j}" for j in range(len(inst.site.args)))
    return f"{inst.site.callee or inst.site.kernel}<<<sirius_g{idx}, sirius_b{idx}{shm}>>>({args})"


def _checking_nest(loop, checks, source: bytes) -> bytes:
    """The source of a loop nest (range ``loop``) with each launch in ``checks`` replaced by
    a check that does not launch: (launch, declarations first, conditions) evaluates the
    launch's arguments where it stood, ands the conditions into ``sirius_cells_ok`` and
    counts itself in ``sirius_checked``."""
    edits = []
    for inst, prefix, conds in checks:
        check = (f"{{ {prefix}{temporaries(inst, True)}; sirius_cells_ok = sirius_cells_ok && "
                 f"{' && '.join(conds) or 'true'}; ++sirius_checked; }}")
        edits.append((inst.site.range.start_offset - loop.start_offset,
                      inst.site.range.end_offset - loop.start_offset, check))
    nest = source[loop.start_offset:loop.end_offset]
    for start, end, text in sorted(edits, reverse=True):
        nest = nest[:start] + text.encode() + nest[end:]
    return nest


def issue_launch(issue: ir.Issue, insts, fused: dict[int, KernelIR]) -> str:
    if issue.alone is not None:
        return original_launch(insts[issue.alone])
    k = fused[issue.group]
    args = ", ".join(f"sirius_a{p.launch}_{p.position}" if isinstance(p, ir.FusedParam) else ir.host_grid(p)
                     for p in ir.passed_in_order([k]))
    opt_in = shared_opt_in(k.name, k.dynamic_shared, k.group.id) if k.shared_opt_in else ""
    return f"{opt_in}{k.name}<<<{k.grid_text}, {k.block_text}, {k.dynamic_shared}>>>({args})"


def open_region(table: RegionTable, kind: str, launches, insts) -> RegionSlots:
    """The counters of a region of ``launches`` (see region_paths), its conditions
    described in the program's own terms."""
    first = insts[launches[0]]
    return table.open(kind, first.line, [insts[i].kernel.name for i in launches], lambda c: _readable(c, insts),
                      first.file)


_TEMPORARY = re.compile(r"\bsirius_(?:a(\d+)_(\d+)|([gbs])(\d+))\b")


_SAME_TOKENS = re.compile(r"sirius_same_tokens\(SIRIUS_STR\((\w+)\), (.*)\)$")


def _readable(condition: str, insts) -> str:
    """A guard condition in the program's terms: a temporary as the argument or launch
    shape it holds, with the launch's line; a build-macro comparison as what it asks."""
    macro = _SAME_TOKENS.fullmatch(condition)
    if macro:
        return f"{macro[1]} expands to {macro[2]} as when optimized"
    checked = re.fullmatch(r"sirius_checked == (\d+)LL", condition)
    if checked:
        return f"the loop issues {checked[1]} launches, as when optimized"

    def name(m: re.Match) -> str:
        if m[1] is not None:
            inst = insts.get(int(m[1]))
            args = inst.site.args if inst is not None and inst.site is not None else ()
            text = args[int(m[2])] if int(m[2]) < len(args) else f"argument {m[2]}"
            return f"`{text}`@{inst.line if inst is not None else '?'}"
        inst = insts.get(int(m[4]))
        what = {"g": "grid", "b": "block", "s": "shared_bytes"}[m[3]]
        return f"{what}@{inst.line if inst is not None else '?'}"
    return _TEMPORARY.sub(name, condition)


def wavefront_host(launch: WavefrontLaunch, insts, source: bytes, slots: RegionSlots,
                   file: str | None = None) -> str:
    """The host code replacing a loop nest run as a wavefront: the wave loop where the
    nest's values are those the wavefront assumes (its guard), else the nest as written;
    the path taken counted in ``slots``."""
    k, wave = launch.kernel, launch.plan
    lane = k.lanes[0]
    bx, by, bz = lane.block
    per_cell = lane.blocks
    bases = ", ".join(["sirius_w", "sirius_lo"] + [f"(char*){a}" for a in wave.allocations])
    loop = wave.outer_loop.range
    guard = checked_loop(loop, launch.guard, "wavefront's cells", insts, source, slots)
    original = source[loop.start_offset:loop.end_offset].decode()
    return (f"{{ /* sirius: wavefront over ({wave.outer}, {wave.inner}): the {len(lane.fragments)} launches of each "
            f"iteration are one fused launch, and all iterations on one anti-diagonal share it */\n  {guard}"
            f"  if (sirius_cells_ok) {{\n  {slots.took(PathKind.WAVEFRONT)}\n"
            + (f"  {{ {shared_opt_in(k.name, k.dynamic_shared, k.group.id)}}}\n" if k.shared_opt_in else "") +
            f"  {wave.wave_for} {{\n"
            f"    const int sirius_lo = {wave.lo};\n"
            f"    const int sirius_hi = {wave.hi};\n"
            f"    {k.name}<<<dim3((unsigned)(sirius_hi - sirius_lo + 1) * {per_cell}u), dim3({bx}, {by}, {bz}), "
            f"{k.dynamic_shared}>>>({bases});\n  }}\n"
            "  } else { /* sirius: not the values optimized for: the loop nest as written */\n"
            f"  {slots.fell_back()}\n"
            f"{line_directive(loop.line, file)}{' ' * (loop.column - 1)}{original}\n  }}\n}}")
