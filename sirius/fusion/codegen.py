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
import re

from sirius.analysis.build_macros import SAME_TOKENS, STRINGIZE
from sirius.analysis.program_model import LaunchInstance, ProgramModel
from sirius.analysis.symbolic import Expr
from sirius.fusion import kernel_ir as ir
from sirius.fusion.guards import base_pointer
from sirius.fusion.kernel_ir import (CellWavesLaunch, CooperativeLaunch, FusedProgram, KernelIR, KernelRole, LoopGuard,
                                     WavefrontLaunch, phases_shared)
from sirius.fusion.promises import strip_restrict
from sirius.fusion.redundant_barriers import BARRIER_CALL, drop_barrier_lines
from sirius.fusion.region_paths import PathKind, RegionSlots, RegionTable
from sirius.fusion.shared_overlay import POOL_ALIGNMENT, pool_layout, pooled_declaration
from sirius.core.target import needs_shared_opt_in

_INDEX_NAMES = ("blockIdx", "threadIdx", "blockDim", "gridDim")


def _fragment_name(inst: LaunchInstance) -> str:
    return f"sirius_frag_{inst.kernel.ident}"


def _fragment_call(inst: LaunchInstance, decl) -> str:
    """How a fused kernel (at file scope) names the fragment of ``inst``'s kernel."""
    scope = "".join(f"{ns}::" for ns in decl.namespaces if ns)
    targs = f"<{', '.join(decl.template_args)}>" if decl.template_params else ""
    return f"{scope}{_fragment_name(inst)}{targs}"


def _body(decl, removed_barriers: tuple[int, ...], pooled: bool, narrow: bool = False) -> str:
    """The kernel's body as a fragment runs it: its static shared arrays as references into
    the pool when ``pooled``, without the own barriers at ``removed_barriers``, and with
    ``narrow`` its barriers counting only its own threads (a phase of a cooperative kernel
    may run in the first threads of a larger block: ``fusion.cooperative``)."""
    text = decl.body_text
    if pooled:
        for d, offset in sorted(pool_layout(decl)[0], key=lambda p: -p[0].start):
            text = text[:d.start] + pooled_declaration(d, offset, text[d.start:d.end]) + text[d.end:]
    text = drop_barrier_lines(text, decl.body_line, removed_barriers)
    return BARRIER_CALL.sub("sirius_block_sync(sirius_bdim);", text) if narrow else text


# a barrier over the threads of a fragment's own block, which may be the first threads of a larger one
BLOCK_SYNC_HELPER = """static __device__ __forceinline__ void sirius_block_sync(const dim3 sirius_b) {
  const unsigned sirius_n = sirius_b.x * sirius_b.y * sirius_b.z;
  if (sirius_n == blockDim.x * blockDim.y * blockDim.z) __syncthreads(); else __barrier_sync_count(1, sirius_n);
}
"""


def _fragment(inst: LaunchInstance, decl, removed_barriers: tuple[int, ...] = (), pooled: bool = False,
              narrow: bool = False, in_place: bool = False) -> str:
    """The kernel's body as a device function, in the kernel's namespaces (its body names
    what they hold; ``in_place``: it is written right after the kernel, inside them already)
    and, for a template instance, a template called with the instance's arguments (see
    ``_body`` for what the passes change in it)."""
    shadow = "\n".join([
        "  const uint3 blockIdx = sirius_bid;", "  const uint3 threadIdx = sirius_tid;",
        "  const dim3 blockDim = sirius_bdim;", "  const dim3 gridDim = sirius_gdim;",
        "  (void)blockIdx; (void)threadIdx; (void)blockDim; (void)gridDim;"])
    # a fragment promises nothing about its pointers: the fused kernel's parameters carry
    # the __restrict__ qualifiers the alias facts prove (fusion.promises)
    params = strip_restrict(decl.params_text.strip())
    sep = ", " if params and params != "void" else ""
    params = "" if params == "void" else params
    namespaces = () if in_place else decl.namespaces
    opening = "".join(f"namespace {ns} {{ " if ns else "namespace { " for ns in namespaces)
    template = f"template <{decl.template_params}>\n" if decl.template_params else ""
    return (f"// fragment of kernel {inst.kernel.name}: its body, with its own block and thread indices\n"
            + (opening + "\n" if opening else "") + template +
            f"static __device__ __forceinline__ void {_fragment_name(inst)}(\n"
            f"    const uint3 sirius_bid, const uint3 sirius_tid, const dim3 sirius_bdim, const dim3 sirius_gdim"
            + (", unsigned char* const sirius_pool" if pooled else "")
            + f"{sep}{params}) {{\n{shadow}\n{_line_directive(decl.body_line)}{_body(decl, removed_barriers, pooled, narrow)}\n}}\n"
            + ("}" * len(namespaces) + "\n" if namespaces else ""))


def _line_directive(line: int | None) -> str:
    """``#line`` for text copied from the program: ``__LINE__`` in it (an error code, an
    assertion's message) reads as where the program wrote it."""
    return f"#line {line}\n" if line else ""


