"""Code generation: the optimized program as CUDA source, printed from the fused-kernel IR.

Each kernel that takes part in a fusion becomes a ``__device__`` fragment
whose body is the original body verbatim; the fragment declares local
``blockIdx``/``threadIdx``/``blockDim``/``gridDim`` that shadow the builtins,
so a fragment placed in other blocks or threads of a fused kernel sees its
own indices. A fused kernel (``kernel_ir.KernelIR``, as the passes left it)
calls its fragments: one lane runs them in order in the same thread
(vertical), several lanes dispatch on the block index (horizontal); the
barriers are the IR's, and every thread of a block reaches each of them, also
in a lane narrower than the block. Every other byte of the program is preserved, except the
launch statements of rewritten regions: each launch's arguments and
configuration are evaluated where the launch stood (into temporaries), and
the region's launches are issued at the place of its last launch in the
scheduled order.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from sirius.analysis.build_macros import SAME_TOKENS, STRINGIZE
from sirius.analysis.program_model import ProgramModel
from sirius.analysis.source_index import SourceRange
from sirius.core.target import WARP_SIZE
from sirius.fusion.fragment_text import (BLOCK_SYNC_HELPER, fragment_function, fragment_name, keeping_lines,
                                         line_directive, line_end, with_line_end)
from sirius.fusion.host_text import (SAME_BITS_HELPER, cell_checks, cell_wave_host, cooperative_launch, issue_launch,
                                     open_region, original_launch, temporaries, wavefront_host)
from sirius.fusion.included_text import copy_edits, in_place_text
from sirius.fusion.kernel_ir import (CellWavesLaunch, CooperativeLaunch, FusedProgram, KernelIR, KernelRole,
                                     WavefrontLaunch)
from sirius.fusion.kernel_text import (cell_wave_kernel, cooperative_kernel, cooperative_params, fused_kernel,
                                       passed_params, signature, wavefront_kernel)
from sirius.fusion.region_paths import PathKind, RegionTable


def generate(model: ProgramModel, program: FusedProgram, source: str) -> tuple[str, list[KernelIR]]:
    """The optimized program's source (see the module docstring), printing the fused
    launches of ``program`` (guarded: ``fusion.guards``) in place of the launches and loops
    they replace; and the fused kernels as printed (a phase under its launch's name)."""
    kernels = program.kernels()
    cooperative = {launch.plan.region: launch for launch in program.of_kind(CooperativeLaunch)}
    cell_waves = program.of_kind(CellWavesLaunch)
    wavefronts = {launch.kernel.group.id: launch for launch in program.of_kind(WavefrontLaunch)}
    insts = model.instances()
    decls = {idx: model.kernel_decls.get(inst.kernel.mangled) for idx, inst in insts.items()}
    if not kernels:
        return source, []
    kernels_text: list[str] = []
    done: set[str] = set()
    # kernels a cooperative kernel runs in fewer threads than its block: their barriers count theirs
    block_of = {k.group.id: launch.plan.threads for launch in [*cooperative.values(), *cell_waves]
                for k in launch.phases}
    narrow = {insts[f.launch].kernel.mangled for k in kernels if k.group.id in block_of
              for lane in k.lanes if lane.threads < block_of[k.group.id]
              for f in lane.fragments if insts[f.launch].kernel.barriers}
    # kernels run in part of a warp, the rest of which runs other code: their __activemask() counts theirs
    part_warp = {insts[f.launch].kernel.mangled for k in kernels for lane in k.lanes
                 if lane.threads < block_of.get(k.group.id, k.threads) and lane.threads % WARP_SIZE
                 for f in lane.fragments if insts[f.launch].kernel.asks_active_lanes}
    # a fragment of a kernel of the main file (or of a file copied into it) is written right after the kernel: the
    # program's macros there are those its body was written with (a macro redefined
    # between kernels, or #undef'd after them, means something else further down)
    in_place: list[tuple[str, int, str]] = []  # (file, offset, text)
    index = model.source
    main = index.main_file
    used = [insts[i] for k in kernels for i in k.group.launches]
    # a fragment of a kernel of an included file names that file in its #line, and so does
    # the copy of an included file whose launches are rewritten; then every #line sirius
    # writes names its file (the main file's, once one has named another)
    named = main if any(decls[f.launch].range.file != main for k in kernels
                        for lane in k.lanes for f in lane.fragments) \
        or any(insts[i].site.range.file != main for r in program.regions for i in r.launches) else None
    texts = {main: source.encode()}
    texts.update({f: Path(f).read_bytes() for f in index.program_files})
    edits: dict[str, list[tuple[int, int, str]]] = {f: [] for f in texts}
    last = max(used, key=lambda i: index.visible_from(decls[i.statement.index]))
    block_file, insert_at = main, index.visible_from(decls[last.statement.index])
    # the block is in the namespaces of the kernel it follows (in the main file); at file
    # scope, what declares its kernels goes before the file-scope declaration holding the entry
    at_file_scope = decls[last.statement.index].range.file != main or not decls[last.statement.index].namespaces
    entry = _first_rewritten_function(model, used, at_file_scope)
    # the fused kernels' prototypes go before the first function that launches them, when
    # they are defined after it
    declare = entry is not None and index.program_order(main, insert_at) > index.program_order(
        entry.file, entry.start_offset)
    if declare and any(k.role.per_cell for k in kernels):
        # wave kernels need the helper macros too: keep everything above the entry
        block_file, insert_at, declare = entry.file, entry.start_offset, False
    # the generated kernels' line in their file
    block_line = texts[block_file][:insert_at].count(b"\n") + 1
    for k in kernels:
        for f in (f for lane in k.lanes for f in lane.fragments):
            name = fragment_name(insts[f.launch])
            if name not in done:
                done.add(name)
                decl = decls[f.launch]
                here = index.rewritten_file(decl.range.file)  # the main file, or one copied into it
                mangled = insts[f.launch].kernel.mangled
                text = fragment_function(insts[f.launch], decl, f.removed_barriers, f.pooled, mangled in narrow,
                                         in_place=here, part_warp=mangled in part_warp,
                                         file=named if decl.range.file == main else decl.range.file)
                if here:
                    in_place.append((decl.range.file, decl.range.end_offset, "\n" + text))
                else:  # what follows is the block's file again
                    kernels_text.append(text + line_directive(block_line, block_file))
    fused: dict[int, KernelIR] = {}
    table = RegionTable()
    phases_of = {region: list(launch.phases) for region, launch in cooperative.items()}
    for region, launch in cooperative.items():
        kernels_text.append(cooperative_kernel(launch.plan, phases_of[region], insts, decls))
    for launch in cell_waves:
        plan, phases = launch.plan, list(launch.phases)
        kernels_text.append(cell_wave_kernel(plan, phases, insts, decls))
        launches = [i for row in plan.repetition.statements for i in row]
        slots = open_region(table, "waves", launches, insts)
        guard = cell_checks(launch, insts, source.encode(), slots)
        fused.update({k.group.id: k for k in phases})
        loop = plan.repetition.loop.range
        host = cell_wave_host(plan, phases, guard, source.encode(), slots, named)
        edits[main].append((loop.start_offset, loop.end_offset, host))  # loops are the main file's
    for k in kernels:
        if k.role is KernelRole.CELL_PHASE:
            continue
        if k.role is KernelRole.PHASE:
            fused[k.group.id] = dataclasses.replace(k, name=cooperative[k.group.region].plan.name)
            continue
        if k.role is KernelRole.WAVEFRONT:
            slots = open_region(table, "wavefront", k.group.launches, insts)
            fused[k.group.id] = k
            kernels_text.append(wavefront_kernel(wavefronts[k.group.id], insts, decls))
            host = wavefront_host(wavefronts[k.group.id], insts, source.encode(), slots, named)
            loop = wavefronts[k.group.id].plan.outer_loop.range
            edits[main].append((loop.start_offset, loop.end_offset, host))
            continue
        kernels_text.append(fused_kernel(k, insts, decls))
        fused[k.group.id] = k

    for region in program.regions:
        last = region.launches[-1]
        slots = open_region(table, "cooperative" if region.region in cooperative else "fused",
                             region.launches, insts)
        checked = slots.guard(list(region.guard))
        for idx in region.launches:
            inst = insts[idx]
            text = f"/* sirius: {inst.site.kernel} launch rescheduled */ " + temporaries(inst, True)
            if idx == last and region.region in cooperative:
                plan = cooperative[region.region].plan
                original = "; ".join(original_launch(insts[i]) for i in region.launches)
                launch = cooperative_launch(plan, phases_of[region.region])
                text += (f"; if ({checked}) {{ /* sirius: one cooperative launch */ {launch} "
                         f"if (!sirius_coop_done) {{ {slots.took(PathKind.NO_COOPERATIVE)} {original}; }} "
                         f"else {slots.took(PathKind.COOPERATIVE)} }} "
                         f"else {{ /* sirius: not the shapes optimized for: the original launches */ "
                         f"{slots.fell_back()} {original}; }}")
            elif idx == last:
                issue = "; ".join(issue_launch(i, insts, fused) for i in region.issued)
                original = "; ".join(original_launch(insts[i]) for i in region.launches)
                text += (f"; if ({checked}) {{ /* sirius: fused launches */ {slots.took(PathKind.FUSED)} {issue}; }} "
                         f"else {{ /* sirius: not the shapes optimized for: the original launches */ "
                         f"{slots.fell_back()} {original}; }}")
            edits[inst.site.range.file].append((inst.site.range.start_offset, inst.site.range.end_offset, text))

    helpers = ("#ifndef sirius_floord\n#define sirius_floord(n, d) (((n) < 0) ? -((-(n) + (d) - 1) / (d)) : (n) / (d))\n"
               "#define sirius_min(a, b) ((a) < (b) ? (a) : (b))\n#define sirius_max(a, b) ((a) > (b) ? (a) : (b))\n"
               "#endif\n" + SAME_BITS_HELPER + STRINGIZE + SAME_TOKENS)
    prototypes = ""
    if declare:
        prototypes = helpers + "".join(signature(k.name, passed_params(k), k.threads) + ";\n"
                             for k in fused.values() if k.role is KernelRole.FUSED)
        prototypes += "".join(signature(launch.plan.name, cooperative_params(list(launch.phases)), launch.plan.threads)
                              + ";\n" for launch in cooperative.values())
    top = table.header() if table.slots else ""  # first, before the program's own macros can rename what it uses
    if cooperative or cell_waves:  # (with the barrier of narrow phases, which fragments
        # written after their kernels call)
        top += "#include <cooperative_groups.h>  // sirius: cooperative launches below\n" + (
            BLOCK_SYNC_HELPER if narrow else "")
    start = 3 if source.startswith("\ufeff") else 0  # after a byte-order mark, which must stay first
    edits[main].append((start, start, top))
    block = ("\n\n// ---- kernels generated by sirius ----\n" + helpers + "\n".join(kernels_text)
             + "// ---- end of generated kernels ----\n")
    edits[block_file].append((insert_at, insert_at, block))
    for file, offset, text in in_place:  # after the block: at one offset (the last kernel's end) the fragment comes first
        edits[file].append((offset, offset, text))
    if prototypes:
        edits[entry.file].append((entry.start_offset, entry.start_offset,
                                  "// sirius: fused kernels, defined below\n" + prototypes))
    # a file with edits: its text, edited, in place of its #include (in its includer's
    # copy, which that puts in the main file: the deepest first)
    for path in sorted(index.program_files, key=index.include_depth, reverse=True):
        if edits[path]:
            included = index.program_files[path]
            own = [e for e in copy_edits(included, texts[path], main)  # not where an #include's copy goes
                   if not any(start < e[1] and e[0] < end for start, end, _ in edits[path])]
            copy = _edited(texts[path], edits[path] + own, path)
            edits[included.parent].append(in_place_text(included, copy, texts[included.parent]))
    return _edited(texts[main], edits[main], named).decode(), list(fused.values())


def _edited(data: bytes, edits: list[tuple[int, int, str | bytes]], named: str | None) -> bytes:
    """``data`` (a file's bytes) with ``edits`` (start, end, text) applied, the lines after
    each keeping their numbers (``#line`` directives naming ``named``). What sirius inserts
    ends its lines as the file does (a CRLF file stays CRLF throughout); offsets are the
    file's bytes, as clang's, so a CRLF is two of them. Bytes are inserted as they are
    (an included file's edited text, which has its own line ends and directives)."""
    eol = line_end(data)
    source = data
    for start, end, text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        inserted = text if isinstance(text, bytes) else \
            with_line_end(keeping_lines(source, start, end, text, named), eol).encode()
        data = data[:start] + inserted + data[end:]
    return data


def _first_rewritten_function(model: ProgramModel, used, file_scope: bool) -> SourceRange | None:
    """The first host function, in the emitted program's order, that a rewritten launch is
    in: the entry, or a helper written before it (in the main file or a file it includes);
    with ``file_scope``, the declaration at file scope it is in (its namespace, ``extern "C"``)."""
    index = model.source
    ranges = index.function_tops if file_scope else index.function_ranges
    entry = ranges.get(model.host.entry) or next(
        (r for name, r in ranges.items()
         if model.host.entry.startswith("_Z") and f"{len(name)}{name}" in model.host.entry), None)
    hosts = [entry] + [ranges.get(i.site.function) for i in used if i.site is not None]
    return min((r for r in hosts if r is not None and index.rewritten_file(r.file)),
               key=lambda r: index.program_order(r.file, r.start_offset), default=None)
