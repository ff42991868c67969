"""The GPU half of ``sirius bench``: time original and optimized programs, check them, render.

``run_bench(folder, options)`` reads the manifest ``sirius bench --prepare`` wrote and, for each
program, on one GPU:

1. builds the original and the optimized program as ``sirius verify --backend gpu`` does
   (``sirius.backend.gpu.build_program``: every copy to the host dumped to ``SIRIUS_DUMP``), runs
   both once without the harness and compares the copies, printed output and exit status
   (bit-exact, or within ``rtol``/``atol``): the harness re-runs kernels, which changes results,
   so correctness is judged in a run of its own;
2. builds both with ``nvcc -O2 -std=c++17 -arch=ARCH -cudart shared`` and runs each with the timing
   harness preloaded (``sirius.backend.harness``): the launches of a run replayed directly and as a
   CUDA Graph, the medians summed over the run's segments;
3. derives the row: speedups (baseline time / optimized time, so above 1 is faster), claimed only
   when the results agree; and the roofline floor, compulsory DRAM bytes / measured bandwidth
   (``sirius/runtime/harness/bandwidth.cu``), with the fraction of it the optimized program
   reaches (floor / its best time).

For the BERT and LSTM models, PyTorch equivalents at the same sizes add rows
(``sirius.tuning.torch_baselines``) when torch is importable and sees a GPU.

Nothing here needs islpy, llvmlite or libclang: the GPU machine may have only Python 3, nvcc and
the GPU. Run it there as ``PYTHONPATH=. python3 -m sirius.tuning.gpu_bench DIR [--json FILE]
[--plot FILE.png]``. Exit status: 0 when every program agrees and was measured, 1 when one gives
other results (WRONG; a row whose results differ only by where nvcc contracted a multiply and an
add, bit-exact when both are built with -fmad=false, is FMA and does not fail), 2 when there is
no GPU, the manifest is missing, or a program cannot be built or run.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import hashlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from sirius.backend import gpu
from sirius.backend.compare import Report, compare_runs, read_dump
from sirius.core.errors import InputError, SiriusError
from sirius.fusion import region_paths
from sirius.tuning.torch_baselines import TorchRow

MANIFEST_NAME = "manifest.json"
MANIFEST_VERSION = 1
REPO = Path(__file__).resolve().parents[2]
BANDWIDTH_SOURCE = Path(__file__).resolve().parent.parent / "runtime" / "harness" / "bandwidth.cu"
DEFAULT_STD = "c++17"


# ------------------------------------------------------------------ the manifest


@dataclass(frozen=True)
class BenchProgram:
    """One program as the prepare phase left it; paths are absolute once read."""

    name: str
    source: str  # where the original came from, for the reader
    original: Path | None
    optimized: Path | None
    defines: tuple[str, ...] = ()
    include_dirs: tuple[Path, ...] = ()
    launches_before: int | None = None
    launches_after: int | None = None
    compulsory_bytes: int | None = None
    compulsory_bytes_note: str = ""  # why there is no figure
    torch_equivalent: dict | None = None  # {"model": "bert"|"lstm", "sizes": {...}}
    error: str | None = None  # the prepare phase could not optimize it
    predicted: dict | None = None  # the cost model's {original,optimized}_{direct,graph}_us


@dataclass(frozen=True)
class Manifest:
    folder: Path
    arch: str
    std: str
    commit: str | None
    programs: tuple[BenchProgram, ...]


def manifest_entry(program: BenchProgram, folder: Path) -> dict:
    """``program`` as the manifest stores it: files relative to ``folder``, so the folder can be
    carried to another machine."""
    def rel(p: Path | None) -> str | None:
        return None if p is None else os.path.relpath(p, folder)

    return {"name": program.name, "source": program.source, "original": rel(program.original),
            "optimized": rel(program.optimized), "defines": list(program.defines),
            "include_dirs": [rel(d) for d in program.include_dirs],
            "launches_before": program.launches_before, "launches_after": program.launches_after,
            "compulsory_bytes": program.compulsory_bytes, "compulsory_bytes_note": program.compulsory_bytes_note,
            "torch_equivalent": program.torch_equivalent, "error": program.error, "predicted": program.predicted}


def write_manifest(folder: Path, programs: Sequence[BenchProgram], *, arch: str, std: str | None,
                   command: str) -> Path:
    path = folder / MANIFEST_NAME
    path.write_text(json.dumps({
        "version": MANIFEST_VERSION, "arch": arch, "std": std or DEFAULT_STD, "commit": git_commit(),
        "date": _now(), "command": command, "programs": [manifest_entry(p, folder) for p in programs],
    }, indent=1) + "\n")
    return path


def read_manifest(folder: Path) -> Manifest:
    """The manifest in ``folder``; a missing or malformed one, or a file it names that is not
    there, is bad input (exit 2)."""
    path = folder / MANIFEST_NAME
    if not path.is_file():
        raise InputError(f"error: {path} not found: run `sirius bench --prepare {folder}` first")
    try:
        data = json.loads(path.read_text())
        programs = tuple(_program_from_entry(e, folder) for e in data["programs"])
        arch, std, commit = data.get("arch", "sm_90"), data.get("std", DEFAULT_STD), data.get("commit")
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise InputError(f"error: {path} is not a bench manifest ({type(err).__name__}: {err})") from None
    for program in programs:
        for f in (program.original, program.optimized):
            if program.error is None and (f is None or not f.is_file()):
                raise InputError(f"error: {path}: {program.name}: {f} not found (the manifest names it)")
    return Manifest(folder, arch, std, commit, programs)


def _program_from_entry(e: dict, folder: Path) -> BenchProgram:
    def here(p: str | None) -> Path | None:
        return None if p is None else (folder / p).resolve()

    return BenchProgram(
        e["name"], e.get("source", e["name"]), here(e.get("original")), here(e.get("optimized")),
        tuple(e.get("defines", ())), tuple(here(d) for d in e.get("include_dirs", ())),
        e.get("launches_before"), e.get("launches_after"), e.get("compulsory_bytes"),
        e.get("compulsory_bytes_note", ""), e.get("torch_equivalent"), e.get("error"), e.get("predicted"))


# ------------------------------------------------------------------ rows


@dataclass(frozen=True)
class ProgramTiming:
    """The harness's figures for one program: medians over repetitions, summed over segments."""

    direct_us: float | None
    graph_us: float | None
    launches: int | None = None
    incomplete: str = ""  # why a launch sequence was not replayed (its time is missing from the sums)

    @property
    def best_us(self) -> float | None:
        return min((t for t in (self.direct_us, self.graph_us) if t), default=None)