def _keeping_lines(source: bytes, start: int, end: int, text: str) -> str:
    """``text`` replacing ``source[start:end]``, so that the lines after it keep their
    numbers: padded with newlines when it has fewer, else followed by a ``#line``."""
    old, new = source[start:end].count(b"\n"), text.count("\n")
    if new < old:
        return text + "\n" * (old - new)
    if new > old:
        return text + "\n" + _line_directive(source[:end].count(b"\n") + 1)
    return text


def _signature(name: str, params: list[str], threads: int | None) -> str:
    """A fused kernel's declarator: bounded to its block size, so that nvcc keeps its
    registers within what a block of that size may have."""
    bounds = f"__launch_bounds__({threads}) " if threads else ""
    return f"__global__ void {bounds}{name}({', '.join(params)})"


def _lane_body(lane: ir.Lane, insts, decls, indices: str, indent: str) -> list[str]:
    out = []
    bid, tid = (x.strip() for x in indices.split(",")[:2])
    for step in lane.body:
        if isinstance(step, ir.Barrier):
            out.append(f"{indent}__syncthreads();  // block-level dependence on the fragment before")
            continue
        idx, call = step.launch, _fragment_call(insts[step.launch], decls[step.launch])
        pool = [f"sirius_pool + {step.pool_offset}"] if step.pooled else []
        if step.reindex is None:
            out.append(f"{indent}{call}({', '.join([indices, *pool, *step.args])});")
            continue
        (gx, gy, gz), (bx, by, bz) = step.grid, step.block
        c = step.reindex.coordinates
        out.append(f"{indent}{{  // {insts[idx].kernel.name} re-indexed onto this thread")
        out += [f"{indent}  const int sirius_p{k} = (int){src};" for k, src in
                enumerate([f"{bid}.x", f"{bid}.y", f"{bid}.z", f"{tid}.x", f"{tid}.y", f"{tid}.z"])]
        out.append(f"{indent}  if ({step.reindex.condition}) {{")
        args = [f"make_uint3({c[0]}, {c[1]}, {c[2]})", f"make_uint3({c[3]}, {c[4]}, {c[5]})",
                f"dim3({bx}, {by}, {bz})", f"dim3({gx}, {gy}, {gz})", *pool, *step.args]
        out.append(f"{indent}    {call}({', '.join(args)});")
        out.append(f"{indent}  }}")
        out.append(f"{indent}}}")
    return out


def _between_barriers(lane: ir.Lane) -> list:
    """The lane's body as runs of fragments and the barriers between them."""
    parts: list = []
    for step in lane.body:
        if isinstance(step, ir.Barrier):
            parts.append(step)
        elif parts and isinstance(parts[-1], tuple):
            parts[-1] += (step,)
        else:
            parts.append((step,))
    return parts


def _dispatch(k: KernelIR, insts, decls, block: str, threads: int, indent: str) -> list[str]:
    """The lanes of ``k`` dispatched on the linear block index ``block`` (a C expression), in
    a block of ``threads`` threads: each lane sees its own shape; a lane of a smaller block
    runs its fragments on its threads only, and every thread reaches its barriers."""
    body = [f"{indent}const unsigned sirius_block = {block};", f"{indent}const unsigned sirius_thread = threadIdx.x;"]
    inner = indent + "  "
    for n, lane in enumerate(k.lanes):
        g, b, start = lane.grid, lane.block, lane.first_block
        body.append(f"{indent}{'if' if n == 0 else '} else if'} (sirius_block < {start + lane.blocks}u) {{")
        body.append(f"{inner}const unsigned sirius_local = sirius_block - {start}u;")
        body.append(f"{inner}const dim3 sirius_gdim({g[0]}, {g[1]}, {g[2]});")
        body.append(f"{inner}const dim3 sirius_bdim({b[0]}, {b[1]}, {b[2]});")
        body.append(f"{inner}const uint3 sirius_bid = make_uint3(sirius_local % {g[0]}u, "
                    f"(sirius_local / {g[0]}u) % {g[1]}u, sirius_local / {g[0] * g[1]}u);")
        tid = (f"const uint3 sirius_tid = make_uint3(sirius_thread % {b[0]}u, "
               f"(sirius_thread / {b[0]}u) % {b[1]}u, sirius_thread / {b[0] * b[1]}u);")
        indices = "sirius_bid, sirius_tid, sirius_bdim, sirius_gdim"
        if lane.threads == threads:
            body.append(f"{inner}{tid}")
            body += _lane_body(lane, insts, decls, indices, inner)
        elif lane.threads > threads:  # a larger block: its threads in turns (they share nothing: fusion.cooperative)
            body.append(f"{inner}for (unsigned sirius_turn = sirius_thread; sirius_turn < {lane.threads}u; "
                        f"sirius_turn += {threads}u) {{")
            body.append(f"{inner}  {tid.replace('sirius_thread', 'sirius_turn')}")
            body += _lane_body(lane, insts, decls, indices, inner + "  ")
            body.append(f"{inner}}}")
        elif not any(isinstance(step, ir.Barrier) for step in lane.body):
            body.append(f"{inner}if (sirius_thread < {lane.threads}u) {{  // this fragment's block is smaller")
            body.append(f"{inner}  {tid}")
            body += _lane_body(lane, insts, decls, indices, inner + "  ")
            body.append(f"{inner}}}")
        else:  # every thread of the block reaches each barrier; only the lane's threads run fragments
            body.append(f"{inner}{tid}")
            for part in _between_barriers(lane):
                if isinstance(part, ir.Barrier):
                    body += _lane_body(dataclasses.replace(lane, body=(part,)), insts, decls, indices, inner)
                    continue
                body.append(f"{inner}if (sirius_thread < {lane.threads}u) {{  // this fragment's block is smaller")
                body += _lane_body(dataclasses.replace(lane, body=part), insts, decls, indices, inner + "  ")
                body.append(f"{inner}}}")
    body.append(f"{indent}}}")
    return body


