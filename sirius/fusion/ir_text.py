"""The fused-kernel IR as text: ``format_program`` and ``format_kernel`` print it (for
``sirius optimize --print-after`` and tests), ``parse_kernels`` reads printed kernels back.

A kernel prints as one line per fact::

    kernel sirius_fused_0 (group 0, vertical): 256 threads, shared 0 static + 0 dynamic bytes
      group: region 0, step 0, lanes S3 -> S4
      launched as <<<sirius_g3, sirius_b3>>>
      param s3_y: float * -> y + 0
      param s4_y: float * -> y + 0 = s3_y + 0 bytes
      param s4_n: int = 1024
      shapes: constants
      shared _ZZ6smoothPfE4tile: 1024 bytes, used by S4, S5
      lane blocks [0, 4): grid 4x1x1 block 256x1x1
        S3 scale grid 4x1x1 block 256x1x1 (s3_y, s3_x, s3_n)
        barrier: block dependence S3 -> S4 on y
        S4 shift re-indexed grid 4x1x1 block 256x1x1 (s4_y, s4_n)
          re-indexed by: { [b0, b1, b2, t0, t1, t2] -> [...] }
          own barriers removed at lines 12

A lane whose grid the host computes at run time prints ``?`` for its grid and its end;
a lane after one starts that many blocks later (``[4 + ?, 6 + ?)``).

A parameter prints with its type without ``__restrict__``, then ``restrict`` when the
fused kernel keeps that promise. What the text does not say, the parser takes from the
program model the kernels were lowered from (a parameter's position and whether it is a
pointer, from the fragment whose argument it is; its type as the fragment's kernel writes
it, ``__restrict__`` included, where the text has that type; the shared arrays a fragment
uses); the guard's conditions
(``KernelIR.assumptions``) print with their region (``format_program``), not with the
kernel. So a pass can be tested on IR written by hand: print, edit, parse, run the pass.
"""

from __future__ import annotations

import re

from sirius.analysis.program_model import ProgramModel
from sirius.core.errors import InputError
from sirius.fusion.kernel_ir import (LaneBarrier, CellWavesLaunch, CooperativeLaunch, Dim3, Fragment, FusedProgram,
                                     KernelIR, KernelRole, Lane, Ordering, FusedParam, BlockSharedArray,
                                     WavefrontLaunch)
from sirius.fusion.lowering import reindexing
from sirius.fusion.fragment_text import RESTRICT, strip_restrict
from sirius.fusion.schedule import FusionGroup, GroupLane

_SAME_BLOCK = " (a same-block dependence remains)"


def _dims(d: Dim3 | None) -> str:
    """``16x1x1``, or ``?`` for a grid the host computes at run time."""
    return "?" if d is None else "x".join(str(v) for v in d)


def _read_dims(text: str) -> Dim3 | None:
    return None if text == "?" else tuple(int(x) for x in text.split("x"))


