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
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sirius.backend.compare import compare_runs, read_dump  # noqa: E402  (pure Python: runs anywhere)

DUMP_HEADER = REPO / "sirius" / "runtime" / "gpu" / "sirius_gpu_dump.h"


def programs() -> list[Path]:
    return sorted((REPO / "cuda_inputs").glob("*.cu")) + sorted((REPO / "cuda_inputs" / "models").glob("*.cu"))


def prepare(out: Path) -> int:
    """Optimize every program at its default size; the manifest lists the pairs."""
    sirius = Path(sys.executable).parent / "sirius"
    out.mkdir(parents=True, exist_ok=True)
    rows, status = [], 0
    for src in programs():
        rel = src.relative_to(REPO)
        target = out / f"{src.parent.name}__{src.stem}.opt.cu"
        report = out / f"{src.parent.name}__{src.stem}.json"
        start = time.perf_counter()
        proc = subprocess.run([str(sirius), "optimize", str(src), "-o", str(target), "--report", str(report)],
                              capture_output=True, text=True)
        seconds = round(time.perf_counter() - start, 1)
        if proc.returncode != 0:
            print(f"{rel}: optimize FAILED\n{proc.stderr.strip()[-2000:]}", flush=True)
            rows.append({"program": str(rel), "error": proc.stderr.strip()[-2000:]})
            status = 2
            continue
        rep = json.loads(report.read_text())
        check = rep.get("promise_check") or {}
        rows.append({"program": str(rel), "optimized": target.name, "launches_before": rep["launches_before"],
                     "launches_after": rep["launches_after"], "optimize_s": seconds,
                     "fused_kernels_checked": check.get("kernels_checked", 0),
                     "violations_undone": len(check.get("violations_undone", []))})
        print(f"{rel}: {rep['launches_before']} -> {rep['launches_after']} launches, {seconds} s", flush=True)
    (out / "manifest.json").write_text(json.dumps({"programs": rows}, indent=1) + "\n")
    return status


def _nvcc() -> str:
    for cand in (shutil.which("nvcc"), os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc")):
        if cand and Path(cand).is_file():
            return cand
    raise SystemExit("error: nvcc not found")


def _build_and_run(src: Path, folder: Path, tag: str, arch: str, timeout: float):
    binary = folder / tag
    build = subprocess.run([_nvcc(), "-O2", "-std=c++17", f"-arch={arch}", "-include", str(DUMP_HEADER),
                            f"-I{REPO / 'cuda_inputs'}", str(src), "-o", str(binary)], capture_output=True, text=True)
    if build.returncode != 0:
        raise RuntimeError(f"nvcc cannot build {src.name}: {build.stderr.strip()[-1500:]}")
    dump = folder / f"{tag}.dump"
    start = time.perf_counter()
    proc = subprocess.run([str(binary)], capture_output=True, text=True, timeout=timeout,
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
    for entry in manifest["programs"]:
        if "error" in entry:
            rows.append(entry)
            status = 2
            continue
        original, optimized = REPO / entry["program"], folder / entry["optimized"]
        row = dict(entry)
        try:
            with tempfile.TemporaryDirectory() as tmp:
                a, copies_a, ta = _build_and_run(original, Path(tmp), "original", arch, timeout)
                b, copies_b, tb = _build_and_run(optimized, Path(tmp), "optimized", arch, timeout)
            rep = compare_runs(copies_a, copies_b, stdout_original=a.stdout, stdout_optimized=b.stdout,
                               status_original=a.returncode, status_optimized=b.returncode, rtol=0.0, atol=0.0)
            worst = max((d.max_abs for d in rep.buffers if d.max_abs is not None), default=0.0)
            row.update(result="equal" if rep.ok else "DIFFERENT", buffers=len(copies_a), max_abs_diff=worst,
                       original_wall_ms=round(ta * 1e3, 1), optimized_wall_ms=round(tb * 1e3, 1))
            if a.returncode != 0 or b.returncode != 0:
                row["stderr"] = (a.stderr + b.stderr)[-1500:]
            status = max(status, 0 if rep.ok else 1)
        except (RuntimeError, subprocess.TimeoutExpired) as err:
            row.update(result="ERROR", error=str(err)[-1500:])
            status = 2
        rows.append(row)
        launches = f"{entry['launches_before']}->{entry['launches_after']}"
        print(f"{entry['program']:40s} {launches:>13s} {row.get('original_wall_ms', '-'):>12} "
              f"{row.get('optimized_wall_ms', '-'):>13}  {row['result']}"
              + (f" (max abs diff {row['max_abs_diff']:g})" if row.get("result") == "DIFFERENT" else ""), flush=True)
    if json_out is not None:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        json_out.write_text(json.dumps({
            **facts, "date": datetime.date.today().isoformat(), "commit": commit,
            "command": "scripts/verify_full_size.py run " + str(folder),
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
    args = ap.parse_args(argv)
    status = 0
    if args.phase in ("prepare", "all"):
        status = prepare(args.folder)
    if args.phase in ("run", "all"):
        status = max(status, run(args.folder, args.arch, args.timeout, args.json))
    return status


if __name__ == "__main__":
    sys.exit(main())