def _locals(k: KernelIR, pool: str = "sirius_pool") -> list[str]:
    """What a fused kernel defines before its lanes: folded parameters, the shared pool."""
    body = [f"  {p.definition}" for p in k.params if not p.passed]
    if k.pool:
        body.append(f"  __shared__ __align__({POOL_ALIGNMENT}) unsigned char {pool}[{k.pool}];")
    return body


def _fused_kernel(k: KernelIR, insts, decls) -> str:
    """The text of a fused kernel: one lane runs in every block with the builtin indices;
    several dispatch on the block index, each with its own shape."""
    body = _locals(k)
    if len(k.lanes) == 1:
        g, b = k.lanes[0].grid, k.lanes[0].block
        shapes = (f"dim3({b[0]}, {b[1]}, {b[2]}), dim3({g[0]}, {g[1]}, {g[2]})" if k.constant_shapes
                  else "blockDim, gridDim")
        body += _lane_body(k.lanes[0], insts, decls, f"blockIdx, threadIdx, {shapes}", "  ")
    else:
        body += _dispatch(k, insts, decls, "blockIdx.x", k.threads, "  ")
    members = ", ".join(insts[f.launch].kernel.name for lane in k.lanes for f in lane.fragments)
    return (f"// {k.group.arrangement} fusion of {members}\n"
            f"{_signature(k.name, _passed(k), k.threads)} {{\n" + "\n".join(body) + "\n}\n")


def _phase_loops(phases: list[KernelIR], insts, decls, threads: int, cells: str = "",
                 prologue=None) -> list[str]:
    """The body of a kernel running ``phases`` in order, a grid barrier between them; each
    phase a loop over its blocks as virtual blocks of the grid (times ``cells``, a C
    expression, when the kernel runs several cells of a phase side by side: then
    ``prologue(k, blocks)`` gives the lines that set up the cell of virtual block
    ``sirius_vb``)."""
    body: list[str] = []
    for n, k in enumerate(phases):
        if n:
            body.append("  cooperative_groups::this_grid().sync();  // the next phase reads what this one wrote, "
                        "in any block")
        blocks = sum(lane.blocks for lane in k.lanes)
        members = ", ".join(insts[f.launch].kernel.name for lane in k.lanes for f in lane.fragments)
        body.append(f"  // phase {n}: {members} ({blocks} blocks{' per cell' if cells else ''})")
        body.append(f"  for (unsigned sirius_vb = blockIdx.x; sirius_vb < {cells + ' * ' if cells else ''}{blocks}u; "
                    "sirius_vb += gridDim.x) {")
        body += prologue(k, blocks) if prologue is not None else []
        lanes = _dispatch(k, insts, decls, f"sirius_vb % {blocks}u" if cells else "sirius_vb", threads, "    ")
        body += [line.replace("sirius_pool +", f"sirius_pool_{k.group.id} +") for line in lanes]
        body.append("    __syncthreads();  // the next virtual block reuses this block's shared memory")
        body.append("  }")
    return body


def _cooperative_kernel(plan, phases: list[KernelIR], insts, decls) -> str:
    """One kernel running ``phases`` (the groups of a region) in order, a grid barrier
    between them; each phase a loop over its blocks as virtual blocks of this grid, so the
    grid can be as large as what is resident at once (the occupancy API) and no larger."""
    body = [line for k in phases for line in _locals(k, f"sirius_pool_{k.group.id}")]
    body += _phase_loops(phases, insts, decls, plan.threads)
    params = [strip_restrict(p.declared) for k in phases for p in k.params if p.passed]
    return (f"// cooperative fusion of region {plan.region}: {len(phases)} phases, grid barriers between them\n"
            f"{_signature(plan.name, params, plan.threads)} {{\n" + "\n".join(body) + "\n}\n")