@dataclass(frozen=True)
class Verdict:
    """Whether the optimized program computed what the original did, on this GPU."""

    equal: bool
    detail: str
    max_abs_diff: float | None = None
    contraction: bool = False  # unequal, but bit-exact when both are built with -fmad=false
    # per fused region of the optimized program, the paths its judged run took (region_paths)
    region_paths: tuple[dict, ...] = ()

    @property
    def fused_code_ran(self) -> bool:
        """Whether the judged run took the fused path of every fused region that ran (true
        for a program without fused regions): else it compared fallback code."""
        return all(r["fused_runs"] or not r["runs"] for r in self.region_paths) and (
            not self.region_paths or any(r["fused_runs"] for r in self.region_paths))


@dataclass(frozen=True)
class BenchRow:
    """One program's figures. Speedups are baseline time / optimized time (above 1: faster);
    None when not measured or when the results differ."""

    program: str
    launches_before: int | None
    launches_after: int | None
    original: ProgramTiming | None
    optimized: ProgramTiming | None
    verdict: Verdict | None
    speedup_direct: float | None  # original direct / optimized direct
    speedup_graph: float | None  # original graph / optimized graph
    speedup_vs_original_graph: float | None  # original graph / optimized direct: the honest baseline
    compulsory_bytes: int | None
    floor_us: float | None  # compulsory bytes / measured bandwidth
    floor_fraction: float | None  # floor / optimized best time
    error: str | None = None
    predicted: dict | None = None  # the cost model's times, from the prepare phase

    @property
    def result(self) -> str:
        if self.error is not None:
            return "ERROR"
        if self.verdict is None:
            return "-"
        if self.verdict.contraction:
            return "FMA"
        if self.verdict.equal and not self.verdict.fused_code_ran:
            return "FALLBACK"
        return "equal" if self.verdict.equal else "WRONG"


def _ratio(baseline: float | None, optimized: float | None) -> float | None:
    return round(baseline / optimized, 4) if baseline and optimized else None


def _predicted_ratio(row: "BenchRow", mode: str) -> float | None:
    """The cost model's speedup for ``mode`` (direct or graph), to set beside the measured one."""
    p = row.predicted or {}
    return _ratio(p.get(f"original_{mode}_us"), p.get(f"optimized_{mode}_us"))


def build_row(program: BenchProgram, original: ProgramTiming | None, optimized: ProgramTiming | None,
              verdict: Verdict | None, bandwidth_gbps: float | None, error: str | None = None) -> BenchRow:
    """The row of ``program`` from what was measured: a row whose results differ (or that
    failed) claims no speedup and no fraction of the floor."""
    error = error if error is not None else program.error
    claim = (error is None and verdict is not None and (verdict.equal or verdict.contraction)
             and verdict.fused_code_ran
             and not (original and original.incomplete) and not (optimized and optimized.incomplete))
    o, p = original or ProgramTiming(None, None), optimized or ProgramTiming(None, None)
    floor_us = (round(program.compulsory_bytes / (bandwidth_gbps * 1e3), 3)
                if program.compulsory_bytes and bandwidth_gbps else None)
    return BenchRow(
        program.name, program.launches_before, program.launches_after, original, optimized, verdict,
        _ratio(o.direct_us, p.direct_us) if claim else None,
        _ratio(o.graph_us, p.graph_us) if claim else None,
        _ratio(o.graph_us, p.direct_us) if claim else None,
        program.compulsory_bytes, floor_us,
        round(floor_us / p.best_us, 4) if claim and floor_us and p.best_us else None,
        error, program.predicted)


def verdict_of(report: Report) -> Verdict:
    """A comparison of two runs in one line: what agreed, or the first thing that did not."""
    worst = max((b.max_abs for b in report.buffers if b.max_abs is not None), default=None)
    tolerance = ("bit-exact" if report.rtol == 0 and report.atol == 0
                 else f"within rtol {report.rtol:g}, atol {report.atol:g}")
    if report.ok:
        count = len(report.buffers)
        return Verdict(True, f"{count} buffer{'' if count == 1 else 's'} {tolerance}", worst)
    reasons = []
    for b in report.buffers:
        if b.problem:
            reasons.append(f"{b.name}: {b.problem}")
        elif b.mismatches:
            reasons.append(f"{b.name}: {b.mismatches} of {b.count} elements differ (max abs {b.max_abs:.3g})")
    if report.count_original != report.count_optimized:
        reasons.append(f"{report.count_original} copies back vs {report.count_optimized}")
    if report.output is not None and not report.output.ok:
        reasons.append(f"printed output differs at line {report.output.first_line}")
    if report.status_original != report.status_optimized:
        reasons.append(f"exit status {report.status_original} vs {report.status_optimized}")
    return Verdict(False, "; ".join(reasons) or "results differ", worst)


