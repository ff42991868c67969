"""The device side of the optimized program, printed from the fused-kernel IR: fused
kernels (one lane with the builtin indices, or lanes dispatched on the block index),
cooperative kernels (phases as loops over virtual blocks, grid barriers between them),
the kernels of waves of cells and of wavefronts. Printing only: every decision (lanes,
barriers, re-indexing, pools, folded parameters) is the IR's.
"""

from __future__ import annotations

import dataclasses

from sirius.analysis.repetition import LAYER
from sirius.analysis.symbolic import Expr
from sirius.fusion import kernel_ir as ir
from sirius.fusion.fragment_text import POOL_ALIGNMENT, fragment_call, strip_restrict
from sirius.fusion.kernel_ir import KernelIR, WavefrontLaunch, base_pointer, phases_pool


def signature(name: str, params: list[str], threads: int | None) -> str:
    """A fused kernel's declarator: bounded to its block size, so that nvcc keeps its
    registers within what a block of that size may have."""
    bounds = f"__launch_bounds__({threads}) " if threads else ""
    return f"__global__ void {bounds}{name}({', '.join(params)})"


def _lane_body(lane: ir.Lane, insts, decls, indices: str, indent: str) -> list[str]:
    out = []
    bid, tid = (x.strip() for x in indices.split(",")[:2])
    for step in lane.body:
        if isinstance(step, ir.LaneBarrier):
            out.append(f"{indent}__syncthreads();  // block-level dependence on the fragment before")
            continue
        idx, call = step.launch, fragment_call(insts[step.launch], decls[step.launch])
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
        if isinstance(step, ir.LaneBarrier):
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
    for n, (lane, (start, end)) in enumerate(zip(k.lanes, ir.lane_ranges(k, lambda lane: lane.grid_parameter))):
        g, b = lane.grid, lane.block
        body.append(f"{indent}{'if' if n == 0 else '} else if'} (sirius_block < {end}) {{")
        body.append(f"{inner}const unsigned sirius_local = sirius_block - {_parenthesised(start)};")
        if g is None:  # passed by the host
            body.append(f"{inner}const dim3 sirius_gdim = {lane.grid_parameter};")
            body.append(f"{inner}const dim3 sirius_bdim({b[0]}, {b[1]}, {b[2]});")
            body.append(f"{inner}const uint3 sirius_bid = make_uint3(sirius_local % sirius_gdim.x, "
                        "(sirius_local / sirius_gdim.x) % sirius_gdim.y, "
                        "sirius_local / (sirius_gdim.x * sirius_gdim.y));")
        else:
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
        elif not any(isinstance(step, ir.LaneBarrier) for step in lane.body):
            body.append(f"{inner}if (sirius_thread < {lane.threads}u) {{  // this fragment's block is smaller")
            body.append(f"{inner}  {tid}")
            body += _lane_body(lane, insts, decls, indices, inner + "  ")
            body.append(f"{inner}}}")
        else:  # every thread of the block reaches each barrier; only the lane's threads run fragments
            body.append(f"{inner}{tid}")
            for part in _between_barriers(lane):
                if isinstance(part, ir.LaneBarrier):
                    body += _lane_body(dataclasses.replace(lane, body=(part,)), insts, decls, indices, inner)
                    continue
                body.append(f"{inner}if (sirius_thread < {lane.threads}u) {{  // this fragment's block is smaller")
                body += _lane_body(dataclasses.replace(lane, body=part), insts, decls, indices, inner + "  ")
                body.append(f"{inner}}}")
    body.append(f"{indent}}}")
    return body


def _parenthesised(c: str) -> str:
    return f"({c})" if " " in c else c


def _locals(kernels: list[KernelIR]) -> list[str]:
    """What a fused kernel defines before its lanes (running ``kernels``, its phases, one
    after another): the folded parameters, and the shared pool, one for all phases
    (``phases_pool``)."""
    body = [f"  {p.definition}" for k in kernels for p in k.params if not p.passed]
    pool = phases_pool(kernels)
    if pool:
        body.append(f"  __shared__ __align__({POOL_ALIGNMENT}) unsigned char sirius_pool[{pool}];")
    return body


def fused_kernel(k: KernelIR, insts, decls) -> str:
    """The text of a fused kernel: one lane runs in every block with the builtin indices;
    several dispatch on the block index, each with its own shape."""
    body = _locals([k])
    if len(k.lanes) == 1:
        g, b = k.lanes[0].grid, k.lanes[0].block
        shapes = (f"dim3({b[0]}, {b[1]}, {b[2]}), dim3({g[0]}, {g[1]}, {g[2]})" if k.constant_shapes
                  else "blockDim, gridDim")
        body += _lane_body(k.lanes[0], insts, decls, f"blockIdx, threadIdx, {shapes}", "  ")
    else:
        body += _dispatch(k, insts, decls, "blockIdx.x", k.threads, "  ")
    members = ", ".join(insts[f.launch].kernel.name for lane in k.lanes for f in lane.fragments)
    return (f"// {k.group.arrangement} fusion of {members}\n"
            f"{signature(k.name, passed_params(k), k.threads)} {{\n" + "\n".join(body) + "\n}\n")


