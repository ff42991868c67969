"""What a host synchronization can observe of the device work before it.

Device work runs in stream order whatever the host does, so between two launches
``cudaDeviceSynchronize()`` (and its stream, event and legacy variants) only
matters if the host looks at device results after it without a statement the
model holds (a copy, a memset, an opaque call: those order launches themselves).
The host can do that only through memory it shares with the device, or through
the device's ``printf`` output, which appears at a synchronization:

- managed memory (``cudaMallocManaged``, ``__managed__`` variables), read and written by
  host loads;
- host memory a kernel reaches (pinned or mapped memory, any pointer whose
  allocation the analysis does not know);
- a kernel access through a pointer loaded from memory (it may be such memory);
- a kernel that prints;
- a kernel that may stop at a device ``assert`` or ``__trap()``: the synchronization
  returns the error, which the host may check.

``sync_observers`` lists what the program does of these; where the list is empty a
synchronization observes nothing and does not order the launches around it (error
checks and host timers are host-only calls already, see ``analysis.host_model``).
"""

from __future__ import annotations

from dataclasses import dataclass

from sirius.analysis.host_model import HostStatement
from sirius.analysis.kernel_model import ANY_BUFFER
from sirius.analysis.program_model import ProgramModel

# synchronizations that only wait: they order no device work against other device work
WAITING_SYNCS = frozenset({"cudaDeviceSynchronize", "cudaThreadSynchronize", "cudaStreamSynchronize",
                           "cudaEventSynchronize"})


@dataclass(frozen=True)
class Observer:
    """A way the host may see device work at a synchronization without a modelled copy."""

    what: str
    line: int | None

    def describe(self) -> str:
        return self.what + (f" (line {self.line})" if self.line is not None else "")


def sync_observers(model: ProgramModel) -> list[Observer]:
    """Every way this program's host may observe device work at a synchronization (see the
    module docstring); one entry per kind and place."""
    found: list[Observer] = []
    for a in model.host.allocations:
        if a.function == "cudaMallocManaged":
            found.append(Observer(f"managed memory {a.name}, which the host reads without a copy", a.line))
    for name, line in model.managed_variables.items():
        found.append(Observer(f"__managed__ variable {name}, which the host reads without a copy", line))
    for inst in model.launches:
        kernel, line = inst.kernel, inst.line
        for name, arg in inst.bindings:
            param = next((p for p in kernel.params if p.name == name), None)
            if param is not None and param.is_pointer and arg.kind not in ("buffer", "buffers"):
                where = "host memory" if arg.kind == "host" else "memory of unknown allocation"
                found.append(Observer(f"argument {name} of the launch of {kernel.name} points to {where}", line))
        if kernel.prints:
            found.append(Observer(f"{kernel.name} prints, and its output appears at a synchronization",
                                  kernel.prints[0]))
        if kernel.traps:
            found.append(Observer(f"{kernel.name} may stop at a device assert or trap, and a synchronization "
                                  "returns the error", kernel.traps[0]))
        loaded = next((a for a in kernel.accesses if a.buffer == ANY_BUFFER), None)
        if loaded is not None:
            found.append(Observer(f"{kernel.name} accesses memory through a pointer it loads", loaded.line))
    return list(dict.fromkeys(found))


def observes_nothing(stmt: HostStatement, observers: list[Observer]) -> bool:
    """``stmt`` is a synchronization that only waits, in a program whose host cannot observe
    device work through it."""
    return stmt.kind == "sync" and stmt.detail in WAITING_SYNCS and not observers
