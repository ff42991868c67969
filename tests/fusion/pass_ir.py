"""The IR of a program's first fused kernel before and after the kernel passes, for the
per-pass tests."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from sirius.analysis.frontend import CompileJob
from sirius.core.config import CompileFlags, resolve_toolchain
from sirius.fusion.ir_text import format_kernel
from sirius.pipeline import PIPELINE, OptimizeState, pass_names


UNCHANGED_BY_PASSES = ("  group:", "  launched as")  # lines no kernel pass changes, left out


def ir_before_and_after(path: Path, passes: tuple[str, ...] | None = None, arrangement: str = "auto",
                        keep: Callable[[str], bool] = lambda line: True
                        ) -> tuple[list[str], list[str], OptimizeState]:
    """The lines ``keep`` accepts of the first fused kernel's IR after the promises (before
    the passes) and after ``passes`` (all of them by default), but for the group's and the
    launch's, and the final state."""
    state = OptimizeState(CompileJob(path, CompileFlags(), resolve_toolchain()), arrangement=arrangement,
                          passes=tuple(pass_names()) if passes is None else passes)
    printed = {}
    for stage in PIPELINE:
        stage.run(state)
        if stage.name in ("promises", "passes"):
            printed[stage.name] = [line for line in format_kernel(state.kernels[0]).splitlines()
                                   if keep(line) and not line.startswith(UNCHANGED_BY_PASSES)]
    return printed["promises"], printed["passes"], state
