"""Shared memory a block of a fused kernel holds, and whether the device allows that much.

Every block of one kernel running several launches holds the static ``__shared__``
arrays of all of them (static arrays live for the whole kernel; an array of a helper
is one array, whichever fragments call it) and the largest dynamic size any asks for.
"""

from __future__ import annotations

from sirius.analysis.program_model import LaunchInstance, ProgramModel
from sirius.core.target import target_for


def static_shared_bytes(kernels) -> int:
    """Bytes of static shared memory a block of the fused kernel holds: each array once
    (an array of a helper is one array, whichever fragments call the helper)."""
    arrays = {s.symbol: s.bytes or 0 for k in kernels for s in k.shared if not s.dynamic}
    return sum(arrays.values())


def dynamic_shared_bytes(inst: LaunchInstance) -> int:
    """The dynamic shared memory a launch asks for (0 when none or not a constant)."""
    return (inst.statement.shmem.constant_value() if inst.statement.shmem else None) or 0


def block_shared_bytes(launches: list[LaunchInstance]) -> tuple[int, int]:
    """(static, dynamic) shared bytes of a block of one kernel running ``launches``: the
    static arrays of all of them (they live for the whole kernel) and the largest dynamic size."""
    return (static_shared_bytes([i.kernel for i in launches]),
            max((dynamic_shared_bytes(i) for i in launches), default=0))


def shared_limit_problem(model: ProgramModel, launches: list[LaunchInstance]) -> str | None:
    """Why one kernel running ``launches`` cannot have the shared memory they need (None: it
    can). Every block holds the static shared arrays of all of them (static arrays live for
    the whole kernel) and the largest dynamic size: over 48 KB in all the launch needs the
    opt-in code generation emits, and past the device's opt-in limit it cannot run."""
    static, dynamic = block_shared_bytes(launches)
    target = target_for(model.arch)
    if static > target.static_shared_limit:
        return f"static shared memory of the fragments ({static} bytes) exceeds {target.static_shared_limit}"
    limit = target.shared_opt_in_limit
    if static + dynamic > limit:
        return (f"shared memory of the fused kernel ({static} bytes static + {dynamic} dynamic) exceeds "
                f"the {limit} bytes a block of {model.arch} can have")
    return None
