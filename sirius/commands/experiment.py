"""Compare fusion policies over a set of programs: optimize, verify, tabulate, plot.

For each program (``--inputs``: .cu files, or folders whose .cu files are taken)
and each policy (``--policies``: shipped names, ``module:Class`` or
``path/to/file.py:Class``, comma-separated), the optimizer runs (the analysis once
per program, the schedule and what follows once per policy), the result is
verified against the original as ``sirius verify`` does (CPU backend unless
``--backend gpu``; a program text several policies produce is verified once), and
a row gathers:

  launches_before, launches_after   kernel launches of one run
  kernels_before, kernels_after     distinct kernels launched
  fused_kernels, barriers           fused kernels, and the barriers placed between fragments
  declined                          legal merges the policy declined
  sass_instructions                 static SASS instructions of the fused kernels (nvcc and
                                    cuobjdump; empty, with a note, without them or with --no-sass)
  predicted_*_us                    the cost model's time of one run's launches (H100
                                    constants), original and optimized, launched directly and
                                    as a CUDA Graph: a prediction, not a measurement

Writes OUT/experiment.csv, OUT/experiment.json (the rows with the command line,
commit, date and notes), OUT/experiment.md (the same as two Markdown tables, for
documentation) and OUT/experiment.png (grouped bars per program: launches left
and predicted speedup per policy); with ``--keep-programs`` each optimized
program too, as OUT/programs/PROGRAM/POLICY.cu. Progress goes to standard error.

Each program is one task (all its policies: the analysis is shared), run in this process
(the default, ``--workers 1``), on a local Dask cluster of N worker processes (``--workers
N``) or on an existing cluster (``--scheduler tcp://HOST:PORT``); with ``--backend gpu`` the
tasks go to workers that declare a GPU (``dask worker ADDRESS --resources GPU=1``). The
table is the same however the tasks ran, rows in program order. Each task's result is kept
in OUT/.sirius-tasks, keyed by the program's text, the policies, the settings and the
package's files: a run stopped half-way, run again, does only the programs left
(``--fresh``: all of them again).

Exit status: 0 when every result verified; 1 when one differs from its original
(the row says which); 2 on bad input (no programs, an unknown policy, a flag the
compiler rejects) or when a program could not be optimized or verified (the row
holds the error).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime
import inspect
import io
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from sirius.analysis.frontend import CompileJob
from sirius.campaign import (Engine, ResultCache, Task, add_engine_options, code_fingerprint, engine_from_args,
                             run_tasks, task_key)
from sirius.commands import verify
from sirius.commands.common import compile_flags_from_args, input_file
from sirius.commands.optimize import add_fusion_options, selected_passes
from sirius.commands.progress import item_progress
from sirius.core.config import DEFAULT_ARCH, resolve_toolchain
from sirius.core.errors import InputError, SiriusError
from sirius.fusion.includes import relocate_includes
from sirius.fusion.policies import SHIPPED, load_policy, policy_name
from sirius.tuning.profitability import POLICIES
from sirius.fusion.schedule import RefusalKind
from sirius.pipeline import OptimizeState, rearrange, report, run_pipeline

HELP = "compare fusion policies over programs: optimize, verify, write a table and a plot"

REPO = Path(__file__).resolve().parents[2]
FUSED_KERNEL = re.compile(r"sirius_(?:fused|wave|coop)_\d+")


@dataclass(frozen=True)
class Row:
    """One program under one policy. None: not known (see ``error`` and the notes)."""

    program: str
    policy: str
    verified: bool | None
    launches_before: int | None = None
    launches_after: int | None = None
    kernels_before: int | None = None
    kernels_after: int | None = None
    fused_kernels: int | None = None
    barriers: int | None = None
    declined: int | None = None
    sass_instructions: int | None = None
    predicted_original_us: float | None = None
    predicted_us: float | None = None
    predicted_original_graph_us: float | None = None
    predicted_graph_us: float | None = None
    optimize_seconds: float | None = None
    error: str | None = None


COLUMNS = tuple(f.name for f in fields(Row))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--policies", metavar="LIST", default=",".join(SHIPPED),
                        help="comma-separated policies: shipped names (" + ", ".join(POLICIES)
                             + "), module:Class or path/to/file.py:Class (default: " + ", ".join(SHIPPED) + ")")
    parser.add_argument("--inputs", metavar="DIR_OR_FILE", nargs="+", required=True,
                        help="CUDA programs, or folders whose *.cu files are taken (not recursively)")
    parser.add_argument("--out", metavar="DIR", required=True,
                        help="folder for experiment.csv, .json, .md and .png (and programs/ with --keep-programs)")
    parser.add_argument("--no-sass", action="store_true",
                        help="do not compile the fused kernels with nvcc to count SASS instructions")
    parser.add_argument("--no-plot", action="store_true", help="do not draw experiment.png")
    parser.add_argument("--keep-programs", action="store_true",
                        help="keep each optimized program as OUT/programs/PROGRAM/POLICY.cu")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress and no line per result (a bar is drawn only on a terminal; elsewhere one "
                             "line per result goes to standard error)")
    add_engine_options(parser, default_workers=1)  # --workers, --scheduler
    parser.add_argument("--fresh", action="store_true",
                        help=f"run every task again, replacing the results cached in OUT/{TASKS_FOLDER}")
    add_fusion_options(parser)  # --arrangement, --entry, --passes, --disable-pass
    verify.add_options(parser)  # --rtol, --atol, --backend, the compiler flags, --threads, --timeout


def input_programs(inputs: list[str]) -> list[Path]:
    """The programs ``--inputs`` names: files as given, folders' *.cu files in name order."""
    programs: list[Path] = []
    for given in inputs:
        path = Path(given)
        if path.is_dir():
            found = sorted(path.glob("*.cu"))
            if not found:
                raise InputError(f"error: --inputs {given}: no .cu files in this folder")
            programs += found
        else:
            programs.append(input_file(given))
    return list(dict.fromkeys(programs))


