#!/usr/bin/env python3
"""Generate the TVM model corpus: one self-contained CUDA program per model.

For each model (scripts/tvm_corpus/models/), in two configurations (full size and
a small one selected with -DSIRIUS_SMALL), this builds the Relax module, lowers
it with TVM's Relax pipeline "zero" and the dlight default GPU schedules for
sm_90, reads the kernels, the static memory plan and the launch sequence TVM's
runtime would issue, and writes

  OUT/<model>.cu       the program (TVM kernels verbatim + host main)
  OUT/manifest.json    per model and configuration: kernels, launches, steps,
                       reference checksums computed with NumPy
  OUT/README.md        the table of models

Needs the optional extra:  pip install -e '.[models]'   (apache-tvm, numpy)
No GPU is needed: TVM generates CUDA source on any machine.

Usage: python scripts/gen_tvm_models.py [--out cuda_inputs/models] [MODEL ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tvm_corpus.models import registry  # noqa: E402

TARGET = {"kind": "cuda", "arch": "sm_90"}
REPO = Path(__file__).resolve().parent.parent


def _sizes(sizes: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items())


def generate(info, out_dir: Path, verify: bool = False) -> dict:
    from tvm_corpus.emit import emit_program
    from tvm_corpus.lower import lower

    t0 = time.time()
    specs = info.programs()
    configs, entry = [], {"model": info.name, "title": info.title, "file": f"{info.name}.cu",
                          "rtol": info.rtol, "configs": {}}
    for spec in specs:
        plans = lower(spec.relax_mod, TARGET, spec.func_names, tensor_cores=spec.tensor_cores)
        configs.append((spec, plans))
        ref = spec.reference_checksums()
        phases = [{"function": p.func, "launches": len(plans[p.func].launches), "steps": p.steps or None}
                  for p in spec.phases]
        any_plan = plans[spec.phases[0].func]
        entry["configs"][spec.config] = {
            "define": "SIRIUS_SMALL" if spec.config == "small" else None,
            "sizes": spec.sizes,
            "kernels": len(any_plan.kernels),
            "launches": sum(p["launches"] * (p["steps"] or 1) for p in phases),
            "launch_sites": sum(p["launches"] for p in phases),
            "phases": phases,
            "outputs": [a.name for a in spec.arrays if a.checksum],
            "reference": ref,
        }
        if verify:
            from tvm_corpus.replay import replay_checksums

            got = replay_checksums(spec, plans)
            worst = 0.0
            for name, r in ref.items():
                err = abs(got[name]["checksum"] - r["checksum"]) / max(r["magnitude"], 1e-30)
                worst = max(worst, err)
            ok = worst <= info.rtol
            entry["configs"][spec.config]["replay"] = {"checksums": got, "max_error": worst, "ok": ok}
            print(f"  {spec.config}: replay vs NumPy reference: max error {worst:.2e} "
                  f"({'ok' if ok else 'MISMATCH'})")
            if not ok:
                raise SystemExit(f"{info.name} {spec.config}: replayed plan disagrees with the reference")
    regenerate = f"python scripts/gen_tvm_models.py {info.name}"
    text = emit_program(info.title, info.description, configs, regenerate)
    path = out_dir / f"{info.name}.cu"
    path.write_text(text)
    entry["lines"] = text.count("\n")
    entry["bytes"] = len(text.encode())
    notes = []
    for spec, _ in configs:
        notes += [n for n in spec.notes if n not in notes]
    entry["notes"] = notes
    print(f"{info.name}: {entry['lines']} lines, {entry['bytes'] / 1e6:.2f} MB, "
          + "; ".join(f"{c}: {e['kernels']} kernels, {e['launches']} launches"
                      for c, e in entry["configs"].items())
          + f" ({time.time() - t0:.1f} s)")
    return entry


OPTIMIZED_HEADING = "## What sirius makes of them"


def write_readme(manifest: dict, out_dir: Path) -> None:
    rows = []
    for name, e in manifest["models"].items():
        full, small = e["configs"]["full"], e["configs"]["small"]

        def launches(c):
            loops = [p for p in c["phases"] if p["steps"]]
            if not loops:
                return str(c["launches"])
            parts = [f"{p['launches']} x {p['steps']} steps" if p["steps"] else str(p["launches"])
                     for p in c["phases"]]
            return f"{c['launches']} ({' + '.join(parts)}, host loop)"

        rows.append(f"| `{e['file']}` | {e['title']} | {_sizes(full['sizes'])} | {full['kernels']} | "
                    f"{launches(full)} | {_sizes(small['sizes'])} | {small['kernels']} | "
                    f"{launches(small)} | {e['lines']} |")
    notes = []
    for name, e in manifest["models"].items():
        for n in e.get("notes", []):
            notes.append(f"- `{name}`: {n}")
    text = f"""# TVM model corpus

