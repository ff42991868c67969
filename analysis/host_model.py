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
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sirius.analysis.cfg import loop_nest, structured_order
from sirius.analysis.evaluate import Evaluator, Formula, LoopInfo, Pointer, conjunction
from sirius.analysis.ir import Arg, Block, Const, Function, Instr, Module, TypeLayout, Value
from sirius.analysis.symbolic import Expr
from sirius.errors import InputError

_ALLOC_CALLS = {"cudaMalloc": 1, "cudaMallocManaged": 1, "cudaMallocAsync": 1}
_SYNC_CALLS = {"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaThreadSynchronize",
               "cudaStreamWaitEvent", "cudaEventRecord"}
_HOST_ALLOCATORS = {"malloc", "calloc", "aligned_alloc", "_Znwm", "_Znam", "_ZnwmSt11align_val_t",
                    "_ZnamSt11align_val_t"}
_COPY_KINDS = {0: "HostToHost", 1: "HostToDevice", 2: "DeviceToHost", 3: "DeviceToDevice", 4: "Default"}


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
    kind: str  # "alloc", "free", "copy", "memset", "sync", "launch"
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


@dataclass(frozen=True)
class HostModel:
    entry: str
    statements: tuple[HostStatement, ...]
    allocations: tuple[Allocation, ...]
    loops: tuple[LoopInfo, ...]
    notes: tuple[str, ...] = ()

    @property
    def launches(self) -> list[HostStatement]:
        return [s for s in self.statements if s.kind == "launch"]


class _HostEvaluator(Evaluator):
    def __init__(self, func: Function, layout: TypeLayout):
        super().__init__(func, layout, loop_prefix="h")
        self.slot_alloc: dict[int, int] = {}  # id(alloca) -> allocation id
        self.reassigned: set[int] = set()
        self.bound_args: dict[int, object] = {}  # entry parameters bound at the caller's call site

    def leaf(self, v: Value):
        if isinstance(v, Arg) and v.index in self.bound_args:
            return self.bound_args[v.index]
        if isinstance(v, Instr) and v.opcode == "load" and v.type == "ptr":
            slot = v.operands[0]
            aid = self.slot_alloc.get(id(slot))
            if aid is not None and id(slot) not in self.reassigned:
                return Pointer(("alloc", aid), Expr.const(0))
        if isinstance(v, Instr) and v.opcode == "alloca":
            return Pointer(("host", id(v)), Expr.const(0))
        if isinstance(v, Instr) and v.opcode == "call" and v.callee in _HOST_ALLOCATORS:
            return Pointer(("host", id(v)), Expr.const(0))
        return None

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


