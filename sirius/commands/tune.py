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

Several programs are tuned each on its own, in one run: `-o DIR` then names a folder, where
each chosen program is written as DIR/NAME.cu, a table per program is printed in the order
given, and --report holds the decisions as a list under "programs". Each program is a task
(sirius/campaign.py): its pipeline run and candidates with their predictions, on the CPU; with
a GPU, its measurement is a second task, on a GPU. The tasks run one after another in this
process by default, on a local Dask cluster of N processes (--workers N: its first worker has
this machine's GPU) or on an existing cluster (--scheduler tcp://HOST:PORT: measurements go to
a worker started with --resources GPU=1, whose GPU is the one named). The choices and tables are
the same wherever the tasks ran. A program that cannot be optimized is reported and the others
are written (exit 2).

Results are cached under $SIRIUS_CACHE/tune (default .sirius-cache/tune): a candidate measured
on a GPU is not measured again, and the same program tuned again with the same options, GPU and
optimizer is answered from the cache without running the optimizer (--no-cache: neither). Each
decision is cached the moment it is made: a run over many programs stopped half-way, run
again, does only the programs left.

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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from sirius.analysis.frontend import CompileJob
from sirius.campaign import Engine, Session, Task, add_engine_options, engine_from_args, task_key
from sirius.commands.common import add_compile_flags, compile_flags_from_args, input_file, output_file
from sirius.commands.progress import item_progress
from sirius.core.config import CompileFlags, resolve_toolchain
from sirius.core.errors import InputError, SiriusError
from sirius.fusion.includes import relocate_includes
from sirius.pipeline import OptimizeState, run_pipeline
from sirius.tuning import gpu_bench
from sirius.tuning.cache import TuneCache, digest, optimizer_fingerprint
from sirius.tuning.candidates import (ORIGINAL, Candidate, candidate_from_json, candidate_json, generate_candidates,
                                     rank_by_prediction)

HELP = "choose the fastest fusion arrangement: measured on a GPU, else predicted by the cost model"

RESULTS_NAME = "results.json"
CANDIDATES_NAME = "tune.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("program", metavar="PROGRAM.cu", nargs="+",
                        help="CUDA source files (each one translation unit), tuned each on its own")
    parser.add_argument("-o", "--output", metavar="OUT.cu", help="where to write the chosen program (required "
                                                                 "unless --export); with several programs a folder, "
                                                                 "each chosen program written there as NAME.cu")
    parser.add_argument("--report", metavar="FILE.json", help="also write every candidate's figures and the choice "
                                                              "as JSON (several programs: a list under \"programs\")")
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
    parser.add_argument("--quiet", action="store_true",
                        help="show no progress (drawn only on a terminal anyway; the tables are printed)")
    add_engine_options(parser, default_workers=1)  # --workers, --scheduler
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


# ------------------------------------------------------------------ the tasks (sirius/campaign.py runs them)

@dataclass(frozen=True)
class TuneJob:
    """What a program's tasks need, as the command was given it: the program's path and the
    compile flags as typed, and ``cwd``, the folder the command ran in (a worker that runs
    elsewhere reads the paths from there)."""

    program: str
    cwd: str
    flags: CompileFlags
    entry: str
    clang: str | None
    cuda_path: str | None

    def path(self, given: str) -> Path:
        """``given`` for the process running the task: as typed where it runs in ``cwd`` (the
        names the emitted ``#line`` directives hold are then those of a run in one process),
        else from ``cwd``."""
        path = Path(given)
        if path.is_absolute() or Path.cwd().resolve() == Path(self.cwd).resolve():
            return path
        return Path(self.cwd) / path

    def resolved(self) -> tuple[Path, CompileFlags]:
        flags = replace(self.flags, include_dirs=tuple(str(self.path(d)) for d in self.flags.include_dirs))
        return self.path(self.program), flags

    def tool(self, given: str | None) -> str | None:
        return str(self.path(given)) if given and self.path(given).exists() else given


def _failure(err: SiriusError) -> dict:
    return {"error": str(err), "exit_code": err.exit_code}


def tune_candidates(job: TuneJob, progress: Callable[[str], None] | None = None) -> dict:
    """One program's first task (clang and the CPU, no GPU): the pipeline run, and every
    candidate with its prediction, as JSON (``{"candidates": [...]}``; ``{"error": ...}``
    for a program that cannot be optimized). ``progress(what)`` before each pipeline stage
    and candidate, where the task runs in the command's own process."""
    program, flags = job.resolved()
    try:
        toolchain = resolve_toolchain(job.tool(job.clang), job.tool(job.cuda_path))
        state = run_pipeline(OptimizeState(CompileJob(program, flags, toolchain), job.entry),
                             entering=progress and (lambda stage: progress(f"optimize: {stage}")))
        candidates = generate_candidates(state, making=progress and (lambda name: progress(f"candidate {name}")))
    except SiriusError as err:
        return _failure(err)
    return {"candidates": [candidate_json(c) for c in candidates]}


