"""Choose the fastest arrangement of a program's fusion, and write it.

Candidates: the original program, and the optimizer's output for every arrangement (auto,
vertical, horizontal), for auto with cooperative launches (--cooperative: regions, and a loop
of unrolled layers as waves of cells) and, where a program has waves of cells or a host loop
of launches, with those in one persistent launch, or the loop as one launch (--persistent),
each with the kernel passes on and with fusion alone; a program two settings produce alike is
one candidate. Every candidate is legal (promise-checked like any
output of `sirius optimize`); the question is which is fastest.

On a machine with a CUDA GPU (unless --predicted), each candidate is built with nvcc, run once
to compare its results with the original's (a candidate that differs is discarded and
reported), and timed with the launch-timing harness (its launches replayed one by one, median
of repetitions, summed over the run); the fastest verified candidate wins. Without a GPU the
candidates are ranked by the cost model (sirius/tuning/cost_model.py: launch and graph-node
costs, block waves, the busiest thread's chain of memory accesses, bandwidth), and the report
says plainly that the choice is predicted, not measured.

Two steps, for when the optimizer's machine has no GPU:
  sirius tune P.cu --export DIR            the candidates, a manifest and a self-contained runner
  sh DIR/run.sh                            on the GPU machine: needs Python 3, nvcc and the GPU;
                                           writes DIR/results.json
  sirius tune P.cu --import DIR/results.json -o OUT.cu

Results are cached under $SIRIUS_CACHE/tune (default .sirius-cache/tune): a candidate measured
on a GPU is not measured again, and the same program tuned again with the same options, GPU and
optimizer is answered from the cache without running the optimizer (--no-cache: neither).

Exit status: 0 a program was written (or the candidates exported); 2 bad input, a missing
toolchain, results that belong to other candidates, or an original that cannot be built or run.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sirius.analysis.frontend import CompileJob
from sirius.commands.common import add_compile_flags, compile_flags_from_args, input_file, output_file
from sirius.core.config import CompileFlags, resolve_toolchain
from sirius.core.errors import InputError, SiriusError
from sirius.fusion.includes import relocate_includes
from sirius.pipeline import OptimizeState, run_pipeline
from sirius.tuning import gpu_bench
from sirius.tuning.cache import TuneCache, digest, optimizer_fingerprint
from sirius.tuning.candidates import ORIGINAL, Candidate, generate_candidates, rank_by_prediction

HELP = "choose the fastest fusion arrangement: measured on a GPU, else predicted by the cost model"

RESULTS_NAME = "results.json"
CANDIDATES_NAME = "tune.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("program", metavar="PROGRAM.cu", help="CUDA source file (one translation unit)")
    parser.add_argument("-o", "--output", metavar="OUT.cu", help="where to write the chosen program (required "
                                                                 "unless --export)")
    parser.add_argument("--report", metavar="FILE.json", help="also write every candidate's figures and the choice "
                                                              "as JSON")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--predicted", action="store_true",
                      help="rank by the cost model even when a GPU is present")
    mode.add_argument("--export", metavar="DIR",
                      help="write the candidates and a runner to DIR for a GPU machine, and stop")
    mode.add_argument("--import", dest="import_file", metavar="RESULTS.json",
                      help="choose with the results the exported runner wrote")
    parser.add_argument("--entry", default="main", help="host function whose launches are optimized (default main)")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the tuning cache")
    parser.add_argument("--rtol", type=float, default=0.0, help="relative tolerance of the correctness check "
                                                                "(default 0: bit-exact)")
    parser.add_argument("--atol", type=float, default=0.0, help="absolute tolerance (default 0)")
    parser.add_argument("--reps", type=int, default=20, help="timed repetitions per candidate (default 20)")
    add_compile_flags(parser)


@dataclass(frozen=True)
class Measured:
    """A candidate's figures on a GPU, or why it was discarded."""

    direct_us: float | None
    graph_us: float | None
    discarded: str | None = None  # the results differ, or it could not be built or run


# ------------------------------------------------------------------ choosing

