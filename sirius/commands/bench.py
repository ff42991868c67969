"""Measure what fusion is worth on a GPU, against honest baselines.

For each program (default: cuda_inputs/*.cu and cuda_inputs/models/*.cu), on one GPU in one
run: the original and the optimized program, each with its launches replayed directly and as
a CUDA Graph (the timing harness, sirius/backend/harness.py; times are medians in microseconds
per run of the program, summed over its launch sequences), and a correctness check of the
optimized program against the original on the same GPU, in a run of its own without the
harness (every copy back to the host, the printed output and the exit status: bit-exact, or
within --rtol/--atol).

Columns:
  launches                  kernel launches per run, before -> after (the optimizer's report)
  orig direct, orig graph   the original program, launches issued one by one / as a CUDA Graph
  opt direct, opt graph     the optimized program, the same two ways
  speedup direct            orig direct / opt direct (above 1: the optimized program is faster)
  speedup graph             orig graph / opt graph
  opt direct vs orig graph  orig graph / opt direct: the honest baseline. Capturing the original
                            into a CUDA Graph also removes most launch overhead, without changing
                            a kernel; fusion is worth its risk where it beats that
  result                    equal, WRONG (the results differ: no speedup is claimed for the row)
                            or ERROR (it could not be optimized, built or run)
  predicted direct          the cost model's speedup direct (sirius/tuning/cost_model.py), to set
                            beside the measured one; a prediction, never a measurement
  floor                     the roofline floor: the compulsory DRAM bytes of the program (the
                            cost model, sirius.tuning.cost_model) over the DRAM bandwidth measured
                            by a large device-to-device copy (sirius/runtime/harness/bandwidth.cu)
  of floor                  floor / the optimized program's best time: how close it comes

For the BERT and LSTM models, PyTorch equivalents at the same sizes (eager, CUDA Graph replay,
torch.compile) are timed in extra rows when torch is importable and sees the GPU.

Two phases, because the optimizer needs clang-22 and the measurement a GPU:
  sirius bench --prepare DIR [PROGRAMS]  optimize each program into DIR (the original copied, the
                                         optimized program, the report), with DIR/manifest.json
  sirius bench --run DIR                 build, verify and time what DIR holds (needs only Python 3,
                                         nvcc and a GPU; on a machine without sirius's dependencies:
                                         PYTHONPATH=. python3 -m sirius.tuning.gpu_bench DIR)
  sirius bench [PROGRAMS]                both, in a temporary folder (or --work DIR)

Output: the table on standard output; --json FILE with the GPU, driver, CUDA runtime, commit,
date, command line and every row; --plot FILE.png, grouped bars of the four times and the
speedups per program (skipped with a note when matplotlib is not importable).

Exit status: 0 when every program gives the original's results and was measured; 1 when one
is WRONG; 2 on bad input (a missing program or manifest), no GPU, or a program that cannot be
optimized, built or run.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
import time
from pathlib import Path

from sirius.analysis.frontend import CompileJob
from sirius.commands.common import add_compile_flags, compile_flags_from_args, input_file
from sirius.commands.optimize import add_fusion_options, cooperative_options, selected_passes
from sirius.commands.progress import item_progress
from sirius.core.config import CompileFlags, resolve_toolchain
from sirius.core.errors import InputError, SiriusError
from sirius.fusion.includes import relocate_includes
from sirius.pipeline import OptimizeState, report, run_pipeline
from sirius.tuning import gpu_bench
from sirius.tuning.cost_model import compulsory_bytes, predict_program
from sirius.tuning.gpu_bench import BenchProgram

HELP = "time original and optimized programs on a GPU (direct, CUDA Graph), check them, roofline"

# The TVM models with a PyTorch equivalent: manifest key prefix -> torch_baselines model
TORCH_MODELS = {"bert": "bert", "lstm": "lstm"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("programs", nargs="*", metavar="PROGRAM.cu",
                        help="CUDA programs (default: cuda_inputs/*.cu and cuda_inputs/models/*.cu)")
    phase = parser.add_mutually_exclusive_group()
    phase.add_argument("--prepare", metavar="DIR", help="only optimize into DIR and write DIR/manifest.json (no GPU "
                                                        "needed)")
    phase.add_argument("--run", metavar="DIR", help="only build, verify and time what --prepare wrote to DIR")
    phase.add_argument("--work", metavar="DIR", help="both phases, keeping the prepared programs in DIR (default: "
                                                     "a temporary folder)")
    parser.add_argument("--quiet", action="store_true",
                        help="show no progress of the optimizing phase and no line per program (progress is drawn "
                             "only on a terminal; elsewhere a line per program goes to standard error)")
    gpu_bench.add_run_options(parser)
    add_fusion_options(parser)
    add_compile_flags(parser)


def default_programs() -> list[Path]:
    corpus = gpu_bench.REPO / "cuda_inputs"
    return sorted(corpus.glob("*.cu")) + sorted((corpus / "models").glob("*.cu"))


def program_names(programs: list[Path]) -> list[str]:
    """Each program's name in the table: its stem, or folder/stem where two stems collide
    (cuda_inputs/lstm and models/lstm)."""
    stems = [p.stem for p in programs]
    return [p.stem if stems.count(p.stem) == 1 else f"{p.resolve().parent.name}/{p.stem}" for p in programs]


def torch_equivalent(program: Path, defines: tuple[str, ...]) -> dict | None:
    """The model and sizes of a TVM model program with a PyTorch equivalent, from the corpus
    manifest beside it (``cuda_inputs/models/manifest.json``); None for other programs."""
    corpus = program.resolve().parent / "manifest.json"
    if not corpus.is_file():
        return None
    try:
        models = json.loads(corpus.read_text()).get("models", {})
    except (ValueError, AttributeError):
        return None
    small = any(d == "SIRIUS_SMALL" or d.startswith("SIRIUS_SMALL=") for d in defines)
    for key, entry in models.items():
        kind = next((m for prefix, m in TORCH_MODELS.items() if key.startswith(prefix)), None)
        if kind is None or entry.get("file") != program.name:
            continue
        sizes = entry.get("configs", {}).get("small" if small else "full", {}).get("sizes")
        return {"model": kind, "program": key, "sizes": sizes} if sizes else None
    return None


def compulsory_bytes_of(model) -> tuple[int | None, str]:
    """The cost model's compulsory DRAM bytes of the original program, or None and why not."""
    value = compulsory_bytes(model)
    return (int(value), "") if value is not None else (None, "the cost model cannot bound its DRAM traffic")