def measure_candidates(job: TuneJob, candidates: list[dict], settings: tuple,
                       progress: Callable[[str], None] | None = None) -> dict:
    """One program's second task, on a machine with a GPU: ``candidates`` (the original first:
    each row's ratios come from one run) checked against the original and timed there;
    ``{"measured": {name: Measured's fields}}``, or ``{"error": ...}``. ``settings``:
    (rtol, atol, reps)."""
    program, flags = job.resolved()
    rtol, atol, reps = settings
    rows = [candidate_from_json(c) for c in candidates]
    try:
        with tempfile.TemporaryDirectory(prefix="sirius-tune-") as tmp:
            folder = Path(tmp)
            export_candidates(rows, program, flags, folder, "sirius tune", runner=False)
            options = gpu_bench.BenchOptions(rtol, atol, reps, 3, torch=False, cuda_path=job.tool(job.cuda_path),
                                             command="sirius tune")
            result = gpu_bench.run_bench(folder, options, progress=progress)
            results = folder / RESULTS_NAME
            results.write_text(json.dumps(gpu_bench.result_json(result)))
            fresh, _ = read_results(results, rows)
    except SiriusError as err:
        return _failure(err)
    return {"measured": {name: m.__dict__ for name, m in fresh.items()}}


def worker_gpu_name() -> str | None:
    """The GPU of the worker that runs this task (a cluster's GPU worker), or None."""
    return _gpu_name()


# ------------------------------------------------------------------ the command

def _labels(programs: list[Path]) -> list[str]:
    """A short, distinct name per program (its stem; with its folder's where two share one)."""
    stems = [p.stem for p in programs]
    return [p.stem if stems.count(p.stem) == 1 else f"{p.resolve().parent.name}_{p.stem}" for p in programs]


def _outputs(args: argparse.Namespace, programs: list[Path], labels: list[str]) -> list[Path | None]:
    """Where each program's choice is written: -o OUT.cu for one program, -o DIR/LABEL.cu for
    several; a clear error (exit 2) before any work for a path that cannot be one."""
    if args.output is None:
        return [None] * len(programs)
    if args.output == "-":
        raise InputError("error: -o -: sirius tune writes the chosen program to a file (its table goes to standard "
                         "output)")
    if len(programs) == 1:
        output = output_file(args.output, "-o")
        if output is not None and output.resolve() == programs[0].resolve():
            raise InputError("error: the output file must differ from the input program")
        return [output]
    folder = Path(args.output)
    if folder.suffix == ".cu" or (folder.exists() and not folder.is_dir()):
        raise InputError(f"error: -o {args.output}: {len(programs)} programs are tuned: -o names a folder, where each "
                         "chosen program is written as NAME.cu")
    outputs = [folder / f"{label}.cu" for label in labels]
    for program, output in zip(programs, outputs):
        if output.resolve() == program.resolve():
            raise InputError(f"error: -o {args.output}: {output} would overwrite the program {program}; choose "
                             "another folder")
    return outputs


