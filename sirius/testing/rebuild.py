"""Differential checks of a program rebuilt with other ``-D`` values than it was optimized for.

The optimizer proves a fusion for the program as the build it analysed expands it: a macro
in a kernel body (``a[(i + SHIFT) % n]``) or a launch (``gain<<<..>>>(.., GAIN, ..)``)
decides which bytes a kernel touches or which value a fused kernel may bake in. The README
promises that a program rebuilt with another ``-D`` stays correct: the optimized program
compares the macros before a fused path runs and takes the original launches when one
differs. So both fuzzers, for a program whose kernels use such macros, verify the rebuild
(original and optimized built with the other values, compared bit for bit on the CPU
backend) and check from the launch log that no kernel the optimizer generated over a
launch of a macro-using kernel ran: computing the same by luck is not falling back.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

SIRIUS = str(Path(sys.executable).parent / "sirius")

# the report's keys that list what the optimizer generated: fused groups, cooperative
# regions, waves of cells; each entry names its kernel and, somewhere inside, the launches
# (original kernels) it replaces
_GENERATED_SECTIONS = ("groups", "cooperative", "cell_waves")


def _kernels_inside(node) -> set[str]:
    """Every ``"kernel"`` value nested anywhere in ``node`` (a report entry)."""
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "kernel" and isinstance(value, str):
                found.add(value)
            else:
                found |= _kernels_inside(value)
    elif isinstance(node, list):
        for value in node:
            found |= _kernels_inside(value)
    return found


def generated_kernels_over(report: dict, kernels: set[str]) -> set[str]:
    """The kernels the optimizer generated (per the report of ``sirius optimize``) that
    replace at least one launch of a kernel of ``kernels``."""
    out: set[str] = set()
    for section in _GENERATED_SECTIONS:
        for entry in report.get(section) or ():
            name = entry.get("kernel") if isinstance(entry, dict) else None
            if not isinstance(name, str):
                continue
            members = _kernels_inside({k: v for k, v in entry.items() if k != "kernel"})
            if members & kernels:
                out.add(name)
    return out


def verify_rebuild(original: Path, optimized: Path, report: dict, defines: tuple[str, ...],
                   macro_kernels: set[str], extra: tuple[str, ...] = ()) -> str | None:
    """Verify ``optimized`` against ``original``, both built with ``-D`` of each of
    ``defines`` (``NAME=VALUE``) and ``extra`` (more flags for ``sirius verify``); the
    kernels generated over launches of ``macro_kernels`` (those using the macros) must not
    run. None when all holds, else what failed."""
    flags = [f"-D{d}" for d in defines] + list(extra)
    with tempfile.TemporaryDirectory(prefix="sirius-rebuild-") as tmp:
        log = Path(tmp) / "launches.txt"
        # verify runs the original, then the optimized program: the log is the optimized run's
        ver = subprocess.run([SIRIUS, "verify", str(original), str(optimized), "--backend", "cpu", *flags],
                             capture_output=True, text=True,
                             env={**os.environ, "SIRIUS_LAUNCH_LOG": str(log)})
        launched = set(log.read_text().split()) if log.exists() else set()
    if ver.returncode != 0 or "result: all equal" not in ver.stdout:
        return f"verify {' '.join(flags)}:\n" + (ver.stdout + ver.stderr)[-2000:]
    ran = sorted(generated_kernels_over(report, macro_kernels) & launched)
    if ran:
        return (f"rebuilt with {' '.join(flags)}, the optimized program still launched {', '.join(ran)}, "
                f"generated over launches of {', '.join(sorted(macro_kernels))} whose macros changed: "
                "it must take the original launches")
    return None