def judge_dumps(original_dump: Path, optimized_dump: Path, *, stdout_original: str, stdout_optimized: str,
                status_original: int, status_optimized: int, rtol: float, atol: float) -> Verdict:
    """The verdict on two runs from their dump files (``SIRIUS_DUMP``) and what they printed."""
    report = compare_runs(read_dump(original_dump), read_dump(optimized_dump), stdout_original=stdout_original,
                          stdout_optimized=stdout_optimized, status_original=status_original,
                          status_optimized=status_optimized, rtol=rtol, atol=atol)
    return verdict_of(report)


# ------------------------------------------------------------------ the run


@dataclass(frozen=True)
class BenchOptions:
    rtol: float = 0.0
    atol: float = 0.0
    reps: int = 20
    warmup: int = 3
    timeout_s: float = 900.0
    torch: bool = True
    cuda_path: str | None = None
    command: str = ""
    build_cache: Path | None = None  # binaries kept by source text and nvcc command, across runs
    verify_only: bool = False  # judge results only: no timing builds or runs, programs judged in parallel


@dataclass(frozen=True)
class MachineFacts:
    gpu: str = ""
    driver: str = ""  # the driver release (nvidia-smi), else the CUDA version the driver supports
    cuda_runtime: str = ""
    cuda_driver_api: str = ""
    sm_count: int | None = None
    compute_capability: str = ""
    nvcc: str = ""


@dataclass(frozen=True)
class BenchResult:
    facts: MachineFacts
    bandwidth_gbps: float | None
    rows: tuple[BenchRow, ...]
    torch_rows: tuple[TorchRow, ...] = ()
    notes: tuple[str, ...] = ()  # what was left out and why (no bandwidth, no torch)
    commit: str | None = None
    commit_prepared: str | None = None
    date: str = ""
    options: BenchOptions = field(default_factory=BenchOptions)

    @property
    def exit_status(self) -> int:
        if any(r.result == "ERROR" for r in self.rows):
            return 2
        return 1 if any(r.result == "WRONG" for r in self.rows) else 0


def require_gpu() -> None:
    """Nothing to measure without a GPU: say so (exit 2), with the two-machine way out."""
    reason = gpu.gpu_unavailable_reason()
    if reason:
        raise SiriusError(f"error: sirius bench needs a CUDA GPU and finds none ({reason}); optimize here with "
                          "`sirius bench --prepare DIR`, then on a machine with a GPU run `sirius bench --run DIR` "
                          "(or `PYTHONPATH=. python3 -m sirius.tuning.gpu_bench DIR`, which needs only Python, nvcc "
                          "and the GPU)")


def run_bench(folder: Path, options: BenchOptions = BenchOptions(), progress=None) -> BenchResult:
    """Verify and time every program of the manifest in ``folder`` on this machine's GPU."""
    say = progress or (lambda text: print(text, file=sys.stderr, flush=True))
    manifest = read_manifest(folder)
    require_gpu()
    try:
        from sirius.backend import harness
    except ModuleNotFoundError as err:
        if err.name != "sirius.backend.harness":
            raise
        raise SiriusError("error: the timing harness (sirius/backend/harness.py) is not in this tree") from None
    nvcc = gpu.find_nvcc(options.cuda_path)
    library = harness.build_harness(nvcc)
    rows: list[BenchRow] = []
    device = None
    with tempfile.TemporaryDirectory(prefix="sirius-bench-") as tmp:
        work = Path(tmp)
        bandwidth, bandwidth_note = _measure_bandwidth(nvcc, manifest.arch, work, options.timeout_s)
        notes = [bandwidth_note] if bandwidth_note else []
        say(f"building {len(manifest.programs)} programs with nvcc, in parallel")
        purposes = ("judge",) if options.verify_only else ("judge", "time")
        built = build_all(manifest.programs, manifest, nvcc, work, cache=options.build_cache, purposes=purposes)
        if options.verify_only:
            rows = _judge_all(manifest, built, options, nvcc, work, say)
        else:
            for k, program in enumerate(manifest.programs, start=1):
                say(f"[{k}/{len(manifest.programs)}] {program.name}")
                if program.error is not None:
                    rows.append(build_row(program, None, None, None, bandwidth))
                    continue
                folder_k = work / f"p{k}"
                folder_k.mkdir()
                verdict = original = optimized = error = None
                try:
                    verdict = _judge(program, built, options, nvcc, manifest, folder_k)
                    original_run = _time(harness, library, "original", program, built, options, folder_k)
                    optimized_run = _time(harness, library, "optimized", program, built, options, folder_k)
                    device = device or _field(original_run, "device")
                    original, optimized = timing_of(original_run), timing_of(optimized_run)
                except (SiriusError, subprocess.TimeoutExpired, OSError) as err:
                    error = str(err).strip()[-1500:]
                rows.append(build_row(program, original, optimized, verdict, bandwidth, error))
                shutil.rmtree(folder_k, ignore_errors=True)
    torch_rows, torch_note = _torch_rows(manifest, options, say)
    notes += [torch_note] if torch_note else []
    return BenchResult(_machine_facts(device, nvcc), bandwidth, tuple(rows), tuple(torch_rows), tuple(notes),
                       git_commit() or manifest.commit, manifest.commit, _now(), options)