def choose(candidates: list[Candidate], measured: dict[str, Measured] | None) -> Candidate:
    """The fastest measured verified candidate (by direct time, as the program runs), or the
    fastest predicted one when nothing was measured. The original is always verified against
    itself, so there is always a choice."""
    if not measured:
        return rank_by_prediction(candidates)[0]
    usable = [c for c in candidates if c.name in measured and measured[c.name].discarded is None
              and measured[c.name].direct_us is not None]
    if not usable:
        raise SiriusError("error: no candidate could be measured, not even the original (see the report)")
    return min(usable, key=lambda c: (measured[c.name].direct_us, -len(c.passes)))


def _figures(candidates: list[Candidate], measured: dict[str, Measured] | None) -> list[dict]:
    rows = []
    for c in candidates:
        m = (measured or {}).get(c.name)
        rows.append({"name": c.name, "same_as": list(c.same_as), "arrangement": c.arrangement,
                     "passes": list(c.passes), "digest": c.digest, "launches": c.launches,
                     "predicted_direct_us": round(c.prediction.direct_us, 2),
                     "predicted_graph_us": round(c.prediction.graph_us, 2),
                     "measured_direct_us": m.direct_us if m else None,
                     "measured_graph_us": m.graph_us if m else None,
                     "discarded": m.discarded if m else None})
    return rows


def _render(decision: dict) -> str:
    lines = [f"tuned {decision['program']}: {len(decision['candidates'])} candidates, "
             + ("measured on " + decision["gpu"] if decision["basis"] == "measured"
                else "ranked by the cost model (predicted, not measured: " + decision["why_predicted"] + ")")]
    header = f"  {'candidate':<28} {'launches':>9} {'predicted us':>13} {'measured us':>12}"
    lines.append(header)
    for row in decision["candidates"]:
        mark = "*" if row["name"] == decision["chosen"] else " "
        measured = row["measured_direct_us"]
        shown = f"{measured:12.1f}" if measured is not None else f"{'-':>12}"
        extra = f"  discarded: {row['discarded']}" if row["discarded"] else ""
        also = f"  (= {', '.join(row['same_as'])})" if row["same_as"] else ""
        lines.append(f"{mark} {row['name']:<28} {str(row['launches']):>9} {row['predicted_direct_us']:13.1f} "
                     f"{shown}{also}{extra}")
    lines.append(f"  chosen: {decision['chosen']}" + (" (from the cache)" if decision.get("cached") else ""))
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ the GPU side, local or exported

def export_candidates(candidates: list[Candidate], program: Path, flags: CompileFlags, folder: Path,
                      command: str, runner: bool) -> None:
    """The candidates as a bench manifest in ``folder`` (one row per candidate, each against the
    original), their names and digests in ``tune.json``, and with ``runner`` a copy of the
    pure-Python half of the tool and ``run.sh``, which need only Python 3, nvcc and a GPU."""
    if folder.exists() and not folder.is_dir():
        raise InputError(f"error: --export {folder}: not a folder")
    folder.mkdir(parents=True, exist_ok=True)
    original = folder / "original.cu"
    original.write_text(relocate_includes(program.read_text(), program, folder)[0])
    rows = []
    for c in candidates:
        path = original if c.name == ORIGINAL else folder / f"{c.name.replace('/', '.')}.cu"
        if c.name != ORIGINAL:
            path.write_text(relocate_includes(c.source, program, folder)[0])
        rows.append(gpu_bench.BenchProgram(name=c.name, source=str(program), original=original, optimized=path,
                                           defines=flags.defines,
                                           include_dirs=tuple(Path(d).resolve() for d in flags.include_dirs),
                                           launches_before=candidates[0].launches, launches_after=c.launches))
    gpu_bench.write_manifest(folder, rows, arch=flags.arch, std=flags.std, command=command)
    (folder / CANDIDATES_NAME).write_text(json.dumps({
        "program": str(program), "program_digest": digest(program.read_text()),
        "candidates": _figures(candidates, None)}, indent=1) + "\n")
    if runner:
        _write_runner(folder)