CUDA programs generated from DNN models by TVM {manifest['tvm']} (Relax pipeline
`zero` + dlight default GPU schedules, target `{json.dumps(manifest['target'])}`).
Each `.cu` is self-contained: TVM's kernels verbatim, and a host `main` that
allocates every buffer (TVM's static memory plan: intermediate tensors share
planned storages exactly as the TVM runtime would), fills inputs and weights with
a deterministic integer formula, issues the launches in TVM's order, copies the
outputs back and prints one `checksum:` line per output. `PROGRAM N` also times
the whole launch sequence with CUDA events (10 warm-up runs, N timed runs,
median).

Every program holds two configurations: the full one (default) and a small one
(`-DSIRIUS_SMALL`) for the CPU execution backend. TVM bakes sizes into its
kernels, so the two configurations carry their own kernels, in `#ifdef
SIRIUS_SMALL` / `#else`.

| file | model | full sizes | kernels | launches | small sizes (`-DSIRIUS_SMALL`) | kernels | launches | lines |
|---|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}

"kernels" counts the distinct `__global__` functions, "launches" the kernel
launches one run issues. Batch size is 1 everywhere.

{chr(10).join(notes)}

## Checksums

The checksum of an output `x` is `sum_i x[i] * (i % 17 + 1)` in double.
`manifest.json` stores, per model and configuration, the checksum a NumPy
reference of the same model computes from the same inputs (and the magnitude
`sum_i |x[i]| * (i % 17 + 1)`); a run agrees when `|checksum - reference| <=
rtol * magnitude` (`rtol` per model in the manifest: 1e-3 for float32 models,
looser for float16). `scripts/check_model_reference.py` runs the programs (CPU
backend or a GPU binary) and compares; `tests/test_model_corpus.py` compiles
every program with clang-22 and nvcc and runs the small configurations on the
CPU backend.

Two checks tie the programs to the references:

- `python scripts/gen_tvm_models.py --verify` replays each extracted launch plan
  on the CPU with TVM (every PrimFunc built for `llvm` from its unscheduled
  form, called in the program's order on the program's buffers: host arrays at
  their per-step offsets, planned storages shared as in TVM's memory plan) and
  compares with the NumPy reference; the result is stored per configuration
  under `replay` in the manifest. This checks the extraction (order, argument
  binding, aliasing, host loops) and the reference, not the CUDA kernels.
- `python scripts/check_model_reference.py` runs the programs themselves: the
  small configurations on sirius's CPU execution backend (default), or any
  configuration with nvcc on a GPU (`--backend gpu`), or reads saved outputs
  (`--outputs DIR`), and compares every printed checksum with the manifest.

Input values: element `i` of the array with seed `k` is
`(((h >> 16) & 1023) / 1024 - 0.5) * scale` with
`h = (uint32)(i * 2654435761) ^ (uint32)((k + 1) * 0x85EBCA6B)`, `scale` a
power of two per array.

## Regenerate

```
pip install -e '.[models]'                   # apache-tvm, numpy (no GPU needed)
python scripts/gen_tvm_models.py --verify    # all models; or name some: bert_fp32 lstm
```

The generator is deterministic: the same TVM version gives the same files.
Model definitions are in `scripts/tvm_corpus/models/` (Relax via
`tvm.relax.frontend.nn`), the lowering and launch extraction in
`scripts/tvm_corpus/lower.py`, the program emission in
`scripts/tvm_corpus/emit.py`.
"""
    # the optimizer's figures are written by hand below the generated part: keep them
    path = out_dir / "README.md"
    previous = path.read_text() if path.is_file() else ""
    kept = previous[previous.index(OPTIMIZED_HEADING):] if OPTIMIZED_HEADING in previous else ""
    path.write_text(text + ("\n" + kept if kept else ""))


def main(argv=None) -> int:
    models = registry()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", help=f"models to generate (default all: {', '.join(models)})")
    ap.add_argument("--out", default=str(REPO / "cuda_inputs" / "models"), help="output folder")
    ap.add_argument("--verify", action="store_true",
                    help="also replay each launch plan on the CPU with TVM (PrimFuncs built for "
                    "llvm, same buffers and order) and check it against the NumPy reference")
    args = ap.parse_args(argv)
    names = args.models or list(models)
    unknown = [n for n in names if n not in models]
    if unknown:
        ap.error(f"unknown models {unknown}; known: {', '.join(models)}")
    import tvm

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    mpath = out_dir / "manifest.json"
    manifest = json.loads(mpath.read_text()) if mpath.exists() else {}
    manifest.update({"tvm": tvm.__version__, "target": TARGET})
    manifest.setdefault("models", {})
    for n in names:
        manifest["models"][n] = generate(models[n], out_dir, args.verify)
        # keep the registry's order; write after each model so progress survives
        manifest["models"] = {k: manifest["models"][k] for k in models if k in manifest["models"]}
        mpath.write_text(json.dumps(manifest, indent=1) + "\n")
        write_readme(manifest, out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
