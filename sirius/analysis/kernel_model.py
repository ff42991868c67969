"""Kernel model: what every ``__global__`` function touches, from device IR.

For each kernel: parameters, static and dynamic shared memory, barrier
sites, early exits, loops with iteration domains, warp operations, and every
memory access (load, store, atomic) as a byte offset into a parameter or a
shared array, expressed over ``bx by bz`` (blockIdx), ``tx ty tz``
(threadIdx), ``ntx…`` (blockDim), ``nbx…`` (gridDim), loop iterators and
scalar parameters, together with the branch conditions that guard it.

Soundness: an index the evaluator cannot express is recorded as
non-affine (``offset is None``), meaning "anywhere in the buffer"; an
unknown guard is dropped, which only widens the region; an unknown loop
bound leaves the iterator unbounded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from sirius.analysis.cfg import deciding_branches, loop_nest, structured_order
from sirius.analysis.evaluate import Evaluator, Formula, LoopInfo, Pointer, conjunction
from sirius.analysis.ir import Arg, Block, Const, Function, Instr, Module, TypeLayout, Value, split_top_level
from sirius.analysis.symbolic import Expr

SREG = re.compile(r"llvm\.nvvm\.read\.ptx\.sreg\.(tid|ntid|ctaid|nctaid)\.([xyz])$")
SREG_SYMBOL = {"tid": "t", "ntid": "nt", "ctaid": "b", "nctaid": "nb"}
THREAD_SYMBOLS = ("tx", "ty", "tz")
# the buffer of an access through a pointer of unknown provenance: any device memory
# (every allocation, every device global); the UAR expands it
ANY_BUFFER = "sirius_any"
BLOCK_SYMBOLS = ("bx", "by", "bz")
DIM_SYMBOLS = ("ntx", "nty", "ntz", "nbx", "nby", "nbz")


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # source spelling when known, else the IR type
    is_pointer: bool


@dataclass(frozen=True)
class SharedArray:
    name: str
    symbol: str  # IR global name
    bytes: int | None  # None for dynamic (extern __shared__)
    dynamic: bool


@dataclass(frozen=True)
class Access:
    """One memory access site, executed by every thread satisfying ``guard``.

    ``offset`` is in bytes from the start of ``buffer`` (a parameter name or
    a shared array name); ``None`` means the index is not affine and the
    access may touch any element of the buffer.
    """

    kind: str  # "load", "store", "atomic"
    buffer: str
    space: str  # "global" or "shared"
    elem_type: str
    size: int
    offset: Expr | None
    guard: Formula | None
    loops: tuple[str, ...]
    line: int | None
    reason: str = ""  # why it is not affine
    position: tuple[int, int] = (0, 0)  # program point: (block in program order, instruction)
    noncoherent: bool = False  # a load through the read-only data cache (``__ldg``: ld.global.nc)
    # every thread (and kernel-loop iteration) satisfying ``guard`` runs it, whatever the
    # data: no branch the guard leaves out (a condition on loaded values, an early exit
    # before it, a loop bound from the data) decides it. Only an exact write covers bytes.
    exact: bool = True

    @property
    def affine(self) -> bool:
        """The index is a (parametric) affine expression; products with
        ``blockDim`` or scalar parameters become affine at each launch."""
        return self.offset is not None

    def index(self, unit: int) -> Expr | None:
        if self.offset is None or any(c % unit for _, c in self.offset.terms):
            return None
        return self.offset.floordiv(unit)


@dataclass(frozen=True)
class Barrier:
    line: int | None
    loops: tuple[str, ...]
    kind: str = "block"  # "block" (__syncthreads) or "warp" (__syncwarp)
    position: tuple[int, int] = (0, 0)
    every_path: bool = False  # on every path from entry to return, outside loops: each thread passes it once


@dataclass(frozen=True)
class WarpMask:
    """The lanes a warp operation (a shuffle, vote, match, reduction or ``__syncwarp``)
    names: the result of ``__activemask()`` (``active``: the lanes converged where it was
    asked, never a lane outside the block), a constant ``bits``, or neither (both unset:
    unknown, as an operation without a mask argument is)."""

    line: int | None
    active: bool = False
    bits: int | None = None

    def within(self, lanes: int) -> bool:
        """The operation names only lanes below ``lanes`` (or lanes converged with it)."""
        return self.active or (self.bits is not None and self.bits >> lanes == 0)


@dataclass(frozen=True)
class EarlyExit:
    """A branch where some threads leave the kernel while the others go on to a
    barrier: the hazard of DESIGN section 5 (inside a fused kernel the leavers
    would not exit, and barriers could pair up differently). A guard after
    which no barrier follows is not listed: it only restricts the accesses."""

    line: int | None
    condition: str
    divergent: bool  # depends on the thread index or on data
    reaches_barrier: bool  # the threads that stay can reach a barrier


@dataclass(frozen=True)
class KernelModel:
    name: str
    mangled: str
    params: tuple[Param, ...]
    shared: tuple[SharedArray, ...]
    barriers: tuple[Barrier, ...]
    early_exits: tuple[EarlyExit, ...]
    loops: tuple[LoopInfo, ...]
    accesses: tuple[Access, ...]
    warp_ops: tuple[tuple[str, int | None], ...]
    unsupported: tuple[str, ...]
    warp_masks: tuple[WarpMask, ...] = ()  # of each warp operation taking a mask, __syncwarp included
    # a warp operation (or __activemask, __syncwarp) that a thread may return before reaching,
    # the first by line: such a thread has exited, and the operation no longer waits for it
    skippable_warp_op: int | None = None
    ident: str = ""  # a C identifier naming this kernel, unique in the program (overloads differ)
    noalias: tuple[int, ...] = ()  # parameters the IR marks noalias (declared __restrict__)
    max_threads: int | None = None  # from __launch_bounds__ ("nvvm.maxntid")
    scoped_alias: int | None = None  # line of an access carrying an inlined callee's restrict promise
    prints: tuple[int, ...] = ()  # lines of device printf calls (their output appears at a host synchronization)
    # lines of device asserts and traps (the kernel stops, and the next synchronization returns the error)
    traps: tuple[int, ...] = ()

    @property
    def asks_active_lanes(self) -> bool:
        """The kernel calls ``__activemask()``."""
        return any(op == "activemask" for op, _ in self.warp_ops)

    @property
    def pointer_params(self) -> list[Param]:
        return [p for p in self.params if p.is_pointer]

    def noncoherent_load(self) -> Access | None:
        """The first load through the read-only data cache (``__ldg``, or a call of a
        helper that may make one, at any depth), or None: cooperative phases, fused
        fragments and waves of cells all ask this."""
        return next((a for a in self.accesses if a.noncoherent), None)

    def buffer_unit(self, buffer: str) -> int:
        """Element size used to print indices into ``buffer``: its smallest access."""
        sizes = [a.size for a in self.accesses if a.buffer == buffer and a.size]
        return min(sizes) if sizes else 1


_INLINE_ASM = re.compile(r'\basm (?:sideeffect )?(?:alignstack )?(?:inteldialect )?"((?:[^"\\]|\\.)*)"')
# register-only arithmetic (math library approximations): no memory, barriers or special registers
_PURE_ASM = re.compile(r"\s*(?:(?:rcp|sqrt|rsqrt|ex2|lg2|sin|cos|tanh|mov|add|sub|mul|mad|fma|min|max|abs|neg|cvt|"
                       r"and|or|xor|not|shl|shr|selp|set|setp|prmt|bfe|bfi|brev|popc|clz|cvt|neg|abs)"
                       r"(?:\.[\w]+)*\s+[^;%]*?(?:\$\d+[^;%]*)*;\s*)+")
# a read of a register no arrangement of launches fixes: clocks, timers, the SM and the warp
# slot a thread runs on (they differ from run to run of the program as written)
_VOLATILE_REGISTER_READ = re.compile(r"\s*mov\.[bsu](?:32|64)\s+\$\d+\s*,\s*%(?:clock(?:64|_hi)?|"
                                     r"globaltimer(?:_lo|_hi)?|smid|nsmid|warpid|nwarpid)\s*;?\s*")
# a read of the thread's lane in its warp: what warp operations depend on, so it is one
_LANE_REGISTER_READ = re.compile(r"\s*mov\.[bsu]32\s+\$\d+\s*,\s*%(laneid|lanemask_(?:eq|le|lt|ge|gt))\s*;?\s*")
# every block-wide barrier intrinsic: __syncthreads, __syncthreads_count/_and/_or
# (barrier.cta.red.*), cooperative groups' block sync, __barrier_sync; the ``.all``
# forms on barrier 0 are ``__syncthreads``; a named barrier (other id), one with a
# thread count, an arrive-only or a cluster barrier is not understood
_BARRIER_INTRINSIC = re.compile(r"^llvm\.nvvm\.(barrier|bar\.sync|bar\.red|barrier0).*")
_WHOLE_BLOCK_BARRIER = re.compile(r"^llvm\.nvvm\.(barrier0(\.(popc|and|or))?|barrier\.sync|bar\.sync|"
                                  r"barrier\.cta\.(sync|red\.\w+)(\.aligned)?\.all)$")
_WARP_BARRIER = "llvm.nvvm.bar.warp.sync"
_WARP_OPS = re.compile(r"^llvm\.nvvm\.(shfl|vote|match|redux|activemask)\b")
_UNSUPPORTED_CALLS = {
    "cudaLaunchDevice": "dynamic parallelism (device-side launch)",
    "cudaGetParameterBuffer": "dynamic parallelism (device-side launch)",
    "cudaCGGetIntrinsicHandle": "cooperative groups grid synchronization",
    "cudaCGSynchronizeGrid": "cooperative groups grid synchronization",
}


class _DeviceEvaluator(Evaluator):
    def __init__(self, func: Function, layout: TypeLayout, params: list[Param], module: Module):
        super().__init__(func, layout, loop_prefix="k")
        self.params = params
        self.module = module
        self._deciding: dict[Block, set[Block]] | None = None

    def runs_exactly(self, block: Block) -> bool:
        """Every thread whose guard holds runs ``block``, whatever the data: each branch
        deciding whether it runs is a known condition among its guards, or an exit of an
        enclosing loop whose domain is exact."""
        if self._deciding is None:
            self._deciding = deciding_branches(self.func)
        # a condition known here but affine only at a launch (``i < n`` with i = bx*ntx + tx)
        # is checked there: access_map takes an access whose guard is not affine as inexact
        known = {p for p, f in self.dominating_conditions(block).items() if f is not None}
        for lp in loop_nest(self.loops, block):
            if self.loop_info(lp).exact:
                known |= {exiting for exiting, _ in lp.exits()}
        return self._deciding[block] <= known

    def leaf(self, v: Value):
        if isinstance(v, Arg):
            p = self.params[v.index] if v.index < len(self.params) else None
            if v.byval:  # the kernel's own copy of a struct argument, in parameter space
                return Pointer(("byval", v.index), Expr.const(0))
            if v.type.startswith("ptr"):
                return Pointer(("param", v.index), Expr.const(0))
            if p is not None and v.type.startswith("i"):
                return Expr.sym(p.name)
            return None
        if v.kind == "global":
            return Pointer(("global", v.name), Expr.const(0))
        if isinstance(v, Instr) and v.opcode == "call":
            m = SREG.match(v.callee or "")
            if m:
                return Expr.sym(SREG_SYMBOL[m.group(1)] + m.group(2))
        return None


def _pointer_operand(instr: Instr) -> Value | None:
    if instr.opcode == "load":
        return instr.operands[0]
    if instr.opcode == "store":
        return instr.operands[1]
    if instr.opcode in ("atomicrmw", "cmpxchg"):
        return instr.operands[0]
    return None


def _shared_arrays(module: Module, layout: TypeLayout, demangle) -> dict[str, SharedArray]:
    out = {}
    for name, g in module.globals.items():
        m = re.search(r"addrspace\(3\) (?:externally_initialized )?global (.*)$", g.text)
        if not m:
            continue
        rest = m.group(1)
        ty = split_top_level(rest)[0]
        for suffix in (" undef", " poison", " zeroinitializer"):
            ty = ty.split(suffix)[0]
        ty = ty.strip()
        dynamic = g.text.split("=", 1)[1].lstrip().startswith("external") or ty.startswith("[0 x")
        size = None if dynamic else layout.size(ty)
        out[name] = SharedArray(_local_name(demangle(name)), name, size, dynamic)
    return out


def _local_name(demangled: str) -> str:
    # "gemm(float const*, ...)::As" -> "As"
    return demangled.rsplit("::", 1)[-1] if "::" in demangled else demangled


def build_kernel_model(func: Function, module: Module, name: str, params: list[Param], demangle) -> KernelModel:
    """Model one kernel of the device IR module (see the module docstring)."""
    layout = TypeLayout(module.struct_types)
    ev = _DeviceEvaluator(func, layout, params, module)
    shared = _shared_arrays(module, layout, demangle)
    used_shared: dict[str, SharedArray] = {}
    accesses: list[Access] = []
    barriers: list[Barrier] = []
    warp_ops: list[tuple[str, int | None]] = []
    warp_masks: list[WarpMask] = []
    warp_blocks: dict[Block, int | None] = {}  # blocks holding warp operations -> the first's line
    unsupported: list[str] = []
    barrier_blocks: set[Block] = set()
    for lp in ev.loops:
        ev.loop_info(lp)
    order = {b: i for i, b in enumerate(structured_order(func, ev.loops))}

    for block in func.blocks:
        nest = tuple(lp.name for lp in loop_nest(ev.loops, block))
        for n, instr in enumerate(block.instrs):
            point = (order.get(block, -1), n)
            callee = instr.callee
            if instr.opcode == "call":
                asm = _INLINE_ASM.search(instr.text) if callee is None else None
                if asm is not None:
                    body = re.sub(r"\\0[9AaDd]|[{}]", " ", asm.group(1))  # braces and escaped whitespace
                    lane = _LANE_REGISTER_READ.fullmatch(body)
                    if body.split() and body.split()[0].startswith("activemask"):
                        warp_ops.append(("activemask", instr.line))  # which lanes are converged here
                        warp_blocks.setdefault(block, instr.line)
                    elif lane is not None:
                        warp_ops.append((lane[1], instr.line))
                        warp_blocks.setdefault(block, instr.line)
                    elif not (_PURE_ASM.fullmatch(body) or _VOLATILE_REGISTER_READ.fullmatch(body)):
                        unsupported.append(f"inline assembly at line {instr.line}: {body.strip()[:40]}")
                elif callee is None:
                    unsupported.append(f"indirect call at line {instr.line}")
                elif callee == _WARP_BARRIER:
                    barriers.append(Barrier(instr.line, nest, kind="warp", position=point))
                    warp_masks.append(_warp_mask(instr))
                    warp_blocks.setdefault(block, instr.line)
                elif _BARRIER_INTRINSIC.match(callee):
                    # every barrier counts for early exits, understood or not
                    barriers.append(Barrier(instr.line, nest, position=point,
                                            every_path=not nest and _on_every_path(func, block)))
                    barrier_blocks.add(block)
                    if not _whole_block_barrier(callee, instr):
                        unsupported.append(f"named or partial barrier ({callee}) at line {instr.line}")
                elif _WARP_OPS.match(callee):
                    warp_ops.append((callee.split(".")[2], instr.line))
                    warp_blocks.setdefault(block, instr.line)
                    if callee.split(".")[2] != "activemask":
                        warp_masks.append(_warp_mask(instr))
                elif callee in _UNSUPPORTED_CALLS:
                    unsupported.append(f"{_UNSUPPORTED_CALLS[callee]} at line {instr.line}")
                elif callee.startswith("llvm.nvvm.tex") or callee.startswith("llvm.nvvm.suld"):
                    unsupported.append(f"texture or surface access at line {instr.line}")
                elif callee.startswith("llvm.memcpy") or callee.startswith("llvm.memset") or callee.startswith("llvm.memmove"):
                    _add_bulk_accesses(ev, instr, nest, params, shared, used_shared, accesses)
                elif not callee.startswith("llvm.") and not callee.startswith("__nv_") \
                        and not callee.startswith("vprintf") and callee in module.functions \
                        and not module.functions[callee].is_declaration:
                    effects = _callee_effects(module, callee)
                    if effects:
                        unsupported.append(f"call of device function {callee} (not inlined), which "
                                           f"{effects}, at line {instr.line}")
                    _add_opaque_call(ev, instr, nest, params, shared, used_shared, accesses, callee)
            ptr = _pointer_operand(instr)
            if ptr is None:
                continue
            kind = {"load": "load", "store": "store"}.get(instr.opcode, "atomic")
            if kind == "store":
                ty = instr.operands[0].type
            elif kind == "load":
                ty = instr.type
            else:
                ty = instr.operands[1].type if len(instr.operands) > 1 else instr.type
            size = layout.size(ty) or 0
            # clang marks __ldg's load invariant; the NVPTX back end makes it ld.global.nc
            nc = kind == "load" and "!invariant.load" in instr.text
            _record(ev, instr, ptr, kind, ty, size, nest, params, shared, used_shared, accesses, point=point,
                    noncoherent=nc)

    early_exits = _early_exits(ev, func, barrier_blocks)
    loops = tuple(ev.loop_infos[lp.name] for lp in ev.loops if lp.name in ev.loop_infos)
    if len(unsupported) > 3:  # keep reports readable: the first few sites and a count
        unsupported = unsupported[:3] + [f"... and {len(unsupported) - 3} more such sites"]
    scoped = next((i.line or 0 for i in func.instructions() if "!alias.scope" in i.text), None)
    prints = _calls_at_any_depth(module, func, frozenset({"vprintf"}))
    traps = _calls_at_any_depth(module, func, _TRAPS)
    return KernelModel(name, func.name, tuple(params), tuple(used_shared.values()),
                       tuple(barriers), tuple(early_exits), loops, tuple(accesses), tuple(warp_ops),
                       tuple(dict.fromkeys(unsupported)), noalias=_noalias_params(func.header),
                       max_threads=_max_threads(func.header, module.text), scoped_alias=scoped,
                       prints=prints, traps=traps, warp_masks=tuple(warp_masks),
                       skippable_warp_op=min((line or 0 for b, line in warp_blocks.items() if not _on_every_path(func, b)),
                                             default=None))


def _warp_mask(call: Instr) -> WarpMask:
    """The mask a warp operation's call passes: the first argument (a reduction's
    second); an operation of the intrinsics without one (``llvm.nvvm.shfl.down``, the
    pre-Volta forms) names the whole warp."""
    args = call.call_args
    position = 1 if ".redux." in (call.callee or "") else 0
    if ".sync" not in (call.callee or "") or len(args) <= position:
        return WarpMask(call.line, bits=0xFFFFFFFF)
    mask = args[position]
    if isinstance(mask, Const) and isinstance(mask.value, int):
        return WarpMask(call.line, bits=mask.value & 0xFFFFFFFF)
    if isinstance(mask, Instr) and _is_activemask(mask):
        return WarpMask(call.line, active=True)
    return WarpMask(call.line)


def _is_activemask(value: Instr) -> bool:
    """``value`` is the result of ``__activemask()``: the intrinsic, or the PTX instruction
    written as inline assembly."""
    if value.callee == "llvm.nvvm.activemask":
        return True
    asm = _INLINE_ASM.search(value.text) if value.opcode == "call" and value.callee is None else None
    return asm is not None and asm.group(1).split() != [] and asm.group(1).split()[0].startswith("activemask")


def _on_every_path(func: Function, block: Block) -> bool:
    """No return is reachable from the entry without passing ``block``."""
    seen, work = {block}, [func.entry]
    while work:
        b = work.pop()
        if b in seen:
            continue
        if b.terminator.opcode == "ret":
            return False
        seen.add(b)
        work.extend(b.succs)
    return True


def _noalias_params(header: str) -> tuple[int, ...]:
    """Positions of the ``noalias`` parameters in an IR function header."""
    inside = header.split("(", 1)[1].rsplit(")", 1)[0] if "(" in header else ""
    depth, parts, cur = 0, [], ""
    for ch in inside:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return tuple(k for k, p in enumerate(parts) if re.search(r"\bnoalias\b", p))


def _max_threads(header: str, module_text: str) -> int | None:
    """The kernel's ``__launch_bounds__`` thread count (clang's "nvvm.maxntid" attribute)."""
    # the attribute group follows the parameters, before ``comdat`` (template instances) and !dbg
    group = re.search(r"#(\d+)", header[header.rfind(")"):])
    if group is None:
        return None
    attrs = re.search(rf"^attributes #{group.group(1)} = \{{(.*)\}}$", module_text, re.M)
    found = re.search(r'"nvvm\.maxntid"="(\d+)', attrs.group(1)) if attrs else None
    return int(found.group(1)) if found else None


def _base_name(base, params: list[Param], shared: dict[str, SharedArray], used: dict[str, SharedArray]):
    """(buffer name, space) of a pointer base, or None when it is not a known buffer."""
    kind, key = base
    if kind == "param":
        return (params[key].name if key < len(params) else f"arg{key}"), "global"
    if kind == "global" and key in shared:
        used[key] = shared[key]
        return shared[key].name, "shared"
    if kind == "global":
        return key, "global"
    return None


def _record(ev, instr, ptr, kind, ty, size, nest, params, shared, used, accesses, reason="", point=(0, 0),
            noncoherent=False):
    p = ev.value(ptr)
    if isinstance(p, Pointer) and p.base[0] == "byval":
        return  # the kernel's own copy of a struct argument (a dim3): no device memory
    guard = _guard(ev, instr.block, nest)
    exact = ev.runs_exactly(instr.block)
    if isinstance(p, Pointer):
        named = _base_name(p.base, params, shared, used)
        if named is not None:
            why = reason or ("" if p.offset is not None else "index is data-dependent or not affine")
            accesses.append(Access(kind, named[0], named[1], ty, size, p.offset, guard, nest, instr.line, why, point,
                                   noncoherent, exact))
            return
    else:
        # an address the branches of a merge block choose (common code sunk out of
        # them): the access may be any one of the branches', so it is all of them; an
        # address a select chooses likewise, but no byte of either is surely touched
        selected = _selected_pointers(ev, ptr)
        alternatives = ev.per_edge(ptr) or [a for a, _ in selected or ()]
        guards = [conjunction([g for g in (guard, when) if g is not None]) for _, when in selected] if selected \
            else [guard] * len(alternatives)
        exact = exact and not selected
        named_alts = [(_base_name(a.base, params, shared, used), a) for a in alternatives if isinstance(a, Pointer)]
        if alternatives and len(named_alts) == len(alternatives) and all(n for n, _ in named_alts):
            for ((name, space), a), where in zip(named_alts, guards):
                why = reason or ("" if a.offset is not None else "index is data-dependent or not affine")
                accesses.append(Access(kind, name, space, ty, size, a.offset, where, nest, instr.line, why, point,
                                       noncoherent, exact))
            return
    # Unknown base: the pointer was loaded from memory (a ``__device__ float*``, say)
    # or computed opaquely. It may point into any device memory, not only into
    # the buffers the kernel's parameters reach.
    why = reason or "pointer of unknown provenance"
    accesses.append(Access(kind, ANY_BUFFER, "global", ty, size, None, guard, nest, instr.line, why, point,
                           noncoherent, exact))


def _selected_pointers(ev, ptr: Value) -> list | None:
    """The two pointers a ``select`` of pointers chooses between (``cond ? p : q``, as
    clang writes a conditional load of one of two arrays), evaluated, each with a condition
    that holds where it is chosen (None: not known); None for any other address. The
    first's is the select's condition as the evaluator reads it, which may be weaker than
    the condition itself (an unknown part of a conjunction dropped): not negated for the
    second, which may be chosen wherever the access is made."""
    if not (isinstance(ptr, Instr) and ptr.opcode == "select" and len(ptr.operands) == 3):
        return None
    return [(ev.value(ptr.operands[1]), ev.condition(ptr.operands[0])), (ev.value(ptr.operands[2]), None)]


def _guard(ev: Evaluator, block: Block, nest: tuple[str, ...]) -> Formula | None:
    parts = list(ev.branch_guards(block))
    for name in nest:
        info = ev.loop_infos.get(name)
        if info and info.domain is not None:
            parts.append(info.domain)
    return conjunction(parts)


def _add_bulk_accesses(ev, instr, nest, params, shared, used, accesses) -> None:
    """memcpy/memset intrinsics: an unknown range of the destination (and source)."""
    ops = instr.operands
    is_copy = not instr.callee.startswith("llvm.memset")
    _record(ev, instr, ops[0], "store", "i8", 1, nest, params, shared, used, accesses)
    _widen_last(accesses)
    if is_copy:
        _record(ev, instr, ops[1], "load", "i8", 1, nest, params, shared, used, accesses)
        _widen_last(accesses)


def _add_opaque_call(ev, instr, nest, params, shared, used, accesses, callee) -> None:
    """A call to a device function that was not inlined: any access through its pointer
    arguments, its loads through the read-only data cache when it (or a callee) may."""
    cached = _callee_reads_noncoherent(ev.module, callee)
    for op in instr.operands[:-1]:
        if op.type.startswith("ptr"):
            for kind in ("load", "store"):
                _record(ev, instr, op, kind, "i8", 1, nest, params, shared, used, accesses,
                        noncoherent=cached and kind == "load")
                _widen_last(accesses, f"call of device function {callee}")


def _widen_last(accesses: list[Access], reason: str = "bulk memory operation of unknown extent") -> None:
    a = accesses[-1]
    accesses[-1] = replace(a, offset=None, reason=reason, exact=False)


def _whole_block_barrier(callee: str, instr: Instr) -> bool:
    """A barrier of every thread of the block on barrier 0 (what ``__syncthreads`` is)."""
    if not _WHOLE_BLOCK_BARRIER.match(callee):
        return False
    if callee.startswith("llvm.nvvm.barrier.cta") or callee in ("llvm.nvvm.barrier.sync", "llvm.nvvm.bar.sync"):
        ident = instr.operands[0] if instr.operands else None
        return getattr(ident, "value", None) == 0
    return True


def _callee_effects(module: Module, name: str, seen: set[str] | None = None) -> str:
    """What a device function that was not inlined does beyond its pointer arguments
    (empty when nothing): barriers, built-in indices, shared memory, device globals."""
    seen = seen if seen is not None else set()
    if name in seen:
        return ""
    seen.add(name)
    fn = module.functions.get(name)
    if fn is None or fn.is_declaration:
        return ""
    for ins in fn.instructions():
        c = ins.callee
        if c is not None and (_BARRIER_INTRINSIC.match(c) or c == _WARP_BARRIER or _WARP_OPS.match(c)):
            return "synchronizes threads"
        if c is not None and SREG.match(c):
            return "reads built-in indices"
        if ins.opcode == "call" and c is None:
            return "makes an indirect call"
        if any(getattr(op, "kind", None) == "global" for op in ins.operands):  # (a branch's operands are blocks)
            return "touches device globals or shared memory"
        inner = _callee_effects(module, c, seen) if c is not None and not c.startswith("llvm.") else ""
        if inner:
            return inner
    return ""


# device calls that stop the kernel with an error the host sees: assert, __trap, __brkpt
_TRAPS = frozenset({"__assertfail", "__assert_fail", "llvm.trap", "llvm.debugtrap"})


def _calls_at_any_depth(module: Module, func, names: frozenset[str]) -> tuple[int, ...]:
    """Lines in ``func`` of calls of ``names``, directly or through device functions that
    were not inlined (the line of the call of the helper)."""
    calls_one = lambda fn: any(ins.callee in names for ins in fn.instructions())  # noqa: E731
    found: dict[int, None] = {}
    for ins in func.instructions():
        c = ins.callee
        if c in names or c is not None and not c.startswith("llvm.") and _at_any_depth(module, c, calls_one):
            found.setdefault(ins.line or 0)
    return tuple(found)


def _at_any_depth(module: Module, name: str, test, seen: set[str] | None = None) -> bool:
    """``test`` holds for the device function ``name`` (defined, not inlined) or for one it
    calls, at any depth."""
    seen = seen if seen is not None else set()
    if name in seen:
        return False
    seen.add(name)
    fn = module.functions.get(name)
    if fn is None or fn.is_declaration:
        return False
    return test(fn) or any(ins.callee is not None and not ins.callee.startswith("llvm.")
                           and _at_any_depth(module, ins.callee, test, seen) for ins in fn.instructions())


def _callee_reads_noncoherent(module: Module, name: str) -> bool:
    """A device function that was not inlined, or one it calls, may load through the
    read-only data cache: an ``__ldg`` (clang's ``!invariant.load``) or a ``__restrict__``
    parameter (``noalias``), which nvcc may read with ``LDG.E.CONSTANT``."""
    return _at_any_depth(module, name, lambda fn: _noalias_params(fn.header) or any(
        ins.opcode == "load" and "!invariant.load" in ins.text for ins in fn.instructions()))


def device_globals(module: Module) -> dict[str, int | None]:
    """``__device__`` and ``__constant__`` variables of the device IR: name -> bytes."""
    layout = TypeLayout(module.struct_types)
    out: dict[str, int | None] = {}
    for name, g in module.globals.items():
        m = re.search(r"addrspace\((1|4)\) (?:externally_initialized )?(?:global|constant) (.*)$", g.text)
        if not m or name.startswith(("llvm.", ".", "__")):
            continue
        out[name] = layout.size(_leading_type(m.group(2)))
    return out


def _leading_type(text: str) -> str:
    """The type at the start of ``[4 x float] [float 1.0, ...]`` or ``float 2.0``."""
    text = text.strip()
    if text[:1] in "[{<":
        depth = 0
        for i, ch in enumerate(text):
            depth += ch in "[{<"
            depth -= ch in "]}>"
            if depth == 0:
                return text[:i + 1]
    return text.split(" ", 1)[0].rstrip(",")


def _early_exits(ev: Evaluator, func: Function, barrier_blocks: set[Block]) -> list[EarlyExit]:
    """Branches after which some threads return while others go on.

    Reported when one side reaches a ``ret`` without passing a barrier and
    the other side can reach a barrier; ``divergent`` when the condition
    depends on the thread index or on loaded data (unknown).
    """
    exits_free: set[Block] = set()
    changed = True
    rets = [b for b in func.blocks if b.terminator.opcode == "ret"]
    exits_free = {b for b in rets if b not in barrier_blocks}
    while changed:
        changed = False
        for b in func.blocks:
            if b in exits_free or b in barrier_blocks:
                continue
            if any(s in exits_free for s in b.succs):
                exits_free.add(b)
                changed = True
    reaches_barrier: set[Block] = set(barrier_blocks)
    changed = True
    while changed:
        changed = False
        for b in func.blocks:
            if b not in reaches_barrier and any(s in reaches_barrier for s in b.succs):
                reaches_barrier.add(b)
                changed = True
    out = []
    for b in func.blocks:
        term = b.terminator
        if term.opcode != "br" or len(term.operands) != 3:
            continue
        cond, f, t = term.operands
        for leave, stay in ((t, f), (f, t)):
            if leave in exits_free and stay not in exits_free:
                formula = ev.condition(cond)
                if formula is not None and leave is f:
                    formula = formula.negate()
                divergent = _divergent(ev, cond, {})
                if not divergent:
                    continue  # the whole block leaves together: no barrier waits on it
                out.append(EarlyExit(term.line, str(formula) if formula is not None else "data-dependent",
                                     divergent, stay in reaches_barrier))
    return out


def _divergent(ev: Evaluator, v: Value, memo: dict[int, bool]) -> bool:
    """May ``v`` differ between threads of one block? (conservative taint)

    Thread indices and loaded data are divergent; parameters, block indices
    and dimensions are uniform. A loop-header phi is divergent when an
    incoming value is; any other phi with differing inputs is taken as
    divergent, since it may join the two sides of a divergent branch.
    """
    if not isinstance(v, Instr):
        return False
    key = id(v)
    if key in memo:
        return memo[key]
    memo[key] = False  # cycles through loop phis: assume uniform until shown otherwise
    if v.opcode == "call":
        m = SREG.match(v.callee or "")
        if m:
            result = m.group(1) == "tid"
        elif v.callee and v.callee.startswith("llvm."):
            result = any(_divergent(ev, o, memo) for o in v.operands[:-1])
        else:
            result = True
    elif v.opcode in ("load", "atomicrmw", "cmpxchg"):
        result = True
    elif v.opcode == "phi":
        header = v.block in ev.loop_of_header
        if header or len({id(o) for o in v.operands}) == 1:
            result = any(_divergent(ev, o, memo) for o in v.operands)
        else:
            result = True
    else:
        result = any(_divergent(ev, o, memo) for o in v.operands if not isinstance(o, Block))
    memo[key] = result
    return result