def _cooperative_grid(name: str, threads: int, static: int, dynamic: int, blocks: int) -> str:
    """Host code setting ``sirius_coop`` (the device launches cooperative kernels) and
    ``sirius_grid``: as many blocks of ``name`` as are resident at once, at most ``blocks``.
    A block holding more than 48 KB of shared memory (``static`` plus ``dynamic`` bytes)
    needs the kernel's own opt-in (the program's, for its kernels, does not carry over),
    first: the occupancy query, made with the launch's dynamic size, and the launch see it."""
    opt_in = _shared_opt_in(name, dynamic, name.removeprefix("sirius_")) if needs_shared_opt_in(static, dynamic) else ""
    return (f"{opt_in}int sirius_dev = 0, sirius_coop = 0, sirius_sms = 0, sirius_per_sm = 0; "
            "cudaGetDevice(&sirius_dev); "
            "cudaDeviceGetAttribute(&sirius_coop, cudaDevAttrCooperativeLaunch, sirius_dev); "
            "cudaDeviceGetAttribute(&sirius_sms, cudaDevAttrMultiProcessorCount, sirius_dev); "
            f"cudaOccupancyMaxActiveBlocksPerMultiprocessor(&sirius_per_sm, {name}, {threads}, {dynamic}); "
            "unsigned sirius_grid = (unsigned)(sirius_per_sm * sirius_sms); "
            f"if (sirius_grid > {blocks}u) sirius_grid = {blocks}u; "
            # a build may bound what runs at once (the CPU backend runs each block on a thread of its own)
            "\n#ifdef SIRIUS_COOPERATIVE_MAX_BLOCKS\n"
            "if (sirius_grid > (unsigned)SIRIUS_COOPERATIVE_MAX_BLOCKS) sirius_grid = (unsigned)SIRIUS_COOPERATIVE_MAX_BLOCKS;"
            "\n#endif\n#ifdef SIRIUS_COOPERATIVE_MAX_THREADS\n"
            f"if (sirius_grid > (unsigned)SIRIUS_COOPERATIVE_MAX_THREADS / {threads}u) "
            f"sirius_grid = (unsigned)SIRIUS_COOPERATIVE_MAX_THREADS / {threads}u;"
            "\n#endif\n")


def _cooperative_launch(plan, phases: list[KernelIR]) -> str:
    """Host code launching a cooperative kernel over as many blocks as are resident at once
    (and no more than its largest phase has); false in ``sirius_coop_done`` when the device
    cannot launch it cooperatively, so the original launches run instead."""
    blocks = max(sum(lane.blocks for lane in k.lanes) for k in phases)
    static, dynamic = phases_shared(phases)
    passed = [(p, k) for k in phases for p in k.params if p.passed]
    typed = "".join(f"{strip_restrict(p.ctype)} sirius_c{n} = sirius_a{p.launch}_{p.position}; "
                    for n, (p, _) in enumerate(passed))
    args = ", ".join(f"(void*)&sirius_c{n}" for n in range(len(passed))) or "nullptr"
    name = plan.name
    return ("bool sirius_coop_done = false; { " + _cooperative_grid(name, plan.threads, static, dynamic, blocks) +
            f"{typed}void* sirius_args[] = {{{args}}}; "
            f"if (sirius_coop && sirius_grid > 0) {{ sirius_coop_done = cudaLaunchCooperativeKernel({name}, "
            f"dim3(sirius_grid), dim3({plan.threads}), sirius_args, {dynamic}, 0) == cudaSuccess; "
            "if (!sirius_coop_done) (void)cudaGetLastError(); /* ours: the original launches run instead */ } }")


# ------------------------------------------------------------------ waves of cells

def _in_cell(e: Expr, rep) -> str:
    """An offset or scalar of the pattern as the cell kernel computes it."""
    return f"({e.subs({rep.iterator: Expr.sym('sirius_step')}).to_c()})"


def _pattern_value(arg, ptype: str, rep) -> str:
    """What the cell kernel passes for one argument of the pattern (analysis.repetition)."""
    if arg.kind == "scalar":
        return _in_cell(arg.value, rep) if arg.value is not None else arg.text
    if arg.kind == "private":
        return f"({ptype})(sirius_scratch + sirius_layer * {rep.cell_bytes} + {arg.slot})"
    general = f"{base_pointer(arg.buffer)} + {_in_cell(arg.offset, rep)}"
    if arg.kind == "peeled":
        first = f"{base_pointer(arg.first.buffer)} + {_in_cell(arg.first.offset, rep)}"
        return f"({ptype})(sirius_layer == 0 ? {first} : {general})"
    return f"({ptype})({general})"


