"""Differential fuzzing of waves of cells: random stacked recurrences, as DNN compilers emit them.

For a seed, a program whose step loop holds ``layers`` unrolled copies of one layer's
launches is generated: a matrix-vector product of the layer's input and the previous
step's state, then a few element-wise, cross-block, shared-memory and two-input kernels
through temporaries, the last one writing the layer's new state. What varies, to cover
what ``analysis.repetition`` and ``fusion.cell_waves`` must take or refuse:

* where the temporaries live: storages used by every layer in turns (TVM's memory plan:
  private temporaries), the same storages in every layer (cells conflict), or one array
  with a slot per layer (pointers advance by a stride, nothing private);
* hazards: a layer reading the state of the layer above at the step before (a cell of
  the same anti-diagonal), a temporary read before the layer writes it (a value from
  another copy);
* sizes, steps, layers, the kernels of a layer.

The program prints a checksum of every state and every temporary (the temporaries'
final values must be those the original left). ``run_seed`` optimizes it with
``--cooperative`` (``--persistent`` too on odd seeds) and verifies it bit-exact against
the original on the CPU backend.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

SIRIUS = str(Path(sys.executable).parent / "sirius")

_KERNELS = """
__global__ void mix(float* out, const float* w, const float* a, const float* b) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.0f;
  for (int j = 0; j < H; ++j) acc += w[i * H + j] * (a[j] + 0.5f * b[j]);
  out[i] = acc;
}

__global__ void act(float* out, const float* t) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = t[i] / (1.0f + fabsf(t[i]));
}

__global__ void flip(float* out, const float* t) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = 0.75f * t[H - 1 - i];
}

__global__ void blend(float* out, const float* t, const float* u) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = 0.5f * t[i] + 0.25f * u[i];
}

