"""Optimize a CUDA program: fuse kernel launches that can be proven safe to merge.

Runs the pipeline of ``sirius/pipeline.py`` (analysis, UAR, schedule, code
generation), writes the optimized program, and reports the fused groups,
their arrangement, the barriers inserted, launch counts before and after,
and every fusion it refused with the reason.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sirius.analysis.frontend import CompileJob
from sirius.api import optimize_job
from sirius.analysis.repetition import format_repetition
from sirius.commands.common import add_compile_flags, compile_flags_from_args, input_file, output_file
from sirius.commands.progress import stage_progress
from sirius.core.config import resolve_toolchain
from sirius.core.errors import InputError
from sirius.fusion.includes import relocate_includes
from sirius.fusion.ir_text import format_program
from sirius.fusion.policies import DEFAULT, load_policy
from sirius.fusion.privatisation import format_copy_back
from sirius.fusion.schedule import ARRANGEMENTS, RefusalKind
from sirius.pipeline import OptimizeState, loops_fused, pass_names, rearrange, report, stage_names
from sirius.tuning.profitability import POLICIES

HELP = "fuse kernel launches and write the optimized program"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("program", metavar="PROGRAM.cu", help="CUDA source file (one translation unit)")
    parser.add_argument("-o", "--output", metavar="OUT.cu", required=True, help="where to write the optimized program ('-': standard output, the summary then goes to "
                             "standard error)")
    parser.add_argument("--report", metavar="FILE.json", help="also write the report as JSON")
    parser.add_argument("--arrangement", choices=ARRANGEMENTS, default="auto",
                        help="vertical: same thread runs fragments in order; horizontal: fragments in "
                             "different blocks; auto: both where legal (default)")
    parser.add_argument("--policy", metavar="NAME|module:Class", default=DEFAULT,
                        help="which legal merges are made: " + ", ".join(
                            f"{name} ({cls.summary})" for name, cls in POLICIES.items())
                        + f"; default {DEFAULT}; or a class of your own, module:Class (imported from the current "
                          "folder or sys.path) or path/to/file.py:Class (see sirius/fusion/policies.py)")
    add_cooperative_options(parser)
    parser.add_argument("--entry", default="main", help="host function whose launches are optimized (default main)")
    parser.add_argument("--emit-candidates", metavar="DIR",
                        help="also write every arrangement (auto, vertical, horizontal) as a complete program "
                             "to DIR, with manifest.json describing each")
    parser.add_argument("--passes", metavar="LIST", default="all",
                        help="kernel passes after fusion, comma-separated, in their fixed order: "
                             f"{', '.join(pass_names())}; 'all' (default) or 'none' (fusion alone)")
    parser.add_argument("--disable-pass", metavar="NAME", action="append", default=[],
                        help="switch one kernel pass off (repeatable)")
    parser.add_argument("--print-after", choices=stage_names(), metavar="STAGE",
                        help=f"print the state after a pipeline stage ({', '.join(stage_names())})")
    parser.add_argument("--verify-each", action="store_true",
                        help="check the fused-kernel IR's invariants after every stage and kernel pass that "
                             "changes it (a broken one is an internal error, exit 3; also SIRIUS_VERIFY_EACH=1)")
    parser.add_argument("--quiet", action="store_true",
                        help="print no summary and no progress (progress is drawn only on a terminal anyway)")
    add_compile_flags(parser)


def add_cooperative_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cooperative", action="store_true",
                        help="also join the groups of a region, past global dependences, into one cooperative "
                             "launch with grid barriers between them (falls back to the original launches where "
                             "the device cannot launch it cooperatively); and a loop body of copies of one launch "
                             "pattern (unrolled layers) as waves of (step, layer) cells, one cooperative launch per "
                             "anti-diagonal")
    parser.add_argument("--persistent", action="store_true",
                        help="with --cooperative: run the waves of cells as one launch, a grid barrier between "
                             "two waves, instead of one launch per wave; and a host loop whose body is not copies "
                             "of one pattern (a stencil's time loop, per-slice launches, a model's step loop with "
                             "attention or an output head) as one launch, its launches per step as phases")


def cooperative_options(args: argparse.Namespace) -> tuple[bool, bool]:
    """(cooperative, persistent) as the command line asks; --persistent alone is bad input."""
    if args.persistent and not args.cooperative:
        raise InputError("error: --persistent needs --cooperative (it changes how the waves of cells launch)")
    return args.cooperative, args.persistent


def add_fusion_options(parser: argparse.ArgumentParser) -> None:
    """The optimizer's settings, for the commands that run it on the way (check, bench)."""
    parser.add_argument("--arrangement", choices=ARRANGEMENTS, default="auto",
                        help="arrangement of the fused groups (as for optimize; default auto)")
    parser.add_argument("--entry", default="main", help="host function whose launches are optimized (default main)")
    parser.add_argument("--passes", metavar="LIST", default="all",
                        help=f"kernel passes after fusion ({', '.join(pass_names())}; 'all' or 'none')")
    parser.add_argument("--disable-pass", metavar="NAME", action="append", default=[],
                        help="switch one kernel pass off (repeatable)")
    add_cooperative_options(parser)