def _cell_wave_kernel(plan, phases: list[KernelIR], insts, decls) -> str:
    """The kernel running every cell of wave ``sirius_w`` (layers ``sirius_lo`` to
    ``sirius_hi``): the phases of a cell in order, a grid barrier between them, each phase
    a loop over (cell, block of the phase) virtual blocks; after the last wave, the last
    step's private values copied to where the original program left them."""
    rep = plan.repetition
    locals_ = [line for k in phases for line in _locals(k, f"sirius_pool_{k.group.id}")]
    def cell(k: KernelIR, blocks: int) -> list[str]:
        lines = [f"    const int sirius_layer = sirius_lo + (int)(sirius_vb / {blocks}u);",
                 "    const int sirius_step = sirius_w - sirius_layer;", "    (void)sirius_step;"]
        for f in (f for lane in k.lanes for f in lane.fragments):
            position = rep.cell_of(f.launch)[1]
            for p, arg in zip(k.params_of(f.launch), rep.arguments[position]):
                ptype = strip_restrict(p.ctype)  # the cells of a wave share the program's memory: no promises
                lines.append(f"    {ptype} {p.name} = {_pattern_value(arg, ptype, rep)};")
        return lines

    body = ["  const unsigned sirius_cells = (unsigned)(sirius_hi - sirius_lo + 1);"]
    body += _phase_loops(phases, insts, decls, plan.threads, "sirius_cells", cell)
    if rep.copy_back:
        body.append(f"  if (sirius_w == {plan.waves - 1}) {{  // the last step's temporaries, where the original "
                    "left them")
        body.append("    cooperative_groups::this_grid().sync();")
        body.append("    const unsigned sirius_t = blockIdx.x * blockDim.x + threadIdx.x;")
        for piece in rep.copy_back:
            body.append(f"    for (unsigned sirius_i = sirius_t; sirius_i < {piece.bytes}u; sirius_i += gridDim.x * "
                        f"blockDim.x) {base_pointer(piece.buffer)}[{piece.offset} + sirius_i] = sirius_scratch[{piece.slot} + "
                        "sirius_i];")
        body.append("  }")
    bases = [f"char* const {base_pointer(a)}" for a in plan.allocations]
    if plan.persistent:  # the wave loop in the kernel: a grid barrier between two waves
        params = bases
        body = ([f"  {plan.wave_for} {{", f"    const int sirius_lo = {plan.lo};",
                 f"    const int sirius_hi = {plan.hi};"]
                + ["  " + line for line in body] +
                [f"    if (sirius_w < {plan.waves - 1}) cooperative_groups::this_grid().sync();  // the next wave "
                 "reads what this one wrote", "  }"])
        what = "one launch runs every wave, a grid barrier between two"
    else:
        params = ["const int sirius_w", "const int sirius_lo", "const int sirius_hi"] + bases
        what = "one launch runs the cells with step + layer = sirius_w"
    scratch = ""
    if rep.cell_bytes:
        scratch = (f"// the private temporaries of each layer's cell ({rep.cell_bytes} bytes each)\n"
                   f"static __device__ __align__(256) char {plan.name}_scratch[{rep.cell_bytes * rep.copies}];\n")
        locals_.insert(0, f"  char* const sirius_scratch = {plan.name}_scratch;")
    return (f"{scratch}// waves of cells: cell (step, layer) runs copy 'layer' of the loop body's "
            f"{rep.period} launches at 'step'; {what}; {len(phases)} phases\n"
            f"{_signature(plan.name, params, plan.threads)} {{\n" + "\n".join(locals_ + body) + "\n}\n")


def _cell_checks(launch: CellWavesLaunch, insts, source: bytes, slots: RegionSlots) -> str:
    """The guard of waves of cells (``fusion.guards``): the allocations' base pointers, then
    ``_checked_loop``."""
    bases = "".join(f"char* {base_pointer(a)} = nullptr; " for a in launch.plan.allocations)
    return bases + _checked_loop(launch.plan.repetition.loop.range, launch.guard, "waves", insts, source, slots)


def _checked_loop(loop, guard: LoopGuard, what: str, insts, source: bytes, slots: RegionSlots) -> str:
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


def _cell_wave_host(plan, phases: list[KernelIR], guard: str, source: bytes, slots: RegionSlots) -> str:
    """The host code replacing the loop: ``guard`` (``_cell_checks``), then the wave loop,
    one cooperative launch per wave, where the loop's values are those the waves assume and
    the device launches cooperative kernels; else the loop as written. The path taken is
    counted in ``slots``."""
    rep = plan.repetition
    blocks = max(sum(lane.blocks for lane in k.lanes) for k in phases) * min(rep.steps, rep.copies)
    static, dynamic = phases_shared(phases)
    loop = rep.loop.range
    original = source[loop.start_offset:loop.end_offset].decode()
    bases = [f"(void*)&{base_pointer(a)}" for a in plan.allocations]
    wave_args = ["(void*)&sirius_w", "(void*)&sirius_lo", "(void*)&sirius_hi"]
    if plan.persistent:
        launch = (f"  {{ void* sirius_args[] = {{{', '.join(bases) or 'nullptr'}}};\n"
                  f"    cudaLaunchCooperativeKernel({plan.name}, dim3(sirius_grid), dim3({plan.threads}), sirius_args, "
                  f"{dynamic}, 0); }}\n")
    else:
        launch = (f"  {plan.wave_for} {{\n"
                  f"    int sirius_lo = {plan.lo};\n"
                  f"    int sirius_hi = {plan.hi};\n"
                  f"    void* sirius_args[] = {{{', '.join(wave_args + bases)}}};\n"
                  f"    cudaLaunchCooperativeKernel({plan.name}, dim3(sirius_grid), dim3({plan.threads}), sirius_args, "
                  f"{dynamic}, 0);\n  }}\n")
    how = "in one cooperative launch, a grid barrier between two waves" if plan.persistent else \
        "every cell (step, layer) on one anti-diagonal runs in one cooperative launch"
    return (f"{{ /* sirius: waves of cells: the loop body is {rep.copies} copies (layers) of {rep.period} launches; "
            f"{how} */\n  " + guard +
            "  " + _cooperative_grid(plan.name, plan.threads, static, dynamic, blocks) +
            f"  if (sirius_cells_ok && sirius_coop && sirius_grid > 0) {{\n  {slots.took(PathKind.WAVES)}\n" + launch +
            "  } else { /* sirius: not the values optimized for, or no cooperative launches: the loop as written */\n"
            f"  if (sirius_cells_ok) {slots.took(PathKind.NO_COOPERATIVE)} else {slots.fell_back()}\n"
            f"{_line_directive(loop.line)}{' ' * (loop.column - 1)}{original}\n  }}\n}}")