def _write_runner(folder: Path) -> None:
    """Copy the modules ``python3 -m sirius.tuning.gpu_bench`` and the harness import (found by importing them
    in a fresh interpreter), the harness and dump sources, and a script that runs them."""
    package = Path(__file__).resolve().parents[1]
    probe = ("import sys, sirius.tuning.gpu_bench, sirius.backend.harness; print('\\n'.join(m.__file__ for n, m in sys.modules.items() "
             "if n.split('.')[0] == 'sirius' and getattr(m, '__file__', None)))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=package.parent, env={**os.environ, "PYTHONPATH": str(package.parent)})
    if proc.returncode != 0:
        raise SiriusError(f"internal error: cannot list the runner's modules:\n{proc.stderr[-800:]}", 3)
    target = folder / "runner"
    for line in proc.stdout.split():
        source = Path(line).resolve()
        dest = target / "sirius" / source.relative_to(package)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, dest)
    for sub in ("runtime/gpu", "runtime/harness"):
        shutil.copytree(package / sub, target / "sirius" / sub, dirs_exist_ok=True)
    script = folder / "run.sh"
    script.write_text(
        "#!/bin/sh\n"
        "# Verify and time every candidate on this machine's GPU (needs Python 3, nvcc and a CUDA GPU);\n"
        "# then, where the optimizer runs: sirius tune PROGRAM.cu --import results.json -o OUT.cu\n"
        "cd \"$(dirname \"$0\")\" || exit 2\n"
        f"PYTHONPATH=runner exec python3 -m sirius.tuning.gpu_bench . --json {RESULTS_NAME} --no-torch \"$@\"\n")
    script.chmod(0o755)


def read_results(path: Path, candidates: list[Candidate]) -> tuple[dict[str, Measured], str]:
    """The runner's results for these candidates, and the GPU they were measured on. Results
    that name other candidates, or programs of another content (by the digests in tune.json
    beside the results), are bad input."""
    try:
        data = json.loads(path.read_text())
        rows = {r["program"]: r for r in data["rows"]}
        gpu = data.get("gpu") or "a GPU"
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise InputError(f"error: --import {path}: not a results file of the tuning runner ({err})") from None
    names = {c.name for c in candidates}
    if not names & set(rows):
        raise InputError(f"error: --import {path}: its rows ({', '.join(sorted(rows)) or 'none'}) name none of this "
                         f"program's candidates ({', '.join(sorted(names))})")
    exported = path.parent / CANDIDATES_NAME
    if exported.is_file():
        digests = {r["name"]: r["digest"] for r in json.loads(exported.read_text()).get("candidates", [])}
        stale = [c.name for c in candidates if c.name in digests and digests[c.name] != c.digest]
        if stale:
            raise InputError(f"error: --import {path}: candidates {', '.join(stale)} differ from those exported "
                             "(the program or the optimizer changed since): export and measure again")
    measured = {}
    for name, r in rows.items():
        if r.get("error"):
            measured[name] = Measured(None, None, f"could not be built or run: {r['error'][:300]}")
        elif r.get("result") == "WRONG":
            measured[name] = Measured(r.get("optimized_direct_us"), r.get("optimized_graph_us"),
                                      f"results differ from the original's: {r.get('correctness')}")
        elif r.get("optimized_incomplete"):
            measured[name] = Measured(None, None, f"not fully timed: {r['optimized_incomplete']}")
        else:
            measured[name] = Measured(r.get("optimized_direct_us"), r.get("optimized_graph_us"))
    return measured, gpu


def _measure_here(candidates: list[Candidate], program: Path, flags: CompileFlags, args, cache: TuneCache,
                  gpu_name: str) -> dict[str, Measured]:
    """Measure on this machine's GPU the candidates the cache does not know for this GPU."""
    measured: dict[str, Measured] = {}
    todo = []
    for c in candidates:
        hit = cache.get("measurement", _measurement_key(c, flags, gpu_name, args))
        if hit is not None:
            measured[c.name] = Measured(**hit)
        else:
            todo.append(c)
    if todo:
        with tempfile.TemporaryDirectory(prefix="sirius-tune-") as tmp:
            folder = Path(tmp)
            # the original is always measured with the others: each row's ratios come from one run
            rows = todo if todo[0].name == ORIGINAL else [candidates[0], *todo]
            export_candidates(rows, program, flags, folder, "sirius tune", runner=False)
            options = gpu_bench.BenchOptions(args.rtol, args.atol, args.reps, 3, torch=False,
                                             cuda_path=args.cuda_path, command="sirius tune")
            result = gpu_bench.run_bench(folder, options)
            results = folder / RESULTS_NAME
            results.write_text(json.dumps(gpu_bench.result_json(result)))
            fresh, _ = read_results(results, rows)
        for c in todo:
            if c.name in fresh:
                measured[c.name] = fresh[c.name]
                cache.put("measurement", _measurement_key(c, flags, gpu_name, args), fresh[c.name].__dict__)
    return measured