def _run(binary: Path, env: dict[str, str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary)], capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env={**os.environ, **env})


@dataclass(frozen=True)
class BuildRequest:
    """One binary a row needs: a program built with the dump header (to judge its results) or
    with the shared runtime (to time it under the harness). Original and optimized are
    compiled under one file name (``name``, through a ``#line``), so that ``__FILE__`` reads
    the same in both; ``fmad=False`` builds with ``-fmad=false`` (no contraction of a
    multiply and an add into one rounding)."""

    source: Path
    purpose: str  # "judge" or "time"
    include_dirs: tuple[Path, ...]
    defines: tuple[str, ...]
    name: str = ""
    fmad: bool = True

    @property
    def compiled(self) -> Path:
        """The copy nvcc compiles: beside the source, so that its quoted includes resolve."""
        variant = "" if self.fmad else ".nofmad"
        return self.source.with_name(f".{self.source.stem}.{self.purpose}{variant}.cu")

    def write_copy(self) -> None:
        """Written whole under a name of its own, then moved into place: two rows building one
        source with other defines write the same copy, and nvcc must never read half of it."""
        name = (self.name or self.source.name).replace("\\", "/").replace('"', "")
        partial = self.compiled.with_name(f"{self.compiled.name}.{os.getpid()}.{threading.get_ident()}")
        partial.write_text(f'#line 1 "{name}"\n' + self.source.read_text())
        os.replace(partial, self.compiled)

    def command(self, nvcc: str, manifest: Manifest, binary: Path) -> list[str]:
        cmd = [nvcc, "-O2", f"-std={manifest.std}", f"-arch={manifest.arch}"]
        cmd += ["-include", str(gpu.DUMP_HEADER)] if self.purpose == "judge" else ["-cudart", "shared"]
        cmd += [] if self.fmad else ["-fmad=false"]
        cmd += [f"-I{d}" for d in self.include_dirs] + [f"-D{d}" for d in self.defines]
        return cmd + [str(self.compiled), "-o", str(binary)]


def requests_of(program: BenchProgram, fmad: bool = True) -> dict[tuple[str, str], BuildRequest]:
    """(role, purpose) -> the build a row needs: original and optimized, judged and timed."""
    name = Path(program.source).name
    return {(role, purpose): BuildRequest(source, purpose, program.include_dirs, program.defines, name, fmad)
            for role, source in (("original", program.original), ("optimized", program.optimized))
            for purpose in ("judge", "time")}


def _cache_key(request: BuildRequest, nvcc: str, manifest: Manifest) -> str:
    """The source's text and the nvcc command with the source's place left out: the same
    program prepared into several folders (the original of every mode) is built once. The
    headers it includes are not part of the key, so a cache serves runs over one tree."""
    command = request.command(nvcc, manifest, Path("-"))
    command.remove(str(request.compiled))
    digest = hashlib.sha256(request.source.read_bytes())
    digest.update(request.name.encode() + b"\0")
    digest.update("\0".join(command).encode())
    return digest.hexdigest()[:32]


def build_all(programs: Sequence[BenchProgram], manifest: Manifest, nvcc: str, work: Path,
              jobs: int | None = None, cache: Path | None = None,
              purposes: tuple[str, ...] = ("judge", "time")) -> dict[BuildRequest, Path | SiriusError]:
    """Every binary the rows need, built once each (a candidate equal to another, or the
    original that every tuning row shares) and in parallel: nvcc is most of a bench's
    time and the GPU waits for none of it. A failed build is its error, for its row. With
    ``cache``, a binary built before from the same text and command is taken from there."""
    wanted = {r for p in programs if p.error is None for (_, purpose), r in requests_of(p).items()
              if purpose in purposes}
    return build_all_requests(sorted(wanted, key=lambda r: (str(r.source), r.purpose)), manifest, nvcc, work,
                              jobs, cache)


def build_all_requests(ordered: Sequence[BuildRequest], manifest: Manifest, nvcc: str, work: Path,
                       jobs: int | None = None, cache: Path | None = None) -> dict[BuildRequest, Path | SiriusError]:
    def build(k: int, request: BuildRequest) -> Path | SiriusError:
        kept = cache / f"{_cache_key(request, nvcc, manifest)}.{request.purpose}" if cache else None
        if kept is not None and kept.is_file():
            return kept
        binary = work / f"b{k}.{request.purpose}{'' if request.fmad else '.nofmad'}"
        request.write_copy()
        proc = subprocess.run(request.command(nvcc, manifest, binary), capture_output=True, text=True)
        if proc.returncode != 0:
            return SiriusError(f"nvcc cannot build {request.source.name}"
                               f"{' for timing' if request.purpose == 'time' else ''}: {proc.stderr.strip()[-1200:]}")
        if kept is not None:
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(binary, kept)
        return binary

    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
        return dict(zip(ordered, pool.map(build, range(len(ordered)), ordered)))


def _binary(built: dict[BuildRequest, Path | SiriusError], request: BuildRequest) -> Path:
    result = built[request]
    if isinstance(result, SiriusError):
        raise result
    return result


