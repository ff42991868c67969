"""Replay a program's launch plan on the CPU with TVM, to check the generator.

Runs the same sequence of PrimFunc calls the emitted program makes, on the same
memory layout (host arrays with their per-step offsets, planned storages shared
as TVM's memory plan says), with each PrimFunc compiled by TVM for the CPU from
its unscheduled form (same computation, no GPU schedule). The outputs' checksums
must match the NumPy reference: this checks the launch order, the argument
binding, the storage aliasing and the host loop the generator extracted, and the
NumPy reference itself. It does not execute the CUDA kernels (the CPU execution
backend of sirius does that).
"""

from __future__ import annotations

import numpy as np
import tvm
from tvm import tirx

from . import fill as fill_mod
from .lower import KernelPlan
from .program import ProgramSpec


def _compile_cpu(plans: dict[str, KernelPlan]) -> dict:
    funcs = {}
    names = {name for plan in plans.values() for name, _ in plan.calls}
    unscheduled = next(iter(plans.values())).unscheduled
    for gv, f in unscheduled.functions.items():
        if gv.name_hint in names and isinstance(f, tirx.PrimFunc):
            f = f.with_attr("global_symbol", gv.name_hint)
            funcs[gv.name_hint] = tvm.tirx.build(tvm.IRModule({gv.name_hint: f}), target="llvm")
    return funcs


def replay(spec: ProgramSpec, plans: dict[str, KernelPlan]) -> dict[str, np.ndarray]:
    funcs = _compile_cpu(plans)
    host = {a.name: v.reshape(-1).copy() for a, v in zip(spec.arrays, spec.initial_values().values())}
    for phase in spec.phases:
        plan = plans[phase.func]
        storages = {s.name: np.zeros(s.nbytes, dtype=np.uint8) for s in plan.storages}
        out_binding = {plan.root(o).name: phase.outputs[i] for i, o in enumerate(plan.outputs)}
        for t in plan.tensors.values():
            if t.kind == "alloc" and t.name not in out_binding:
                storages[t.name] = np.zeros(t.nbytes, dtype=np.uint8)

        def view(name: str, step: int) -> np.ndarray:
            t = plan.tensors[name]
            root = plan.root(name)
            if root.kind == "param" or (root.kind == "alloc" and root.name in out_binding):
                b = phase.params[root.name] if root.kind == "param" else out_binding[root.name]
                start = b.offset + step * b.step_stride
                flat = host[b.array][start:start + root.numel]
            elif root.kind == "planned":
                raw = storages[root.storage][root.offset:root.offset + root.nbytes]
                flat = raw.view(np.dtype(root.dtype))
            else:
                flat = storages[root.name].view(np.dtype(root.dtype))
            if flat.size != t.numel:
                raise ValueError(f"{name}: view of {flat.size} elements for {t.numel}")
            return flat.reshape(t.shape)

        for step in range(max(phase.steps, 1)):
            for fname, args in plan.calls:
                views = [view(a, step) for a in args]
                dev_args = [tvm.runtime.tensor(np.ascontiguousarray(v)) for v in views]
                funcs[fname][fname](*dev_args)
                for v, d in zip(views, dev_args):
                    new = d.numpy()
                    if not np.array_equal(new, v, equal_nan=True):
                        v[...] = new
    return {a.name: host[a.name].reshape(a.shape) for a in spec.arrays if a.checksum}


def replay_checksums(spec: ProgramSpec, plans: dict[str, KernelPlan]) -> dict[str, dict[str, float]]:
    res = {}
    for name, v in replay(spec, plans).items():
        c, m = fill_mod.checksum(v.astype(np.float64))
        res[name] = {"checksum": c, "magnitude": m}
    return res