# a value the host computes has the bits of the constant a generated kernel bakes in
# (-0.0 is not 0.0, and a NaN is never taken for the NaN optimized for)
SAME_BITS_HELPER = ("#ifndef sirius_same_bits\n#define sirius_same_bits(value, constant) ([&]() { "
                    "auto sirius_v = (value); decltype(sirius_v) sirius_c = (constant); "
                    "return __builtin_memcmp(&sirius_v, &sirius_c, sizeof sirius_v) == 0; }())\n#endif\n")


def _passed(k: KernelIR) -> list[str]:
    """The fused kernel's parameter list: what the host passes."""
    return [p.declared for p in k.params if p.passed]


def _shared_opt_in(kernel: str, dynamic: int, tag) -> str:
    """Once per program run: allow the launches of ``kernel`` ``dynamic`` bytes of dynamic
    shared memory, more than the 48 KB a launch gets by default (``tag`` names the variable
    holding the call's result)."""
    return (f"static const cudaError_t sirius_opt_in_{tag} = cudaFuncSetAttribute({kernel}, "
            f"cudaFuncAttributeMaxDynamicSharedMemorySize, {dynamic}); (void)sirius_opt_in_{tag}; ")


def _temporaries(inst: LaunchInstance, config_used: bool) -> str:
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


def _original_launch(inst: LaunchInstance) -> str:
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
        check = (f"{{ {prefix}{_temporaries(inst, True)}; sirius_cells_ok = sirius_cells_ok && "
                 f"{' && '.join(conds) or 'true'}; ++sirius_checked; }}")
        edits.append((inst.site.range.start_offset - loop.start_offset,
                      inst.site.range.end_offset - loop.start_offset, check))
    nest = source[loop.start_offset:loop.end_offset]
    for start, end, text in sorted(edits, reverse=True):
        nest = nest[:start] + text.encode() + nest[end:]
    return nest


def _issue(issue: ir.Issue, insts, fused: dict[int, KernelIR]) -> str:
    if issue.alone is not None:
        return _original_launch(insts[issue.alone])
    k = fused[issue.group]
    args = ", ".join(f"sirius_a{p.launch}_{p.position}" for p in k.params if p.passed)
    opt_in = _shared_opt_in(k.name, k.dynamic_shared, k.group.id) if k.shared_opt_in else ""
    return f"{opt_in}{k.name}<<<{k.grid_text}, {k.block_text}, {k.dynamic_shared}>>>({args})"