def selected_passes(passes: str, disabled: list[str]) -> tuple[str, ...]:
    """The kernel passes ``--passes`` and ``--disable-pass`` leave on; an unknown name is bad
    input (exit 2)."""
    known = pass_names()
    chosen = known if passes == "all" else [] if passes == "none" else [n.strip() for n in passes.split(",")]
    for name in [*chosen, *disabled]:
        if name not in known:
            raise InputError(f"error: unknown pass {name!r}; the kernel passes are {', '.join(known)} "
                             "(or --passes all / none)")
    return tuple(n for n in known if n in chosen and n not in disabled)


def _dump(name: str, st: OptimizeState) -> None:
    if name == "schedule":
        for g in st.schedule.groups:
            print(f"group {g.id} (region {g.region}, step {g.step}, {g.arrangement}): " + " | ".join(
                " -> ".join(f"S{i}" for i in lane.launches) for lane in g.lanes))
    elif name in ("lower", "barriers", "cell-block", "promises", "passes", "guards"):
        print(format_program(st.program), end="")
    elif name == "codegen":
        print(st.output)
    elif name == "host-loops":
        for line in _loop_lines(loops_fused(st.loop_fusion),
                                [(r.lines, r.reason) for r in st.loop_fusion.refusals]):
            print(line)
        if st.loop_fusion.chains:  # the text analysed from here on
            print(st.source, end="")
    elif name == "cell-waves":
        for plan in st.schedule.cell_waves.values():
            print(format_repetition(plan.repetition, st.model, plan.scratch.show), end="")
            print(format_copy_back(plan.scratch), end="")
            print(f"waves: {plan.waves} ({plan.wave_for}, layers {plan.lo} .. {plan.hi}); phases: " + " | ".join(
                " -> ".join(f"S{i}" for i in g.launches) for g in plan.groups) + f"; block {plan.threads} threads")
        for r in st.schedule.refusals:
            if r.kind is RefusalKind.NO_WAVES:
                print(r.reason)
    else:
        print(f"after {name}: {len(st.model.launches)} launches modelled")


def _loop_lines(fused, kept_apart) -> list[str]:
    """The sibling loops merged (their lines, the variables renamed) and kept apart (lines,
    reason), a line each."""
    return ([f"loops at lines {', '.join(map(str, f['lines']))} run as one loop"
             + "".join(f"; {r['name']} of the loop at line {r['line']} is written {r['now']} (the merged body "
                       f"declares or names another {r['name']} before it)" for r in f.get("renamed", ()))
             for f in fused]
            + [f"loops at lines {lines[0]} and {lines[1]} stay two loops: {reason}" for lines, reason in kept_apart])


def _launch_label(m: dict) -> str:
    """A launch of the report as the summary names it: ``scale (line 12)``, or
    ``scale (kernels.cu line 5)`` when it is written in an included file."""
    return f"{m['kernel']} ({Path(m['file']).name + ' ' if m.get('file') else ''}line {m['line']})"