def predicted_times(state) -> dict:
    """The cost model's times of the original and the optimized program (microseconds per run)."""
    original, optimized = predict_program(state)
    return {"original_direct_us": round(original.direct_us, 2), "original_graph_us": round(original.graph_us, 2),
            "optimized_direct_us": round(optimized.direct_us, 2), "optimized_graph_us": round(optimized.graph_us, 2)}


def prepare(programs: list[Path], folder: Path, args: argparse.Namespace, flags: CompileFlags,
            command: str) -> int:
    """Optimize each program into ``folder`` and write the manifest; 0, or 2 when one could not
    be optimized (its entry then carries the error, and --run shows an ERROR row)."""
    if folder.exists() and not folder.is_dir():
        raise InputError(f"error: {folder}: not a folder")
    folder.mkdir(parents=True, exist_ok=True)
    toolchain = resolve_toolchain(args.clang, args.cuda_path)
    passes = selected_passes(args.passes, args.disable_pass)
    cooperative, persistent = cooperative_options(args)
    include_dirs = tuple(Path(d).resolve() for d in flags.include_dirs)
    entries, status = [], 0
    quiet = getattr(args, "quiet", False)
    with item_progress("bench --prepare", len(programs), quiet) as done:
        for program, name in zip(programs, program_names(programs)):
            stem = name.replace("/", "__")
            original, optimized = folder / f"{stem}.orig.cu", folder / f"{stem}.opt.cu"
            common = dict(name=name, source=str(program), defines=flags.defines, include_dirs=include_dirs,
                          torch_equivalent=torch_equivalent(program, flags.defines))
            start = time.perf_counter()
            try:
                state = run_pipeline(OptimizeState(CompileJob(program, flags, toolchain), args.entry,
                                                   args.arrangement, passes, cooperative, persistent=persistent),
                                     entering=lambda stage, name=name: done(f"{name}: {stage}", None, 0))
                rep = report(state)
            except SiriusError as err:
                line = f"{name}: optimize FAILED: {err}"
                done(name, line)
                if quiet:  # a failure is said even so
                    print(line, file=sys.stderr, flush=True)
                entries.append(BenchProgram(original=None, optimized=None, error=f"optimize failed: {err}", **common))
                status = 2
                continue
            original.write_text(relocate_includes(program.read_text(), program, folder)[0])
            text, moved = relocate_includes(state.output, program, folder)
            rep["includes_rewritten"] = [{"line": m.line, "written": m.written, "now": m.now} for m in moved]
            optimized.write_text(text)
            (folder / f"{stem}.report.json").write_text(json.dumps(rep, indent=2) + "\n")
            floor_bytes, note = compulsory_bytes_of(state.model)
            entries.append(BenchProgram(original=original, optimized=optimized,
                                        launches_before=rep["launches_before"], launches_after=rep["launches_after"],
                                        compulsory_bytes=floor_bytes, compulsory_bytes_note=note,
                                        predicted=predicted_times(state), **common))
            done(name, f"{name}: {rep['launches_before']} -> {rep['launches_after']} launches, "
                       f"{time.perf_counter() - start:.1f} s")
    manifest = gpu_bench.write_manifest(folder, entries, arch=flags.arch, std=flags.std, command=command)
    print(f"wrote {manifest} ({len(entries)} programs)", file=sys.stderr)
    return status


def execute(args: argparse.Namespace) -> int:
    command = shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]])
    if args.run is not None:
        if args.programs:
            raise InputError("error: --run takes its programs from DIR/manifest.json; give no PROGRAM.cu")
        options = gpu_bench.options_from_args(args, command)
        json_file, plot_file = gpu_bench.output_path(args.json, "--json"), gpu_bench.output_path(args.plot, "--plot")
        result = gpu_bench.run_bench(Path(args.run), options)
        gpu_bench.write_outputs(result, json_file, plot_file)
        return result.exit_status
    programs = [input_file(p) for p in args.programs] or default_programs()
    if not programs:
        raise InputError(f"error: no programs given and none in {gpu_bench.REPO / 'cuda_inputs'}")
    flags = compile_flags_from_args(args)
    if args.prepare is not None:
        if args.json or args.plot:
            raise InputError("error: --json and --plot belong to the run: use them with --run DIR or without --prepare")
        return prepare(programs, Path(args.prepare), args, flags, command)
    options = gpu_bench.options_from_args(args, command)
    json_file, plot_file = gpu_bench.output_path(args.json, "--json"), gpu_bench.output_path(args.plot, "--plot")
    gpu_bench.require_gpu()  # before minutes of optimizing that nothing could measure
    with tempfile.TemporaryDirectory(prefix="sirius-bench-") as tmp:
        folder = Path(args.work) if args.work else Path(tmp)
        prepare(programs, folder, args, flags, command)  # a program it cannot optimize is an ERROR row
        result = gpu_bench.run_bench(folder, options)
    gpu_bench.write_outputs(result, json_file, plot_file)
    return result.exit_status