def format_kernel(k: KernelIR) -> str:
    """The IR of one fused kernel as text: one line per parameter, lane, fragment, barrier."""
    lines = [f"kernel {k.name} (group {k.group.id}, {k.group.arrangement}"
             + ("" if k.role is KernelRole.FUSED else f", {k.role.value}") + f"): {k.threads} threads, "
             f"shared {k.static_shared} static + {k.dynamic_shared} dynamic bytes",
             f"  group: region {k.group.region}, step {k.group.step}, lanes "
             + " | ".join(" -> ".join(f"S{i}" for i in lane.launches) for lane in k.group.lanes)]
    if k.grid_text or k.block_text:
        lines.append(f"  launched as <<<{k.grid_text}, {k.block_text}>>>")
    for p in k.params:
        where = f" -> {p.allocation} + {p.offset}" if p.allocation else ""
        folded = (f" = {p.constant}" if p.constant is not None else
                  f" = {p.base} + {p.delta} bytes" if p.base is not None else "")
        lines.append(f"  param {p.name}: {strip_restrict(p.ctype)}" + (" restrict" if p.restrict else "")
                     + where + folded)
    if k.constant_shapes:
        lines.append("  shapes: constants")
    if k.pool:
        lines.append(f"  pool: {k.pool} bytes")
    for a in k.shared:
        lines.append(f"  shared {a.symbol}: {a.bytes} bytes" + (" dynamic" if a.dynamic else "")
                     + f", used by {', '.join(f'S{u}' for u in a.users)}")
    run_time_before = False  # then the lane starts that many blocks later: " + ?"
    for lane in k.lanes:
        later = " + ?" if run_time_before else ""
        end = "?" if lane.blocks is None else f"{lane.first_block + lane.blocks}{later}"
        run_time_before = run_time_before or lane.blocks is None
        lines.append(f"  lane blocks [{lane.first_block}{later}, {end}): "
                     f"grid {_dims(lane.grid)} block {_dims(lane.block)}")
        for s in lane.body:
            if isinstance(s, LaneBarrier):
                why = "; ".join(f"{o.kind} S{o.before} -> S{o.after}" + (f" on {o.what}" if o.what else "")
                                for o in s.orders)
                lines.append(f"    barrier: {why}")
                continue
            how = (" re-indexed" if s.reindex else "") + (f" pooled at {s.pool_offset}" if s.pooled else "")
            lines.append(f"    S{s.launch} {s.kernel}{how} grid {_dims(s.grid)} block {_dims(s.block)}"
                         f" ({', '.join(s.args)})")
            if s.reindex:
                lines.append("      re-indexed" + (_SAME_BLOCK if s.reindex_needs_barrier else "")
                             + f" by: {s.reindex.sigma}")
            if s.removed_barriers:
                lines.append(f"      own barriers removed at lines {', '.join(map(str, s.removed_barriers))}")
    return "\n".join(lines) + "\n"


def format_program(program: FusedProgram) -> str:
    """The IR of every fused launch as text: a line for each launch that is more than one
    kernel launched once (what runs it, and how; its guard), then its kernels
    (``format_kernel``); then each rewritten region, what it issues and its guard."""
    out = []
    for launch in program.launches:
        if isinstance(launch, WavefrontLaunch):
            w = launch.plan
            out.append(f"wavefront over ({w.outer}, {w.inner}): {w.waves} waves, {w.wave_for}\n")
        elif isinstance(launch, CooperativeLaunch):
            p = launch.plan
            out.append(f"cooperative {p.name} (region {p.region}): {p.threads} threads, "
                       f"{len(launch.phases)} phases, {len(launch.phases) - 1} grid barriers\n")
        elif isinstance(launch, CellWavesLaunch):
            p = launch.plan
            out.append(f"cell waves {p.name}: {p.threads} threads, {p.waves} waves"
                       + (" in one launch" if p.persistent else "") + f", {len(launch.phases)} phases per cell\n")
        if isinstance(launch, (WavefrontLaunch, CellWavesLaunch)) and launch.guard is not None:
            g = launch.guard
            out.append(f"  guard: {len(g.build)} build conditions, then the loop without launching: "
                       f"{sum(len(c.conditions) for c in g.checks)} conditions at {len(g.checks)} launches, "
                       f"{g.expected} launches\n")
        out += [format_kernel(k) for k in launch.kernels]
    for r in program.regions:
        issued = ", ".join(f"S{i.alone}" if i.alone is not None else f"group {i.group}" for i in r.issued)
        out.append(f"region {r.region}: launches {' '.join(f'S{i}' for i in r.launches)} issue {issued}\n")
        out += [f"  guard: {c}\n" for c in r.guard]
    return "".join(out)


# ------------------------------------------------------------------ reading it back

_HEADER = re.compile(r"kernel (\S+) \(group (\d+), (\w+)(?:, ([\w ]+))?\): (\d+) threads, "
                     r"shared (\d+) static \+ (\d+) dynamic bytes")
_GROUP = re.compile(r"group: region (-?\d+), step (\d+), lanes (.+)")
_LAUNCHED = re.compile(r"launched as <<<(.*), (.*)>>>")
_PARAM = re.compile(r"param (\w+): (.+?)( restrict)?(?: -> (\S+) \+ (.+?))?"
                    r"(?: = (?:(-?\d+)|(\w+) \+ (-?\d+) bytes))?")
