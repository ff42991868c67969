#!/usr/bin/env python3
"""Run the TVM model programs and compare their checksums with the references.

For every model of cuda_inputs/models/manifest.json (or those named), runs the
program in one configuration and compares each printed ``checksum:`` line with
the NumPy reference the generator stored: a run agrees when
``|checksum - reference| <= rtol * magnitude`` (rtol per model).

Runners:
  --backend cpu   sirius's CPU execution backend (default; small configuration
                  by default, the full ones are slow there)
  --backend gpu   nvcc -arch=sm_90 -O2, then the binary (needs a CUDA GPU)
  --outputs DIR   read DIR/<model>.<config>.txt, the stdout of runs made
                  elsewhere (e.g. on a GPU machine without this toolchain)

Usage: python scripts/check_model_reference.py [--config small|full]
           [--backend cpu|gpu | --outputs DIR] [MODEL ...]
Exit status 0 when every output agrees, 1 otherwise, 2 on a build/run error.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODELS = REPO / "cuda_inputs" / "models"
CHECKSUM = re.compile(r"^output (\S+): checksum: (\S+)$", re.M)


def parse_checksums(stdout: str) -> dict[str, float]:
    return {name: float(v) for name, v in CHECKSUM.findall(stdout)}


def compare(entry: dict, config: str, got: dict[str, float]) -> list[tuple[str, float, float, float, bool]]:
    """[(output, value, reference, error relative to the magnitude, ok)]."""
    rows = []
    for name, ref in entry["configs"][config]["reference"].items():
        if name not in got:
            rows.append((name, float("nan"), ref["checksum"], float("inf"), False))
            continue
        err = abs(got[name] - ref["checksum"]) / max(ref["magnitude"], 1e-30)
        rows.append((name, got[name], ref["checksum"], err, err <= entry["rtol"]))
    return rows


def run_cpu(path: Path, config: str, timeout: float) -> str:
    from sirius.backend.cpu import build_program, run_program
    from sirius.core.config import CompileFlags

    defines = ("SIRIUS_SMALL",) if config == "small" else ()
    build = build_program(path, CompileFlags(defines=defines))
    res = run_program(build.binary, capture=True, timeout=timeout)
    if res.failed:
        raise RuntimeError(res.failure_text)
    return res.stdout


def run_gpu(path: Path, config: str, timeout: float) -> str:
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    with tempfile.TemporaryDirectory() as tmp:
        binary = Path(tmp) / path.stem
        cmd = [nvcc, "-arch=sm_90", "-O2", "-o", str(binary), str(path)]
        if config == "small":
            cmd.insert(1, "-DSIRIUS_SMALL")
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        proc = subprocess.run([str(binary)], capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr)
        return proc.stdout


def main(argv=None) -> int:
    manifest = json.loads((MODELS / "manifest.json").read_text())
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", help=f"default: all ({', '.join(manifest['models'])})")
    ap.add_argument("--config", choices=["small", "full"], default="small")
    ap.add_argument("--backend", choices=["cpu", "gpu"], default="cpu")
    ap.add_argument("--outputs", type=Path, help="folder of saved stdouts <model>.<config>.txt")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    args = ap.parse_args(argv)
    names = args.models or list(manifest["models"])
    unknown = [n for n in names if n not in manifest["models"]]
    if unknown:
        ap.error(f"unknown models {unknown}")

    status = 0
    for name in names:
        entry = manifest["models"][name]
        path = MODELS / entry["file"]
        try:
            if args.outputs:
                stdout = (args.outputs / f"{name}.{args.config}.txt").read_text()
            elif args.backend == "cpu":
                stdout = run_cpu(path, args.config, args.timeout)
            else:
                stdout = run_gpu(path, args.config, args.timeout)
        except Exception as err:  # report and go on with the other models
            print(f"{name} [{args.config}]: ERROR {str(err).strip()[:2000]}")
            status = max(status, 2)
            continue
        for out, value, ref, err, ok in compare(entry, args.config, parse_checksums(stdout)):
            print(f"{name} [{args.config}] {out}: checksum {value:.6f} reference {ref:.6f} "
                  f"error {err:.2e} (rtol {entry['rtol']:g}) {'ok' if ok else 'MISMATCH'}")
            if not ok:
                status = max(status, 1)
    return status


if __name__ == "__main__":
    sys.exit(main())