def _phase_loops(phases: list[KernelIR], insts, decls, threads: int, cells: str = "",
                 prologue=None) -> list[str]:
    """The body of a kernel running ``phases`` in order, a grid barrier between them; each
    phase a loop over its blocks as virtual blocks of the grid (times ``cells``, a C
    expression, when the kernel runs several cells of a phase side by side: then
    ``prologue(k, blocks)`` gives the lines that set up the cell of virtual block
    ``sirius_vb``, given the C count of a cell's blocks)."""
    body: list[str] = []
    for n, k in enumerate(phases):
        if n:
            body.append("  cooperative_groups::this_grid().sync();  // the next phase reads what this one wrote, "
                        "in any block")
        blocks = ir.lane_ranges(k, lambda lane: lane.grid_parameter)[-1][1]  # C; a constant in cells
        members = ", ".join(insts[f.launch].kernel.name for lane in k.lanes for f in lane.fragments)
        count = f"{blocks} blocks, from grids computed at run time" if k.run_time_lanes else \
            f"{blocks.removesuffix('u')} blocks{' per cell' if cells else ''}"
        body.append(f"  // phase {n}: {members} ({count})")
        body.append(f"  for (unsigned sirius_vb = blockIdx.x; sirius_vb < {cells + ' * ' if cells else ''}{blocks}; "
                    "sirius_vb += gridDim.x) {")
        body += prologue(k, _parenthesised(blocks)) if prologue is not None else []
        lanes = _dispatch(k, insts, decls, f"sirius_vb % {_parenthesised(blocks)}" if cells else "sirius_vb",
                          threads, "    ")
        body += lanes
        body.append("    __syncthreads();  // the next virtual block reuses this block's shared memory")
        body.append("  }")
    return body


def cooperative_kernel(plan, phases: list[KernelIR], insts, decls) -> str:
    """One kernel running ``phases`` (the groups of a region) in order, a grid barrier
    between them; each phase a loop over its blocks as virtual blocks of this grid, so the
    grid can be as large as what is resident at once (the occupancy API) and no larger."""
    body = _locals(phases) + _phase_loops(phases, insts, decls, plan.threads)
    params = cooperative_params(phases)
    return (f"// cooperative fusion of region {plan.region}: {len(phases)} phases, grid barriers between them\n"
            f"{signature(plan.name, params, plan.threads)} {{\n" + "\n".join(body) + "\n}\n")


def _in_cell(e: Expr, rep) -> str:
    """An offset or scalar of the pattern as the cell kernel computes it."""
    return f"({e.subs({rep.iterator: Expr.sym('sirius_step'), LAYER: Expr.sym('sirius_layer')}).to_c()})"


def _pattern_value(arg, ptype: str, rep, scratch) -> str:
    """What the cell kernel passes for one argument of the pattern (analysis.repetition;
    a private one in ``scratch``, fusion.privatisation)."""
    if arg.kind == "scalar":
        return _in_cell(arg.value, rep) if arg.value is not None else arg.text
    if arg.kind == "private":
        return f"({ptype})(sirius_scratch + sirius_layer * {scratch.cell_bytes} + {scratch.slot(arg)})"
    general = f"{base_pointer(arg.buffer)} + {_in_cell(arg.offset, rep)}"
    if arg.kind == "peeled":
        first = f"{base_pointer(arg.first.buffer)} + {_in_cell(arg.first.offset, rep)}"
        return f"({ptype})(sirius_layer == 0 ? {first} : {general})"
    return f"({ptype})({general})"