class _Tuning:
    """One run of the command over its programs: each program's candidates made by a task (in
    this process or on the engine's workers), then, with a GPU, measured by a task on a
    worker that declares one; each decision cached the moment it is made, so that a run
    stopped half-way, run again, does only the programs left."""

    def __init__(self, args: argparse.Namespace, programs: list[Path], labels: list[str], engine: Engine):
        self.args, self.programs, self.labels, self.engine = args, programs, labels, engine
        self.flags = compile_flags_from_args(args)
        self.cache = TuneCache(enabled=not args.no_cache)
        self.candidates: dict[int, list[Candidate]] = {}
        self.decisions: dict[int, dict] = {}
        self.errors: dict[int, SiriusError] = {}
        self.measured: dict[int, dict[str, Measured]] = {}
        self.decision_keys: dict[int, str] = {}  # programs whose decision is cached (not --export, --import)
        self.gpu_name: str | None = None  # the GPU the candidates are measured on; None: predicted
        self.why_predicted = "--predicted" if args.predicted else "no CUDA GPU on this machine"
        self.predicted = False  # a choice is made from the candidates alone, as they arrive
        self.basis = "predicted"

    def job(self, k: int) -> TuneJob:
        return TuneJob(str(self.programs[k]), os.getcwd(), self.flags, self.args.entry, self.args.clang,
                       self.args.cuda_path)

    def _line(self, k: int, what: str) -> str | None:
        """A program's line above the bar (on a terminal) or on standard error: only when several
        programs are tuned (one program's table says it all)."""
        if len(self.programs) == 1:
            return None
        return f"tune [{k + 1}/{len(self.programs)}] {self.programs[k]}: {what}"

    def make_candidates(self, session: Session, todo: list[int]) -> None:
        """Each program of ``todo``'s candidates, by a task each; chosen as they arrive where the
        choice is predicted. The programs decided already (from the cache) are counted first."""
        in_process = not self.engine.uses_dask
        with item_progress("tune", len(self.programs), self.args.quiet) as done:
            for k in sorted(self.decisions):
                done(self.labels[k], self._line(k, f"chosen {self.decisions[k]['chosen']} (from the cache)"))
            tasks = []
            for k in todo:
                label = self.labels[k]
                # a callback cannot travel to a worker: the stages and candidates show in this process only
                progress = (lambda what, label=label: done(f"{label}: {what}", None, 0)) if in_process else None
                key = task_key("tune candidates", str(self.programs[k]), k)
                tasks.append(Task(key, tune_candidates, (self.job(k), progress), label=label))

            def arrived(index: int, task: Task, result: dict, cached: bool) -> None:
                k = todo[index]
                if "error" in result:
                    self.errors[k] = SiriusError(result["error"], result["exit_code"])
                    done(self.labels[k], self._line(k, "error: " + result["error"].strip().splitlines()[0]))
                    return
                self.candidates[k] = [candidate_from_json(c) for c in result["candidates"]]
                what = f"{len(self.candidates[k])} candidates"
                if self.predicted:
                    self.decide(k, None)
                    what += f", chosen {self.decisions[k]['chosen']} (predicted)"
                done(self.labels[k], self._line(k, what))

            session.run(tasks, on_result=arrived)

    def measure(self, session: Session, todo: list[int]) -> None:
        """The candidates the cache does not know for this GPU measured by a task per program on a
        GPU worker (the original always with them: each row's ratios come from one run)."""
        tasks = []
        for k in todo:
            candidates, known = self.candidates[k], {}
            for c in candidates:
                hit = self.cache.get("measurement", _measurement_key(c, self.flags, self.gpu_name, self.args))
                if hit is not None:
                    known[c.name] = Measured(**hit)
            self.measured[k] = known
            left = [c for c in candidates if c.name not in known]
            if not left:
                continue
            rows = left if left[0].name == ORIGINAL else [candidates[0], *left]
            tasks.append((k, [candidate_json(c) for c in rows]))
        with item_progress("tune: measure", len(tasks), self.args.quiet) as done:
            in_process = not self.engine.uses_dask
            campaign = []
            for k, rows in tasks:
                label = self.labels[k]
                progress = (lambda text, label=label: done(label, text, 0)) if in_process else None
                settings = (self.args.rtol, self.args.atol, self.args.reps)
                campaign.append(Task(task_key("tune measure", str(self.programs[k]), k), measure_candidates,
                                     (self.job(k), rows, settings, progress), label=label, gpu=True))

            def arrived(index: int, task: Task, result: dict, cached: bool) -> None:
                k = tasks[index][0]
                if "error" in result:
                    self.errors[k] = SiriusError(result["error"], result["exit_code"])
                    done(self.labels[k], self._line(k, "error: " + result["error"].strip().splitlines()[0]))
                    return
                for c in self.candidates[k]:
                    if c.name in result["measured"] and c.name not in self.measured[k]:
                        m = self.measured[k][c.name] = Measured(**result["measured"][c.name])
                        self.cache.put("measurement", _measurement_key(c, self.flags, self.gpu_name, self.args),
                                       m.__dict__)
                self.decide(k, self.measured[k])
                done(self.labels[k], self._line(k, f"measured, chosen {self.decisions[k]['chosen']}"))

            session.run(campaign, on_result=arrived)
        for k in todo:  # every candidate known from the cache
            if k not in self.decisions and k not in self.errors:
                self.decide(k, self.measured[k])

    def decide(self, k: int, measured: dict[str, Measured] | None) -> None:
        candidates = self.candidates[k]
        try:
            chosen = choose(candidates, measured)
        except SiriusError as err:
            self.errors[k] = err
            return
        decision = {"program": str(self.programs[k]), "basis": self.basis, "gpu": self.gpu_name,
                    "why_predicted": self.why_predicted if self.basis == "predicted" else None,
                    "chosen": chosen.name, "chosen_source": chosen.source,
                    "candidates": _figures(candidates, measured), "notes": list(candidates[0].prediction.notes)}
        if self.decision_keys.get(k) is not None:
            self.cache.put("decision", self.decision_keys[k], decision)
        self.decisions[k] = decision