_SHARED = re.compile(r"shared (\S+): (\d+) bytes( dynamic)?, used by (.+)")
_DIMS = r"(\d+x\d+x\d+|\?)"
_LANE = re.compile(r"lane blocks \[(\d+)(?: \+ \?)?, (?:\d+(?: \+ \?)?|\?)\): grid " + _DIMS + " block " + _DIMS)
_FRAGMENT = re.compile(r"S(\d+) (.+?)( re-indexed)?(?: pooled at (\d+))? grid " + _DIMS + " block " + _DIMS
                       + r" \((.*)\)")
_ORDER = re.compile(r"(.+?) S(\d+) -> S(\d+)(?: on (.+))?")
_REINDEXED = re.compile(r"re-indexed( \(a same-block dependence remains\))? by: (.+)")
_REMOVED = re.compile(r"own barriers removed at lines (.+)")
_ROLES = {role.value: role for role in KernelRole}


class _Kernel:
    """What the lines of one kernel said so far."""

    def __init__(self, m: re.Match, line: int):
        self.line = line
        self.name, self.group_id, self.arrangement = m[1], int(m[2]), m[3]
        self.role = _ROLES.get(m[4] or "fused")
        if self.role is None:
            raise InputError(f"IR line {line}: unknown kernel role {m[4]!r}")
        self.threads, self.static, self.dynamic = int(m[5]), int(m[6]), int(m[7])
        self.region, self.step, self.group_lanes = 0, 0, []
        self.grid_text = self.block_text = ""
        self.params: list[tuple] = []
        self.constant_shapes, self.pool = False, 0
        self.shared: list[BlockSharedArray] = []
        self.lanes: list[list] = []  # [first_block, grid, block, body]


def _launches(text: str) -> list[int]:
    return [int(x.strip().removeprefix("S")) for x in text.split(",")]


def _read_line(k: _Kernel, text: str, n: int) -> None:
    """One indented line of a kernel into ``k``."""
    matched = None

    def match(pattern: re.Pattern) -> re.Match | None:
        nonlocal matched
        matched = pattern.fullmatch(text)
        return matched

    if match(_GROUP):
        k.region, k.step = int(matched[1]), int(matched[2])
        k.group_lanes = [[int(x.strip().removeprefix("S")) for x in lane.split("->")] for lane in matched[3].split("|")]
    elif match(_LAUNCHED):
        k.grid_text, k.block_text = matched[1], matched[2]
    elif match(_PARAM):
        k.params.append((matched[1], matched[2], bool(matched[3]), matched[4], matched[5],
                         int(matched[6]) if matched[6] is not None else None, matched[7],
                         int(matched[8]) if matched[8] is not None else 0))
    elif text == "shapes: constants":
        k.constant_shapes = True
    elif text.startswith("pool: ") and text.endswith(" bytes"):
        k.pool = int(text[len("pool: "):-len(" bytes")])
    elif match(_SHARED):
        k.shared.append(BlockSharedArray(matched[1], int(matched[2]), bool(matched[3]), tuple(_launches(matched[4]))))
    elif match(_LANE):
        k.lanes.append([int(matched[1]), _read_dims(matched[2]), _read_dims(matched[3]), []])
    elif not k.lanes:
        raise InputError(f"IR line {n}: not a line of a kernel's header: {text!r}")
    elif text.startswith("barrier: "):
        orders = []
        for part in text[len("barrier: "):].split("; "):
            o = _ORDER.fullmatch(part)
            if o is None:
                raise InputError(f"IR line {n}: not what a barrier orders: {part!r}")
            orders.append(Ordering(o[1], int(o[2]), int(o[3]), o[4] or ""))
        k.lanes[-1][3].append(LaneBarrier(tuple(orders)))
    elif match(_FRAGMENT):
        v = matched
        args = tuple(a.strip() for a in v[7].split(",")) if v[7].strip() else ()
        k.lanes[-1][3].append({"launch": int(v[1]), "kernel": v[2], "reindexed": bool(v[3]),
                               "pool": int(v[4]) if v[4] is not None else None,
                               "grid": _read_dims(v[5]), "block": _read_dims(v[6]), "args": args,
                               "sigma": None, "same_block": False, "removed": ()})
    elif match(_REINDEXED) and k.lanes[-1][3] and isinstance(k.lanes[-1][3][-1], dict):
        k.lanes[-1][3][-1].update(sigma=matched[2], same_block=bool(matched[1]))
    elif match(_REMOVED) and k.lanes[-1][3] and isinstance(k.lanes[-1][3][-1], dict):
        k.lanes[-1][3][-1]["removed"] = tuple(int(x) for x in matched[1].split(","))
    else:
        raise InputError(f"IR line {n}: not a line of the kernel IR: {text!r}")


