"""Lower a Relax module with TVM's CUDA pipeline and read back what the runtime would do.

Steps (TVM 0.27):

1. ``relax.get_pipeline("zero")`` (legalize, fuse) then the dlight default GPU
   schedules, with the same rule list TVM's own CUDA pipeline uses;
2. TVM's CUDA dataflow lowering and ``StaticPlanBlockMemory``: the Relax function
   then calls each PrimFunc in destination-passing style on tensors carved out of
   planned storages, which is the allocation plan the Relax VM executes;
3. TVM's default TIR pipeline on the PrimFuncs: after host/device splitting each
   host function calls its kernels with ``call_ffi_kernel(name, args...,
   launch extents...)``, which gives the kernels of each PrimFunc in order, the
   grid and block of each launch and the buffer each argument is;
4. the CUDA source of all kernels from the device module TVM's codegen builds.

The result is one :class:`KernelPlan` per Relax function; nothing here knows
about the program emitted. Anything outside this shape (symbolic shapes, scalar
kernel arguments, launches inside host loops of a PrimFunc, Relax operators
other than allocation, reshape views, tuples and PrimFunc calls) raises
:class:`LoweringError` rather than being guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import tvm
import tvm_ffi
from tvm import relax, tirx
from tvm.relax.backend.cuda import pipeline as cuda_pipeline
from tvm.tirx.build import codegen_build, split_host_device_mods

_KERNEL_DEF = re.compile(r'extern "C" __global__ void (?:__launch_bounds__\(\d+\) )?(\w+)\(')

DLIGHT_RULES = ("Matmul", "GEMV", "Reduction", "GeneralReduction", "Fallback")


class LoweringError(RuntimeError):
    pass


@dataclass
class Tensor:
    """A tensor the Relax function touches.

    ``kind`` is ``param`` (function parameter, bound by the host), ``planned``
    (carved from a planned storage at ``offset`` bytes), ``alloc`` (its own
    allocation, as for function outputs) or ``view`` (same memory as ``base``).
    """

    name: str
    shape: tuple[int, ...]
    dtype: str
    kind: str
    storage: str | None = None
    offset: int = 0
    base: str | None = None

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.numel * tvm.runtime.DataType(self.dtype).bits // 8


@dataclass
class Storage:
    name: str
    nbytes: int


@dataclass
class Launch:
    primfunc: str
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shmem: int
    args: list[str]  # tensor names, in kernel parameter order


@dataclass
class KernelPlan:
    params: list[Tensor]
    outputs: list[str]
    tensors: dict[str, Tensor]
    storages: list[Storage]
    launches: list[Launch]
    source: str
    kernels: list[str] = field(default_factory=list)
    calls: list[tuple[str, list[str]]] = field(default_factory=list)  # PrimFunc calls, in order
    unscheduled: object = None  # the module after the zero pipeline (PrimFuncs before dlight)

    def root(self, name: str) -> Tensor:
        t = self.tensors[name]
        while t.kind == "view":
            t = self.tensors[t.base]
        return t


# ---------------------------------------------------------------- Relax side


def _no_tensor_core_matmul():
    """dlight's Matmul rule with its tensor-core branch off.

    For float16 matmuls with all dimensions over 64 on sm_70+, the rule tries
    MatmulTensorization (wmma), whose first ``Tensorize`` crashes the process
    (segfault) in TVM 0.27.0.post1. The rule's SIMT schedule does not depend on
    the architecture, so it runs here against the same target with an arch
    below sm_70, which only skips the tensor-core attempt.
    """
    from tvm.s_tir import dlight as dl

    class MatmulNoTensorCore(dl.gpu.Matmul):
        def apply(self, func, target, tunable):
            cfg = dict(target.export())
            cfg["arch"] = "sm_60"
            cfg.pop("host", None)
            return super().apply(func, tvm.target.Target(cfg), tunable)

    return MatmulNoTensorCore()


def _schedule(mod: tvm.IRModule, target: tvm.target.Target,
              tensor_cores: bool = True) -> tuple[tvm.IRModule, tvm.IRModule]:
    """(scheduled and memory-planned module, module after the zero pipeline only)."""
    from tvm.s_tir import dlight as dl

    rules = [getattr(dl.gpu, r)() for r in DLIGHT_RULES]
    if not tensor_cores:
        rules = [_no_tensor_core_matmul() if r == "Matmul" else rule
                 for r, rule in zip(DLIGHT_RULES, rules)]
    with target:
        # dlight schedules PrimFuncs in place, so the unscheduled copy is a
        # separate (deterministic) run of the zero pipeline
        unscheduled = relax.get_pipeline("zero")(mod)
        mod = relax.get_pipeline("zero")(mod)
        mod = dl.ApplyDefaultSchedule(*rules)(mod)
        seq = cuda_pipeline.dataflow_lower_passes(target) + [
            relax.transform.StaticPlanBlockMemory(),
            relax.transform.AttachGlobalSymbol(),
        ]
        mod = tvm.transform.Sequential(seq)(mod)
    return mod, unscheduled


def _ints(expr) -> tuple[int, ...]:
    if isinstance(expr, relax.ShapeExpr):
        vals = expr.values
    else:
        vals = expr
    out = []
    for v in vals:
        if not isinstance(v, tirx.IntImm):
            raise LoweringError(f"symbolic shape {v} is not supported (static shapes only)")
        out.append(int(v.value))
    return tuple(out)


def _tensor_sinfo(var) -> tuple[tuple[int, ...], str]:
    sinfo = var.ty
    if not isinstance(sinfo, relax.TensorType):
        raise LoweringError(f"{var.name}: expected a tensor, got {sinfo}")
    return _ints(sinfo.shape), str(sinfo.dtype)


def _prim_int(expr) -> int:
    if not isinstance(expr, tirx.IntImm) and isinstance(getattr(expr, "value", None), tirx.IntImm):
        expr = expr.value  # a Relax PrimValue
    if isinstance(expr, tirx.IntImm):
        return int(expr.value)
    raise LoweringError(f"expected a constant integer, got {expr}")


def _read_relax(func: relax.Function):
    """Storages, tensors, the ordered PrimFunc calls and outputs of ``func``.

    Relax variables are keyed by identity (two variables may share a name);
    each tensor and storage gets a unique name.
    """
    tensors: dict[str, Tensor] = {}
    storages: list[Storage] = []
    calls: list[tuple[str, list[str]]] = []
    names: dict = {}  # Var -> tensor/storage name, or list of names for tuples
    taken: set[str] = set()

    def fresh(var) -> str:
        base, k = var.name, 1
        n = base
        while n in taken:
            n = f"{base}_{k}"
            k += 1
        taken.add(n)
        names[var] = n
        return n

    def name_of(expr) -> str:
        if not isinstance(expr, relax.Var) or expr not in names:
            raise LoweringError(f"expected a known variable, got {type(expr).__name__}: {expr}")
        n = names[expr]
        if isinstance(n, list):
            raise LoweringError(f"{expr.name} is a tuple, not a tensor")
        return n

    params = []
    for p in func.params:
        shape, dtype = _tensor_sinfo(p)
        n = fresh(p)
        if n != p.name:
            raise LoweringError(f"duplicate parameter name {p.name}")
        tensors[n] = Tensor(n, shape, dtype, "param")
        params.append(tensors[n])

    body = func.body
    if not isinstance(body, relax.SeqExpr):
        raise LoweringError("function body is not a sequence of bindings")
    for block in body.blocks:
        for b in block.bindings:
            if not isinstance(b, relax.VarBinding):
                raise LoweringError(f"unsupported binding {type(b).__name__}")
            var, value = b.var, b.value
            if var in names:
                raise LoweringError(f"variable {var.name} bound twice")
            if isinstance(value, relax.Var):
                if value not in names:
                    raise LoweringError(f"{var.name}: unknown variable {value.name}")
                names[var] = names[value]
                continue
            if isinstance(value, relax.Tuple):
                names[var] = [name_of(f) for f in value.fields]
                continue
            if isinstance(value, relax.TupleGetItem):
                tup = names.get(value.tuple_value)
                if not isinstance(tup, list):
                    raise LoweringError(f"{var.name}: item of an unknown tuple")
                names[var] = tup[int(value.index)]
                continue
            if not isinstance(value, relax.Call):
                raise LoweringError(f"unsupported binding value {type(value).__name__}")
            op = value.op
            if isinstance(op, tvm.ir.GlobalVar):
                args = [name_of(a) for a in value.args]
                calls.append((op.name_hint, args))
                names[var] = None  # the DPS call's (void) result
                continue
            opname = op.name
            if opname == "relax.memory.alloc_storage":
                (nbytes,) = _ints(value.args[0])
                storages.append(Storage(fresh(var), nbytes))
            elif opname == "relax.memory.alloc_tensor":
                shape, dtype = _tensor_sinfo(var)
                storage = name_of(value.args[0])
                off = _prim_int(value.args[1])
                n = fresh(var)
                tensors[n] = Tensor(n, shape, dtype, "planned", storage=storage, offset=off)
            elif opname == "relax.builtin.alloc_tensor":
                shape, dtype = _tensor_sinfo(var)
                n = fresh(var)
                tensors[n] = Tensor(n, shape, dtype, "alloc")
            elif opname == "relax.reshape":
                shape, dtype = _tensor_sinfo(var)
                base = name_of(value.args[0])
                n = fresh(var)
                tensors[n] = Tensor(n, shape, dtype, "view", base=base)
            else:
                raise LoweringError(f"unsupported Relax operator {opname} in {var.name}")

    ret = body.body
    if isinstance(ret, relax.Tuple):
        outputs = [name_of(f) for f in ret.fields]
    elif isinstance(ret, relax.Var) and isinstance(names.get(ret), list):
        outputs = list(names[ret])
    else:
        outputs = [name_of(ret)]
    for o in outputs:
        if o not in tensors:
            raise LoweringError(f"output {o} is not a tensor")
    return params, tensors, storages, calls, outputs


# ------------------------------------------------------------------ TIR side


def _is_call(node, opname: str) -> bool:
    return isinstance(node, tvm.ir.Call) and isinstance(node.op, tvm.ir.Op) and node.op.name == opname


def _kernel_calls(stmt) -> list:
    found = []

    def visit(n):
        if _is_call(n, "tirx.call_ffi_kernel"):
            found.append(n)

    tvm_ffi.structural_walk(stmt, visit)
    return found


def _host_loops_with_launches(stmt) -> int:
    loops = []

    def visit(n):
        if isinstance(n, tirx.For) and _kernel_calls(n.body):
            loops.append(n)

    tvm_ffi.structural_walk(stmt, visit)
    return len(loops)


def _definitions(stmt) -> dict:
    """Var -> defining expression, for Bind (let) and DeclBuffer (buffer -> data)."""
    defs = {}

    def visit(n):
        if isinstance(n, tirx.Bind):
            defs[n.var] = n.value
        elif type(n).__name__ == "DeclBuffer":
            defs[n.buffer] = n.data

    tvm_ffi.structural_walk(stmt, visit)
    return defs


def _packed_arg_index(expr, defs: dict, args_var, kname: str) -> int:
    """Which argument of the packed host function a kernel argument's data comes from.

    Follows buffer_data -> declared buffer -> data pointer -> handle ->
    tvm_struct_get(args, i, ...), through let-bindings, reinterprets and the
    if_then_else that TVM's packed API uses to unwrap tensor handles.
    """
    seen = 0
    while True:
        seen += 1
        if seen > 64:
            raise LoweringError(f"{kname}: cannot trace kernel argument {expr}")
        if isinstance(expr, tirx.Var):
            if expr in defs:
                expr = defs[expr]
                continue
            raise LoweringError(f"{kname}: kernel argument {expr} has no definition")
        if isinstance(expr, tvm.ir.Call) and isinstance(expr.op, tvm.ir.Op):
            op = expr.op.name
            if op in ("tirx.buffer_data", "tirx.reinterpret", "tirx.handle_add_byte_offset"):
                expr = expr.args[0]
                continue
            if op == "tirx.tvm_struct_get":
                if expr.args[0].same_as(args_var):
                    return int(expr.args[1].value)
                expr = expr.args[0]
                continue
            if op == "prim.if_then_else":
                a = _packed_arg_index(expr.args[1], defs, args_var, kname)
                b = _packed_arg_index(expr.args[2], defs, args_var, kname)
                if a != b:
                    raise LoweringError(f"{kname}: ambiguous kernel argument {expr}")
                return a
        raise LoweringError(f"{kname}: cannot trace kernel argument {expr}")


def _lower_tir(mod: tvm.IRModule, target: tvm.target.Target):
    """Per PrimFunc: [(kernel, [param index per kernel arg], extents)], and the source."""
    prims = {gv.name_hint: f for gv, f in mod.functions.items() if isinstance(f, tirx.PrimFunc)}
    for name, f in prims.items():
        for p in f.params:
            if not isinstance(p.ty, tirx.BufferType):
                raise LoweringError(f"{name}: scalar parameter {p.name} is not supported")

    tir_mod = tvm.IRModule({gv: f for gv, f in mod.functions.items() if isinstance(f, tirx.PrimFunc)})
    tir_mod = tirx.transform.BindTarget(target)(tir_mod)
    pipeline, _finalize_host, finalize_device = tirx.get_default_tir_pipeline(target)
    with tvm.transform.PassContext(opt_level=3):
        lowered = pipeline(tir_mod)
    host_mod, device_mods = split_host_device_mods(lowered)

    kernel_attrs = {}
    sources = []
    for dtarget, dmod in device_mods.items():
        for gv, f in dmod.functions.items():
            kernel_attrs[gv.name_hint] = (len(f.params), list(f.attrs["tirx.kernel_launch_params"]))
        with tvm.transform.PassContext(opt_level=3):
            rt = codegen_build(finalize_device()(dmod), dtarget)
        sources.append(rt.inspect_source())
    if len(sources) != 1:
        raise LoweringError(f"expected one CUDA device module, got {len(sources)}")

    per_func = {}
    for gv, f in host_mod.functions.items():
        name = gv.name_hint
        if name not in prims:
            continue
        if _host_loops_with_launches(f.body):
            raise LoweringError(f"{name}: kernel launches inside a host loop are not supported")
        defs = _definitions(f.body)
        launches = []
        for call in _kernel_calls(f.body):
            kname = str(call.args[0].value)
            nparams, tags = kernel_attrs[kname]
            kargs = list(call.args[1 : 1 + nparams])
            extents = list(call.args[1 + nparams :])
            if len(extents) != len(tags):
                raise LoweringError(f"{kname}: {len(extents)} launch values for tags {tags}")
            arg_idx = [_packed_arg_index(a, defs, f.params[1], kname) for a in kargs]
            if any(i >= len(prims[name].params) for i in arg_idx):
                raise LoweringError(f"{kname}: argument index out of range")
            grid, block, shmem = [1, 1, 1], [1, 1, 1], 0
            for tag, ext in zip(tags, extents):
                if not isinstance(ext, tirx.IntImm):
                    raise LoweringError(f"{kname}: launch extent {ext} is not constant")
                v = int(ext.value)
                if tag.startswith("blockIdx."):
                    grid["xyz".index(tag[-1])] = v
                elif tag.startswith("threadIdx."):
                    block["xyz".index(tag[-1])] = v
                elif tag == "tirx.use_dyn_shared_memory":
                    shmem = v
                else:
                    raise LoweringError(f"{kname}: unknown launch parameter {tag}")
            launches.append((kname, arg_idx, tuple(grid), tuple(block), shmem))
        if not launches:
            raise LoweringError(f"{name}: no kernel launch found")
        per_func[name] = launches
    missing = set(prims) - set(per_func)
    if missing:
        raise LoweringError(f"no host function for {sorted(missing)}")
    return per_func, sources[0]


# ------------------------------------------------------------------ together


def lower(mod: tvm.IRModule, target_spec: dict, func_names=("forward",),
          tensor_cores: bool = True) -> dict[str, KernelPlan]:
    """Lower the Relax functions ``func_names`` of ``mod``: one KernelPlan each.

    All functions are compiled together, so their plans share one CUDA source
    (``source``/``kernels`` are the module's); launches, tensors and storages are
    per function. ``tensor_cores=False`` keeps dlight's Matmul rule off its
    tensor-core branch (see :func:`_no_tensor_core_matmul`)."""
    target = tvm.target.Target(target_spec, host="llvm")
    mod, unscheduled = _schedule(mod, target, tensor_cores)
    per_func, source = _lower_tir(mod, target)
    kernels = []
    for line in source.splitlines():
        m = _KERNEL_DEF.match(line)
        if m and line.rstrip().endswith("{"):
            kernels.append(m.group(1))
    plans = {}
    for func_name in func_names:
        params, tensors, storages, calls, outputs = _read_relax(mod[func_name])
        launches = []
        for fname, args in calls:
            if fname not in per_func:
                raise LoweringError(f"call of unknown function {fname}")
            for kname, arg_idx, grid, block, shmem in per_func[fname]:
                launches.append(Launch(fname, kname, grid, block, shmem, [args[i] for i in arg_idx]))
        launched = {l.kernel for l in launches}
        if launched - set(kernels):
            raise LoweringError(f"kernels launched but not in the source: {sorted(launched - set(kernels))}")
        plans[func_name] = KernelPlan(params, outputs, tensors, storages, launches, source, kernels,
                                      calls, unscheduled)
    return plans
