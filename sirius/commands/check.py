"""Optimize a CUDA program, verify the result, and check thresholds: a yes or no for CI.

Runs ``sirius optimize`` on PROGRAM.cu, then ``sirius verify`` of the original against it (the CPU
backend unless ``--backend gpu``), then each threshold asked for:

  --min-launch-reduction X   launches per run before / after must be at least X
                             (2: at least half the launches gone)
  --min-speedup Y            the original's time / the optimized program's must be at least Y:
                             measured on this machine's GPU (the timing harness, launches replayed
                             one by one, medians), or with --predicted the cost model's estimate
                             (sirius/tuning/cost_model.py); the check says which

A verification that ran no fused code is no evidence: the ``fused-code`` check fails when the
optimized program has fused regions and, in the verified run, none took its fused path, or one
ran and only ever took its original launches (a guard failed, or no cooperative launch),
unless ``--allow-fallback``.

The optimized program is written to ``-o`` only when every check passes. Every
check is reported on one line with its value, its threshold and by how much
it passed or failed; ``--json FILE`` writes the same as JSON (with the optimizer's
report) and ``--junit FILE`` as a JUnit XML test suite, one test case per check,
for CI systems that display test results.

A speedup threshold without a GPU and without --predicted is bad input (exit 2): nothing
could measure it.

Exit status: 0 when the program verifies and every threshold holds; 1 when
verification finds a difference or a threshold fails (each failure is named);
2 on bad input, a missing toolchain, an original program that fails, or a
launch count the analysis cannot give (a loop bound known only at run time).
Arguments for the program itself go after ``--``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass
from pathlib import Path

from sirius.analysis.frontend import CompileJob
from sirius.commands import verify
from sirius.commands.common import compile_flags_from_args, input_file, output_file
from sirius.commands.optimize import add_fusion_options, cooperative_options, selected_passes
from sirius.tuning.cost_model import predict_program
from sirius.commands.run import PROGRAM_ARGS_NOTE
from sirius.core.config import resolve_toolchain
from sirius.core.errors import InputError
from sirius.fusion import region_paths
from sirius.fusion.includes import relocate_includes
from sirius.pipeline import OptimizeState, report, run_pipeline

HELP = "optimize, verify and check thresholds (exit 0 / 1 for CI)"


@dataclass(frozen=True)
class Check:
    """One yes-or-no of the run: ``value`` against ``threshold`` (None where there is none)."""

    name: str
    passed: bool
    value: float | None
    threshold: float | None
    detail: str


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("program", metavar="PROGRAM.cu", help="CUDA source file (one translation unit)")
    parser.add_argument("-o", "--output", metavar="OUT.cu",
                        help="keep the optimized program here, written only when every check passes (a build "
                             "that compiles it never compiles a program that failed)")
    parser.add_argument("--min-launch-reduction", type=float, metavar="X",
                        help="fail unless launches per run before / after is at least X")
    parser.add_argument("--min-speedup", type=float, metavar="Y",
                        help="fail unless the optimized program is at least Y times as fast (measured on the GPU, "
                             "or predicted with --predicted)")
    parser.add_argument("--predicted", action="store_true",
                        help="take --min-speedup's times from the cost model instead of measuring them")
    parser.add_argument("--allow-fallback", action="store_true",
                        help="pass even when the verified run took no fused region's fused path")
    parser.add_argument("--json", metavar="FILE", help="write the checks and the optimizer's report as JSON")
    parser.add_argument("--junit", metavar="FILE", help="write the checks as a JUnit XML test suite")
    add_fusion_options(parser)
    verify.add_options(parser)  # --rtol, --atol, --backend, the compiler flags, --threads, ...
    parser.epilog = PROGRAM_ARGS_NOTE


def _launch_check(rep: dict, threshold: float) -> Check:
    before, after = rep["launches_before"], rep["launches_after"]
    if before is None or after is None:
        raise InputError("error: --min-launch-reduction: the analysis cannot count the launches per run of "
                         f"{rep['program']} (a host loop bound known only at run time)")
    factor = before / after if after else float("inf")
    verdict = f"{'above' if factor >= threshold else 'below'} the threshold by {abs(factor - threshold):.2f}"
    return Check("launch-reduction", factor >= threshold, round(factor, 4), threshold,
                 f"{before} -> {after} launches per run: {factor:.2f}x, {verdict}")


def _speedup_check(state, program: Path, optimized: Path, args: argparse.Namespace) -> Check:
    """Original time / optimized time of the launches of one run, against ``--min-speedup``."""
    threshold = args.min_speedup
    if args.predicted:
        original, fused = predict_program(state)
        factor, basis = original.direct_us / fused.direct_us, (
            f"predicted by the cost model, not measured: {original.direct_us:.1f} -> {fused.direct_us:.1f} us")
    else:
        from sirius.tuning import gpu_bench

        with tempfile.TemporaryDirectory(prefix="sirius-check-gpu-") as tmp:
            flags = state.job.flags
            row = gpu_bench.BenchProgram(program.stem, str(program), program.resolve(), optimized.resolve(),
                                         defines=flags.defines,
                                         include_dirs=tuple(Path(d).resolve() for d in flags.include_dirs))
            gpu_bench.write_manifest(Path(tmp), [row], arch=flags.arch, std=flags.std, command="sirius check")
            options = gpu_bench.BenchOptions(args.rtol, args.atol, torch=False, cuda_path=args.cuda_path,
                                             command="sirius check")
            [measured] = gpu_bench.run_bench(Path(tmp), options).rows
        if measured.speedup_direct is None:
            return Check("speedup", False, None, threshold,
                         f"not measured: {measured.error or (measured.verdict and measured.verdict.detail) or 'no time'}")
        factor = measured.speedup_direct
        basis = (f"measured on the GPU: {measured.original.direct_us:.1f} -> {measured.optimized.direct_us:.1f} us "
                 "(launches replayed one by one, medians)")
    verdict = f"{'above' if factor >= threshold else 'below'} the threshold by {abs(factor - threshold):.2f}"
    return Check("speedup", factor >= threshold, round(factor, 4), threshold, f"{factor:.2f}x, {basis}; {verdict}")


def _verify_check(args: argparse.Namespace, original: Path, optimized: Path) -> tuple[Check, list | None]:
    """The verification's verdict, and per fused region the paths its optimized run took
    (None when it wrote no counts)."""
    ns = argparse.Namespace(**vars(args))
    ns.original, ns.optimized = str(original), str(optimized)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status, runs = verify.verify_programs(ns)
    text = printed.getvalue()
    result = next((line for line in reversed(text.splitlines()) if line.startswith("result:")), "")
    detail = (result or "no result line") + f" ({args.backend} backend)"
    if status != 0:
        detail += "\n" + text.rstrip()
    return Check("verify", status == 0, None, None, detail), runs


def _fused_code_check(runs: list | None, regions: int, allow_fallback: bool) -> Check:
    """Whether the verified run took the fused path of its ``regions`` fused regions
    (``runs``: what it took, None when it wrote no counts)."""
    if runs is None:
        detail = (f"the verified run wrote no path counts for its {regions} fused regions (it did not exit "
                  "normally, or was built with SIRIUS_NO_PATH_COUNTS): whether fused code ran is not known")
        if allow_fallback:
            detail += "\n  (allowed by --allow-fallback)"
        return Check("fused-code", allow_fallback, None, None, detail)
    untested = region_paths.fallback_only(runs)
    fused = sum(1 for rr in runs if rr.fused_runs)
    detail = f"{fused} of {len(runs)} fused regions took their fused path in the verified run"
    for rr in untested:
        why = "; ".join(f"guard failed {n}x on {c or 'a condition not recorded'}" for c, n in rr.failed.items())
        detail += (f"\n  region {rr.region.id} (line {rr.region.line}): "
                   + (", ".join(f"{p} {n}" for p, n in rr.paths.items()) or "not reached") + (f"; {why}" if why else ""))
    if untested and allow_fallback:
        detail += "\n  (allowed by --allow-fallback)"
    return Check("fused-code", not untested or allow_fallback, float(fused), None, detail)


def _junit(program: str, checks: list[Check]) -> str:
    suite = ET.Element("testsuite", name=f"sirius check {program}", tests=str(len(checks)),
                       failures=str(sum(not c.passed for c in checks)), errors="0")
    for c in checks:
        case = ET.SubElement(suite, "testcase", classname="sirius.check", name=f"{c.name}: {program}")
        if not c.passed:
            ET.SubElement(case, "failure", message=c.detail.splitlines()[0]).text = c.detail
        ET.SubElement(case, "system-out").text = c.detail
    return ET.tostring(suite, encoding="unicode") + "\n"


def execute(args: argparse.Namespace) -> int:
    program = input_file(args.program)
    kept = output_file(args.output, "-o") if args.output else None
    json_file = output_file(args.json, "--json") if args.json else None
    junit_file = output_file(args.junit, "--junit") if args.junit else None
    if args.min_launch_reduction is not None and args.min_launch_reduction <= 0:
        raise InputError("error: --min-launch-reduction must be positive")
    if args.min_speedup is not None and args.min_speedup <= 0:
        raise InputError("error: --min-speedup must be positive")
    if args.predicted and args.min_speedup is None:
        raise InputError("error: --predicted goes with --min-speedup")
    if args.min_speedup is not None and not args.predicted:
        from sirius.backend.gpu import gpu_unavailable_reason

        reason = gpu_unavailable_reason()
        if reason is not None:
            raise InputError(f"error: --min-speedup needs a GPU to measure on ({reason}), or --predicted to use the "
                             "cost model's estimate")
    if kept is not None and kept.resolve() == program.resolve():
        raise InputError("error: the output file must differ from the input program")
    passes = selected_passes(args.passes, args.disable_pass)
    job = CompileJob(program, compile_flags_from_args(args), resolve_toolchain(args.clang, args.cuda_path))
    cooperative, persistent = cooperative_options(args)
    state = run_pipeline(OptimizeState(job, args.entry, args.arrangement, passes, cooperative,
                                       persistent=persistent))
    rep = report(state)
    checks = [_launch_check(rep, args.min_launch_reduction)] if args.min_launch_reduction is not None else []
    with tempfile.TemporaryDirectory(prefix="sirius-check-") as tmp:
        optimized = Path(tmp) / program.name  # quoted includes re-pointed from where each copy lies
        optimized.write_text(relocate_includes(state.output, program, Path(tmp))[0])
        verified, runs = _verify_check(args, program, optimized)
        regions = len(region_paths.regions_of(state.output))
        checks[:0] = [verified] + ([_fused_code_check(runs, regions, args.allow_fallback)] if regions else [])
        if args.min_speedup is not None:
            checks.append(_speedup_check(state, program, optimized, args))
    ok = all(c.passed for c in checks)
    if kept is not None and ok:
        kept.write_text(relocate_includes(state.output, program, kept.resolve().parent)[0])
    print(f"check {program}: {'PASSED' if ok else 'FAILED'}")
    for c in checks:
        print(f"  {'pass' if c.passed else 'FAIL'} {c.name}: {c.detail}")
    if json_file is not None or args.json == "-":
        text = json.dumps({"program": str(program), "passed": ok, "checks": [asdict(c) for c in checks],
                           "region_paths": None if runs is None else [rr.to_json() for rr in runs],
                           "report": rep}, indent=2) + "\n"
        json_file.write_text(text) if json_file is not None else sys.stdout.write(text)
    if junit_file is not None or args.junit == "-":
        text = _junit(str(program), checks)
        junit_file.write_text(text) if junit_file is not None else sys.stdout.write(text)
    return 0 if ok else 1
