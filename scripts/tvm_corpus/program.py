"""What one model program is made of, independent of TVM: host arrays, how the
Relax function's parameters and outputs sit in them, an optional host time loop,
and the NumPy reference of the whole program."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from . import fill as fill_mod


@dataclass
class HostArray:
    """One device allocation the host makes and (for inputs/weights) fills.

    ``scale`` None means zero-filled.  Arrays with ``checksum`` are copied back
    and checksummed after the run (the model's outputs).
    """

    name: str
    shape: tuple[int, ...]
    dtype: str
    scale: float | None
    seed: int = 0
    checksum: bool = False

    @property
    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


@dataclass
class Binding:
    """A Relax parameter or output of the step function lives at element
    ``offset + step * step_stride`` of host array ``array``."""

    array: str
    offset: int = 0
    step_stride: int = 0


@dataclass
class Phase:
    """One Relax function of the model, run once or in a host loop."""

    func: str
    params: dict[str, Binding]  # Relax parameter name -> binding
    outputs: list[Binding]  # per Relax output
    steps: int = 0  # >0: its launches run in a host loop of this many steps


@dataclass
class ProgramSpec:
    model: str
    config: str
    sizes: dict[str, Any]
    relax_mod: Any  # tvm.IRModule holding the phases' functions
    arrays: list[HostArray]
    phases: list[Phase]  # run in this order
    reference: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]
    tensor_cores: bool = True  # False: dlight Matmul without its tensor-core branch
    notes: list[str] = field(default_factory=list)

    @property
    def func_names(self) -> list[str]:
        return [p.func for p in self.phases]

    def array(self, name: str) -> HostArray:
        for a in self.arrays:
            if a.name == name:
                return a
        raise KeyError(name)

    def initial_values(self) -> dict[str, np.ndarray]:
        out = {}
        for a in self.arrays:
            if a.scale is None:
                out[a.name] = np.zeros(a.shape, dtype=a.dtype)
            else:
                out[a.name] = fill_mod.fill(a.shape, a.dtype, a.seed, a.scale)
        return out

    def reference_checksums(self) -> dict[str, dict[str, float]]:
        values = self.reference(self.initial_values())
        res = {}
        for a in self.arrays:
            if a.checksum:
                got = np.asarray(values[a.name])
                if tuple(got.shape) != tuple(a.shape):
                    raise ValueError(f"reference of {a.name}: shape {got.shape}, expected {a.shape}")
                c, m = fill_mod.checksum(got.astype(np.float64))
                res[a.name] = {"checksum": c, "magnitude": m}
        return res


def c_ident(name: str) -> str:
    s = re.sub(r"[^0-9A-Za-z_]", "_", name)
    return s if not s[0].isdigit() else "_" + s


def simple_program(model, config, sizes, relax_mod, scales: dict[str, float], reference, output_names,
                   notes=(), tensor_cores=True) -> ProgramSpec:
    """A program without host loop: one host array per Relax parameter (filled,
    scale from ``scales`` by name) and one per output (checksummed)."""
    func = relax_mod["forward"]
    arrays, params = [], {}
    for k, p in enumerate(func.params):
        sinfo = p.ty
        shape = tuple(int(d) for d in sinfo.shape.values)
        name = c_ident(p.name)
        if p.name not in scales:
            raise KeyError(f"no fill scale for parameter {p.name}")
        arrays.append(HostArray(name, shape, str(sinfo.dtype), scales[p.name], seed=k))
        params[p.name] = Binding(name)
    ret = func.ret_ty
    fields = ret.fields if hasattr(ret, "fields") else [ret]
    if len(fields) != len(output_names):
        raise ValueError(f"{len(fields)} outputs, {len(output_names)} names")
    outputs = []
    for name, sinfo in zip(output_names, fields):
        shape = tuple(int(d) for d in sinfo.shape.values)
        arrays.append(HostArray(name, shape, str(sinfo.dtype), None, checksum=True))
        outputs.append(Binding(name))
    return ProgramSpec(model, config, sizes, relax_mod, arrays, [Phase("forward", params, outputs)],
                       reference, notes=list(notes), tensor_cores=tensor_cores)