def _judge_once(program: BenchProgram, binaries: dict[str, Path], options: BenchOptions, work: Path) -> Verdict:
    runs = {}
    # both runs see the same file names (a program that prints its environment prints the same)
    env = {"SIRIUS_DUMP": str(work / "copies.dump"), region_paths.ENVIRONMENT: str(work / "copies.paths")}
    for role in ("original", "optimized"):
        for name in env.values():
            Path(name).unlink(missing_ok=True)
            (work / f"{role}{Path(name).suffix}").unlink(missing_ok=True)
        run = _run(binaries[role], env, work, options.timeout_s)
        for name in env.values():
            if Path(name).exists():
                Path(name).rename(work / f"{role}{Path(name).suffix}")
        runs[role] = (run, work / f"{role}.dump")
    (a, dump_a), (b, dump_b) = runs["original"], runs["optimized"]
    if a.returncode != 0:  # nothing to compare against: the row is an error, not a wrong result
        raise SiriusError(f"the original program exits with status {a.returncode}: {a.stderr.strip()[-800:]}")
    verdict = judge_dumps(dump_a, dump_b, stdout_original=a.stdout, stdout_optimized=b.stdout,
                          status_original=a.returncode, status_optimized=b.returncode,
                          rtol=options.rtol, atol=options.atol)
    regions = region_paths.regions_of(program.optimized.read_text(errors="replace")) if program.optimized else []
    runs_of = region_paths.summarize(regions, region_paths.read_counts(work / "optimized.paths") or {})
    return dataclasses.replace(verdict, region_paths=tuple(r.to_json() for r in runs_of))


def _judge(program: BenchProgram, built: dict, options: BenchOptions, nvcc: str, manifest: Manifest,
           work: Path) -> Verdict:
    """Both programs, built with the dump header, run once without the harness. Where they
    differ, both are built again with ``-fmad=false`` and judged again: equal there, the
    difference is only where nvcc chose to contract a multiply and an add into one rounding
    (in a fused kernel it sees other code around the same expression and may choose
    otherwise; both are results the program allows), which the verdict says."""
    binaries = {role: _binary(built, requests_of(program)[role, "judge"]) for role in ("original", "optimized")}
    verdict = _judge_once(program, binaries, options, work)
    if verdict.equal:
        return verdict
    strict = {role: requests_of(program, fmad=False)[role, "judge"] for role in ("original", "optimized")}
    rebuilt = build_all_requests(list(strict.values()), manifest, nvcc, work, cache=options.build_cache)
    without = _judge_once(program, {role: _binary(rebuilt, r) for role, r in strict.items()}, options, work)
    if not without.equal:
        return verdict
    return Verdict(False, f"{verdict.detail}; bit-exact with -fmad=false (both programs): the results differ "
                          f"only where nvcc contracted a multiply and an add", verdict.max_abs_diff, contraction=True)


def _judge_all(manifest: Manifest, built: dict, options: BenchOptions, nvcc: str, work: Path,
               say) -> list[BenchRow]:
    """Every program's verdict, several programs at once on the GPU (no timing is taken,
    so they may share it): the rows of ``--verify-only``."""
    def judge(k: int, program: BenchProgram) -> BenchRow:
        if program.error is not None:
            return build_row(program, None, None, None, None)
        folder_k = work / f"p{k}"
        folder_k.mkdir()
        try:
            return build_row(program, None, None, _judge(program, built, options, nvcc, manifest, folder_k), None)
        except (SiriusError, subprocess.TimeoutExpired, OSError) as err:
            return build_row(program, None, None, None, None, str(err).strip()[-1500:])
        finally:
            shutil.rmtree(folder_k, ignore_errors=True)

    rows = []
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        for k, row in enumerate(pool.map(judge, range(1, len(manifest.programs) + 1), manifest.programs), start=1):
            if k % 50 == 0 or k == len(manifest.programs):
                say(f"judged {k}/{len(manifest.programs)}")
            rows.append(row)
    return rows


def _time(harness, library: Path, role: str, program: BenchProgram, built: dict, options: BenchOptions,
          work: Path):
    """One run of the original or the optimized program (``role``) under the harness: its HarnessRun."""
    binary = _binary(built, requests_of(program)[role, "time"])
    out_json = work / f"{role}.timings.json"
    env = dict(harness.harness_env(library, out_json, reps=options.reps, warmup=options.warmup,
                                   modes=("direct", "graph")))
    env.setdefault("LD_PRELOAD", str(library))
    proc = _run(binary, env, work, options.timeout_s)
    # the harness re-runs kernels, so a program that checks its own results may exit with
    # another status under it: the timings it wrote on the way out are what counts here
    # (its status was judged in the run without the harness)
    if not out_json.is_file():
        raise SiriusError(f"the {role} program under the timing harness wrote no timings"
                          + (f" (exit status {proc.returncode})" if proc.returncode else "")
                          + f": {proc.stderr.strip()[-800:]}")
    return harness.read_timings(out_json)


def _field(record, name: str):
    return record.get(name) if isinstance(record, dict) else getattr(record, name, None)


def timing_of(run) -> ProgramTiming:
    """A HarnessRun as a row needs it; a segment the harness could not replay makes the sums
    incomplete, and the row then claims no speedup."""
    unreplayed = [seg for seg in (_field(run, "segments") or ()) if _field(seg, "replayed") is False]
    incomplete = ""
    if unreplayed:
        first = _field(unreplayed[0], "reason") or "no reason given"
        incomplete = f"{len(unreplayed)} launch sequence(s) not replayed, e.g. {first}"
    return ProgramTiming(_field(run, "direct_us"), _field(run, "graph_us"), _field(run, "launches"), incomplete)