def _arg_array_slots(array: Value, call: Instr, ev: Evaluator) -> dict[int, Value]:
    """Index -> pointer stored in the launch's ``void* args[]`` array."""
    slots: dict[int, Value] = {}
    block = call.block
    assert block is not None
    for ins in block.instrs[:block.instrs.index(call)]:
        if ins.opcode != "store":
            continue
        addr = ins.operands[1]
        if addr is array:
            slots[0] = ins.operands[0]
        elif isinstance(addr, Instr) and addr.opcode == "getelementptr" and addr.operands[0] is array:
            off = ev.value(addr)
            if isinstance(off, Pointer) and off.offset is not None and off.offset.constant_value() is not None:
                slots[off.offset.constant_value() // 8] = ins.operands[0]
    return slots


class _HostModelBuilder:
    def __init__(self, module: Module, entry: str, alloc_names, kernel_of_stub, caller: "_HostModelBuilder | None" = None):
        self.module = module
        if entry not in module.functions or module.functions[entry].is_declaration:
            raise InputError(f"error: entry function '{entry}' is not defined in the program")
        self.func = module.functions[entry]
        self.layout = TypeLayout(module.struct_types)
        self.ev = _HostEvaluator(self.func, self.layout)
        self.alloc_names = alloc_names  # callable(line, ordinal) -> name | None
        self.kernel_of_stub = kernel_of_stub  # callable(stub name) -> kernel name | None
        self.allocations: list[Allocation] = []
        self.alloc_by_id: dict[int, Allocation] = {}
        if caller is not None:
            self._bind_to_caller(caller, entry)
        self.statements: list[HostStatement] = []
        self.notes: list[str] = []

    def run(self) -> HostModel:
        self._find_allocation_slots()
        for lp in self.ev.loops:
            self.ev.loop_info(lp)
        order = structured_order(self.func, self.ev.loops)
        pending_config: Instr | None = None
        for block in order:
            nest = tuple(lp.name for lp in loop_nest(self.ev.loops, block))
            domain = conjunction([self.ev.loop_infos[n].domain for n in nest
                                  if n in self.ev.loop_infos and self.ev.loop_infos[n].domain is not None])
            for ins in block.instrs:
                callee = ins.callee
                if callee is None:
                    continue
                if callee == "__cudaPushCallConfiguration":
                    pending_config = ins
                elif callee == "cudaLaunchKernel" and ins.operands and ins.operands[0].kind == "func":
                    self._launch(ins, ins.operands[0].name, pending_config, nest, domain, via_array=True)
                    pending_config = None
                elif "__device_stub__" in callee:
                    self._launch(ins, callee, pending_config, nest, domain, via_array=False)
                    pending_config = None
                else:
                    self._runtime_call(ins, callee, nest, domain)
        loops = tuple(self.ev.loop_infos[lp.name] for lp in self.ev.loops if lp.name in self.ev.loop_infos)
        return HostModel(self.func.name, tuple(self.statements), tuple(self.allocations), loops, tuple(self.notes))

    # ---------------------------------------------------------------- helpers
    def _bind_to_caller(self, caller: "_HostModelBuilder", entry: str) -> None:
        """Parameters of the entry take the caller's allocations when every call
        passes the same ones (a helper like ``model_forward(d_X, d_W, …)``)."""
        caller._find_allocation_slots()
        self.allocations = list(caller.allocations)
        self.alloc_by_id = dict(caller.alloc_by_id)
        calls = [ins for ins in caller.func.instructions() if ins.callee == entry]
        if not calls:
            self.notes.append(f"{entry} is not called from {caller.func.name}: its pointer parameters are unknown")
            return
        for i in range(len(self.func.args)):
            values = [caller.ev.value(c.operands[i]) for c in calls if i < len(c.operands) - 1]
            if values and all(v is not None and v == values[0] for v in values) and isinstance(values[0], (Pointer, Expr)):
                self.ev.bound_args[i] = values[0]

    def _find_allocation_slots(self) -> None:
        per_line: dict[int | None, int] = {}
        for ins in self.func.instructions():
            callee = ins.callee
            if callee in _ALLOC_CALLS and ins.operands:
                slot = ins.operands[0]
                ordinal = per_line.get(ins.line, 0)
                per_line[ins.line] = ordinal + 1
                aid = len(self.allocations)
                name = self.alloc_names(ins.line, ordinal) or f"alloc{aid}"
                size = self.ev.expr(ins.operands[1]) if len(ins.operands) > 2 else None
                alloc = Allocation(aid, name, size, ins.line, callee)
                self.allocations.append(alloc)
                self.alloc_by_id[aid] = alloc
                if isinstance(slot, Instr) and slot.opcode == "alloca":
                    if id(slot) in self.ev.slot_alloc:
                        self.ev.reassigned.add(id(slot))  # one slot, several allocations
                    self.ev.slot_alloc[id(slot)] = aid
        malloc_of_slot = {id(ins.operands[0]): ins for ins in self.func.instructions()
                          if ins.callee in _ALLOC_CALLS and ins.operands}
        for ins in self.func.instructions():
            if ins.opcode == "store" and id(ins.operands[1]) in self.ev.slot_alloc:
                if not self._runs_before(ins, malloc_of_slot.get(id(ins.operands[1]))):
                    self.ev.reassigned.add(id(ins.operands[1]))  # e.g. a pointer swap
            if ins.opcode == "call" and ins.callee not in _ALLOC_CALLS and ins.callee is not None \
                    and not ins.callee.startswith("llvm.lifetime"):
                for op in ins.operands[:-1]:
                    if id(op) in self.ev.slot_alloc:
                        self.ev.reassigned.add(id(op))  # slot address escapes into a call

    def _runs_before(self, first: Instr, later: Instr | None) -> bool:
        """``first`` executes before ``later`` on every path (``float* p = nullptr; cudaMalloc(&p…)``)."""
        if later is None:
            return False
        if first.block is later.block:
            return first.block.instrs.index(first) < later.block.instrs.index(later)
        from sirius.analysis.cfg import dominates
        in_loop = any(first.block in lp.blocks for lp in self.ev.loops)
        return not in_loop and dominates(self.ev.idom, first.block, later.block)

    def _resolve(self, v: Value) -> ArgValue:
        r = self.ev.value(v)
        if isinstance(r, Pointer) and isinstance(r.base, tuple) and r.base[0] == "alloc":
            return ArgValue("buffer", buffer=self.alloc_by_id[r.base[1]].name, offset=r.offset)
        if isinstance(r, MaySet):
            opts = []
            for p in r.options:
                if not (isinstance(p.base, tuple) and p.base[0] == "alloc"):
                    return ArgValue("unknown")
                opts.append((self.alloc_by_id[p.base[1]].name, p.offset))
            return ArgValue("buffers", options=tuple(sorted(opts, key=lambda o: (o[0], str(o[1])))))
        if isinstance(r, Expr):
            return ArgValue("scalar", value=r)
        if isinstance(v, Const) and v.type in ("float", "double", "half"):
            return ArgValue("scalar", text=v.text.split(" ", 1)[-1])
        if isinstance(r, Pointer) and isinstance(r.base, tuple) and r.base[0] == "host":
            return ArgValue("host")
        return ArgValue("unknown")

    def _dim3(self, xy: Value, z: Value) -> Dim3:
        packed = self.ev.expr(xy)
        zz = self.ev.expr(z)
        if packed is not None and packed.constant_value() is not None:
            c = packed.constant_value()
            return Dim3(Expr.const(c & 0xFFFFFFFF), Expr.const(c >> 32), zz)
        if isinstance(xy, Instr) and xy.opcode == "or":
            x = y = None
            for op in xy.operands[:2]:
                if isinstance(op, Instr) and op.opcode == "shl" and self.ev.expr(op.operands[1]) == Expr.const(32):
                    y = self.ev.expr(op.operands[0])
                else:
                    x = self.ev.expr(op)
            return Dim3(x, y, zz)
        return Dim3(None, None, zz)

    def _launch(self, call: Instr, stub: str, config: Instr | None, nest, domain, via_array: bool) -> None:
        kernel = self.kernel_of_stub(stub)
        if config is not None and len(config.operands) >= 7:
            grid = self._dim3(config.operands[0], config.operands[1])
            block = self._dim3(config.operands[2], config.operands[3])
            shmem = self.ev.expr(config.operands[4])
            stream_v = config.operands[5]
        else:
            grid = block = Dim3(None, None, None)
            shmem, stream_v = None, None
            self.notes.append(f"launch at line {call.line}: launch configuration not found")
        stream = "default" if stream_v is None or (isinstance(stream_v, Const) and stream_v.value == 0) else "stream"
        if via_array:
            slots = _arg_array_slots(call.operands[5], call, self.ev)
            args = []
            for i in range(len(slots)):
                holder = slots.get(i)
                store = _last_store_to(holder, call, self.ev) if holder is not None else None
                args.append(self._resolve(store.operands[0]) if store is not None else ArgValue("unknown"))
        else:
            args = [self._resolve(op) for op in call.operands[:-1]]
        self.statements.append(HostStatement(
            len(self.statements), "launch", call.line, nest, domain, kernel=kernel or stub, grid=grid,
            block=block, shmem=shmem, stream=stream, args=tuple(args)))

    def _runtime_call(self, ins: Instr, callee: str, nest, domain) -> None:
        ops = ins.operands
        add = lambda **kw: self.statements.append(HostStatement(len(self.statements), line=ins.line, loops=nest,
                                                                domain=domain, **kw))
        if callee in _ALLOC_CALLS:
            alloc = next(a for a in self.allocations if a.line == ins.line and a.function == callee
                         and not any(s.kind == "alloc" and s.detail == a.name for s in self.statements))
            add(kind="alloc", detail=alloc.name, bytes=alloc.bytes)
        elif callee in ("cudaFree", "cudaFreeAsync"):
            add(kind="free", dst=self._resolve(ops[0]))
        elif callee in ("cudaMemcpy", "cudaMemcpyAsync"):
            kind_v = self.ev.expr(ops[3]) if len(ops) > 4 else None
            kind = _COPY_KINDS.get(kind_v.constant_value() if kind_v is not None else -1, "unknown")
            add(kind="copy", direction=kind, dst=self._resolve(ops[0]), src=self._resolve(ops[1]),
                bytes=self.ev.expr(ops[2]))
        elif callee in ("cudaMemset", "cudaMemsetAsync"):
            add(kind="memset", dst=self._resolve(ops[0]), bytes=self.ev.expr(ops[2]))
        elif callee in _SYNC_CALLS:
            add(kind="sync", detail=callee)
        elif callee in self.module.functions and not self.module.functions[callee].is_declaration \
                and self._launches_inside(callee):
            self.notes.append(f"line {ins.line}: call of {callee}, which launches kernels; "
                              "launches outside the entry function are not modelled")

    def _launches_inside(self, name: str, seen: set[str] | None = None) -> bool:
        seen = seen or set()
        if name in seen:
            return False
        seen.add(name)
        fn = self.module.functions.get(name)
        if fn is None or fn.is_declaration:
            return False
        for ins in fn.instructions():
            c = ins.callee
            if c == "cudaLaunchKernel" or (c and "__device_stub__" in c):
                return True
            if c and self._launches_inside(c, seen):
                return True
        return False


def build_host_model(module: Module, entry: str, alloc_names, kernel_of_stub,
                     callers: tuple[str, ...] = ()) -> HostModel:
    """Model the statements of ``entry`` in the host IR module (see the module docstring).

    With ``callers`` (``("main",)``, or ``("main", "run_model")`` when the
    entry is a helper called through others, outermost first), allocations
    are the outermost caller's and each function's parameters are bound to
    what every call site in its caller passes.
    """
    parent = None
    for name in callers:
        parent = _HostModelBuilder(module, name, alloc_names, kernel_of_stub, parent)
    return _HostModelBuilder(module, entry, alloc_names, kernel_of_stub, parent).run()
