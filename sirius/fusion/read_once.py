"""Read-once of shared inputs: an input several fragments of a fused kernel read, and
none writes, is read through one ``const __restrict__`` base, so a load of the same
element by the same thread in two fragments is one load.

Fragments are inlined one after another; between the first fragment's load of
``x[i]`` and the second's lie the first's stores, which nvcc must assume may write
``x`` (the pointers are plain, and may point into one buffer), so it loads again.
The alias facts know better: when no fragment of the kernel writes the allocation,
the pass

- derives every parameter into that allocation at a known distance from the first
  one (the same address is then the same expression of one pointer), and
- declares that first parameter ``__restrict__`` (``const`` where the kernel reads
  through a const pointer, so nvcc also uses the read-only data path).

The promise is true by construction: ``__restrict__`` only constrains bytes that
are modified while the kernel runs, and the pass makes it only for an allocation
that no access of any fragment writes; a kernel with a write whose target the
analysis does not know (a pointer of unknown provenance, an opaque call) gets no
such promise. The check of the emitted program (``fusion.check``) judges it again
with the same alias facts. Distances are conditions of the run-time guard, as for
``fusion.host_constants``. Wave kernels are left alone.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from sirius.analysis.program_model import ProgramModel
from sirius.fusion.kernel_ir import KernelIR, FusedParam, argument_of, each_kernel
from sirius.fusion.fragment_text import RESTRICT
from sirius.fusion.promises import group_uses


@dataclass(frozen=True)
class SharedInput:
    """An allocation read by fragments of several launches of one kernel and written by none."""

    allocation: str
    base: str  # the parameter every other one into the allocation derives from, declared restrict
    readers: tuple[int, ...]  # launches


def _written(k: KernelIR, model: ProgramModel) -> set[str | None]:
    """The allocations some access of the kernel may write (None: one the analysis does not know)."""
    return {t.buffer for use in group_uses(model, k.group) for t in use.touches if t.kind == "write"}


def _buffer_offsets(k: KernelIR, model: ProgramModel) -> dict[str, object]:
    """Each pointer parameter's symbolic byte offset into its allocation, where known."""
    insts = model.instances()
    out = {}
    for p in k.params:
        arg = argument_of(p, insts) if p.pointer else None
        if arg is not None and arg.kind == "buffer" and arg.buffer and arg.offset is not None:
            out[p.name] = arg.offset
    return out


def shared_inputs(k: KernelIR, model: ProgramModel) -> list[SharedInput]:
    """The inputs of ``k`` several launches read and no access writes (none at all if some
    write's target is unknown)."""
    written = _written(k, model)
    if None in written:
        return []
    offsets = _buffer_offsets(k, model)
    readers: dict[str, list[FusedParam]] = {}
    for p in k.params:
        if p.name in offsets and p.allocation and p.allocation not in written:
            readers.setdefault(p.allocation, []).append(p)
    return [SharedInput(allocation, ps[0].name, tuple(dict.fromkeys(p.launch for p in ps)))
            for allocation, ps in readers.items() if len({p.launch for p in ps}) > 1]


def _read_once(k: KernelIR, model: ProgramModel) -> tuple[KernelIR, list[str]]:
    inputs = shared_inputs(k, model)
    if not inputs:
        return k, []
    offsets = _buffer_offsets(k, model)
    base_of = {s.allocation: s.base for s in inputs}
    params = []
    for p in k.params:
        base = base_of.get(p.allocation) if p.name in offsets else None
        if base is None:
            params.append(p)
        elif p.name == base:
            ctype = p.ctype if RESTRICT.search(p.ctype) else f"{p.ctype} __restrict__"
            params.append(dataclasses.replace(p, ctype=ctype, restrict=True))
        elif p.passed:
            delta = (offsets[p.name] - offsets[base]).constant_value()
            # a distance only known at run time: the parameter stays a pointer of its own
            params.append(p if delta is None else dataclasses.replace(p, base=base, delta=delta))
        else:
            params.append(p)  # host constants derived it already, from the same first parameter
    return dataclasses.replace(k, params=tuple(params)), [
        f"{s.allocation} read by {', '.join(f'S{r}' for r in s.readers)} through {s.base}" for s in inputs]


def read_shared_inputs_once(kernels: list[KernelIR], model: ProgramModel) -> tuple[list[KernelIR], list[str]]:
    """Each fused kernel with its shared read-only inputs read through one restrict base (see
    the module docstring), and one line per kernel naming them and their readers."""
    return each_kernel(kernels, lambda k: _read_once(k, model))
