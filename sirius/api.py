"""The Python API: what ``sirius analyze``, ``optimize`` and ``verify`` do, as functions
returning typed results, for research on fusion heuristics without the command line.

    import sirius

    result = sirius.optimize("cuda_inputs/softmax.cu", flags=["-DROWS=64"])
    print(result.launches_before, "->", result.launches_after)
    for group in result.groups:
        print(group.kernel, group.arrangement, [launch.kernel for launch in group.launches])
    for refusal in result.refusals:
        print([launch.line for launch in refusal.launches], refusal.reason)
    result.write("softmax.opt.cu")

    checked = sirius.verify("cuda_inputs/softmax.cu", "softmax.opt.cu", flags=["-DROWS=64"])
    assert checked.equal and checked.fused_code_ran

``flags`` are the compiler flags the commands take (``-DNAME=VALUE``, ``-I DIR``,
``-std=c++17``, ``--arch sm_90``, the nvcc flags they accept). A fusion policy is passed
as an object (``sirius.fusion.policies``: ``Greedy()``, a subclass of ``FusionPolicy``).
Bad input raises ``sirius.core.errors.InputError`` with the message the command prints.
"""

from __future__ import annotations

import argparse
import contextlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from sirius.analysis.frontend import CompileJob
from sirius.analysis.program_model import ProgramModel
from sirius.analysis.uar import UAR, build_uar
from sirius.core.config import resolve_toolchain
from sirius.core.errors import InputError
from sirius.fusion.policies import FusionPolicy, Greedy
from sirius.fusion.region_paths import RegionRuns, fallback_only
from sirius.fusion.schedule import RefusalKind


@dataclass(frozen=True)
class Launch:
    """One launch statement of the program: its number in the model, kernel and line."""

    index: int
    kernel: str
    line: int | None


@dataclass(frozen=True)
class Group:
    """Launches that became one fused kernel (``kernel``: its name in the output)."""

    kernel: str | None
    arrangement: str
    launches: tuple[Launch, ...]


@dataclass(frozen=True)
class Refusal:
    """Launches left apart, why (``reason``) and the kind of reason (``RefusalKind``)."""

    launches: tuple[Launch, ...]
    reason: str
    kind: RefusalKind


@dataclass(frozen=True)
class OptimizeResult:
    """What ``optimize`` made of a program: the emitted source, the launch counts, the
    fused groups and the refusals; ``report`` is the dictionary ``--report`` writes and
    ``state`` the pipeline's state (model, UAR, schedule, kernel IR) for a closer look."""

    program: Path
    output: str
    launches_before: int | None
    launches_after: int | None
    groups: tuple[Group, ...]
    refusals: tuple[Refusal, ...]
    report: dict[str, Any]
    state: Any

    def write(self, path: str | Path) -> Path:
        """The optimized program written to ``path``, its quoted includes re-pointed from there."""
        from sirius.fusion.includes import relocate_includes

        path = Path(path)
        path.write_text(relocate_includes(self.output, self.program, path.resolve().parent)[0])
        return path


@dataclass(frozen=True)
class Analysis:
    """The program model (``.launches``, ``.kernels``, the host model) and its UAR."""

    model: ProgramModel
    uar: UAR

    @property
    def launches(self):
        return self.model.launches

    @property
    def kernels(self):
        return self.model.kernels


@dataclass(frozen=True)
class VerifyResult:
    """A verification: ``equal`` when every buffer, the output and the exit status agree
    (and no promise is broken); ``status`` the command's exit status; ``regions`` the
    paths each fused region took (None when the program wrote no counts); ``text`` what
    the command prints."""

    equal: bool
    status: int
    regions: tuple[RegionRuns, ...] | None
    text: str

    @property
    def fused_code_ran(self) -> bool:
        """Whether every fused region that ran took its fused path (and one did): the
        comparison then covered the fused code."""
        return bool(self.regions) and not fallback_only(list(self.regions))


def _flags(flags: Sequence[str]) -> argparse.Namespace:
    """The compiler flags as the commands parse them."""
    from sirius.commands.common import add_compile_flags

    parser = argparse.ArgumentParser(prog="sirius", add_help=False, exit_on_error=False)
    add_compile_flags(parser)
    try:
        args, unknown = parser.parse_known_args(list(flags))
    except argparse.ArgumentError as err:
        raise InputError(f"error: {err}") from None
    if unknown:
        raise InputError(f"error: unknown compiler flag{'s' if len(unknown) > 1 else ''} {' '.join(unknown)}")
    return args


def _job(path: str | Path, flags: Sequence[str]) -> CompileJob:
    from sirius.commands.common import compile_flags_from_args, input_file

    return CompileJob(input_file(str(path)), compile_flags_from_args(_flags(flags)), resolve_toolchain())


