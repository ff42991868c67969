#!/usr/bin/env python3
"""Optimize every corpus and model program at full size and verify each on a GPU.

The CPU backend cannot see what only nvcc exploits (restrict promises, read-only
cache loads) nor limits only a GPU enforces, and the TVM models' small
configurations carry other kernels than the full ones: this is the judge for
those. Two phases, because the optimizer needs clang-22 and the verification a
GPU, which may be different machines:

  verify_full_size.py prepare DIR    optimize cuda_inputs/*.cu and cuda_inputs/models/*.cu at
                                     their default (full) sizes into DIR, with DIR/manifest.json
  verify_full_size.py run DIR        build each original and optimized program with nvcc, run both
                                     on the GPU and compare every copy back to the host and the
                                     printed output (bit-exact); one row per program
  verify_full_size.py all DIR        both on one machine

``prepare --list FILE`` takes other programs and the command lines to run each with:
one line per program, ``PROGRAM.cu | ARGS | ARGS ...`` (a path relative to FILE's
folder; each ``ARGS`` a command line, split as the shell would; no ``|``: one run
without arguments; ``#`` starts a comment). ``--option OPT`` passes an option to
``sirius optimize`` (``--option=--cooperative``). ``run`` then runs both programs
with each command line and gives one row per run, so that a fusion proven for every
size the host computes at run time is judged at several sizes, the guarded fallback
path included.

``run`` needs only Python 3, nvcc and a GPU (it reads the copies as ``sirius verify
--backend gpu`` does, without the rest of the toolchain). ``--json FILE`` writes the
rows with the GPU, driver, CUDA version, commit and date.

Exit status: 0 when every program verifies equal, 1 when one differs, 2 when one
cannot be optimized, built or run, or there is no GPU.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sirius.backend.compare import compare_runs, read_dump  # noqa: E402  (pure Python: runs anywhere)

DUMP_HEADER = REPO / "sirius" / "runtime" / "gpu" / "sirius_gpu_dump.h"


def programs() -> list[Path]:
    return sorted((REPO / "cuda_inputs").glob("*.cu")) + sorted((REPO / "cuda_inputs" / "models").glob("*.cu"))


def read_program_list(path: Path) -> list[tuple[Path, list[list[str]]]]:
    """``PROGRAM.cu | ARGS | ARGS`` lines: each program with the command lines to run it with."""
    entries = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, *runs = [part.strip() for part in line.split("|")]
        program = (path.parent / name).resolve()
        if not program.is_file():
            raise SystemExit(f"error: {path}:{number}: no such program: {name}")
        entries.append((program, [shlex.split(run) for run in runs] or [[]]))
    return entries


def _label(src: Path) -> str:
    try:
        return str(src.relative_to(REPO))
    except ValueError:
        return str(src)


def prepare(out: Path, entries: list[tuple[Path, list[list[str]]]] | None = None,
            options: tuple[str, ...] = ()) -> int:
    """Optimize every program (default: the corpus and the models at their default sizes);
    the manifest lists the pairs and the command lines to run each with."""
    sirius = Path(sys.executable).parent / "sirius"
    out.mkdir(parents=True, exist_ok=True)
    rows, status = [], 0
    for src, runs in entries if entries is not None else [(src, [[]]) for src in programs()]:
        rel = _label(src)
        target = out / f"{src.parent.name}__{src.stem}.opt.cu"
        report = out / f"{src.parent.name}__{src.stem}.json"
        start = time.perf_counter()
        proc = subprocess.run([str(sirius), "optimize", str(src), "-o", str(target), "--report", str(report),
                               *options], capture_output=True, text=True)
        seconds = round(time.perf_counter() - start, 1)
        if proc.returncode != 0:
            print(f"{rel}: optimize FAILED\n{proc.stderr.strip()[-2000:]}", flush=True)
            rows.append({"program": str(rel), "error": proc.stderr.strip()[-2000:]})
            status = 2
            continue
        rep = json.loads(report.read_text())
        check = rep.get("promise_check") or {}
        original = out / f"{src.parent.name}__{src.stem}.cu"
        shutil.copyfile(src, original)
        rows.append({"program": str(rel), "original": original.name, "optimized": target.name, "argv_sets": runs,
                     "launches_before": rep["launches_before"],
                     "launches_after": rep["launches_after"], "optimize_s": seconds,
                     "fused_kernels_checked": check.get("kernels_checked", 0),
                     "violations_undone": len(check.get("violations_undone", []))})
        print(f"{rel}: {rep['launches_before']} -> {rep['launches_after']} launches, {seconds} s", flush=True)
    (out / "manifest.json").write_text(json.dumps({"programs": rows, "optimize_options": list(options)}, indent=1)
                                       + "\n")
    return status


def _nvcc() -> str:
    for cand in (shutil.which("nvcc"), os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc")):
        if cand and Path(cand).is_file():
            return cand
    raise SystemExit("error: nvcc not found")


def _build(src: Path, folder: Path, tag: str, arch: str) -> Path:
    binary = folder / tag
    build = subprocess.run([_nvcc(), "-O2", "-std=c++17", f"-arch={arch}", "-include", str(DUMP_HEADER),
                            f"-I{REPO / 'cuda_inputs'}", f"-I{src.parent}", str(src), "-o", str(binary)],
                           capture_output=True, text=True)
    if build.returncode != 0:
        raise RuntimeError(f"nvcc cannot build {src.name}: {build.stderr.strip()[-1500:]}")
    return binary


def _build_all(folder: Path, entries: list[dict], scratch: Path, arch: str) -> list:
    """Every original and optimized program built with nvcc, in parallel (nvcc is most of a run):
    per entry the two binaries, or the RuntimeError that stopped one."""
    def build_pair(index: int):
        entry = entries[index]
        if "error" in entry:
            return None
        original = folder / entry["original"] if "original" in entry else REPO / entry["program"]
        try:
            return (_build(original, scratch, f"{index}.original", arch),
                    _build(folder / entry["optimized"], scratch, f"{index}.optimized", arch))
        except RuntimeError as err:
            return err
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return list(pool.map(build_pair, range(len(entries))))


def _run(binary: Path, argv: list[str], timeout: float):
    dump = binary.parent / f"{binary.name}.dump"  # (with_suffix would give 3.original and 3.optimized one file)
    dump.unlink(missing_ok=True)
    start = time.perf_counter()
    proc = subprocess.run([str(binary), *argv], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "SIRIUS_DUMP": str(dump)})
    return proc, (read_dump(dump) if dump.exists() else []), time.perf_counter() - start


def _gpu_facts() -> dict:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return {}
    q = subprocess.run([smi, "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True,
                       text=True)
    name, _, driver = (q.stdout.strip().splitlines() or [""])[0].partition(", ")
    cuda = subprocess.run([_nvcc(), "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    return {"gpu": name, "driver": driver, "cuda": cuda[-2] if len(cuda) >= 2 else ""}


def _judge(binaries: tuple[Path, Path] | RuntimeError, argv: list[str], timeout: float, row: dict) -> int:
    """Run both programs with ``argv`` and fill ``row``; the exit status this run calls for."""
    if isinstance(binaries, RuntimeError):
        row.update(result="ERROR", error=str(binaries)[-1500:])
        return 2
    try:
        a, copies_a, ta = _run(binaries[0], argv, timeout)
        b, copies_b, tb = _run(binaries[1], argv, timeout)
    except subprocess.TimeoutExpired as err:
        row.update(result="ERROR", error=str(err)[-1500:])
        return 2
    rep = compare_runs(copies_a, copies_b, stdout_original=a.stdout, stdout_optimized=b.stdout,
                       status_original=a.returncode, status_optimized=b.returncode, rtol=0.0, atol=0.0)
    worst = max((d.max_abs for d in rep.buffers if d.max_abs is not None), default=0.0)
    row.update(result="equal" if rep.ok else "DIFFERENT", buffers=len(copies_a), max_abs_diff=worst,
               exit_status=a.returncode, original_wall_ms=round(ta * 1e3, 1), optimized_wall_ms=round(tb * 1e3, 1))
    if a.returncode != 0 or b.returncode != 0:
        row["stderr"] = (a.stderr + b.stderr)[-1500:]
    return 0 if rep.ok else 1


def run(folder: Path, arch: str, timeout: float, json_out: Path | None) -> int:
    if not (folder / "manifest.json").is_file():
        print(f"error: {folder}/manifest.json not found: run the prepare phase first")
        return 2
    manifest = json.loads((folder / "manifest.json").read_text())
    facts = _gpu_facts()
    if not facts:
        print("error: no CUDA GPU (nvidia-smi not found)")
        return 2
    rows, status = [], 0
    print(f"{'program':40s} {'launches':>13s} {'original ms':>12s} {'optimized ms':>13s}  result")
    with tempfile.TemporaryDirectory() as tmp:
        binaries = _build_all(folder, manifest["programs"], Path(tmp), arch)
        for index, entry in enumerate(manifest["programs"]):
            if "error" in entry:
                rows.append(entry)
                status = 2
                continue
            for argv in entry.get("argv_sets", [[]]):
                row = {key: value for key, value in entry.items() if key != "argv_sets"}
                row["argv"] = argv
                status = max(status, _judge(binaries[index], argv, timeout, row))
                rows.append(row)
                launches = f"{entry['launches_before']}->{entry['launches_after']}"
                name = shlex.join([entry["program"], *argv])
                print(f"{name:40s} {launches:>13s} {row.get('original_wall_ms', '-'):>12} "
                      f"{row.get('optimized_wall_ms', '-'):>13}  {row['result']}"
                      + (f" (max abs diff {row['max_abs_diff']:g})" if row.get("result") == "DIFFERENT" else ""),
                      flush=True)
    if json_out is not None:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        json_out.write_text(json.dumps({
            **facts, "date": datetime.date.today().isoformat(), "commit": commit,
            "command": "scripts/verify_full_size.py run " + str(folder),
            "optimize_options": manifest.get("optimize_options", []),
            "note": "wall times are whole-program runs including start-up, for orientation only", "rows": rows},
            indent=1) + "\n")
    return status


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("phase", choices=("prepare", "run", "all"))
    ap.add_argument("folder", type=Path, help="where the optimized programs and manifest.json go")
    ap.add_argument("--arch", default="sm_90", help="GPU architecture for nvcc (default sm_90)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per program run (default 900)")
    ap.add_argument("--json", type=Path, help="write the rows and the machine facts as JSON")
    ap.add_argument("--list", type=Path, metavar="FILE",
                    help="programs and command lines to verify instead of the corpus and the models (see above)")
    ap.add_argument("--option", action="append", default=[], metavar="OPT",
                    help="an option for sirius optimize (repeatable; --option=--cooperative)")
    args = ap.parse_args(argv)
    status = 0
    if args.phase in ("prepare", "all"):
        status = prepare(args.folder, read_program_list(args.list) if args.list else None, tuple(args.option))
    if args.phase in ("run", "all"):
        status = max(status, run(args.folder, args.arch, args.timeout, args.json))
    return status


if __name__ == "__main__":
    sys.exit(main())