def execute(args: argparse.Namespace) -> int:
    programs = list(dict.fromkeys(input_file(p) for p in args.program))
    several = len(programs) > 1
    if several and (args.export is not None or args.import_file):
        raise InputError(f"error: --{'export' if args.export is not None else 'import'} takes one program "
                         f"({len(programs)} were given)")
    if args.export is None and args.output is None:
        raise InputError("error: -o OUT.cu is required (unless --export DIR)")
    labels = _labels(programs)
    outputs = _outputs(args, programs, labels)
    report_file = output_file(args.report, "--report") if args.report else None
    results = input_file(args.import_file) if args.import_file else None
    if args.rtol < 0 or args.atol < 0 or args.reps < 1:
        raise InputError("error: --rtol and --atol must not be negative, --reps at least 1")
    engine = engine_from_args(args)
    run = _Tuning(args, programs, labels, engine)
    choosing = args.export is None and results is None
    may_measure = choosing and not args.predicted
    local_gpu = _gpu_name() if may_measure and engine.scheduler is None else None
    with Session(engine, gpu=may_measure and (engine.scheduler is not None or local_gpu is not None)) as session:
        run.gpu_name = local_gpu
        if may_measure and engine.scheduler is not None:
            run.gpu_name = session.run([Task(task_key("tune gpu", os.getpid()), worker_gpu_name, (), "gpu name",
                                             gpu=True)])[0]
            run.why_predicted = f"the GPU worker of the cluster at {engine.scheduler} finds no CUDA GPU"
        run.predicted = choosing and run.gpu_name is None
        run.basis = "predicted" if run.gpu_name is None and results is None else "measured"
        todo = []
        for k, program in enumerate(programs):
            if choosing:
                run.decision_keys[k] = digest(program.read_text(), repr(run.flags), args.entry,
                                              run.gpu_name or "predicted", optimizer_fingerprint(),
                                              repr((args.rtol, args.atol, args.reps)))
                hit = run.cache.get("decision", run.decision_keys[k])
                if hit is not None:
                    run.decisions[k] = {**hit, "cached": True}
                    continue
            todo.append(k)
        run.make_candidates(session, todo)
        if args.export is not None:
            if run.errors:
                raise run.errors[0]
            return _export(args, programs[0], run.flags, run.candidates[0])
        if results is not None and 0 in run.candidates:
            measured, run.gpu_name = read_results(results, run.candidates[0])
            run.decide(0, measured)
        elif run.gpu_name is not None:
            run.measure(session, [k for k in todo if k in run.candidates])
    if not several:
        if run.errors:
            raise run.errors[0]
        _write(run.decisions[0], programs[0], outputs[0], report_file)
        return 0
    for k, program in enumerate(programs):
        if k in run.decisions:
            _write(run.decisions[k], program, outputs[k], None)
    for k in sorted(run.errors):
        print(f"sirius tune: {programs[k]}: {str(run.errors[k]).strip()}", file=sys.stderr)
    if report_file is not None:
        report_file.write_text(json.dumps({"programs": [
            _report(run.decisions[k]) if k in run.decisions else {"program": str(p), "error": str(run.errors[k])}
            for k, p in enumerate(programs)]}, indent=2) + "\n")
    if run.errors:
        return max(err.exit_code for err in run.errors.values())
    return 0


def _export(args: argparse.Namespace, program: Path, flags: CompileFlags, candidates: list[Candidate]) -> int:
    command = shlex.join(["sirius", "tune", str(program), "--export", args.export])
    export_candidates(candidates, program, flags, Path(args.export), command, runner=True)
    print(f"exported {len(candidates)} candidates of {program} to {args.export}; on a machine with a GPU run "
          f"`sh {Path(args.export) / 'run.sh'}`, then `sirius tune {program} --import "
          f"{Path(args.export) / RESULTS_NAME} -o OUT.cu`")
    return 0


def _report(decision: dict) -> dict:
    return {k: v for k, v in {**decision, "cached": decision.get("cached", False)}.items() if k != "chosen_source"}


def _write(decision: dict, program: Path, output: Path | None, report_file: Path | None) -> None:
    decision = {**decision, "cached": decision.get("cached", False)}
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(relocate_includes(decision["chosen_source"], program, output.resolve().parent)[0])
    if report_file is not None:
        report_file.write_text(json.dumps(_report(decision), indent=2) + "\n")
    print(_render(decision), end="")