_BANDWIDTH = re.compile(r"bandwidth_GBps=([0-9.]+)")


def _measure_bandwidth(nvcc: str, arch: str, work: Path, timeout: float) -> tuple[float | None, str]:
    """Measured DRAM bandwidth in GB/s (read + write), or None and why not."""
    binary = work / "bandwidth"
    build = subprocess.run([nvcc, "-O2", f"-arch={arch}", str(BANDWIDTH_SOURCE), "-o", str(binary)],
                           capture_output=True, text=True)
    if build.returncode != 0:
        return None, f"no roofline: nvcc cannot build {BANDWIDTH_SOURCE.name}: {build.stderr.strip()[-400:]}"
    try:
        proc = subprocess.run([str(binary)], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "no roofline: the bandwidth measurement timed out"
    found = _BANDWIDTH.search(proc.stdout)
    if proc.returncode != 0 or not found:
        return None, f"no roofline: the bandwidth measurement failed: {(proc.stderr or proc.stdout).strip()[-400:]}"
    return float(found.group(1)), ""


def _torch_rows(manifest: Manifest, options: BenchOptions, say) -> tuple[list[TorchRow], str]:
    requests = [(p.name, p.torch_equivalent) for p in manifest.programs if p.torch_equivalent]
    if not requests:
        return [], ""
    if not options.torch:
        return [], "PyTorch rows left out (--no-torch)"
    if importlib.util.find_spec("torch") is None:
        return [], "no PyTorch rows: torch is not importable"
    import torch

    if not torch.cuda.is_available():
        return [], f"no PyTorch rows: torch {torch.__version__} sees no CUDA device"
    from sirius.tuning.torch_baselines import measure_torch_baselines

    say(f"PyTorch equivalents: {', '.join(name for name, _ in requests)}")
    try:
        return measure_torch_baselines(requests, options.reps, options.warmup), ""
    except Exception as err:  # the baselines are extra rows: their failure must not lose the measured ones
        return [], f"no PyTorch rows: {type(err).__name__}: {str(err).strip()[:300]}"


def _cuda_version(value) -> str:
    """12080 -> "12.8", as cudaRuntimeGetVersion and cudaDriverGetVersion encode it."""
    if isinstance(value, int) and value > 0:
        return f"{value // 1000}.{value % 1000 // 10}"
    return str(value or "")


def _machine_facts(device, nvcc: str) -> MachineFacts:
    """The GPU as the harness saw it, with the driver release from nvidia-smi and nvcc's version."""
    name, release = str(_field(device, "name") or ""), ""
    smi = shutil.which("nvidia-smi")
    if smi:
        q = subprocess.run([smi, "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True,
                           text=True)
        smi_name, _, release = (q.stdout.strip().splitlines() or [""])[0].partition(", ")
        name = name or smi_name
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    driver_api = _cuda_version(_field(device, "driver"))
    return MachineFacts(name, release or driver_api, _cuda_version(_field(device, "runtime")), driver_api,
                        _field(device, "sm_count"),
                        str(_field(device, "compute_capability") or _field(device, "cc") or ""),
                        version[-1] if version else "")


def git_commit() -> str | None:
    """HEAD of the repository this module lies in, when git and the history are there."""
    if shutil.which("git") is None:
        return None
    proc = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True)
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


# ------------------------------------------------------------------ output


def _us(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.1f}" if v < 1000 else f"{v:,.0f}"


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def render_table(result: BenchResult) -> str:
    """The rows as a text table, with the machine and what each column means underneath."""
    f, o = result.facts, result.options
    bandwidth = f"{result.bandwidth_gbps:.0f} GB/s" if result.bandwidth_gbps else "-"
    tolerance = f"within rtol {o.rtol:g}, atol {o.atol:g}" if o.rtol or o.atol else "bit-exact"
    head = [f"GPU: {f.gpu or '?'} (driver {f.driver or '?'}, CUDA runtime {f.cuda_runtime or '?'}); "
            f"DRAM bandwidth measured: {bandwidth}; results compared {tolerance}; "
            f"times: microseconds per run, median of {o.reps} after {o.warmup} warm-up"]
    table = [("program", "launches", "orig direct", "orig graph", "opt direct", "opt graph", "speedup direct",
              "speedup graph", "opt direct vs orig graph", "predicted direct", "result", "floor", "of floor")]
    for r in result.rows:
        launches = (f"{r.launches_before}->{r.launches_after}"
                    if r.launches_before is not None or r.launches_after is not None else "-")
        o, p = r.original or ProgramTiming(None, None), r.optimized or ProgramTiming(None, None)
        table.append((r.program, launches, _us(o.direct_us), _us(o.graph_us), _us(p.direct_us), _us(p.graph_us),
                      _x(r.speedup_direct), _x(r.speedup_graph), _x(r.speedup_vs_original_graph),
                      _x(_predicted_ratio(r, "direct")), r.result,
                      _us(r.floor_us), "-" if r.floor_fraction is None else f"{r.floor_fraction:.0%}"))
    lines = head + [""] + _columns(table)
    for r in result.rows:
        if r.error:
            lines.append(f"{r.program}: ERROR: {r.error.splitlines()[0] if r.error.splitlines() else r.error}")
        elif r.verdict is not None and r.verdict.contraction:
            lines.append(f"{r.program}: FMA, the times stand: {r.verdict.detail}")
        elif r.verdict is not None and not r.verdict.equal:
            lines.append(f"{r.program}: WRONG, no speedup claimed: {r.verdict.detail}")
        elif r.verdict is not None and not r.verdict.fused_code_ran:
            untested = [p for p in r.verdict.region_paths if p["runs"] and not p["fused_runs"]]
            lines.append(f"{r.program}: FALLBACK, no speedup claimed: {len(untested)} of "
                         f"{len(r.verdict.region_paths)} fused regions ran only their original code ("
                         + "; ".join(f"region {p['region']}: {', '.join(p['paths'])}" for p in untested) + ")")
        for tag, t in (("original", r.original), ("optimized", r.optimized)):
            if t is not None and t.incomplete:
                lines.append(f"{r.program}: {tag} timing incomplete, no speedup claimed: {t.incomplete}")
    if result.torch_rows:
        torch_table = [("PyTorch equivalent of", "eager", "graph", "compile", "configuration")]
        for t in result.torch_rows:
            torch_table.append((t.program, _us(t.eager_us), _us(t.graph_us), _us(t.compile_us), t.config))
        lines += [""] + _columns(torch_table)
        lines += [f"{t.program} (PyTorch): {n}" for t in result.torch_rows for n in t.notes]
    lines += [f"note: {n}" for n in result.notes]
    lines += ["", "speedup = baseline time / optimized time (above 1: faster); 'opt direct vs orig graph' is the "
                  "honest baseline: the original replayed as a CUDA Graph also saves launch overhead without fusing; "
                  "'predicted direct' is the cost model's speedup direct (sirius/tuning/cost_model.py), not measured; "
                  "floor = compulsory DRAM bytes / measured bandwidth, 'of floor' = floor / the optimized program's "
                  "best time; a WRONG or ERROR row claims no speedup, nor does a FALLBACK row (equal, but a fused region ran "
                  "only its original code: a guard failed or no cooperative launch); FMA: the results differ under nvcc's default "
                  "-fmad=true but are bit-exact when both programs are built with -fmad=false"]
    return "\n".join(lines) + "\n"


def _columns(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    # numbers right-aligned: a column (not the first) whose cells all start with a digit or are "-"
    right = {i for i in range(1, len(widths)) if all(r[i] == "-" or r[i][:1].isdigit() for r in rows[1:])}
    return ["  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
            for r in rows]


def result_json(result: BenchResult) -> dict:
    """Everything the table shows, with the machine, the commit, the date and the command line."""
    def timing(prefix: str, t: ProgramTiming | None) -> dict:
        t = t or ProgramTiming(None, None)
        return {f"{prefix}_direct_us": t.direct_us, f"{prefix}_graph_us": t.graph_us,
                f"{prefix}_launches_measured": t.launches, f"{prefix}_incomplete": t.incomplete or None}

    rows = []
    for r in result.rows:
        rows.append({
            "program": r.program, "launches_before": r.launches_before, "launches_after": r.launches_after,
            **timing("original", r.original), **timing("optimized", r.optimized),
            "speedup_direct": r.speedup_direct, "speedup_graph": r.speedup_graph,
            "speedup_direct_vs_original_graph": r.speedup_vs_original_graph,
            "result": r.result, "correctness": r.verdict.detail if r.verdict else None,
            "max_abs_diff": r.verdict.max_abs_diff if r.verdict else None,
            "region_paths": list(r.verdict.region_paths) if r.verdict else None,
            "compulsory_bytes": r.compulsory_bytes, "floor_us": r.floor_us, "floor_fraction": r.floor_fraction,
            "predicted": r.predicted, "predicted_speedup_direct": _predicted_ratio(r, "direct"),
            "predicted_speedup_graph": _predicted_ratio(r, "graph"), "error": r.error})
    f, o = result.facts, result.options
    return {
        "gpu": f.gpu, "driver": f.driver, "cuda_runtime": f.cuda_runtime, "cuda_driver_api": f.cuda_driver_api,
        "sm_count": f.sm_count,
        "compute_capability": f.compute_capability, "nvcc": f.nvcc, "commit": result.commit,
        "commit_prepared": result.commit_prepared, "date": result.date, "command": o.command,
        "bandwidth_gbps": result.bandwidth_gbps, "rtol": o.rtol, "atol": o.atol, "reps": o.reps, "warmup": o.warmup,
        "speedup": "baseline time / optimized time", "floor_fraction": "floor_us / optimized best time",
        "rows": rows,
        "torch_rows": [{"program": t.program, "config": t.config, "eager_us": t.eager_us, "graph_us": t.graph_us,
                        "compile_us": t.compile_us, "notes": list(t.notes)} for t in result.torch_rows],
        "notes": list(result.notes),
    }


def write_plot(result: BenchResult, path: Path) -> str | None:
    """Grouped bars per program: the four times (log scale) above, the three speedups below.
    None when written, else why not (matplotlib missing): the plot is optional."""
    try:
        import matplotlib
    except ImportError:
        return f"matplotlib is not importable: no plot written to {path}"
    matplotlib.use("Agg")  # no display on a GPU server
    import matplotlib.pyplot as plt

    rows = list(result.rows)
    names = [r.program for r in rows]
    xs = range(len(rows))
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(max(8.0, 1.1 * len(rows) + 2), 8), sharex=True)
    times = [("original direct", lambda r: r.original and r.original.direct_us),
             ("original graph", lambda r: r.original and r.original.graph_us),
             ("optimized direct", lambda r: r.optimized and r.optimized.direct_us),
             ("optimized graph", lambda r: r.optimized and r.optimized.graph_us)]
    width = 0.8 / len(times)
    for k, (label, get) in enumerate(times):
        top.bar([x + (k - 1.5) * width for x in xs], [get(r) or 0 for r in rows], width, label=label)
    floors = [(x, r.floor_us) for x, r in zip(xs, rows) if r.floor_us]
    if floors:
        top.scatter([x for x, _ in floors], [f for _, f in floors], marker="_", s=400, color="black",
                    label="roofline floor", zorder=3)
    top.set_yscale("log")
    top.set_ylabel("microseconds per run")
    top.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside, not over, the bars
    speedups = [("direct", lambda r: r.speedup_direct), ("graph", lambda r: r.speedup_graph),
                ("optimized direct vs original graph", lambda r: r.speedup_vs_original_graph)]
    width = 0.8 / len(speedups)
    for k, (label, get) in enumerate(speedups):
        bottom.bar([x + (k - 1) * width for x in xs], [get(r) or 0 for r in rows], width, label=label)
    for x, r in zip(xs, rows):
        if r.result in ("WRONG", "ERROR"):
            bottom.annotate(r.result, (x, 0), ha="center", va="bottom", color="red", fontsize="small")
    bottom.axhline(1.0, color="grey", linewidth=0.8)
    bottom.set_ylabel("speedup (baseline / optimized)")
    bottom.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    bottom.set_xticks(list(xs))
    bottom.set_xticklabels(names, rotation=30, ha="right")
    fig.suptitle(f"sirius bench on {result.facts.gpu or 'GPU'} ({result.date[:10]})")
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return None


def write_outputs(result: BenchResult, json_file: Path | None, plot_file: Path | None) -> list[str]:
    """The table on standard output, the JSON and the plot where asked; notes on what was skipped."""
    sys.stdout.write(render_table(result))
    if json_file is not None:
        json_file.write_text(json.dumps(result_json(result), indent=1) + "\n")
    notes = []
    if plot_file is not None:
        skipped = write_plot(result, plot_file)
        if skipped:
            notes.append(skipped)
    for n in notes:
        print(f"note: {n}", file=sys.stderr)
    return notes


# ------------------------------------------------------------------ command line


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """The options of the GPU half, shared by ``sirius bench`` and ``python3 -m sirius.tuning.gpu_bench``."""
    parser.add_argument("--json", metavar="FILE", help="write the rows with GPU, driver, CUDA runtime, commit, "
                                                        "date and command line as JSON")
    parser.add_argument("--plot", metavar="FILE.png", help="grouped bars of the four times and the speedups per "
                                                           "program (needs matplotlib; skipped with a note without)")
    parser.add_argument("--rtol", type=float, default=0.0, help="relative tolerance of the correctness check "
                                                                "(default 0: bit-exact)")
    parser.add_argument("--atol", type=float, default=0.0, help="absolute tolerance (default 0)")
    parser.add_argument("--reps", type=int, default=20, help="timed repetitions per mode (default 20)")
    parser.add_argument("--warmup", type=int, default=3, help="warm-up repetitions per mode (default 3)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per program run (default 900)")
    parser.add_argument("--no-torch", action="store_true", help="leave out the PyTorch equivalents")
    parser.add_argument("--verify-only", action="store_true", help="compare the results only: no timing, "
                                                                   "several programs at once (and no PyTorch)")
    parser.add_argument("--build-cache", metavar="DIR", help="keep the binaries here and take one built before from "
                                                             "the same source text and nvcc command (runs over "
                                                             "several prepared folders of one tree build each "
                                                             "original once)")


def options_from_args(args: argparse.Namespace, command: str) -> BenchOptions:
    if args.rtol < 0 or args.atol < 0:
        raise InputError("error: --rtol and --atol must not be negative")
    if args.reps < 1 or args.warmup < 0:
        raise InputError("error: --reps must be at least 1 and --warmup at least 0")
    return BenchOptions(args.rtol, args.atol, args.reps, args.warmup, args.timeout,
                        not (args.no_torch or args.verify_only), getattr(args, "cuda_path", None), command,
                        Path(args.build_cache).resolve() if args.build_cache else None, args.verify_only)


def output_path(path: str | None, option: str) -> Path | None:
    """Where ``option`` writes, checked before any GPU time is spent (exit 2 when unusable)."""
    if path is None:
        return None
    p = Path(path)
    if p.is_dir() or not p.resolve().parent.is_dir():
        raise InputError(f"error: {option} {path}: not a file in an existing folder")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m sirius.tuning.gpu_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", metavar="DIR", help="what `sirius bench --prepare DIR` wrote")
    parser.add_argument("--cuda-path", default=None, metavar="DIR",
                        help="CUDA toolkit root (default: $SIRIUS_CUDA_PATH, $CUDA_HOME, /usr/local/cuda)")
    add_run_options(parser)
    args = parser.parse_args(argv)
    command = shlex.join(["python3", "-m", "sirius.tuning.gpu_bench", *(sys.argv[1:] if argv is None else argv)])
    try:
        options = options_from_args(args, command)
        json_file, plot_file = output_path(args.json, "--json"), output_path(args.plot, "--plot")
        result = run_bench(Path(args.folder), options)
    except SiriusError as err:
        print(str(err), file=sys.stderr)
        return err.exit_code
    write_outputs(result, json_file, plot_file)
    return result.exit_status


if __name__ == "__main__":
    sys.exit(main())
