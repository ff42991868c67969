"""``__managed__`` variables: device globals the host reads and writes without copies.

clang-22 ignores CUDA's ``managed`` attribute (it is HIP-only), so the frontend
force-includes ``MANAGED_HEADER``, which spells ``__managed__`` as a ``__device__``
variable carrying the annotation ``sirius.managed``. In the device IR such a variable
is then a device global like any ``__device__`` variable (a buffer of its own in the
kernel models and the UAR); in the host IR it is a global whose loads and stores are
the host's accesses of that buffer. The annotation names them in both IRs
(``@llvm.global.annotations``, with the declaration's line).

What the host model makes of them (``analysis.host_model``): a host load, store or
atomic of a managed variable is a copy statement (device to host, host to device)
over the bytes it touches, a call that is given its address reads and writes it, a
function of the program that touches one is opaque; so fusion never moves a
kernel's access across the host's. And since the host may read one after any
synchronization, every synchronization stays an ordering point
(``analysis.host_observation``).
"""

from __future__ import annotations

import re
from pathlib import Path

from sirius.analysis.ir import Block, Module, Value

ANNOTATION = "sirius.managed"  # the annotation MANAGED_HEADER puts on each variable
MANAGED_HEADER = Path(__file__).resolve().parent.parent / "runtime" / "clang" / "managed_variables.h"

# one entry of @llvm.global.annotations: { ptr <variable>, ptr <annotation string>, ptr <file>, i32 <line>, ... }
_ENTRY = re.compile(r"\{\s*ptr (?:addrspacecast \(ptr addrspace\(\d+\) )?@(?P<name>[\w.$]+|\"[^\"]+\")"
                    r"(?: to ptr\))?,\s*ptr @(?P<note>[\w.$]+),\s*ptr @[\w.$]+,\s*i32 (?P<line>\d+)")


def managed_variables(module: Module) -> dict[str, int | None]:
    """The ``__managed__`` variables of an IR module (device or host): name -> line of
    the declaration."""
    table = module.globals.get("llvm.global.annotations")
    if table is None:
        return {}
    marks = {name for name, g in module.globals.items()
             if f'c"{ANNOTATION}\\00"' in g.text}
    return {m.group("name").strip('"'): int(m.group("line")) for m in _ENTRY.finditer(table.text)
            if m.group("note") in marks}


def mentioned_variable(value: Value | Block, managed) -> str | None:
    """The managed variable ``value`` names directly or in a constant expression
    (``getelementptr (i8, ptr @acc, i64 20)``), if any."""
    if isinstance(value, Block):  # a branch target
        return None
    if value.kind == "global":
        return value.name if value.name in managed else None
    if value.kind == "const" and "@" in value.text:
        for name in re.findall(r"@([\w.$]+)", value.text):
            if name in managed:
                return name
    return None