def cell_wave_kernel(plan, phases: list[KernelIR], insts, decls) -> str:
    """The kernel running every cell of wave ``sirius_w`` (layers ``sirius_lo`` to
    ``sirius_hi``): the phases of a cell in order, a grid barrier between them, each phase
    a loop over (cell, block of the phase) virtual blocks; after the last wave, the last
    step's private values copied to where the original program left them."""
    rep = plan.repetition
    locals_ = _locals(phases)
    def cell(k: KernelIR, blocks: str) -> list[str]:
        lines = [f"    const int sirius_layer = sirius_lo + (int)(sirius_vb / {blocks});",
                 "    const int sirius_step = sirius_w - sirius_layer;", "    (void)sirius_step;"]
        for f in (f for lane in k.lanes for f in lane.fragments):
            position = rep.cell_of(f.launch)[1]
            for p, arg in zip(k.params_of(f.launch), rep.arguments[position]):
                ptype = strip_restrict(p.ctype)  # the cells of a wave share the program's memory: no promises
                lines.append(f"    {ptype} {p.name} = {_pattern_value(arg, ptype, rep, plan.scratch)};")
        return lines

    body = ["  const unsigned sirius_cells = (unsigned)(sirius_hi - sirius_lo + 1);"]
    wave_step = {rep.iterator: Expr.sym("sirius_w")}  # grids change with the step in loops of one layer only
    for launch, dims in plan.grids:
        axes = ", ".join(f"(unsigned){d.subs(wave_step).to_c_floored()}" for d in dims)
        body.append(f"  const dim3 {ir.grid_parameter(launch)}({axes});  "
                    f"// {insts[launch].kernel.name}'s grid at this step")
    body += _phase_loops(phases, insts, decls, plan.threads, "sirius_cells", cell)
    if plan.scratch.copy_back:
        body.append(f"  if (sirius_w == {plan.waves - 1}) {{  // the last step's temporaries, where the original "
                    "left them")
        body.append("    cooperative_groups::this_grid().sync();")
        body.append("    const unsigned sirius_t = blockIdx.x * blockDim.x + threadIdx.x;")
        for piece in plan.scratch.copy_back:
            body.append(f"    for (unsigned sirius_i = sirius_t; sirius_i < {piece.bytes}u; sirius_i += gridDim.x * "
                        f"blockDim.x) {base_pointer(piece.buffer)}[{piece.offset} + sirius_i] = sirius_scratch[{piece.slot} + "
                        "sirius_i];")
        body.append("  }")
    bases = [f"char* const {base_pointer(a)}" for a in plan.allocations]
    if plan.persistent:  # the wave loop in the kernel: a grid barrier between two waves
        params = bases
        between = ["    // no grid barrier between two waves: no cell touches bytes another writes"] if plan.independent \
            else [f"    if (sirius_w < {plan.waves - 1}) cooperative_groups::this_grid().sync();  // the next wave "
                  "reads what this one wrote"]
        body = ([f"  {plan.wave_for} {{", f"    const int sirius_lo = {plan.lo};",
                 f"    const int sirius_hi = {plan.hi};"]
                + ["  " + line for line in body] + between + ["  }"])
        what = "one launch runs every wave" + ("" if plan.independent else ", a grid barrier between two")
    else:
        params = ["const int sirius_w", "const int sirius_lo", "const int sirius_hi"] + bases
        what = "one launch runs the cells with step + layer = sirius_w"
    scratch = ""
    if plan.scratch.cell_bytes:
        scratch = (f"// the private temporaries of each layer's cell ({plan.scratch.cell_bytes} bytes each)\n"
                   f"static __device__ __align__(256) char {plan.name}_scratch[{plan.scratch.bytes}];\n")
        locals_.insert(0, f"  char* const sirius_scratch = {plan.name}_scratch;")
    return (f"{scratch}// waves of cells: cell (step, layer) runs copy 'layer' of the loop body's "
            f"{rep.period} launches at 'step'; {what}; {len(phases)} phases\n"
            f"{signature(plan.name, params, plan.threads)} {{\n" + "\n".join(locals_ + body) + "\n}\n")


def _declared(passed: ir.FusedParam | ir.Lane) -> str:
    return passed.declared if isinstance(passed, ir.FusedParam) else f"const dim3 {passed.grid_parameter}"


def cooperative_params(phases: list[KernelIR]) -> list[str]:
    """A cooperative kernel's parameter list: what the host passes to its phases
    (``kernel_ir.passed_in_order``), without promises (a phase reads what another wrote,
    through another pointer)."""
    return [strip_restrict(_declared(p)) for p in ir.passed_in_order(phases)]


def passed_params(k: KernelIR) -> list[str]:
    """The fused kernel's parameter list: what the host passes (``kernel_ir.passed_in_order``)."""
    return [_declared(p) for p in ir.passed_in_order([k])]


def wavefront_kernel(launch: WavefrontLaunch, insts, decls) -> str:
    """The kernel running one anti-diagonal of a loop nest: block range k of the launch is
    cell (outer, inner) of the wave ``sirius_w``, from ``sirius_lo`` on."""
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
    return (f"// wavefront of {members}: block range k of the launch is cell ({wave.outer}, {wave.inner}) "
            f"with {wave.outer} + {wave.inner} = sirius_w\n"
            f"{signature(k.name, params, k.threads)} {{\n" + "\n".join(body) + "\n}\n")