def _render(rep: dict) -> str:
    policy = "" if rep.get("policy", DEFAULT) == DEFAULT else f", policy {rep['policy']}"
    lines = [f"optimized {rep['program']} (arrangement {rep['arrangement']}{policy})",
             (f"  launches per run: {rep['launches_before']} -> {rep['launches_after']}"
              if rep["launches_before"] is not None and rep["launches_after"] is not None else
              "  launches per run: not known when optimizing (a host loop around a launch runs a number of "
              "times the program computes at run time)")
             + ("" if rep.get("launches_counted_per", "run") == "run"
                else f" (per {rep['launches_counted_per']})"),
             f"  launch statements: {rep['launch_statements_before']} -> {rep['launch_statements_after']}",
             f"  distinct kernels: {rep['kernels_before']} -> {rep['kernels_after']}"]
    lines += ["  host " + line for line in _loop_lines(rep.get("loops_fused", ()),
                                                     [(k["lines"], k["reason"]) for k in rep.get("loops_kept_apart", ())])]
    for g in rep["groups"]:
        lanes = " | ".join(" -> ".join(_launch_label(m) for m in lane) for lane in g["lanes"])
        lines.append(f"  {g['kernel']} (region {g['region']}, step {g['step']}): {g['arrangement']}, "
                     f"{g['barriers_inserted']} barriers inserted: {lanes}")
        if g.get("across_syncs"):
            syncs = ", ".join(f"{c['call']} (line {c['line']})" for c in g["across_syncs"])
            lines.append(f"    {g['kernel']} runs across {syncs}: they only wait, and the host cannot observe "
                         "device work through them (no managed, mapped or host memory reaches a kernel, no kernel "
                         "prints); they stay where they are")
        if "restrict_kept" in g:
            lines.append(f"    {g['kernel']} keeps __restrict__ on {len(g['restrict_kept'])} of {g['pointer_params']} pointer "
                         "parameters" + (f"; launch bounds {g['launch_bounds']}" if g["launch_bounds"] else "")
                         + (f"; shared memory {g['static_shared']} + {g['dynamic_shared']} bytes, opted in"
                            if g["shared_opt_in"] else ""))
            if g["assumes"]:
                lines.append(f"    {g['kernel']} runs when the host values match those optimized for "
                             f"({len(g['assumes'])} checks: launch shapes, integer arguments, pointer distances; "
                             "see the report's \"assumes\"), else the original launches run")
            if g.get("domain"):
                lines.append(f"    {g['kernel']} is proven for {g['domain']}")
    for c in rep.get("cooperative", ()):
        phases = " | ".join(", ".join(_launch_label(m) for m in phase) for phase in c["phases"])
        lines.append(f"  {c['kernel']} (region {c['region']}): one cooperative launch, {len(c['phases'])} phases, "
                     f"{c['grid_barriers']} grid barriers: {phases}")
    for c in rep.get("cell_waves", ()):
        phases = " | ".join(", ".join(_launch_label(m) for m in phase) for phase in c["phases"])
        how = ("all waves in one cooperative launch, a grid barrier between two" if c["persistent"] else
               "one cooperative launch per anti-diagonal of (step, layer)")
        if c["layers"] == 1:  # the loop body read as one copy of itself: each step a wave of one cell
            between = ("no grid barrier between two steps (no step touches what another writes)"
                       if c.get("independent") else "a grid barrier between two steps")
            lines.append(f"  {c['kernel']}: the loop of {c['steps']} steps in one cooperative launch, its "
                         f"{c['launches_per_layer']} launches per step as phases, {between} "
                         f"and {c['grid_barriers_per_wave']} within each: {phases}")
            continue
        lines.append(f"  {c['kernel']}: waves of cells: the loop body is {c['layers']} copies (layers) of "
                     f"{c['launches_per_layer']} launches over {c['steps']} steps; {how}; {c['waves']} waves, "
                     f"{c['grid_barriers_per_wave']} grid barriers within each; private temporaries in "
                     f"{c['scratch_bytes']} bytes of scratch: {phases}")
    for r in rep["refused"]:
        who = ", ".join(_launch_label(m) for m in r["launches"])
        lines.append(f"  not fused: {who}: {r['reason']}")
    for pair in rep.get("apart_without_reason", ()):
        who = ", ".join(_launch_label(m) for m in pair)
        lines.append(f"  not fused: {who}: no reason recorded (an internal error of the optimizer: the output is "
                     "correct, the refusal is missing)")
    for p in rep["passes"]:
        if p["changes"]:
            shown = p["changes"][:3] + ([f"... and {len(p['changes']) - 3} more kernels (see the report)"]
                                        if len(p["changes"]) > 3 else [])
            lines.append(f"  pass {p['name']}: " + "; ".join(shown))
        elif not p["enabled"]:
            lines.append(f"  pass {p['name']}: switched off")
    for m in rep.get("includes_rewritten", ()):
        lines.append(f"  #include \"{m['written']}\" (line {m['line']}) now reads \"{m['now']}\": the same header, "
                     "seen from the output's folder")
    check = rep.get("promise_check")
    if check is not None:
        n = check["kernels_checked"]
        undone = check["violations_undone"]
        lines.append(f"  promise check: {n} fused kernel{'' if n == 1 else 's'}, "
                     + (f"{len(undone)} violations undone (internal errors, see the refusals)" if undone
                        else "no violations")
                     + ("" if check["ptxas"] else " (registers bounded: blocks of at most 256 threads)"
                        if check["registers_bounded"] else " (no ptxas: registers not checked)"))
    return "\n".join(lines) + "\n"