def _wave_kernel(launch: WavefrontLaunch, insts, decls, source: bytes, slots: RegionSlots) -> tuple[str, str]:
    """The kernel running one anti-diagonal of a loop nest, and the host code replacing the
    nest: the wave loop where the nest's values are those the wavefront assumes (its
    guard), else the nest as written; the path taken counted in ``slots``."""
    k, wave = launch.kernel, launch.plan
    lane = k.lanes[0]
    (gx, gy, gz), (bx, by, bz) = lane.grid, lane.block
    per_cell = lane.blocks
    params = ["const int sirius_w", "const int sirius_lo"] + [f"char* sirius_base_{a}" for a in wave.allocations]
    body = [f"  const int {wave.inner} = sirius_lo + (int)(blockIdx.x / {per_cell}u);",
            f"  const int {wave.outer} = sirius_w - {wave.inner};",
            f"  const unsigned sirius_local = blockIdx.x % {per_cell}u;",
            f"  const dim3 sirius_gdim({gx}, {gy}, {gz});",
            f"  const dim3 sirius_bdim({bx}, {by}, {bz});",
            f"  const uint3 sirius_bid = make_uint3(sirius_local % {gx}u, (sirius_local / {gx}u) % {gy}u, "
            f"sirius_local / {gx * gy}u);",
            "  const uint3 sirius_tid = threadIdx;"]
    for frag in lane.fragments:
        for p, (_, arg) in zip(k.params_of(frag.launch), insts[frag.launch].bindings):
            ptype = strip_restrict(p.ctype)  # the cells of one wave may share storage: no promises
            if arg.kind == "buffer":
                value = f"({ptype})(sirius_base_{arg.buffer} + ({arg.offset.to_c()}))"
            else:
                value = arg.value.to_c() if arg.value is not None else arg.text
            body.append(f"  {ptype} {p.name} = {value};")
    body += _lane_body(lane, insts, decls, "sirius_bid, sirius_tid, sirius_bdim, sirius_gdim", "  ")
    members = ", ".join(insts[f.launch].kernel.name for f in lane.fragments)
    kernel = (f"// wavefront of {members}: block range k of the launch is cell ({wave.outer}, {wave.inner}) "
              f"with {wave.outer} + {wave.inner} = sirius_w\n"
              f"{_signature(k.name, params, k.threads)} {{\n" + "\n".join(body) + "\n}\n")
    bases = ", ".join(["sirius_w", "sirius_lo"] + [f"(char*){a}" for a in wave.allocations])
    loop = wave.outer_loop.range
    guard = _checked_loop(loop, launch.guard, "wavefront's cells", insts, source, slots)
    original = source[loop.start_offset:loop.end_offset].decode()
    host = (f"{{ /* sirius: wavefront over ({wave.outer}, {wave.inner}): the {len(lane.fragments)} launches of each "
            f"iteration are one fused launch, and all iterations on one anti-diagonal share it */\n  {guard}"
            f"  if (sirius_cells_ok) {{\n  {slots.took(PathKind.WAVEFRONT)}\n"
            + (f"  {{ {_shared_opt_in(k.name, k.dynamic_shared, k.group.id)}}}\n" if k.shared_opt_in else "") +
            f"  {wave.wave_for} {{\n"
            f"    const int sirius_lo = {wave.lo};\n"
            f"    const int sirius_hi = {wave.hi};\n"
            f"    {k.name}<<<dim3((unsigned)(sirius_hi - sirius_lo + 1) * {per_cell}u), dim3({bx}, {by}, {bz}), "
            f"{k.dynamic_shared}>>>({bases});\n  }}\n"
            "  } else { /* sirius: not the values optimized for: the loop nest as written */\n"
            f"  {slots.fell_back()}\n"
            f"{_line_directive(loop.line)}{' ' * (loop.column - 1)}{original}\n  }}\n}}")
    return kernel, host