def load_policies(listed: str) -> list:
    policies = [load_policy(spec.strip(), POLICIES) for spec in listed.split(",") if spec.strip()]
    if not policies:
        raise InputError("error: --policies: no policy named")
    names = [policy_name(p) for p in policies]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(f"error: --policies: two policies are named {', '.join(twice)}; rows could not tell "
                         "them apart")
    return policies


def _labels(programs: list[Path]) -> dict[Path, str]:
    """A short, distinct name per program (the file name; its folder's too where two share one)."""
    stems = [p.stem for p in programs]
    return {p: p.stem if stems.count(p.stem) == 1 else f"{p.parent.name}_{p.stem}" for p in programs}


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _safe(name: str) -> str:
    return re.sub(r"[^\w.-]", "_", name)


def verify_program(args: argparse.Namespace, original: Path, optimized: Path) -> tuple[bool, str]:
    """(same results, what ``sirius verify`` said) for the two programs, with the run's options."""
    ns = argparse.Namespace(**vars(args))
    ns.original, ns.optimized = str(original), str(optimized)
    ns.program_args = []
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status = verify.execute(ns)
    text = printed.getvalue()
    result = next((line for line in reversed(text.splitlines()) if line.startswith("result:")), "no result line")
    return status == 0, result if status == 0 else text.rstrip()


def sass_tools_missing() -> str | None:
    """Why the fused kernels' SASS cannot be counted here (None: nvcc, cuobjdump and nvdisasm are there)."""
    from sirius.backend.gpu import find_nvcc
    from sirius.toolchain import find_tool

    try:
        find_nvcc()
        find_tool("cuobjdump")
        find_tool("nvdisasm")
    except SiriusError as err:
        return str(err).splitlines()[0]
    return None


def fused_sass_instructions(text: str, program: Path, flags) -> int:
    """Static SASS instructions of the fused kernels of the optimized program ``text``."""
    from sirius.toolchain import kernel_figures

    if not FUSED_KERNEL.search(text):
        return 0
    options = (*flags.preprocessor_args(), f"-I{program.resolve().parent}")
    figures = kernel_figures(text, program.name, arch=flags.arch, flags=options)
    return sum(f.instructions for name, f in figures.items() if FUSED_KERNEL.search(name))


