"""Host model: the statements of the program's entry function, from host IR.

Lists, in program order, every device allocation (with its size), copy
(with direction), memset, free, synchronization and kernel launch (kernel,
grid, block, dynamic shared memory, stream, and each argument resolved to an
allocation plus byte offset or to a scalar). Host loops around statements
become iteration domains over loop iterators ``h0, h1, …``: a launch inside
a loop of 100 steps is one statement with a domain, not 100 copies.

A pointer whose allocation cannot be traced (reassigned slots, values
loaded from memory, arithmetic the evaluator does not follow) is recorded
as ``unknown``: later analyses must assume it may alias any allocation.

The host's loads and stores of ``__managed__`` variables are copies from and
into their device buffers (see ``analysis.managed_variables``). A launch the
program writes as ``cudaLaunchKernel``/``cudaLaunchCooperativeKernel`` takes
its shape and arguments from the call itself (``call`` names it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import islpy as isl

from sirius.analysis.cfg import loop_nest, structured_order
from sirius.analysis.evaluate import Evaluator, Formula, LoopInfo, Pointer, conjunction
from sirius.analysis.ir import Arg, Block, Const, Function, Instr, Module, TypeLayout, Value, c_float_literal
from sirius.analysis.managed_variables import mentioned_variable
from sirius.analysis.symbolic import Expr
from sirius.core.errors import InputError

_ALLOC_CALLS = {"cudaMalloc": 1, "cudaMallocManaged": 1, "cudaMallocAsync": 1}
_SYNC_CALLS = {"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaThreadSynchronize",
               "cudaStreamWaitEvent", "cudaEventRecord", "cudaEventRecordWithFlags", "cudaStreamQuery",
               "cudaEventQuery", "cudaDeviceReset"}
_HOST_ALLOCATORS = {"malloc", "calloc", "aligned_alloc", "_Znwm", "_Znam", "_ZnwmSt11align_val_t",
                    "_ZnamSt11align_val_t"}
_COPY_KINDS = {0: "HostToHost", 1: "HostToDevice", 2: "DeviceToHost", 3: "DeviceToDevice", 4: "Default"}


# runtime calls that launch the kernel of their first operand with an argument array
_LAUNCH_CALLS = ("cudaLaunchKernel", "cudaLaunchCooperativeKernel")
# instructions that access memory -> the operand holding the address
_MEMORY_ACCESS = {"load": 0, "store": 1, "atomicrmw": 0, "cmpxchg": 0}


@dataclass(frozen=True)
class _CopyCall:
    """Operand positions of a runtime copy or memset; ``None`` where the call has none."""

    dst: int | None
    src: int | None
    bytes: int | None  # a byte count of a contiguous range; None: a 2-D/3-D or unknown extent
    kind: int | None  # the cudaMemcpyKind operand
    symbol: str | None = None  # "dst" or "src": that operand is a device global (offset operand next)
    offset: int | None = None


_COPIES = {
    "cudaMemcpy": _CopyCall(0, 1, 2, 3),
    "cudaMemcpyAsync": _CopyCall(0, 1, 2, 3),
    "cudaMemcpy2D": _CopyCall(0, 2, None, 6),
    "cudaMemcpy2DAsync": _CopyCall(0, 2, None, 6),
    "cudaMemcpyToSymbol": _CopyCall(0, 1, 2, 4, symbol="dst", offset=3),
    "cudaMemcpyToSymbolAsync": _CopyCall(0, 1, 2, 4, symbol="dst", offset=3),
    "cudaMemcpyFromSymbol": _CopyCall(0, 1, 2, 4, symbol="src", offset=3),
    "cudaMemcpyFromSymbolAsync": _CopyCall(0, 1, 2, 4, symbol="src", offset=3),
    "cudaMemcpyPeer": _CopyCall(0, 2, 4, None),
    "cudaMemcpyPeerAsync": _CopyCall(0, 2, 4, None),
}
_MEMSETS = {
    "cudaMemset": _CopyCall(0, None, 2, None),
    "cudaMemsetAsync": _CopyCall(0, None, 2, None),
    "cudaMemset2D": _CopyCall(0, None, None, None),
    "cudaMemset2DAsync": _CopyCall(0, None, None, None),
}
# Calls that cannot touch device memory or order device work: the C and C++ standard
# libraries, and runtime queries. Every other call is a statement of the model.
_HOST_ONLY = {
    "printf", "fprintf", "sprintf", "snprintf", "puts", "putchar", "fputs", "fputc", "fflush", "fwrite", "perror",
    "exit", "abort", "_exit", "atexit", "malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign",
    "memcpy", "memmove", "memset", "memcmp", "strlen", "strcmp", "strncmp", "strcpy", "strncpy", "strchr",
    "strstr", "strtol", "strtoul", "strtoll", "strtof", "strtod", "atoi", "atol", "atof", "qsort", "bsearch",
    "rand", "srand", "rand_r", "time", "clock", "clock_gettime", "gettimeofday", "getenv", "__assert_fail",
    "cudaGetLastError", "cudaPeekAtLastError", "cudaGetErrorString", "cudaGetErrorName", "cudaGetDevice",
    "cudaGetDeviceCount", "cudaGetDeviceProperties", "cudaGetDeviceProperties_v2", "cudaDeviceGetAttribute",
    "cudaEventCreate", "cudaEventCreateWithFlags", "cudaEventDestroy", "cudaEventElapsedTime",
    "cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority", "cudaStreamDestroy",
    "cudaFuncGetAttributes", "cudaFuncSetAttribute", "cudaFuncSetCacheConfig", "cudaMemGetInfo",
    "cudaOccupancyMaxActiveBlocksPerMultiprocessor", "cudaOccupancyMaxPotentialBlockSize",
    "cudaDriverGetVersion", "cudaRuntimeGetVersion", "cudaMallocHost", "cudaHostAlloc", "cudaFreeHost",
    "__cudaPopCallConfiguration",
}
_HOST_ONLY_PREFIXES = ("llvm.", "_ZSt", "_ZNSt", "_ZNKSt", "_ZNSo", "_ZNSi", "_ZNKSo", "_ZNKSi", "_ZdlPv",
                       "_ZdaPv", "_Znw", "_Zna", "__cxa_", "__gxx_", "_ZNSt6chrono", "_ZNSt3__1")
_MATH = re.compile(r"^(sin|cos|tan|asin|acos|atan2?|sinh|cosh|tanh|exp2?|expm1|log(2|10|1p)?|pow|sqrt|cbrt|hypot|"
                   r"fabs|abs|floor|ceil|round|lround|trunc|fmod|fmin|fmax|fma|erff?|erfc|lgamma|tgamma)f?$")


def host_only_call(callee: str) -> bool:
    """The function touches no device memory and orders no device work."""
    return callee in _HOST_ONLY or callee.startswith(_HOST_ONLY_PREFIXES) or bool(_MATH.match(callee))


@dataclass(frozen=True)
class MaySet:
    """A pointer that is one of several (from a phi of different allocations)."""

    options: frozenset


@dataclass(frozen=True)
class Allocation:
    id: int
    name: str
    bytes: Expr | None
    line: int | None
    function: str


@dataclass(frozen=True)
class ArgValue:
    """A launch argument: a buffer (allocation + byte offset), a scalar, or unknown."""

    kind: str  # "buffer", "buffers" (one of several), "scalar", "host" (host memory), "unknown"
    buffer: str | None = None
    offset: Expr | None = None
    value: Expr | None = None
    text: str = ""  # float constants and other scalars, as printed
    options: tuple[tuple[str, Expr | None], ...] = ()

    def __str__(self) -> str:
        if self.kind == "buffer":
            off = "?" if self.offset is None else str(self.offset)
            return self.buffer if off == "0" else f"{self.buffer} + {off} bytes"
        if self.kind == "buffers":
            return " | ".join(f"{b}+{o}" for b, o in self.options)
        if self.kind == "scalar":
            return str(self.value) if self.value is not None else self.text
        return "host" if self.kind == "host" else "unknown"


@dataclass(frozen=True)
class Dim3:
    x: Expr | None
    y: Expr | None
    z: Expr | None

    def constant(self) -> tuple[int, int, int] | None:
        vals = [None if d is None else d.constant_value() for d in (self.x, self.y, self.z)]
        return None if any(v is None for v in vals) else tuple(vals)  # type: ignore[return-value]

    def __str__(self) -> str:
        return "(" + ", ".join("?" if d is None else str(d) for d in (self.x, self.y, self.z)) + ")"


@dataclass(frozen=True)
class HostStatement:
    """One statement of the entry function, with its host loop nest and domain."""

    index: int
    kind: str  # "alloc", "free", "copy", "memset", "sync", "launch", "opaque"
    line: int | None
    loops: tuple[str, ...]
    domain: Formula | None
    detail: str = ""
    # launch fields
    kernel: str | None = None  # device (mangled) kernel name
    grid: Dim3 | None = None
    block: Dim3 | None = None
    shmem: Expr | None = None
    stream: str | None = None
    args: tuple[ArgValue, ...] = ()
    # copy / memset / alloc / free fields
    direction: str | None = None
    dst: ArgValue | None = None
    src: ArgValue | None = None
    bytes: Expr | None = None
    call: str | None = None  # the function called (runtime function, or the program's own helper)
    launches_kernels: bool = False  # an opaque call of the program's own function that launches kernels
    inlined_from: str | None = None  # the program's function the compiler inlined it from, called at ``line``
    written_at: tuple[tuple[int, str | None], ...] = ()  # (line, file) where written, innermost first (ir.Instr)
    written_in: tuple[str, ...] = ()  # the function each of ``written_at`` lies in
    # the program's functions (IR names, outermost first) modelled at their call sites that it lies in
    through: tuple[str, ...] = ()
    call_lines: tuple[int | None, ...] = ()  # the line of each call of ``through``, in its caller
    basic_block: int | None = None  # the entry's basic block it runs in (a helper's: the block of its call)

    def describe(self) -> str:
        """What the statement is, for reports: ``cudaMemcpy2D (DeviceToDevice) at line 14``."""
        what = {"launch": f"launch of {self.kernel}", "opaque": f"call of {self.call}"}.get(
            self.kind, self.call or self.kind)
        if self.direction is not None:
            what += f" ({self.direction})"
        if self.inlined_from and self.inlined_from.split("<")[0] != self.call:
            what += f" in {self.inlined_from}"
        return what + (f" at line {self.line}" if self.line is not None else "")


# runtime calls that read the status of the launches before them (a launch that failed to
# launch, for its configuration, reports it there, once)
STATUS_QUERIES = frozenset({"cudaGetLastError", "cudaPeekAtLastError"})


@dataclass(frozen=True)
class StatusQuery:
    """A call that reads the launch status (``STATUS_QUERIES``), itself or in a function of the
    program: host-only, it is no statement, so ``before`` places it: the index of the first
    statement after it."""

    call: str
    line: int | None
    before: int


@dataclass(frozen=True)
class HostModel:
    entry: str
    statements: tuple[HostStatement, ...]
    allocations: tuple[Allocation, ...]
    loops: tuple[LoopInfo, ...]
    notes: tuple[str, ...] = ()
    launching_calls: tuple[str, ...] = ()  # the program's own functions it calls that launch kernels
    successors: tuple[tuple[int, ...], ...] = ()  # the entry's basic blocks: the blocks each may run next
    status_queries: tuple[StatusQuery, ...] = ()

    def status_queries_between(self, first: int, second: int) -> list[StatusQuery]:
        """The launch-status queries after statement ``first`` and before ``second``."""
        return [q for q in self.status_queries if first < q.before <= second]

    @property
    def launches(self) -> list[HostStatement]:
        return [s for s in self.statements if s.kind == "launch"]

    def reachable_from(self, block: int) -> frozenset[int]:
        """The blocks control may reach from ``block`` (itself included)."""
        seen, work = {block}, [block]
        while work:
            for nxt in self.successors[work.pop()] if self.successors else ():
                if nxt not in seen:
                    seen.add(nxt)
                    work.append(nxt)
        return frozenset(seen)


class _HostEvaluator(Evaluator):
    def __init__(self, func: Function, layout: TypeLayout, managed: frozenset[str] = frozenset(),
                 loop_prefix: str = "h"):
        super().__init__(func, layout, loop_prefix=loop_prefix)
        # (id(alloca), byte offset) -> the allocation cudaMalloc(&slot) put there: a pointer
        # variable, or one element of an array of pointers (bufs[1], a struct's field)
        self.slot_alloc: dict[tuple[int, int], int] = {}
        self.reassigned: set[tuple[int, int]] = set()  # slots written again: their allocation is not known
        self.untracked: set[int] = set()  # allocas no slot of which is known (a run-time index, an escape)
        self.bound_args: dict[int, object] = {}  # entry parameters bound at the caller's call site
        self.managed = managed  # __managed__ variables: the host addresses their device buffer

    def leaf(self, v: Value):
        if isinstance(v, Arg) and v.index in self.bound_args:
            return self.bound_args[v.index]
        if v.kind == "global" and v.name in self.managed:
            return Pointer(("global", v.name), Expr.const(0))
        if isinstance(v, Instr) and v.opcode == "load" and v.type == "ptr":
            aid = self.allocation_at(v.operands[0])
            if aid is not None:
                return Pointer(("alloc", aid), Expr.const(0))
        if isinstance(v, Instr) and v.opcode == "alloca":
            return Pointer(("host", id(v)), Expr.const(0))
        if isinstance(v, Instr) and v.opcode == "call" and v.callee in _HOST_ALLOCATORS:
            return Pointer(("host", id(v)), Expr.const(0))
        return None

    def slot_of(self, address: Value) -> tuple[Instr, int | None] | None:
        """The local variable (an ``alloca``) ``address`` points into, with the byte offset
        (``None``: not a constant, as ``&bufs[k]``); ``None`` for any other address."""
        base = address
        while isinstance(base, Instr) and base.opcode == "getelementptr" and base.operands:
            base = base.operands[0]  # &bufs[k] - 1 is two of them
        if not (isinstance(base, Instr) and base.opcode == "alloca"):
            return None
        if base is address:
            return base, 0
        at = self.value(address)
        known = isinstance(at, Pointer) and at.base == ("host", id(base)) and at.offset is not None
        return base, at.offset.constant_value() if known else None

    def allocation_at(self, address: Value) -> int | None:
        """The allocation the slot at ``address`` holds wherever it is read: one
        ``cudaMalloc`` wrote it, nothing else writes it, and its address does not escape."""
        slot = self.slot_of(address)
        if slot is None or slot[1] is None or id(slot[0]) in self.untracked:
            return None
        key = (id(slot[0]), slot[1])
        return None if key in self.reassigned else self.slot_alloc.get(key)

    def merge(self, v: Instr, values: list):
        options = set()
        for x in values:
            if isinstance(x, Pointer):
                options.add(x)
            elif isinstance(x, MaySet):
                options |= x.options
            else:
                return None
        return MaySet(frozenset(options))


def _last_store_to(target: Value, before: Instr, ev: Evaluator) -> Instr | None:
    """The store into ``target`` that reaches ``before`` (same block, then dominators)."""
    block: Block | None = before.block
    limit = before
    while block is not None:
        instrs = block.instrs
        end = instrs.index(limit) if limit in instrs else len(instrs)
        for ins in reversed(instrs[:end]):
            if ins.opcode == "store" and ins.operands[1] is target:
                return ins
        block = ev.idom.get(block)
        limit = None  # type: ignore[assignment]
    return None


def _consumes_config(ins: Instr) -> bool:
    """A call that pushes a launch configuration or launches with the one pushed."""
    callee = ins.callee or ""
    return callee == "__cudaPushCallConfiguration" or callee in _LAUNCH_CALLS or "__device_stub__" in callee


def _blocks_between(first: Block, last: Block) -> set[Block]:
    """The blocks on some path from ``first`` to ``last`` (both included)."""
    def reach(start: Block, step) -> set[Block]:
        seen, work = {start}, [start]
        while work:
            for nxt in step(work.pop()):
                if nxt not in seen:
                    seen.add(nxt)
                    work.append(nxt)
        return seen
    return reach(first, lambda b: b.succs) & reach(last, lambda b: b.preds)


def _array_of_store(ins: Instr) -> Value | None:
    """The array a ``store`` writes into: its address, or the base of a ``getelementptr``
    address (a slot of a launch's ``void* args[]``)."""
    if ins.opcode != "store":
        return None
    addr = ins.operands[1]
    return addr.operands[0] if isinstance(addr, Instr) and addr.opcode == "getelementptr" else addr


class ArrayStores:
    """Every store of a function by the array it writes into (by block, in order), so that
    the slots of each launch's argument array are found without scanning the function
    again per launch (a straight-line model makes that quadratic)."""

    def __init__(self, func: Function):
        self.by_array: dict[int, dict[Block, list[Instr]]] = {}
        for block in func.blocks:
            for ins in block.instrs:
                array = _array_of_store(ins)
                if array is not None:
                    self.by_array.setdefault(id(array), {}).setdefault(block, []).append(ins)

    def of(self, array: Value) -> dict[Block, list[Instr]]:
        return self.by_array.get(id(array), {})


def _arg_array_slots(array: Value, call: Instr, ev: Evaluator, stores: ArrayStores) -> dict[int, Value]:
    """Index -> pointer stored in the launch's ``void* args[]`` array: the last store into
    each slot that reaches the call (its block, then its dominators: with exceptions on,
    the stores and the launch are split by the ``invoke`` of ``__cudaPopCallConfiguration``)."""
    into = stores.of(array)
    slots: dict[int, Value] = {}
    block: Block | None = call.block
    limit: Instr | None = call
    dominators: set[Block] = set()
    while block is not None:
        # (the paths are looked for only when some block off the dominators stores: rare)
        off_path = set(into) - dominators - {block}
        if dominators and off_path and off_path & _blocks_between(block, call.block):
            break  # a store on some paths only: the slots it may change are not known
        dominators.add(block)
        mine = into.get(block, [])
        if limit is not None and limit.block is block:
            position = {id(ins): k for k, ins in enumerate(block.instrs)}
            mine = [ins for ins in mine if position[id(ins)] < position[id(limit)]]
        for ins in reversed(mine):
            addr = ins.operands[1]
            if addr is array:
                slots.setdefault(0, ins.operands[0])
            else:
                off = ev.value(addr)
                if isinstance(off, Pointer) and off.offset is not None and off.offset.constant_value() is not None:
                    slots.setdefault(off.offset.constant_value() // 8, ins.operands[0])
        block, limit = ev.idom.get(block), None
    return slots


def _launch_written(call: Instr, inlined_stub: bool):
    """Where the launch ``call`` is written: its (line, file) chain and the function of
    each link, innermost first, and the program's function the compiler inlined it from.
    A ``<<<>>>`` launch whose stub the compiler inlined calls ``cudaLaunchKernel`` from the
    stub's body, which debug information places at the kernel's definition: that link is
    the compiler's, not the program's, and is left out."""
    written_at, written_in = call.written_at, call.written_in
    if not (inlined_stub and len(written_at) > 1):
        return written_at, written_in, call.inlined_from
    written_at, written_in = written_at[1:], written_in[1:]
    return written_at, written_in, (written_in[-2] or None) if len(written_in) > 1 else None


class _HostModelBuilder:
    def __init__(self, module: Module, entry: str, alloc_names, kernel_of_stub, caller: "_HostModelBuilder | None" = None,
                 device_globals: frozenset[str] = frozenset(), demangle=lambda name: name,
                 managed: frozenset[str] = frozenset(), descend: bool = False, through: tuple[str, ...] = ()):
        self.module = module
        if entry not in module.functions or module.functions[entry].is_declaration:
            raise InputError(f"error: entry function '{entry}' is not defined in the program")
        self.func = module.functions[entry]
        self.layout = TypeLayout(module.struct_types)
        self.managed = managed
        # descend: the calls of the program's functions that launch kernels are modelled at
        # their call sites (``through`` the functions so modelled around this one), their loop
        # iterators named apart from the caller's
        self.descend, self.through = descend, through
        self.descents = [0]  # functions modelled at call sites so far, in the whole model
        self.ev = _HostEvaluator(self.func, self.layout, managed, loop_prefix="h")
        self.array_stores = ArrayStores(self.func)
        self.alloc_names = alloc_names  # callable(line, ordinal) -> name | None
        self.kernel_of_stub = kernel_of_stub  # callable(stub name) -> kernel name | None
        self.allocations: list[Allocation] = []
        self.alloc_by_id: dict[int, Allocation] = {}
        self.alloc_of_call: dict[int, Allocation] = {}  # id of the allocating call -> its allocation
        self.statements: list[HostStatement] = []
        self.notes: list[str] = []
        self.launching_calls: list[str] = []
        self.status_queries: list[StatusQuery] = []
        self.descended_loops: list[LoopInfo] = []  # the loops of the functions modelled at their call sites
        self.device_globals = device_globals
        self.demangle = demangle
        if caller is not None:
            self._bind_to_caller(caller, entry)

    def run(self) -> HostModel:
        self._find_allocation_slots()
        for lp in self.ev.loops:
            self.ev.loop_info(lp)
        order = structured_order(self.func, self.ev.loops)
        numbers = {id(b): k for k, b in enumerate(self.func.blocks)}
        pending_config: Instr | None = None
        for block in order:
            nest = tuple(lp.name for lp in loop_nest(self.ev.loops, block))
            domain = conjunction([self.ev.loop_infos[n].domain for n in nest
                                  if n in self.ev.loop_infos and self.ev.loop_infos[n].domain is not None])
            first = len(self.statements)
            pending_config = self._statements_of_block(block, nest, domain, pending_config)
            self.statements[first:] = [replace(st, basic_block=numbers[id(block)]) for st in self.statements[first:]]
        loops = tuple(self.ev.loop_infos[lp.name] for lp in self.ev.loops if lp.name in self.ev.loop_infos)
        loops += tuple(self.descended_loops)
        successors = tuple(tuple(numbers[id(n)] for n in b.succs if id(n) in numbers) for b in self.func.blocks)
        return HostModel(self.func.name, tuple(self.statements), tuple(self.allocations), loops, tuple(self.notes),
                         tuple(dict.fromkeys(self.launching_calls)), successors, tuple(self.status_queries))

    def _statements_of_block(self, block: Block, nest, domain, pending_config: Instr | None) -> Instr | None:
        """The statements of one basic block, in order; the launch configuration pushed and
        not yet consumed when it ends."""
        for ins in block.instrs:
            callee = ins.callee
            if callee is None:
                if ins.opcode in ("call", "invoke") and "asm" not in ins.text.split("(", 1)[0]:
                    self._opaque(ins, "a function pointer", nest, domain)
                elif self.managed and ins.opcode in _MEMORY_ACCESS:
                    self._managed_access(ins, nest, domain)
                continue
            if callee == "__cudaPushCallConfiguration":
                pending_config = ins
            elif callee in _LAUNCH_CALLS and ins.operands and ins.operands[0].kind == "func":
                config = pending_config or self._hoisted_config(ins)
                self._launch(ins, ins.operands[0].name, config, nest, domain, via_array=True)
                pending_config = None
            elif "__device_stub__" in callee:
                config = pending_config or self._hoisted_config(ins)
                self._launch(ins, callee, config, nest, domain, via_array=False)
                pending_config = None
            else:
                self._runtime_call(ins, callee, nest, domain)
        return pending_config

    # ---------------------------------------------------------------- helpers
    def _bind_to_caller(self, caller: "_HostModelBuilder", entry: str) -> None:
        """Parameters of the entry take the caller's allocations when every call
        passes the same ones (a helper like ``model_forward(d_X, d_W, …)``)."""
        caller._find_allocation_slots()
        self.allocations = list(caller.allocations)
        self.alloc_by_id = dict(caller.alloc_by_id)
        calls = [ins for ins in caller.func.instructions() if ins.callee == entry]
        if not calls:
            self.notes.append(f"{self._readable(entry)} is not called from {caller._readable(caller.func.name)} "
                              "(the compiler inlined its calls there): its pointer parameters are unknown")
            return
        for i in range(len(self.func.args)):
            values = [caller.ev.value(c.operands[i]) for c in calls if i < len(c.operands) - 1]
            if values and all(v is not None and v == values[0] for v in values) and isinstance(values[0], (Pointer, Expr)):
                self.ev.bound_args[i] = values[0]

    def _find_allocation_slots(self) -> None:
        """The allocations, and the slots whose allocation is known wherever they are read:
        each ``cudaMalloc(&slot, …)`` into a pointer variable, or into an element of a local
        array of pointers at a constant index (``&bufs[1]``), is that slot's allocation when
        nothing else writes the slot afterwards and the array's address is not kept or
        passed on. A ``cudaMalloc(&bufs[b])`` at a run-time index, a store ``bufs[k] = q``
        and an escaping address leave every element of the array unknown."""
        per_line: dict[int | None, int] = {}
        allocating: dict[tuple[int, int], Instr] = {}  # slot -> the cudaMalloc writing it
        for ins in self.func.instructions():
            callee = ins.callee
            if callee in _ALLOC_CALLS and ins.operands:
                ordinal = per_line.get(ins.line, 0)
                per_line[ins.line] = ordinal + 1
                aid = len(self.allocations)
                name = self.alloc_names(ins.line, ordinal) or f"alloc{aid}"
                size = self.ev.expr(ins.operands[1]) if len(ins.operands) > 2 else None
                alloc = Allocation(aid, name, size, ins.line, callee)
                self.allocations.append(alloc)
                self.alloc_by_id[aid] = alloc
                self.alloc_of_call[id(ins)] = alloc
                slot = self.ev.slot_of(ins.operands[0])
                if slot is not None and slot[1] is None:
                    self.ev.untracked.add(id(slot[0]))  # cudaMalloc(&bufs[b]): any element
                elif slot is not None:
                    key = (id(slot[0]), slot[1])
                    if key in self.ev.slot_alloc:
                        self.ev.reassigned.add(key)  # one slot, several allocations
                    self.ev.slot_alloc[key] = aid
                    allocating[key] = ins
        tracked = {array for array, _ in self.ev.slot_alloc}
        for ins in self.func.instructions():
            if ins.opcode == "store":
                value, target = ins.operands[0], ins.operands[1]
                kept = self.ev.slot_of(value)  # the slot's address kept in memory: float** p = bufs;
                if kept is not None:
                    self.ev.untracked.add(id(kept[0]))
                slot = self.ev.slot_of(target)
                if slot is not None and id(slot[0]) in tracked:
                    self._stored_into(ins, slot, allocating)
            if ins.opcode in ("call", "invoke") and ins.callee is not None \
                    and not ins.callee.startswith("llvm.lifetime"):
                for op in ins.call_args:
                    slot = self.ev.slot_of(op)
                    if slot is None or ins.callee in _ALLOC_CALLS and op is ins.operands[0]:
                        continue
                    if ins.callee.startswith("llvm.memset") and op is ins.operands[0] and all(
                            self._runs_before(ins, call) for key, call in allocating.items() if key[0] == id(slot[0])):
                        continue  # float* bufs[2] = {}: cleared before each slot is allocated
                    self.ev.untracked.add(id(slot[0]))  # the address escapes into a call
        self.ev.cache.clear()  # values read above were read before every slot was known

    def _stored_into(self, store: Instr, slot: tuple[Instr, int | None], allocating) -> None:
        """Account for ``store`` into a local that holds allocated slots: a pointer stored
        exactly at a slot before its ``cudaMalloc`` on every path (``float* p = nullptr``)
        changes nothing; one stored after replaces that slot's allocation; a store at a
        run-time index (``bufs[k] = q``, ``k`` perhaps 0) or over part of a slot, any."""
        array, offset = slot
        if offset is None:
            self.ev.untracked.add(id(array))
            return
        key = (id(array), offset)
        if key in self.ev.slot_alloc and store.operands[0].type == "ptr":
            if not self._runs_before(store, allocating.get(key)):
                self.ev.reassigned.add(key)  # e.g. a pointer swap
        elif any(a == id(array) and abs(o - offset) < 8 for a, o in self.ev.slot_alloc):
            self.ev.untracked.add(id(array))  # some other value over a slot's bytes

    def _hoisted_config(self, launch: Instr) -> Instr | None:
        """The ``__cudaPushCallConfiguration`` whose shape ``launch`` runs with, when the
        compiler hoisted one push above an ``if``/``else`` whose arms both launch with that
        shape (program order meets it in the first arm only): the nearest push dominating
        the launch, provided no path from it to the launch passes another push or launch
        (which would consume or replace it). ``None`` where there is no such push: then
        the launch is one the program wrote as ``cudaLaunchKernel`` with its own shape."""
        push = self._dominating_call(launch, "__cudaPushCallConfiguration")
        if push is None:
            return None
        first, last = push.block, launch.block
        assert first is not None and last is not None
        between = _blocks_between(first, last)
        if any(first in b.succs for b in between) or any(b in between for b in last.succs):
            return None  # a path passes the push's or the launch's block twice: a loop between them
        for block in between:
            start = block.instrs.index(push) + 1 if block is first else 0
            end = block.instrs.index(launch) if block is last else len(block.instrs)
            if any(_consumes_config(ins) for ins in block.instrs[start:end]):
                return None
        return push

    def _dominating_call(self, at: Instr, callee: str) -> Instr | None:
        """The last call of ``callee`` before ``at`` in its block or, failing that, in the
        nearest dominator that has one."""
        block, limit = at.block, at
        while block is not None:
            end = block.instrs.index(limit) if limit is not None else len(block.instrs)
            found = next((ins for ins in reversed(block.instrs[:end]) if ins.callee == callee), None)
            if found is not None:
                return found
            block, limit = self.ev.idom.get(block), None
        return None

    def _runs_before(self, first: Instr, later: Instr | None) -> bool:
        """``first`` executes before ``later`` on every path (``float* p = nullptr; cudaMalloc(&p…)``)."""
        if later is None:
            return False
        if first.block is later.block:
            return first.block.instrs.index(first) < later.block.instrs.index(later)
        from sirius.analysis.cfg import dominates
        in_loop = any(first.block in lp.blocks for lp in self.ev.loops)
        return not in_loop and dominates(self.ev.idom, first.block, later.block)

    def _buffer_of(self, p: Pointer) -> str | None:
        """The device buffer a host pointer points into: an allocation, or a managed variable."""
        if not isinstance(p.base, tuple):
            return None
        if p.base[0] == "alloc":
            return self.alloc_by_id[p.base[1]].name
        return p.base[1] if p.base[0] == "global" and p.base[1] in self.managed else None

    def _resolve(self, v: Value) -> ArgValue:
        r = self.ev.value(v)
        buffer = self._buffer_of(r) if isinstance(r, Pointer) else None
        if buffer is not None:
            return ArgValue("buffer", buffer=buffer, offset=r.offset)
        if isinstance(r, MaySet):
            opts = []
            for p in r.options:
                if self._buffer_of(p) is None:
                    return ArgValue("unknown")
                opts.append((self._buffer_of(p), p.offset))
            return ArgValue("buffers", options=tuple(sorted(opts, key=lambda o: (o[0], str(o[1])))))
        if isinstance(r, Expr):
            return ArgValue("scalar", value=r)
        if isinstance(v, Const) and v.type in ("float", "double", "half"):
            return ArgValue("scalar", text=c_float_literal(v.text.split(" ", 1)[-1]))
        if isinstance(r, Pointer) and isinstance(r.base, tuple) and r.base[0] == "host":
            return ArgValue("host")
        return ArgValue("unknown")

    def _managed_targets(self, address: Value) -> list[tuple[str, Expr | None]]:
        """The managed variables ``address`` may point into, each with the byte offset (None:
        unknown). Where the evaluator cannot follow the pointer (a ``select``, say), any
        managed variable its computation names counts, at an unknown offset."""
        p = self.ev.value(address)
        if isinstance(p, (Pointer, MaySet)):
            options = (p,) if isinstance(p, Pointer) else tuple(p.options)
            return [(o.base[1], o.offset if o is p else None) for o in options
                    if isinstance(o.base, tuple) and o.base[0] == "global" and o.base[1] in self.managed]
        named, seen, work = [], set(), [address]
        while work:
            v = work.pop()
            if id(v) in seen:
                continue
            seen.add(id(v))
            name = mentioned_variable(v, self.managed)
            if name is not None:
                named.append((name, None))
            elif isinstance(v, Instr) and v.opcode not in ("load", "call", "invoke"):
                work.extend(v.operands)  # a pointer loaded or returned may be anything: not followed
        return named

    def _managed_access(self, ins: Instr, nest, domain) -> None:
        """A host load, store or atomic of a ``__managed__`` variable: a copy from its device
        buffer (a read), into it (a write), or both, over the bytes accessed."""
        accessed = ins.operands[0].type if ins.opcode == "store" else ins.type
        size = self.layout.size(accessed) if ins.opcode in ("load", "store") else None
        for name, offset in self._managed_targets(ins.operands[_MEMORY_ACCESS[ins.opcode]]):
            self._host_access(ins, name, offset, size if offset is not None else None,
                              reads=ins.opcode != "store", writes=ins.opcode != "load", nest=nest, domain=domain)

    def _host_access(self, ins: Instr, name: str, offset: Expr | None, size: int | None, reads: bool, writes: bool,
                     nest, domain, how: str = "") -> None:
        # an extent the model does not know (size None) is all of the variable, from its start
        buffer = ArgValue("buffer", buffer=name, offset=offset if size is not None else Expr.const(0))
        verb = "read and write" if reads and writes else ("read" if reads else "write")
        self.statements.append(HostStatement(
            len(self.statements), "copy", ins.line, nest, domain,
            direction="Default" if reads and writes else ("DeviceToHost" if reads else "HostToDevice"),
            src=buffer if reads else ArgValue("host"), dst=buffer if writes else ArgValue("host"),
            bytes=Expr.const(size) if size is not None else None,
            call=f"host {verb} of __managed__ {self._readable(name)}{how}", inlined_from=ins.inlined_from))

    def _below_2_32(self, value: Value, nest: tuple[str, ...], domain: Formula | None) -> bool:
        """``value`` lies in the low half of a 64-bit integer: a 32-bit (or narrower) one
        zero-extended, one masked by a constant below 2^32, or one whose value isl bounds
        to [0, 2^32) over the loop nest's domain (``3 - k`` for k in [0, 3])."""
        if not isinstance(value, Instr) or len(value.operands) < 1:
            return False
        if value.opcode == "zext":
            return value.operands[0].type in ("i1", "i8", "i16", "i32")
        if value.opcode == "and" and len(value.operands) >= 2:
            masks = [self.ev.expr(op) for op in value.operands[:2]]
            return any(m is not None and m.constant_value() is not None and 0 <= m.constant_value() < 2**32
                       for m in masks)
        expr = self.ev.expr(value)
        if expr is None or domain is None or not nest or not expr.is_affine() or not domain.is_affine() or \
                not expr.symbols() <= set(nest) or not domain.symbols() <= set(nest):
            return False
        outside = isl.Set(f"{{ [{', '.join(nest)}] : {domain.to_isl()} and ({expr} < 0 or {expr} >= {2**32}) }}")
        return outside.is_empty()

    def _dim3(self, xy: Value, z: Value, nest: tuple[str, ...] = (), domain: Formula | None = None) -> Dim3:
        packed = self.ev.expr(xy)
        zz = self.ev.expr(z)
        if packed is not None and packed.constant_value() is not None:
            c = packed.constant_value()
            return Dim3(Expr.const(c & 0xFFFFFFFF), Expr.const(c >> 32), zz)
        if isinstance(xy, Instr) and xy.opcode == "or":
            # x in the low 32 bits, y in the high ones; the parts are disjoint, so each is the
            # sum of what the operands put there, and unknown if any operand's part is unknown
            x: Expr | None = Expr.const(0)
            y: Expr | None = Expr.const(0)
            for op in xy.operands[:2]:
                value = self.ev.expr(op)
                c = None if value is None else value.constant_value()
                if isinstance(op, Instr) and op.opcode == "shl" and self.ev.expr(op.operands[1]) == Expr.const(32):
                    high = self.ev.expr(op.operands[0])
                    y = None if y is None or high is None else y + high
                elif c is not None:
                    x = None if x is None else x + Expr.const(c & 0xFFFFFFFF)
                    y = None if y is None else y + Expr.const(c >> 32)
                elif self._below_2_32(op, nest, domain):
                    x = None if x is None or value is None else x + value
                elif value is not None and all(k % 2**32 == 0 for _, k in value.terms):
                    # the high part written otherwise: ``(63 - k) << 32`` folded to ``(63 << 32) - (k << 32)``
                    y = None if y is None else y + value.floordiv(2**32)
                else:  # bits of both halves, or of either: neither part is known
                    x = y = None
            return Dim3(x, y, zz)
        return Dim3(None, None, zz)

    def _held_value(self, holder: Value | None, call: Instr) -> ArgValue:
        """What the variable at ``holder`` holds at ``call``: the value last stored into it,
        or the allocation ``cudaMalloc(&holder, ...)`` put there (``void* args[] = {&d_x}``)."""
        if holder is None:
            return ArgValue("unknown")
        store = _last_store_to(holder, call, self.ev)
        if store is not None:
            return self._resolve(store.operands[0])
        aid = self.ev.allocation_at(holder)
        if aid is not None:
            return ArgValue("buffer", buffer=self.alloc_by_id[aid].name, offset=Expr.const(0))
        return ArgValue("unknown")

    def _launch(self, call: Instr, stub: str, config: Instr | None, nest, domain, via_array: bool) -> None:
        kernel = self.kernel_of_stub(stub)
        launched_by = None  # the runtime call the program launches with, instead of <<<>>>
        if config is not None and len(config.operands) >= 7:
            shape = config.operands[:6]
        elif via_array and len(call.operands) >= 9:
            launched_by = call.callee
            # cudaLaunchKernel((void*)k, grid, block, args, shmem, stream) written by the program
            # (not an inlined <<<>>> stub, which pops what __cudaPushCallConfiguration pushed):
            # the call carries the configuration, dim3s passed as (xy, z) pairs as above
            shape = call.operands[1:5] + call.operands[6:8]
        else:
            shape = None
        if shape is not None:
            grid = self._dim3(shape[0], shape[1], nest, domain)
            block = self._dim3(shape[2], shape[3], nest, domain)
            shmem = self.ev.expr(shape[4])
            stream_v = shape[5]
        else:
            grid = block = Dim3(None, None, None)
            shmem, stream_v = None, None
            self.notes.append(f"launch at line {call.line}: launch configuration not found")
        stream = "default" if stream_v is None or (isinstance(stream_v, Const) and stream_v.value == 0) else "stream"
        if via_array:
            slots = _arg_array_slots(call.operands[5], call, self.ev, self.array_stores)
            args = []
            for i in range(len(slots)):
                args.append(self._held_value(slots.get(i), call))
        else:
            args = [self._resolve(op) for op in call.call_args]
        written_at, written_in, inlined_from = _launch_written(call, inlined_stub=via_array and config is not None)
        self.statements.append(HostStatement(
            len(self.statements), "launch", call.line, nest, domain, kernel=kernel or stub, grid=grid,
            block=block, shmem=shmem, stream=stream, args=tuple(args), inlined_from=inlined_from,
            call=launched_by, written_at=written_at, written_in=written_in))

    def _runtime_call(self, ins: Instr, callee: str, nest, domain) -> None:
        """Every call between launches becomes a statement, unless it is host-only:
        allocations, frees, copies of every kind, memsets and synchronizations are
        modelled; the program's own functions that touch device memory, and
        anything else, are opaque (they may read and write all device memory)."""
        ops = ins.call_args
        add = lambda **kw: self.statements.append(HostStatement(len(self.statements), line=ins.line, loops=nest,
                                                                domain=domain, call=callee,
                                                                inlined_from=ins.inlined_from, **kw))
        if callee in _ALLOC_CALLS:
            alloc = self.alloc_of_call[id(ins)]
            add(kind="alloc", detail=alloc.name, bytes=alloc.bytes)
        elif callee in ("cudaFree", "cudaFreeAsync"):
            add(kind="free", dst=self._resolve(ops[0]))
        elif callee in _COPIES or callee in _MEMSETS:
            spec = _COPIES.get(callee) or _MEMSETS[callee]
            kind_v = self.ev.expr(ops[spec.kind]) if spec.kind is not None and spec.kind < len(ops) else None
            direction = _COPY_KINDS.get(kind_v.constant_value() if kind_v is not None else -1, "unknown") \
                if spec.kind is not None else ("PeerToPeer" if callee in _COPIES else None)
            side = lambda pos, role: None if pos is None or pos >= len(ops) else (
                self._symbol(ops[pos], ops[spec.offset] if spec.offset is not None and spec.offset < len(ops)
                             else None) if spec.symbol == role else self._resolve(ops[pos]))
            add(kind="copy" if callee in _COPIES else "memset", direction=direction, dst=side(spec.dst, "dst"),
                src=side(spec.src, "src"), bytes=self.ev.expr(ops[spec.bytes]) if spec.bytes is not None else None)
        elif callee in _SYNC_CALLS:
            add(kind="sync", detail=callee)
        elif host_only_call(callee):
            if callee in STATUS_QUERIES:
                self.status_queries.append(StatusQuery(callee, ins.line, len(self.statements)))
            self._managed_arguments(ins, callee, nest, domain)
        elif callee in self.module.functions and not self.module.functions[callee].is_declaration:
            effect = self._device_effect(callee)
            if effect is None:
                if self._reads_launch_status(callee):
                    self.status_queries.append(StatusQuery(self._readable(callee), ins.line, len(self.statements)))
                self._managed_arguments(ins, callee, nest, domain)
                return
            if effect == "launches kernels":
                if self._descended(ins, callee, nest, domain):
                    return
                self.launching_calls.append(callee)
            self._opaque(ins, self._readable(callee), nest, domain, f"the function {effect}",
                         launches_kernels=effect == "launches kernels")
        else:
            self._opaque(ins, self._readable(callee), nest, domain)

    def _descended(self, ins: Instr, callee: str, nest, domain) -> bool:
        """Model the call ``ins`` of the program's function ``callee``, which launches
        kernels, at its call site: its statements, in its own loops nested in the call's, with
        its parameters bound to what this call passes (a pointer or an integer the evaluator
        follows; anything else stays unknown). Not done (False) unless descending, nor for a
        function the chain of calls already passes through (recursion), nor past 8 deep."""
        if not self.descend or callee in self.through or callee == self.func.name or len(self.through) >= 8:
            return False
        inner = _HostModelBuilder(self.module, callee, self.alloc_names, self.kernel_of_stub, None,
                                  self.device_globals, self.demangle, self.managed, True, self.through + (callee,))
        self.descents[0] += 1
        inner.descents = self.descents
        inner.ev = _HostEvaluator(inner.func, inner.layout, self.managed, loop_prefix=f"h{self.descents[0]}_")
        inner.allocations, inner.alloc_by_id = self.allocations, self.alloc_by_id  # one numbering
        for i, op in enumerate(ins.call_args):
            value = self.ev.value(op)
            if i < len(inner.func.args) and isinstance(value, (Pointer, Expr)):
                inner.ev.bound_args[i] = value
        model = inner.run()
        self.status_queries += [replace(q, before=q.before + len(self.statements)) for q in model.status_queries]
        for stmt in model.statements:
            self.statements.append(replace(
                stmt, index=len(self.statements), loops=nest + stmt.loops,
                domain=conjunction([d for d in (domain, stmt.domain) if d is not None]),
                through=(callee,) + stmt.through, call_lines=(ins.line,) + stmt.call_lines))
        self.descended_loops.extend(model.loops)
        self.notes.extend(model.notes)
        self.launching_calls.extend(model.launching_calls)
        return True

    def _managed_arguments(self, ins: Instr, callee: str, nest, domain) -> None:
        """A host call given the address of a ``__managed__`` variable (``memset(acc, ...)``,
        a helper of the program) may read and write all of it."""
        if not self.managed:
            return
        # llvm.memset.p0.i64 -> memset: the intrinsic clang made of the program's call
        called = callee.split(".")[1] if callee.startswith("llvm.") else self._readable(callee)
        for name in dict.fromkeys(name for arg in ins.call_args for name, _ in self._managed_targets(arg)):
            self._host_access(ins, name, None, None, reads=True, writes=True, nest=nest, domain=domain,
                              how=f" in {called}")

    def _readable(self, name: str) -> str:
        readable = self.demangle(name)
        depth, cut = 0, len(readable)
        for i, ch in enumerate(readable):  # drop the parameter list: ``refresh(float*, int)`` -> ``refresh``
            depth += ch == "<"
            depth -= ch == ">"
            if ch == "(" and depth == 0:
                cut = i
                break
        return readable[:cut]

    def _opaque(self, ins: Instr, what: str, nest, domain, detail: str = "not understood",
                launches_kernels: bool = False) -> None:
        """A call the model does not see into: it may read and write all device memory."""
        self.statements.append(HostStatement(len(self.statements), "opaque", ins.line, nest, domain,
                                             detail=detail, call=what, inlined_from=ins.inlined_from,
                                             launches_kernels=launches_kernels))

    def _symbol(self, symbol: Value, offset: Value | None) -> ArgValue:
        """The device global a ``cudaMemcpy*Symbol`` names (the host shadow shares its name)."""
        if symbol.kind == "global" and symbol.name in self.device_globals:
            off = self.ev.expr(offset) if offset is not None else Expr.const(0)
            return ArgValue("buffer", buffer=symbol.name, offset=off)
        return ArgValue("unknown")

    def _reads_launch_status(self, name: str, seen: set[str] | None = None) -> bool:
        """A function of the program calls a launch-status query, itself or through others."""
        seen = seen if seen is not None else set()
        fn = self.module.functions.get(name)
        if name in seen or fn is None or fn.is_declaration:
            return name in STATUS_QUERIES
        seen.add(name)
        return any(ins.callee is not None and self._reads_launch_status(ins.callee, seen) for ins in fn.instructions())

    def _device_effect(self, name: str, seen: set[str] | None = None) -> str | None:
        """What a function of the program does to the device (``None``: nothing): it
        launches kernels, or calls something that is not host-only."""
        seen = seen if seen is not None else set()
        if name in seen:
            return None
        seen.add(name)
        fn = self.module.functions.get(name)
        if fn is None or fn.is_declaration:
            return None if host_only_call(name) else f"calls {self._readable(name)}"
        found = None
        for ins in fn.instructions():
            c = ins.callee
            touched = next(filter(None, (mentioned_variable(op, self.managed) for op in ins.operands)), None) \
                if self.managed else None
            if touched is not None:
                found = found or f"reads or writes the __managed__ variable {self._readable(touched)}"
            if c in _LAUNCH_CALLS or (c and "__device_stub__" in c):
                return "launches kernels"
            if c is None and ins.opcode in ("call", "invoke") and "asm" not in ins.text.split("(", 1)[0]:
                found = found or "calls through a function pointer"
            elif c is not None and c != "__cudaPushCallConfiguration":
                inner = self._device_effect(c, seen)
                if inner == "launches kernels":
                    return inner
                found = found or inner
        return found


def build_host_model(module: Module, entry: str, alloc_names, kernel_of_stub,
                     callers: tuple[str, ...] = (), device_globals: frozenset[str] = frozenset(),
                     demangle=lambda name: name, managed: frozenset[str] = frozenset(),
                     descend: bool = False) -> HostModel:
    """Model the statements of ``entry`` in the host IR module (see the module docstring).

    With ``callers`` (``("main",)``, or ``("main", "run_model")`` when the
    entry is a helper called through others, outermost first), allocations
    are the outermost caller's and each function's parameters are bound to
    what every call site in its caller passes. ``managed`` names the ``__managed__``
    variables: the host's loads and stores of them are statements (see
    ``analysis.managed_variables``). With ``descend``, the calls of the program's functions
    that launch kernels are modelled at their call sites (their statements carry ``through``).
    """
    parent = None
    for name in callers:
        parent = _HostModelBuilder(module, name, alloc_names, kernel_of_stub, parent, device_globals, demangle,
                                   managed)
    return _HostModelBuilder(module, entry, alloc_names, kernel_of_stub, parent, device_globals, demangle,
                             managed, descend).run()
