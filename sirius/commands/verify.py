"""Run an original and an optimized CUDA program on identical inputs and compare.

Both programs are built with the same flags and run with the same arguments
(after ``--``) on the chosen backend. Every buffer each copies back to the host
(cudaMemcpy/cudaMemcpyAsync device-to-host, cudaMemcpy2D, cudaMemcpyFromSymbol)
is paired by order with the other's and compared element-wise, bit-exact
unless ``--rtol``/``--atol`` are given; so are the printed output (numbers
within the same tolerance, timing lines ignored) and the exit statuses. A
table gives, per buffer, the largest absolute and relative difference. On the
CPU backend the programs run with one worker thread unless ``--threads`` says
otherwise, so that results depending on the order of blocks (float atomics)
are reproducible; but a cooperative launch runs all of its blocks at once (its
grid barriers need them resident), so float atomics in its phases add in
another order than the original's launches did, as on a GPU: compare such
programs with ``--rtol``.

Before running, the optimized program's fused kernels (``sirius_fused_N``,
``sirius_wave_N``) go through the promise check (``fusion/check.py``):
restrict qualifiers and read-only-cache loads that their pointers' aliasing
falsifies, and launches a GPU would reject (registers, threads, shared
memory). Running on the CPU backend cannot find these, so a violation fails
the verification by itself.

The optimized program counts which path each fused region took (the fused code, or the
original launches because a guard condition failed or the device launches nothing
cooperatively: ``fusion/region_paths.py``); verify prints per region how many times each
ran and which condition failed, and warns when no fused code ran at all, or a region ran
only its original launches: such a run compared nothing fused (a build without the ``-D``
values the program was optimized with, say).

Exit status: 0 when everything agrees; 1 when something differs (naming the
buffer, the first differing index and both values), the optimized program
fails at run time (e.g. a divergent barrier) or breaks a promise; 2 when a
program cannot be built, the original fails or exits with a nonzero status, or
``--backend gpu`` finds no GPU. Arguments for the programs go after ``--``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sirius.analysis.frontend import CompileJob
from sirius.backend import compare, cpu
from sirius.commands.common import compile_flags_from_args
from sirius.commands.progress import stage_progress
from sirius.commands.run import PROGRAM_ARGS_NOTE, add_backend_arguments, build
from sirius.core.config import resolve_toolchain
from sirius.core.errors import SiriusError
from sirius.fusion.check import GENERATED_KERNEL, CheckResult, check_program
from sirius.fusion import region_paths
from sirius.fusion.includes import includes_from_own_folder

HELP = "run an original and an optimized program on the same inputs and compare their results"


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rtol", type=float, default=0.0,
                        help="relative tolerance (default 0: bit-exact)")
    parser.add_argument("--atol", type=float, default=0.0,
                        help="absolute tolerance (default 0: bit-exact)")
    parser.add_argument("--ignore-output", action="store_true",
                        help="do not compare what the programs print")
    add_backend_arguments(parser, threads_default="1, for reproducible results")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("original", help="the original CUDA program (.cu)")
    parser.add_argument("--quiet", action="store_true", dest="verify_quiet",
                        help="show no progress (drawn only on a terminal anyway)")
    parser.add_argument("optimized", help="the optimized CUDA program (.cu)")
    add_options(parser)
    parser.epilog = PROGRAM_ARGS_NOTE


def _tail(text: str, lines: int = 15) -> str:
    rows = text.rstrip().splitlines()
    return "\n".join("  " + r for r in rows[-lines:])


def execute(args: argparse.Namespace) -> int:
    return verify_programs(args)[0]


def _run_both(args: argparse.Namespace, built, prog_args: list[str], entering, steps: list[str]) -> list:
    """Both built programs run one after the other, each with its copies and path counts."""
    results = []
    # One worker thread unless asked otherwise: blocks then run in a fixed
    # order, so results that depend on it (float atomics) repeat bit for bit.
    threads = 1 if args.threads is None and args.backend == "cpu" else args.threads
    with tempfile.TemporaryDirectory(prefix="sirius-verify-") as tmp:
        # both runs see the same file names (one after the other): a program that prints its
        # environment prints the same
        dump, paths = Path(tmp) / "copies.bin", Path(tmp) / "paths.txt"
        for b, step in zip(built, steps):
            entering(step)
            r = cpu.run_program(b.binary, prog_args, capture=True, timeout=args.timeout,
                                threads=threads, dump=dump, env={**os.environ, region_paths.ENVIRONMENT: str(paths)})
            r.extra["copies"] = compare.read_dump(dump) if not r.timed_out else []
            r.extra["paths"] = region_paths.read_counts(paths)
            dump.unlink(missing_ok=True)
            paths.unlink(missing_ok=True)
            results.append(r)
    return results


def verify_programs(args: argparse.Namespace) -> tuple[int, list[region_paths.RegionRuns] | None]:
    """Builds, runs and compares the two programs, printing the verdict; the exit status,
    and per fused region of the optimized program the paths its run took (None when it
    wrote no counts: it did not exit normally, or was built without them)."""
    prog_args = list(getattr(args, "program_args", []))
    if args.rtol < 0 or args.atol < 0:
        raise SiriusError("error: --rtol and --atol must not be negative")
    if args.threads is not None and args.threads < 1:
        raise SiriusError("error: --threads must be at least 1")
    steps = ["build both", "run the original", "run the optimized"]
    # progress for the command itself only (experiment and check, which verify on the way, none)
    quiet = getattr(args, "verify_quiet", True)
    with stage_progress(f"verify {Path(args.optimized).name}", steps, quiet) as entering:
        entering(steps[0])
        with ThreadPoolExecutor(max_workers=3) as pool:
            promises = pool.submit(_promise_check, args)
            jobs = [pool.submit(build, path, args) for path in (args.original, args.optimized)]
            built = [job.result() for job in jobs]
            checked = promises.result()
        results = _run_both(args, built, prog_args, entering, steps[1:])
    orig, opt = results
    regions = region_paths.regions_of(Path(args.optimized).read_text(errors="replace"))
    counted = opt.extra["paths"] is not None
    runs = region_paths.summarize(regions, opt.extra["paths"]) if counted else None
    print(f"verify: {args.original} (original) vs {args.optimized} (optimized), "
          f"{args.backend} backend")
    if isinstance(checked, str):
        print(f"promise check: not run ({checked})")
    elif checked.kernels_checked or checked.violations:
        print(f"promise check: {checked.kernels_checked} fused launches, "
              f"{len(checked.violations) or 'no'} violations"
              + ("" if checked.ptxas or checked.bounded else " (without ptxas figures)"))
        for v in checked.violations:
            print(f"  violation ({v.what}): {v.message}")
    if orig.failed:
        raise SiriusError(f"error: the original program failed: {orig.failure_text}\n"
                          + _tail(orig.stderr))
    if orig.returncode != 0:  # nothing trustworthy to compare against
        raise SiriusError(f"error: the original program exited with status {orig.returncode}; "
                          "verify needs an original that succeeds\n" + _tail(orig.stderr or orig.stdout))
    if opt.failed:
        print(f"the optimized program failed: {opt.failure_text}")
        if opt.stderr.strip():
            print(_tail(opt.stderr))
        print("result: DIFFERENT")
        return 1, runs
    report = compare.compare_runs(
        orig.extra["copies"], opt.extra["copies"],
        stdout_original=None if args.ignore_output else orig.stdout,
        stdout_optimized=None if args.ignore_output else opt.stdout,
        status_original=orig.returncode, status_optimized=opt.returncode,
        rtol=args.rtol, atol=args.atol)
    print(report.render())
    _print_paths(regions, runs, args.original)  # (its lines are the original's: the #line directives)
    if not isinstance(checked, str) and checked.violations:
        print(f"promise check failed: {len(checked.violations)} violations a GPU would act on (see above)")
        sys.stdout.flush()
        return 1, runs
    sys.stdout.flush()
    return (0 if report.ok else 1), runs


def _print_paths(regions, runs, program: str) -> None:
    """Per fused region, the paths the optimized run took; warnings when it ran no fused code."""
    if not regions:
        return
    if runs is None:
        print(f"fused regions: {len(regions)}; the optimized program wrote no path counts (it did not exit "
              "normally, or was built with SIRIUS_NO_PATH_COUNTS)")
        return
    lines, warnings = region_paths.render(runs, Path(program).name)
    print("\n".join(lines + warnings))


def _promise_check(args: argparse.Namespace) -> CheckResult | str:
    """The promise check of the optimized program, or why it could not run: its text checked
    as ``sirius optimize`` checks what it writes, beside the original (whose folder its
    includes are relative to), so that a text optimize checked is answered from the check
    cache."""
    text = Path(args.optimized).read_text(errors="replace")
    if not GENERATED_KERNEL.search(text):
        return CheckResult()  # nothing the optimizer generated: no promises of its own to check
    try:
        flags = compile_flags_from_args(args)
        own_folder = Path(args.optimized).resolve().parent
        if includes_from_own_folder(text, Path(args.original), own_folder):
            # its #include lines re-pointed for its own folder (written elsewhere than the original) are found there
            flags = dataclasses.replace(flags, include_dirs=flags.include_dirs + (str(own_folder),))
        job = CompileJob(Path(args.original), flags, resolve_toolchain(args.clang, getattr(args, "cuda_path", None)))
        return check_program(job, source=text)
    except SiriusError as err:
        return str(err).splitlines()[0]