def _open_region(table: RegionTable, kind: str, launches, insts) -> RegionSlots:
    """The counters of a region of ``launches`` (see region_paths), its conditions
    described in the program's own terms."""
    first = insts[launches[0]].statement.line
    return table.open(kind, first, [insts[i].kernel.name for i in launches], lambda c: _readable(c, insts))


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
            return f"`{text}`@{inst.statement.line if inst is not None else '?'}"
        inst = insts.get(int(m[4]))
        what = {"g": "grid", "b": "block", "s": "shared_bytes"}[m[3]]
        return f"{what}@{inst.statement.line if inst is not None else '?'}"
    return _TEMPORARY.sub(name, condition)


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
    # a fragment of a kernel of the main file is written right after the kernel: the
    # program's macros there are those its body was written with (a macro redefined
    # between kernels, or #undef'd after them, means something else further down)
    in_place: list[tuple[int, int, str]] = []
    for k in kernels:
        for f in (f for lane in k.lanes for f in lane.fragments):
            name = _fragment_name(insts[f.launch])
            if name not in done:
                done.add(name)
                decl = decls[f.launch]
                here = decl.range.file == model.source.main_file
                text = _fragment(insts[f.launch], decl, f.removed_barriers, f.pooled,
                                 insts[f.launch].kernel.mangled in narrow, in_place=here)
                if here:
                    in_place.append((decl.range.end_offset, decl.range.end_offset, "\n" + text))
                else:
                    kernels_text.append(text)
    fused: dict[int, KernelIR] = {}
    edits: list[tuple[int, int, str]] = []
    table = RegionTable()
    phases_of = {region: list(launch.phases) for region, launch in cooperative.items()}
    for region, launch in cooperative.items():
        kernels_text.append(_cooperative_kernel(launch.plan, phases_of[region], insts, decls))
    for launch in cell_waves:
        plan, phases = launch.plan, list(launch.phases)
        kernels_text.append(_cell_wave_kernel(plan, phases, insts, decls))
        launches = [i for row in plan.repetition.statements for i in row]
        slots = _open_region(table, "waves", launches, insts)
        guard = _cell_checks(launch, insts, source.encode(), slots)
        fused.update({k.group.id: k for k in phases})
        loop = plan.repetition.loop.range
        edits.append((loop.start_offset, loop.end_offset, _cell_wave_host(plan, phases, guard, source.encode(), slots)))
    for k in kernels:
        if k.role is KernelRole.CELL_PHASE:
            continue
        if k.role is KernelRole.PHASE:
            fused[k.group.id] = dataclasses.replace(k, name=cooperative[k.group.region].plan.name)
            continue
        if k.role is KernelRole.WAVEFRONT:
            slots = _open_region(table, "wavefront", k.group.launches, insts)
            text, host = _wave_kernel(wavefronts[k.group.id], insts, decls, source.encode(), slots)
            fused[k.group.id] = k
            kernels_text.append(text)
            loop = wavefronts[k.group.id].plan.outer_loop.range
            edits.append((loop.start_offset, loop.end_offset, host))
            continue
        kernels_text.append(_fused_kernel(k, insts, decls))
        fused[k.group.id] = k

    for region in program.regions:
        last = region.launches[-1]
        slots = _open_region(table, "cooperative" if region.region in cooperative else "fused",
                             region.launches, insts)
        checked = slots.guard(list(region.guard))
        for idx in region.launches:
            inst = insts[idx]
            text = f"/* sirius: {inst.site.kernel} launch rescheduled */ " + _temporaries(inst, True)
            if idx == last and region.region in cooperative:
                plan = cooperative[region.region].plan
                original = "; ".join(_original_launch(insts[i]) for i in region.launches)
                launch = _cooperative_launch(plan, phases_of[region.region])
                text += (f"; if ({checked}) {{ /* sirius: one cooperative launch */ {launch} "
                         f"if (!sirius_coop_done) {{ {slots.took(PathKind.NO_COOPERATIVE)} {original}; }} "
                         f"else {slots.took(PathKind.COOPERATIVE)} }} "
                         f"else {{ /* sirius: not the shapes optimized for: the original launches */ "
                         f"{slots.fell_back()} {original}; }}")
            elif idx == last:
                issue = "; ".join(_issue(i, insts, fused) for i in region.issued)
                original = "; ".join(_original_launch(insts[i]) for i in region.launches)
                text += (f"; if ({checked}) {{ /* sirius: fused launches */ {slots.took(PathKind.FUSED)} {issue}; }} "
                         f"else {{ /* sirius: not the shapes optimized for: the original launches */ "
                         f"{slots.fell_back()} {original}; }}")
            edits.append((inst.site.range.start_offset, inst.site.range.end_offset, text))

    data = source.encode()
    used = [insts[i] for k in kernels for i in k.group.launches]
    insert_at = max(model.source.visible_from(decls[i.statement.index]) for i in used)
    entry = model.source.function_ranges.get(model.host.entry) or next(
        (r for name, r in model.source.function_ranges.items()
         if model.host.entry.startswith("_Z") and f"{len(name)}{name}" in model.host.entry), None)
    # the first host function a rewritten launch is in (the entry, or a helper written before it)
    hosts = [entry] + [model.source.function_ranges.get(i.site.function) for i in used if i.site is not None]
    entry = min((r for r in hosts if r is not None), key=lambda r: r.start_offset, default=None)
    helpers = ("#ifndef sirius_floord\n#define sirius_floord(n, d) (((n) < 0) ? -((-(n) + (d) - 1) / (d)) : (n) / (d))\n"
               "#define sirius_min(a, b) ((a) < (b) ? (a) : (b))\n#define sirius_max(a, b) ((a) > (b) ? (a) : (b))\n"
               "#endif\n" + SAME_BITS_HELPER + STRINGIZE + SAME_TOKENS)
    prototypes = ""
    if entry is not None and insert_at > entry.start_offset:
        prototypes = helpers + "".join(_signature(k.name, _passed(k), k.threads) + ";\n"
                             for k in fused.values() if k.role is KernelRole.FUSED)
        prototypes += "".join(_signature(launch.plan.name, [strip_restrict(p.declared) for k in launch.phases
                                                            for p in k.params if p.passed], launch.plan.threads) + ";\n"
                              for launch in cooperative.values())
        if any(k.role.per_cell for k in kernels):
            prototypes = ""  # wave kernels need the helper macros too: keep everything above the entry
            insert_at = entry.start_offset
    top = table.header() if table.slots else ""  # first, before the program's own macros can rename what it uses
    if cooperative or cell_waves:  # (with the barrier of narrow phases, which fragments
        # written after their kernels call)
        top += "#include <cooperative_groups.h>  // sirius: cooperative launches below\n" + (
            BLOCK_SYNC_HELPER if narrow else "")
    start = 3 if source.startswith("\ufeff") else 0  # after a byte-order mark, which must stay first
    edits.append((start, start, top))
    block = ("\n\n// ---- kernels generated by sirius ----\n" + helpers + "\n".join(kernels_text)
             + "// ---- end of generated kernels ----\n").encode()
    edits.append((insert_at, insert_at, block.decode()))
    edits += in_place  # after the block: at one offset (the last kernel's end) the fragment comes first
    if prototypes:
        edits.append((entry.start_offset, entry.start_offset, "// sirius: fused kernels, defined below\n" + prototypes))
    for start, end, text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        data = data[:start] + _keeping_lines(source.encode(), start, end, text).encode() + data[end:]
    return data.decode(), list(fused.values())