def _commit() -> dict[str, object]:
    def git(*words: str) -> str | None:
        done = subprocess.run(["git", "-C", str(REPO), *words], capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else None

    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": git("rev-parse", "HEAD"), "worktree_clean": None if status is None else not status}


TASKS_FOLDER = ".sirius-tasks"  # under --out: one cached result per program (see sirius/campaign.py)
TASK_FORMAT = 1  # bumped when a task's result changes shape


@dataclass(frozen=True)
class ProgramJob:
    """What one task needs: a program (absolute path, and its name in the rows), the policies
    (as specs: a worker loads them itself), the command's settings (``vars(args)`` less what
    cannot travel) and whether the fused kernels' SASS is counted."""

    program: str
    display: str
    policies: tuple[str, ...]
    settings: dict
    count_sass: bool


def experiment_program(job: ProgramJob) -> dict:
    """One task of an experiment: one program under every policy.

    The unit is the program, not a (program, policy) pair: the first policy runs the whole
    pipeline and the others ``rearrange`` its state (the analysis, the costliest stage, runs
    once per program), and a program text two policies produce is verified and counted once.
    A pure function of ``job``: it writes only in a temporary folder, and returns the rows
    (as dicts), the seconds each took, the notes, and each policy's optimized text (None on
    an error) for ``--keep-programs``."""
    args = argparse.Namespace(**job.settings)
    run = _ProgramRun(args, job.count_sass)
    policies = [load_policy(spec, POLICIES) for spec in job.policies]
    with tempfile.TemporaryDirectory(prefix="sirius-experiment-") as tmp:
        return run.all_policies(Path(job.program), job.display, policies, Path(tmp))


class _ProgramRun:
    """One program under every policy, in the process that runs the task."""

    def __init__(self, args: argparse.Namespace, count_sass: bool):
        self.args, self.count_sass = args, count_sass
        self.flags = compile_flags_from_args(args)
        self.toolchain = resolve_toolchain(args.clang, args.cuda_path)
        self.passes = selected_passes(args.passes, args.disable_pass)
        self.notes: list[str] = []

    def all_policies(self, program: Path, display: str, policies: list, folder: Path) -> dict:
        base = None
        seen: dict[str, tuple[tuple[bool, str], int | None]] = {}  # program text -> (verification, SASS)
        rows, seconds, outputs = [], [], []
        for policy in policies:
            started = time.monotonic()
            output = None
            try:
                if base is None:
                    job = CompileJob(program, self.flags, self.toolchain)
                    state = base = run_pipeline(OptimizeState(job, self.args.entry, self.args.arrangement,
                                                              self.passes, policy=policy))
                else:
                    state = rearrange(base, self.args.arrangement, policy=policy)
                output = state.output
                row = self._measure(program, display, policy, state, folder, seen, time.monotonic() - started)
            except SiriusError as err:
                row = Row(display, policy_name(policy), None, error=str(err).strip())
            rows.append(asdict(row))
            seconds.append(round(time.monotonic() - started, 2))
            outputs.append(output)
        return {"rows": rows, "seconds": seconds, "notes": self.notes, "outputs": outputs}

    def _measure(self, program: Path, display: str, policy, state, folder: Path, seen, seconds: float) -> Row:
        from sirius.tuning.cost_model import predict_program

        rep = report(state)
        optimized = folder / f"{_safe(policy_name(policy))}.cu"
        optimized.write_text(relocate_includes(state.output, program, folder)[0])
        if state.output not in seen:  # a text another policy produced is verified and counted once
            seen[state.output] = (verify_program(self.args, program, optimized),
                                  self._sass(program, display, policy, state.output))
        (ok, said), sass = seen[state.output]
        try:
            original, fused = predict_program(state)
            predicted = (original.direct_us, fused.direct_us, original.graph_us, fused.graph_us)
        except Exception as err:  # the cost model is an estimate; a program it cannot price keeps its other figures
            predicted = (None,) * 4
            self.notes.append(f"{display} ({policy_name(policy)}): no prediction: {type(err).__name__}: {err}")
        return Row(display, policy_name(policy), ok,
                   launches_before=rep["launches_before"], launches_after=rep["launches_after"],
                   kernels_before=rep["kernels_before"], kernels_after=rep["kernels_after"],
                   fused_kernels=len(state.fused), barriers=sum(g["barriers_inserted"] for g in rep["groups"]),
                   declined=sum(r.kind is RefusalKind.POLICY for r in state.schedule.refusals),
                   sass_instructions=sass,
                   **{name: None if v is None else round(v, 3) for name, v in zip(
                       ("predicted_original_us", "predicted_us", "predicted_original_graph_us",
                        "predicted_graph_us"), predicted)},
                   optimize_seconds=round(seconds, 2), error=None if ok else said)

    def _sass(self, program: Path, display: str, policy, text: str) -> int | None:
        if not self.count_sass:
            return None
        try:
            return fused_sass_instructions(text, program, self.flags)
        except SiriusError as err:
            self.notes.append(f"{display} ({policy_name(policy)}): SASS not counted: {str(err).splitlines()[0]}")
            return None


# settings that do not change a row: left out of a task's settings and of its cache key
_NOT_SETTINGS = {"policies", "inputs", "out", "quiet", "no_plot", "keep_programs", "no_sass", "workers",
                 "scheduler", "fresh"}


def _policy_identity(spec: str, policy) -> list[str]:
    """What names a policy in a cache key: a shipped name, or the spec and its source file's text."""
    if spec in POLICIES:
        return [spec]
    try:
        source = Path(inspect.getsourcefile(type(policy)) or "").read_text()
    except (OSError, TypeError):
        source = ""
    return [spec, source]


def _portable_spec(spec: str) -> str:
    """``spec`` with a policy file's path made absolute (a worker may run in another folder)."""
    where, colon, attribute = spec.rpartition(":")
    if colon and (where.endswith(".py") or "/" in where or os.sep in where) and Path(where).is_file():
        return f"{Path(where).resolve()}:{attribute}"
    return spec


class _Experiment:
    """The rows of one run: a task per program (``experiment_program``), run by the engine
    ``--workers``/``--scheduler`` name, gathered in program order."""

    def __init__(self, args: argparse.Namespace, policies: list, specs: list[str], programs: list[Path],
                 out: Path, engine: Engine):
        self.args, self.policies, self.specs, self.programs, self.out = args, policies, specs, programs, out
        self.engine = engine
        self.flags = compile_flags_from_args(args)
        self.notes: list[str] = []
        self.sass_missing = "switched off (--no-sass)" if args.no_sass else sass_tools_missing()
        if self.sass_missing:
            self.notes.append(f"static SASS instructions not counted: {self.sass_missing}")
        self.rows: list[Row] = []
        self.cached = 0

    def tasks(self) -> list[Task]:
        settings = {k: v for k, v in vars(self.args).items() if not k.startswith("_") and k not in _NOT_SETTINGS}
        # folders made absolute: a worker may run in another folder
        settings["include_dirs"] = [str(Path(d).resolve()) for d in settings.get("include_dirs") or []]
        for name in ("clang", "cuda_path"):
            if settings.get(name) and Path(settings[name]).exists():
                settings[name] = str(Path(settings[name]).resolve())
        specs = tuple(_portable_spec(s) for s in self.specs)
        identity = [_policy_identity(s, p) for s, p in zip(self.specs, self.policies)]
        labels = _labels(self.programs)
        tasks = []
        for program in self.programs:
            job = ProgramJob(str(program.resolve()), _display(program), specs, settings, not self.sass_missing)
            key = task_key("experiment", TASK_FORMAT, code_fingerprint(), program.read_text(), job.display,
                           identity, settings, job.count_sass)
            tasks.append(Task(key, experiment_program, (job,), label=labels[program],
                              gpu=self.args.backend == "gpu"))
        return tasks

    def run(self) -> list[Row]:
        tasks = self.tasks()
        total = len(self.programs) * len(self.policies)
        k = 0
        with item_progress("experiment", total, self.args.quiet) as done:
            def arrived(index: int, task: Task, result: dict, cached: bool) -> None:
                nonlocal k
                self.cached += cached
                for row, seconds in zip(result["rows"], result["seconds"]):
                    k += 1
                    row = Row(**row)
                    line = self._line(k, total, row, seconds) + (" (cached)" if cached else "")
                    done(f"{row.program} {row.policy}", line)

            cache = ResultCache(self.out / TASKS_FOLDER, read=not self.args.fresh)
            # the bar names the program being worked on (in this process; on Dask the last result)
            results = run_tasks(tasks, self.engine, cache, arrived,
                                on_start=lambda task: done(f"{task.label} ...", advance=0))
        for program, task, result in zip(self.programs, tasks, results):
            self.rows += [Row(**row) for row in result["rows"]]
            self.notes += result["notes"]
            if self.args.keep_programs:
                self._keep(program, task.label, result["outputs"])
        return self.rows

    def _keep(self, program: Path, label: str, outputs: list[str | None]) -> None:
        folder = self.out / "programs" / label
        folder.mkdir(parents=True, exist_ok=True)
        for policy, text in zip(self.policies, outputs):
            if text is not None:
                (folder / f"{_safe(policy_name(policy))}.cu").write_text(relocate_includes(text, program, folder)[0])

    @staticmethod
    def _line(k: int, total: int, row: Row, seconds: float) -> str:
        if row.error and row.verified is None:
            what = f"error: {row.error.splitlines()[0]}"
        else:
            what = (f"{row.launches_before} -> {row.launches_after} launches, "
                    + ("verified" if row.verified else "DIFFERENT from the original"))
        return f"experiment [{k}/{total}] {row.program} {row.policy}: {what} ({seconds:.1f} s)"


def write_table(rows: list[Row], out: Path) -> None:
    with (out / "experiment.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if v is None else v for k, v in asdict(row).items()})


def _cell(row: Row | None, text) -> str:
    if row is None:
        return ""
    if row.verified is None:
        return "error"
    return text(row) + ("" if row.verified else " (DIFFERENT)")


def _us(value: float | None) -> str:
    return "?" if value is None else f"{value:.1f} us" if value < 1e4 else f"{value / 1e3:.1f} ms"


def write_markdown(rows: list[Row], policies: list[str], out: Path, command: str) -> None:
    """Two tables, a row per program and a column per policy: launches per run and the
    predicted time of one run; fused kernels, barriers placed and SASS instructions."""
    programs = list(dict.fromkeys(r.program for r in rows))
    by = {(r.program, r.policy): r for r in rows}
    first = {p: next(r for r in rows if r.program == p) for p in programs}
    head = "| program | " + " | ".join(policies) + " |"
    rule = "|---|" + "---|" * len(policies)
    lines = [f"Made by `{command}`.", "",
             "Launches per run after fusion, and the cost model's predicted time of one run's launches "
             "(H100 constants, launched directly), beside the original's:", "",
             head.replace("| program |", "| program | original |"), rule + "---|"]
    for p in programs:
        o = first[p]
        lines.append(f"| {Path(p).stem} | {o.launches_before} · {_us(o.predicted_original_us)} | " + " | ".join(
            _cell(by.get((p, n)), lambda r: f"{r.launches_after} · {_us(r.predicted_us)}") for n in policies) + " |")
    lines += ["", "Fused kernels / barriers placed between fragments / static SASS instructions of the fused "
              "kernels (nvcc -arch=sm_90; ? when not counted):", "", head, rule]
    for p in programs:
        lines.append(f"| {Path(p).stem} | " + " | ".join(_cell(by.get((p, n)), lambda r: (
            f"{r.fused_kernels} / {r.barriers} / {'?' if r.sass_instructions is None else r.sass_instructions}"))
            for n in policies) + " |")
    (out / "experiment.md").write_text("\n".join(lines) + "\n")


def write_plot(rows: list[Row], policies: list[str], out: Path) -> str | None:
    """Grouped bars per program, one bar per policy: launches per run left (after / before)
    and the predicted speedup (original / optimized, direct launches). None, or why no plot."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:
        return f"no plot: matplotlib is not installed ({err})"
    programs = list(dict.fromkeys(r.program for r in rows))
    by = {(r.program, r.policy): r for r in rows}

    def ratio(r: Row | None, top: str, bottom: str) -> float:
        a, b = (getattr(r, top), getattr(r, bottom)) if r is not None else (None, None)
        return a / b if a is not None and b else 0.0

    panels = (("launches per run left (after / before)", lambda r: ratio(r, "launches_after", "launches_before")),
              ("predicted speedup (cost model, direct launches)",
               lambda r: ratio(r, "predicted_original_us", "predicted_us")))
    width = 0.8 / max(len(policies), 1)
    fig, axes = plt.subplots(len(panels), 1, figsize=(min(14.0, 3.0 + 1.1 * len(programs)), 6.5), sharex=True)
    for ax, (title, value) in zip(axes, panels):
        for p, policy in enumerate(policies):
            xs = [x + (p - (len(policies) - 1) / 2) * width for x in range(len(programs))]
            ax.bar(xs, [value(by.get((prog, policy))) for prog in programs], width, label=policy)
        ax.set_title(title, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    axes[1].axhline(1.0, color="grey", linewidth=0.8)
    axes[-1].set_xticks(range(len(programs)))
    axes[-1].set_xticklabels([Path(p).stem for p in programs], rotation=30, ha="right", fontsize=8)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(policies), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(out / "experiment.png", dpi=120)
    plt.close(fig)
    return None


def command_line(args: argparse.Namespace) -> str:
    """The command that runs this experiment again (the options that change its rows)."""
    words = ["sirius", "experiment", "--policies", args.policies, "--inputs", *args.inputs, "--out", args.out]
    words += [f"-D{d}" for d in args.defines] + [f"-I{d}" for d in args.include_dirs]
    words += [f"-std={args.std}"] * bool(args.std) + [f"--arch={args.arch}"] * (args.arch != DEFAULT_ARCH)
    words += [f"--arrangement={args.arrangement}"] * (args.arrangement != "auto")
    words += [f"--passes={args.passes}"] * (args.passes != "all") + [f"--disable-pass={n}" for n in args.disable_pass]
    words += [f"--backend={args.backend}"] * (args.backend != "cpu") + ["--no-sass"] * args.no_sass
    words += ["--keep-programs"] * args.keep_programs
    words += [f"--rtol={args.rtol}"] * bool(args.rtol) + [f"--atol={args.atol}"] * bool(args.atol)
    return " ".join(shlex.quote(w) for w in words)


def execute(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InputError(f"error: --out {args.out}: not a folder")
    engine = engine_from_args(args)
    specs = [spec.strip() for spec in args.policies.split(",") if spec.strip()]
    policies = load_policies(args.policies)
    programs = input_programs(args.inputs)
    out.mkdir(parents=True, exist_ok=True)
    experiment = _Experiment(args, policies, specs, programs, out, engine)
    rows = experiment.run()
    names = [policy_name(p) for p in policies]
    write_table(rows, out)
    write_markdown(rows, names, out, command_line(args))
    if not args.no_plot:
        why = write_plot(rows, names, out)
        if why:
            experiment.notes.append(why)
    (out / "experiment.json").write_text(json.dumps({
        "command": command_line(args), **_commit(), "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "policies": [{"name": policy_name(p), "summary": getattr(p, "summary", "")} for p in policies],
        "programs": [_display(p) for p in programs], "defines": list(experiment.flags.defines),
        "backend": args.backend, "columns": list(COLUMNS), "notes": experiment.notes,
        "rows": [asdict(r) for r in rows]}, indent=1) + "\n")
    for note in experiment.notes:
        print(f"note: {note}", file=sys.stderr)
    differ = [r for r in rows if r.verified is False]
    failed = [r for r in rows if r.verified is None]
    cached = f" ({experiment.cached} of {len(programs)} programs from {out}/{TASKS_FOLDER})" if experiment.cached else ""
    where = f"from {out}/{TASKS_FOLDER}" if experiment.cached == len(programs) else f"ran in {engine.describe()}{cached}"
    print(f"experiment: {len(rows)} results in {out}/experiment.csv: {len(rows) - len(differ) - len(failed)} verified, "
          f"{len(differ)} different, {len(failed)} errors; {where}", file=sys.stderr)
    return 1 if differ else 2 if failed else 0