def _emit_candidates(state: OptimizeState, folder: Path) -> None:
    """One program per distinct arrangement, and a manifest naming what each is."""
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    manifest = {"program": str(state.job.path), "candidates": []}
    for arrangement in ARRANGEMENTS:
        st = state if arrangement == state.arrangement else rearrange(state, arrangement)
        name = files.get(st.output)
        if name is None:
            name = f"{state.job.path.stem}.{arrangement}.cu"
            files[st.output] = name
            (folder / name).write_text(relocate_includes(st.output, state.job.path, folder)[0])
        rep = report(st)
        manifest["candidates"].append({
            "arrangement": arrangement, "file": name, "launches_after": rep["launches_after"],
            "kernels_after": rep["kernels_after"], "groups": rep["groups"]})
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


def execute(args: argparse.Namespace) -> int:
    toolchain = resolve_toolchain(args.clang, args.cuda_path)
    program = input_file(args.program)
    output = output_file(args.output, "-o")
    report_file = output_file(args.report, "--report") if args.report else None
    if args.emit_candidates and Path(args.emit_candidates).exists() and not Path(args.emit_candidates).is_dir():
        raise InputError(f"error: --emit-candidates {args.emit_candidates}: not a folder")
    if output is not None and output.resolve() == program.resolve():
        raise InputError("error: the output file must differ from the input program")
    passes = selected_passes(args.passes, args.disable_pass)
    policy = load_policy(args.policy, POLICIES)
    job = CompileJob(program, compile_flags_from_args(args), toolchain)
    cooperative, persistent = cooperative_options(args)
    state = OptimizeState(job, args.entry, args.arrangement, passes, cooperative, policy, persistent)
    state.verify_each = state.verify_each or args.verify_each
    with stage_progress(f"optimize {program.name}", stage_names(), args.quiet) as entering:
        result = optimize_job(state, args.print_after, _dump, entering)
    state, rep = result.state, result.report
    if output is None:  # -o -: the program on standard output, the summary on standard error
        sys.stdout.write(state.output)
    else:
        text, moved = relocate_includes(state.output, program, output.resolve().parent)
        rep["includes_rewritten"] = [{"line": m.line, "written": m.written, "now": m.now} for m in moved]
        output.write_text(text)
    if args.emit_candidates:
        _emit_candidates(state, Path(args.emit_candidates))
    if args.report:
        text = json.dumps(rep, indent=2) + "\n"
        report_file.write_text(text) if report_file is not None else sys.stdout.write(text)
    if not args.quiet:
        print(_render(rep), end="", file=sys.stderr if output is None else sys.stdout)
    return 0