__global__ void neighbours(float* out, const float* t) {
  __shared__ float s[H];
  s[threadIdx.x] = t[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = s[threadIdx.x] - 0.5f * s[(threadIdx.x + 1) % H];
}
"""

STORAGE = ("turns", "same", "strided")
HAZARDS = ("none", "above", "stale")


@dataclass(frozen=True)
class LayeredProgram:
    seed: int
    source: str
    storage: str
    hazard: str
    layers: int
    steps: int


def generate(seed: int) -> LayeredProgram:
    """The program of ``seed`` (module docstring)."""
    rnd = random.Random(seed)
    h = rnd.choice((32, 64))
    layers, steps = rnd.randint(2, 4), rnd.randint(2, 5)
    storage = STORAGE[seed % len(STORAGE)]
    hazard = HAZARDS[(seed // len(STORAGE)) % len(HAZARDS)] if rnd.random() < 0.6 else "none"
    split = rnd.choice((1, 2))  # blocks of the cross-block kernels
    # one layer: ops over temporaries ("roles"); role 0 is mix's output, the last op writes the state
    ops = [("mix", 0, ())]
    for role in range(1, rnd.randint(1, 3) + 1):
        kind = rnd.choice(("act", "flip", "blend", "neighbours"))
        reads = (role - 1,) if kind != "blend" else (role - 1, rnd.randrange(role))
        ops.append((kind, role, reads))
    last = len(ops) - 1
    stale = hazard == "stale" and last >= 1
    if stale:  # a read of a role this layer writes only later: another copy's (or step's) value
        kind, role, reads = ops[-1]
        ops[-1] = ("blend", role, (reads[0], last))
        ops.append(("act", last + 1, (last,)))
    roles = max(r for _, r, _ in ops) + 1
    final = ops[-1][1]

    def temp(role: int, layer: int) -> str:
        if storage == "turns":
            return f"t{(role + layer) % roles}"
        if storage == "same":
            return f"t{role}"
        return f"ts + {(layer * roles + role)} * H"

    def shape(kind: str) -> str:
        return "1, H" if kind == "neighbours" else f"{split}, H / {split}"

    lines = []
    for layer in range(layers):
        below = "x + step * H" if layer == 0 else f"h_next + {layer - 1} * H"
        prev_layer = layer + 1 if hazard == "above" else layer
        prev = f"h_prev + {prev_layer} * H"
        for kind, role, reads in ops:
            out = f"h_next + {layer} * H" if role == final else temp(role, layer)
            if kind == "mix":
                args = [out, f"w + {layer} * H * H", below, prev]
            else:
                args = [out] + [temp(r, layer) for r in reads]
            lines.append(f"    {kind}<<<{shape(kind)}>>>({', '.join(args)});")
    temps = [f"t{r}" for r in range(roles)] if storage != "strided" else []
    declare = "".join(f"  float* t{r};\n  cudaMalloc(&t{r}, sizeof(float) * H);\n"
                      f"  cudaMemset(t{r}, 0, sizeof(float) * H);\n" for r in range(roles) if storage != "strided")
    if storage == "strided":
        declare = (f"  float* ts;\n  cudaMalloc(&ts, sizeof(float) * LAYERS * {roles} * H);\n"
                   f"  cudaMemset(ts, 0, sizeof(float) * LAYERS * {roles} * H);\n")
        temps = ["ts"]
    sizes = {name: ("LAYERS * %d * H" % roles if name == "ts" else "H") for name in temps}
    report = "".join(f"  report(\"{name}\", {name}, {sizes[name]});\n" for name in temps)
    source = f"""// generated by sirius.testing.layered, seed {seed}: storage {storage}, hazard {hazard}
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define H {h}
#define STEPS {steps}
#define LAYERS {layers}
{_KERNELS}
static void report(const char* name, const float* d, int n) {{
  float* host = (float*)malloc(sizeof(float) * n);
  cudaMemcpy(host, d, sizeof(float) * n, cudaMemcpyDeviceToHost);
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += host[i] * (1 + i % 5);
  printf("%s %.6f\\n", name, sum);
  free(host);
}}

int main() {{
  float *x, *w, *h;
  cudaMalloc(&x, sizeof(float) * STEPS * H);
  cudaMalloc(&w, sizeof(float) * LAYERS * H * H);
  cudaMalloc(&h, sizeof(float) * (STEPS + 2) * LAYERS * H);
  float* fill = (float*)malloc(sizeof(float) * LAYERS * H * H);
  for (int i = 0; i < LAYERS * H * H; ++i) fill[i] = (float)((i * {rnd.randint(3, 97)}) % 89) / (89.0f * H);
  cudaMemcpy(w, fill, sizeof(float) * LAYERS * H * H, cudaMemcpyHostToDevice);
  for (int i = 0; i < STEPS * H; ++i) fill[i] = (float)((i * 37) % 101) / 101.0f;
  cudaMemcpy(x, fill, sizeof(float) * STEPS * H, cudaMemcpyHostToDevice);
  cudaMemset(h, 0, sizeof(float) * (STEPS + 2) * LAYERS * H);
{declare}  for (int step = 0; step < STEPS; ++step) {{
    float* h_prev = h + step * LAYERS * H;
    float* h_next = h + (step + 1) * LAYERS * H;
{chr(10).join(lines)}
  }}
  report("h", h, (STEPS + 2) * LAYERS * H);
{report}  free(fill);
  return 0;
}}
"""
    return LayeredProgram(seed, source, storage, "stale" if stale else ("above" if hazard == "above" else "none"),
                          layers, steps)


def run_seed(seed: int, workdir: Path) -> dict:
    """Generate, optimize (``--cooperative``; ``--persistent`` on odd seeds) and verify one
    program: ``ok``, whether waves of cells ran (``waves``), and what failed where."""
    prog = generate(seed)
    src, out, rep = workdir / f"layered_{seed}.cu", workdir / f"layered_{seed}.opt.cu", workdir / f"layered_{seed}.json"
    src.write_text(prog.source)
    flags = ["--cooperative"] + (["--persistent"] if seed % 2 else [])
    result = {"seed": seed, "storage": prog.storage, "hazard": prog.hazard, "ok": False, "waves": False}
    opt = subprocess.run([SIRIUS, "optimize", str(src), *flags, "-o", str(out), "--report", str(rep)],
                         capture_output=True, text=True)
    if opt.returncode != 0:
        return {**result, "stage": "optimize", "detail": opt.stdout + opt.stderr}
    report = json.loads(rep.read_text())
    result["waves"] = bool(report["cell_waves"])
    result["refused"] = [r["reason"] for r in report["refused"] if "no waves" in r["reason"]]
    ver = subprocess.run([SIRIUS, "verify", str(src), str(out)], capture_output=True, text=True)
    if ver.returncode != 0 or "result: all equal" not in ver.stdout:
        return {**result, "stage": "verify", "detail": ver.stdout + ver.stderr}
    return {**result, "ok": True}


def main(argv: list[str] | None = None) -> int:
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description="differential fuzzing of waves of cells (stacked recurrences)")
    parser.add_argument("--seeds", default="0:20", help="range START:STOP (default 0:20)")
    args = parser.parse_args(argv)
    start, stop = (int(v) for v in args.seeds.split(":"))
    failed = 0
    with tempfile.TemporaryDirectory(prefix="sirius-layered-") as tmp:
        for seed in range(start, stop):
            r = run_seed(seed, Path(tmp))
            failed += not r["ok"]
            print(f"seed {seed}: {'ok' if r['ok'] else 'FAILED at ' + r['stage']} storage={r['storage']} "
                  f"hazard={r['hazard']} waves={r['waves']}" + ("" if r["ok"] else "\n" + r["detail"]), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