def _measurement_key(c: Candidate, flags: CompileFlags, gpu_name: str, args) -> str:
    return digest(c.source, repr(flags), gpu_name, repr((args.rtol, args.atol, args.reps)))


def _gpu_name() -> str | None:
    """This machine's GPU and driver, or None without one."""
    from sirius.backend.gpu import gpu_unavailable_reason

    if gpu_unavailable_reason() is not None:
        return None
    proc = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                          capture_output=True, text=True)
    return proc.stdout.strip().splitlines()[0] if proc.returncode == 0 and proc.stdout.strip() else "a GPU"


# ------------------------------------------------------------------ the command

def execute(args: argparse.Namespace) -> int:
    program = input_file(args.program)
    if args.export is None and args.output is None:
        raise InputError("error: -o OUT.cu is required (unless --export DIR)")
    if args.output == "-":
        raise InputError("error: -o -: sirius tune writes the chosen program to a file (its table goes to standard "
                         "output)")
    output = output_file(args.output, "-o") if args.output else None
    if output is not None and output.resolve() == program.resolve():
        raise InputError("error: the output file must differ from the input program")
    report_file = output_file(args.report, "--report") if args.report else None
    results = input_file(args.import_file) if args.import_file else None
    if args.rtol < 0 or args.atol < 0 or args.reps < 1:
        raise InputError("error: --rtol and --atol must not be negative, --reps at least 1")
    flags = compile_flags_from_args(args)
    cache = TuneCache(enabled=not args.no_cache)
    gpu_name = None if (args.predicted or args.export or results) else _gpu_name()
    basis = "predicted" if gpu_name is None and results is None else "measured"
    decision_key = None
    if args.export is None and results is None:
        decision_key = digest(program.read_text(), repr(flags), args.entry, gpu_name or "predicted",
                              optimizer_fingerprint(), repr((args.rtol, args.atol, args.reps)))
        hit = cache.get("decision", decision_key)
        if hit is not None:
            _write(hit, program, output, report_file, cached=True)
            return 0
    toolchain = resolve_toolchain(args.clang, args.cuda_path)
    state = run_pipeline(OptimizeState(CompileJob(program, flags, toolchain), args.entry))
    candidates = generate_candidates(state)
    if args.export is not None:
        command = shlex.join(["sirius", "tune", str(program), "--export", args.export])
        export_candidates(candidates, program, flags, Path(args.export), command, runner=True)
        print(f"exported {len(candidates)} candidates of {program} to {args.export}; on a machine with a GPU run "
              f"`sh {Path(args.export) / 'run.sh'}`, then `sirius tune {program} --import "
              f"{Path(args.export) / RESULTS_NAME} -o OUT.cu`")
        return 0
    measured = None
    if results is not None:
        measured, gpu_name = read_results(results, candidates)
    elif gpu_name is not None:
        measured = _measure_here(candidates, program, flags, args, cache, gpu_name)
    chosen = choose(candidates, measured)
    decision = {"program": str(program), "basis": basis, "gpu": gpu_name,
                "why_predicted": None if basis == "measured" else
                ("--predicted" if args.predicted else "no CUDA GPU on this machine"),
                "chosen": chosen.name, "chosen_source": chosen.source, "candidates": _figures(candidates, measured),
                "notes": list(candidates[0].prediction.notes)}
    if decision_key is not None:
        cache.put("decision", decision_key, decision)
    _write(decision, program, output, report_file, cached=False)
    return 0


def _write(decision: dict, program: Path, output: Path | None, report_file: Path | None, cached: bool) -> None:
    decision = {**decision, "cached": cached}
    if output is not None:
        output.write_text(relocate_includes(decision["chosen_source"], program, output.resolve().parent)[0])
    if report_file is not None:
        report_file.write_text(json.dumps({k: v for k, v in decision.items() if k != "chosen_source"}, indent=2)
                               + "\n")
    print(_render(decision), end="")