def analyze(path: str | Path, flags: Sequence[str] = (), *, entry: str = "main") -> Analysis:
    """The program's model and UAR, as ``sirius analyze`` prints them."""
    return analyze_job(_job(path, flags), entry)


def analyze_job(job: CompileJob, entry: str = "main") -> Analysis:
    """The model of ``job``'s program (its launches from the host function ``entry``) and its
    UAR, as ``analyze`` and ``sirius analyze`` build them."""
    from sirius.analysis.program_model import analyze_program

    model = analyze_program(job, entry=entry)
    return Analysis(model, build_uar(model))


def optimize(path: str | Path, output: str | Path | None = None, flags: Sequence[str] = (), *,
             entry: str = "main", arrangement: str = "auto", passes: Sequence[str] | None = None,
             cooperative: bool = False, persistent: bool = False,
             policy: FusionPolicy | None = None) -> OptimizeResult:
    """``sirius optimize``: the optimized program (written to ``output`` when given), with
    the kernel passes ``passes`` (default: all) and the fusion ``policy`` (default greedy)."""
    from sirius.pipeline import KERNEL_PASSES, OptimizeState

    if arrangement not in ("auto", "vertical", "horizontal"):
        raise InputError(f"error: arrangement {arrangement!r}: use auto, vertical or horizontal")
    if persistent and not cooperative:
        raise InputError("error: persistent needs cooperative (waves of cells in one launch)")
    known = [p.name for p in KERNEL_PASSES]
    chosen = tuple(known if passes is None else passes)
    if set(chosen) - set(known):
        raise InputError(f"error: unknown passes {sorted(set(chosen) - set(known))}; the passes are {known}")
    result = optimize_job(OptimizeState(_job(path, flags), entry, arrangement, chosen, cooperative,
                                        policy or Greedy(), persistent))
    if output is not None:
        result.write(output)
    return result


def optimize_job(state, print_after: str | None = None, dump=None, entering=None) -> OptimizeResult:
    """The pipeline run on ``state`` (a ``pipeline.OptimizeState``: the compile job and
    every setting, checked already), as ``optimize`` and ``sirius optimize`` run it:
    ``print_after``, ``dump`` and ``entering`` as ``pipeline.run_pipeline`` takes them."""
    from sirius.pipeline import report, run_pipeline

    state = run_pipeline(state, print_after, dump, entering=entering)
    insts = state.model.instances()

    def launches(indices) -> tuple[Launch, ...]:
        return tuple(Launch(i, insts[i].kernel.name, insts[i].line) for i in indices if i in insts)

    rep = report(state)
    groups = tuple(Group(g["kernel"], g["arrangement"], launches(i for lane in g["lanes"] for i in
                                                                 (x["launch"] for x in lane)))
                   for g in rep["groups"])
    refusals = tuple(Refusal(launches(r.launches), r.reason, r.kind) for r in state.schedule.refusals)
    return OptimizeResult(state.job.path, state.output, rep["launches_before"], rep["launches_after"], groups,
                          refusals, rep, state)


def verify(original: str | Path, optimized: str | Path, flags: Sequence[str] = (), *,
           backend: str = "cpu", rtol: float = 0.0, atol: float = 0.0, args: Sequence[str] = (),
           timeout: float | None = None, threads: int | None = None) -> VerifyResult:
    """``sirius verify``: both programs built with ``flags``, run with ``args`` on
    ``backend`` and compared (bit-exact unless ``rtol``/``atol``)."""
    from sirius.commands import verify as command

    if backend not in ("cpu", "gpu"):
        raise InputError(f"error: backend {backend!r}: use cpu or gpu")
    parser = argparse.ArgumentParser(prog="sirius verify", add_help=False, exit_on_error=False)
    command.add_arguments(parser)
    options = [str(original), str(optimized), *flags, "--backend", backend, "--rtol", str(rtol), "--atol", str(atol),
               "--quiet"]
    options += ["--timeout", str(timeout)] if timeout is not None else []
    options += ["--threads", str(threads)] if threads is not None else []
    try:
        ns, unknown = parser.parse_known_args(options)
    except argparse.ArgumentError as err:
        raise InputError(f"error: {err}") from None
    if unknown:
        raise InputError(f"error: unknown flag{'s' if len(unknown) > 1 else ''} {' '.join(unknown)}")
    ns.program_args = list(args)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status, runs = command.verify_programs(ns)
    return VerifyResult(status == 0, status, None if runs is None else tuple(runs), printed.getvalue())


def report_schema() -> dict[str, Any]:
    """The JSON schema (draft 2020-12) of the report ``optimize`` writes (``--report``, and
    ``OptimizeResult.report``): its ``$id`` is the report's ``schema`` value."""
    import json
    from importlib.resources import files

    return json.loads(files("sirius").joinpath("schemas", "report-4.json").read_text())