def _build(k: _Kernel, model: ProgramModel) -> KernelIR:
    """The ``KernelIR`` the lines of ``k`` describe, its fragments' facts from ``model``."""
    insts = model.instances()
    fragments: dict[int, dict] = {}
    for lane in k.lanes:
        for step in lane[3]:
            if isinstance(step, dict):
                if step["launch"] not in insts:
                    raise InputError(f"IR line {k.line}: kernel {k.name}: the program has no launch S{step['launch']}")
                fragments[step["launch"]] = step
    position = {name: (launch, j) for launch, f in fragments.items() for j, name in enumerate(f["args"])}
    params = []
    for name, ctype, restrict, allocation, offset, constant, base, delta in k.params:
        if name not in position:
            raise InputError(f"IR line {k.line}: kernel {k.name}: parameter {name} is no fragment's argument")
        launch, j = position[name]
        inst = insts[launch]
        pointer = j < len(inst.kernel.params) and inst.kernel.params[j].is_pointer
        declared = model.kernel_decls[inst.kernel.mangled].params[j][1]
        if strip_restrict(declared) == ctype:
            ctype = declared  # with its __restrict__, as the fragment's kernel wrote it
        if restrict and not RESTRICT.search(ctype):
            ctype = f"{ctype} __restrict__"  # a promise made for the fused kernel (fusion.read_once)
        params.append(FusedParam(name, ctype, launch, j, pointer, allocation, offset, restrict,
                            constant, base, delta))
    group_lanes = []
    for launches in k.group_lanes:
        sigmas = tuple(fragments[i]["sigma"] if i in fragments else None for i in launches)
        barriers = tuple(bool(fragments[i]["same_block"]) if i in fragments else False for i in launches)
        group_lanes.append(GroupLane(tuple(launches), sigmas if any(sigmas) else (),
                                     barriers if any(barriers) else ()))
    lanes = []
    for first, grid, block, body in k.lanes:
        steps = []
        for step in body:
            if isinstance(step, LaneBarrier):
                steps.append(step)
                continue
            inst = insts[step["launch"]]
            steps.append(Fragment(step["launch"], step["kernel"], grid=step["grid"], block=step["block"],
                                  args=step["args"],
                                  reindex=reindexing(step["sigma"]) if step["sigma"] else None,
                                  reindex_needs_barrier=step["same_block"],
                                  shared=tuple(dict.fromkeys("extern" if a.dynamic else a.symbol
                                                             for a in inst.kernel.shared)),
                                  removed_barriers=step["removed"], pooled=step["pool"] is not None,
                                  pool_offset=step["pool"] or 0))
        lanes.append(Lane(first, grid, block, tuple(steps)))
    group = FusionGroup(k.group_id, k.region, tuple(group_lanes), k.step)
    return KernelIR(k.name, group, tuple(params), tuple(lanes), k.threads, tuple(k.shared), k.static, k.dynamic,
                    k.grid_text, k.block_text, k.role, (), k.constant_shapes, k.pool)


def parse_kernels(text: str, model: ProgramModel) -> list[KernelIR]:
    """The kernels printed in ``text`` (``format_kernel``; lines of ``format_program`` that
    are not a kernel's are skipped), read back with the facts of ``model`` that the text
    leaves out. A line that is not IR is an ``InputError`` naming it."""
    kernels: list[_Kernel] = []
    inside = False
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        header = _HEADER.fullmatch(line)
        if header:
            kernels.append(_Kernel(header, n))
            inside = True
        elif not line.startswith(" "):
            inside = False  # a launch's or a region's line
        elif inside:
            _read_line(kernels[-1], line.strip(), n)
    return [_build(k, model) for k in kernels]
