"""Host constant propagation: what the host passes that is the same at every run of the
fused launch becomes a constant of the fused kernel.

The fused launch of a region only runs when the launch shapes, integer arguments
and pointer distances equal what the analysis found (the run-time guard of
``codegen``): inside the fused kernel they are constants. This pass makes them so:

- an integer scalar argument with a known value becomes ``constexpr`` in the kernel;
- a pointer into an allocation another parameter of the kernel also points into,
  at a known distance from it, becomes that parameter plus the distance (so nvcc
  folds address arithmetic into immediate offsets from one base: the paper's LSTM
  case, eight weight matrices in one allocation);
- a single-lane kernel's fragments see their launch shape as constants instead of
  ``blockDim``/``gridDim`` (a multi-lane kernel's already do).

Every folded value is a condition of the guard (code generation adds it), so the
fused kernel never runs with other values. Wave kernels compute their arguments
from the wave's iterators already and are left alone.
"""

from __future__ import annotations

import dataclasses
import re

from sirius.analysis.program_model import ProgramModel
from sirius.fusion.kernel_ir import KernelIR, FusedParam, argument_of, each_kernel


_INTEGER = re.compile(r"(?:(?:un)?signed\s+)?(?:char|short|int|long|long\s+long|long\s+int|short\s+int|"
                      r"long\s+long\s+int)|(?:un)?signed|size_t|ptrdiff_t|u?int(?:8|16|32|64)_t")


def _integer(ctype: str) -> bool:
    """An integer type as the kernel spells it (a typedef the pattern does not know is not)."""
    return _INTEGER.fullmatch(" ".join(w for w in ctype.split() if w not in ("const", "volatile"))) is not None


def _fold(k: KernelIR, model: ProgramModel) -> tuple[KernelIR, list[str]]:
    insts = model.instances()
    params: list[FusedParam] = []
    bases: dict[str, tuple[FusedParam, object]] = {}  # allocation -> (the parameter others derive from, its offset)
    counts = {"integer arguments constant": 0, "pointers an offset from another": 0}
    for p in k.params:
        arg = argument_of(p, insts)
        value = arg.value.constant_value() if arg is not None and arg.kind == "scalar" and arg.value is not None \
            else None
        if value is not None and not p.pointer and _integer(p.ctype):
            params.append(dataclasses.replace(p, constant=value))
            counts["integer arguments constant"] += 1
            continue
        if arg is not None and arg.kind == "buffer" and p.pointer and arg.offset is not None:
            base = bases.setdefault(arg.buffer, (p, arg.offset))
            delta = (arg.offset - base[1]).constant_value()
            if base[0] is not p and delta is not None:
                params.append(dataclasses.replace(p, base=base[0].name, delta=delta))
                counts["pointers an offset from another"] += 1
                continue
        params.append(p)
    shapes = len(k.lanes) == 1 and k.lanes[0].grid is not None  # else the host computes the grid
    changes = [f"{n} {what}" for what, n in counts.items() if n]
    if shapes:
        changes.append("launch shape constant")
    return dataclasses.replace(k, params=tuple(params), constant_shapes=shapes), changes


def propagate_host_constants(kernels: list[KernelIR], model: ProgramModel) -> tuple[list[KernelIR], list[str]]:
    """Each fused kernel with its known host values folded in (see the module docstring),
    and what was folded, one line per kernel (``--print-after passes`` shows each value)."""
    return each_kernel(kernels, lambda k: _fold(k, model))
