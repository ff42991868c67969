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

Drawn from a second random stream (so that a program without them is the one older
versions generated for its seed), constructs that made waves of cells take for a fact
what they only assumed (issue 26):

* a layer's kernel writing its output only where the data says (``GUARDS``): under a
  data-dependent condition, after an early exit of a finished row of variable-length
  sequences (``if (step >= len[i]) return;``), in a loop bounded by the row's length;
  such a write covers nothing, the slot keeps another copy's (or step's) value;
* a declaration with a side effect in the step loop (``int row = (cursor += 1) - 1;``,
  also through a macro), ``row`` choosing the step's input and ``cursor`` printed at the
  end: host code the emitted program must not run twice;
* macros the build may redefine (``MACRO_KERNELS``): a float argument whose value has no
  short decimal (``DECAY``) and an index shift used only in a kernel body (``SHIFT``).

The program prints a checksum of every state and every temporary (the temporaries'
final values must be those the original left). ``run_seed`` optimizes it with
``--cooperative`` (``--persistent`` too on odd seeds) and verifies it bit-exact against
the original on the CPU backend; a program with a cursor is verified again with
``-DSIRIUS_COOPERATIVE_MAX_BLOCKS=0`` (every cooperative launch takes its fallback, the
loop as written after the pre-pass), one with macros rebuilt with other values, where the
wave kernels over their launches must not run (:mod:`sirius.testing.rebuild`).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from sirius.testing.rebuild import verify_rebuild

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

#: Kernels writing their output only where the data says, by how the write is guarded.
GUARDS = {
    "condition": """
__global__ void gate(float* out, const float* t) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (t[i] > 0.0625f) out[i] = 0.5f * t[i] - 0.03125f;
}
""",
    "early_exit": """
__global__ void ragged(float* out, const float* t, const int* len, int step) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (step >= len[i]) return;  // this row's sequence has ended
  out[i] = 0.75f * t[i] + 0.125f;
}
""",
    "data_bound": """
__global__ void repeat(float* out, const float* t, const int* len) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int r = 0; r < len[i]; ++r) out[i] = 0.5f * t[i] + 0.0625f * (float)r;
}
""",
}
_GUARD_KERNEL = {"condition": "gate", "early_exit": "ragged", "data_bound": "repeat"}

#: Kernels using a macro the build may redefine: kernel -> (macro, its default, the value a
#: rebuild uses, the code). DECAY reaches the kernel as a float argument; SHIFT only in the body.
MACRO_KERNELS = {
    "decay": ("DECAY", ("0.1f", "(1.0f / 3.0f)", "0.7f"), "0.3f", """
__global__ void decay(float* out, const float* t, float k) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = fminf(k * t[i], 4.0f);
}
"""),
    "rotate": ("SHIFT", ("0",), "5", """
__global__ void rotate(float* out, const float* t) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = 0.5f * t[(i + SHIFT) % H];
}
"""),
}

STORAGE = ("turns", "same", "strided")
HAZARDS = ("none", "above", "stale")
CURSORS = ("none", "statement", "macro")  # how the step loop's side-effecting declaration is written
P_GUARD = 0.45   # a layer's kernel writes under a guard (GUARDS)
P_MACRO = 0.35   # a layer's kernel uses a macro (MACRO_KERNELS)
P_CURSOR = 0.35  # the step loop advances a cursor in a declaration


@dataclass(frozen=True)
class LayeredProgram:
    seed: int
    source: str
    storage: str
    hazard: str
    layers: int
    steps: int
    guard: str = "none"  # of GUARDS, or none
    macro_kernel: str = "none"  # of MACRO_KERNELS, or none
    cursor: str = "none"  # of CURSORS
    rebuild_defines: tuple[str, ...] = ()  # NAME=VALUE for a rebuild with other macro values


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
    # the newer constructs, from a stream of their own: replacing a kernel keeps its role and
    # its first input (never the blend that makes the stale hazard)
    hrnd = random.Random(seed * 15485863 + 32452843)
    free = [k for k in range(1, len(ops)) if not (stale and k == len(ops) - 2)]
    guard = macro_kernel = "none"
    if free and hrnd.random() < P_GUARD:
        guard = hrnd.choice(sorted(GUARDS))
        # a temporary's kernel where the layer has one (the last kernel writes the state)
        temporaries = [k for k in free if k != len(ops) - 1] or free
        k = temporaries[hrnd.randrange(len(temporaries))]
        free.remove(k)
        ops[k] = (_GUARD_KERNEL[guard], ops[k][1], ops[k][2][:1])
    if free and hrnd.random() < P_MACRO:
        macro_kernel = hrnd.choice(sorted(MACRO_KERNELS))
        k = free.pop(hrnd.randrange(len(free)))
        ops[k] = (macro_kernel, ops[k][1], ops[k][2][:1])
    cursor = hrnd.choice(CURSORS[1:]) if hrnd.random() < P_CURSOR else "none"
    macro_defaults = {}
    if macro_kernel != "none":
        name, values, _, _ = MACRO_KERNELS[macro_kernel]
        macro_defaults[name] = hrnd.choice(values)
    lengths = hrnd.randint(3, 97)  # row i's sequence has (i * lengths) % (STEPS + 1) steps

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
    if cursor == "statement":
        lines.append("    int row = (cursor += 1) - 1;  // the next input row")
    elif cursor == "macro":
        lines.append("    int row = NEXT_ROW(cursor);")
    for layer in range(layers):
        first_input = "x + row * H" if cursor != "none" else "x + step * H"
        below = first_input if layer == 0 else f"h_next + {layer - 1} * H"
        prev_layer = layer + 1 if hazard == "above" else layer
        prev = f"h_prev + {prev_layer} * H"
        for kind, role, reads in ops:
            out = f"h_next + {layer} * H" if role == final else temp(role, layer)
            if kind == "mix":
                args = [out, f"w + {layer} * H * H", below, prev]
            else:
                args = [out] + [temp(r, layer) for r in reads]
            if kind == "ragged":
                args += ["len", "step"]
            elif kind == "repeat":
                args.append("len")
            elif kind == "decay":
                args.append("DECAY")
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
    extra = "".join(f"#ifndef {name}\n#define {name} {value}\n#endif\n" for name, value in macro_defaults.items())
    if cursor == "macro":
        extra += "#define NEXT_ROW(c) (((c) += 1) - 1)\n"
    kernels = _KERNELS + (GUARDS[guard] if guard != "none" else "") \
        + (MACRO_KERNELS[macro_kernel][3] if macro_kernel != "none" else "")
    declare_len = ""
    if guard in ("early_exit", "data_bound"):
        declare_len = ("  int* len;\n  cudaMalloc(&len, sizeof(int) * H);\n"
                       "  int* lens = (int*)malloc(sizeof(int) * H);\n"
                       f"  for (int i = 0; i < H; ++i) lens[i] = (i * {lengths}) % (STEPS + 1);\n"
                       "  cudaMemcpy(len, lens, sizeof(int) * H, cudaMemcpyHostToDevice);\n  free(lens);\n")
    declare_cursor = "  int cursor = 0;\n" if cursor != "none" else ""
    print_cursor = '  printf("cursor %d\\n", cursor);\n' if cursor != "none" else ""
    newer = f"// guard {guard}, macro kernel {macro_kernel}, cursor {cursor}\n" \
        if (guard, macro_kernel, cursor) != ("none", "none", "none") else ""
    source = f"""// generated by sirius.testing.layered, seed {seed}: storage {storage}, hazard {hazard}
{newer}#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define H {h}
#define STEPS {steps}
#define LAYERS {layers}
{extra}{kernels}
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
{declare}{declare_len}{declare_cursor}  for (int step = 0; step < STEPS; ++step) {{
    float* h_prev = h + step * LAYERS * H;
    float* h_next = h + (step + 1) * LAYERS * H;
{chr(10).join(lines)}
  }}
  report("h", h, (STEPS + 2) * LAYERS * H);
{report}{print_cursor}  free(fill);
  return 0;
}}
"""
    rebuild = ()
    if macro_kernel != "none":
        name, _, other, _ = MACRO_KERNELS[macro_kernel]
        rebuild = (f"{name}={other}",)
    return LayeredProgram(seed, source, storage, "stale" if stale else ("above" if hazard == "above" else "none"),
                          layers, steps, guard, macro_kernel, cursor, rebuild)


def run_seed(seed: int, workdir: Path) -> dict:
    """Generate, optimize (``--cooperative``; ``--persistent`` on odd seeds) and verify one
    program (also the cooperative fallback where the loop has a cursor, and a rebuild with
    other macro values where a kernel uses one): ``ok``, whether waves of cells ran
    (``waves``), and what failed where."""
    prog = generate(seed)
    src, out, rep = workdir / f"layered_{seed}.cu", workdir / f"layered_{seed}.opt.cu", workdir / f"layered_{seed}.json"
    src.write_text(prog.source)
    flags = ["--cooperative"] + (["--persistent"] if seed % 2 else [])
    result = {"seed": seed, "storage": prog.storage, "hazard": prog.hazard, "guard": prog.guard,
              "macro_kernel": prog.macro_kernel, "cursor": prog.cursor, "ok": False, "waves": False, "layers": []}
    opt = subprocess.run([SIRIUS, "optimize", str(src), *flags, "-o", str(out), "--report", str(rep)],
                         capture_output=True, text=True)
    if opt.returncode != 0:
        return {**result, "stage": f"optimize (exit {opt.returncode})", "detail": opt.stdout + opt.stderr}
    report = json.loads(rep.read_text())
    result["waves"] = bool(report["cell_waves"])
    result["layers"] = [c["layers"] for c in report["cell_waves"]]  # 1: the loop read as one copy of its body
    result["refused"] = [r["reason"] for r in report["refused"] if "no waves" in r["reason"]]
    # a cursor: also every cooperative launch's fallback (the pre-pass, then the loop as written)
    variants = [()] + ([("-DSIRIUS_COOPERATIVE_MAX_BLOCKS=0",)] if prog.cursor != "none" else [])
    for extra in variants:
        ver = subprocess.run([SIRIUS, "verify", str(src), str(out), *extra], capture_output=True, text=True)
        if ver.returncode != 0 or "result: all equal" not in ver.stdout:
            return {**result, "stage": " ".join(("verify",) + extra), "detail": ver.stdout + ver.stderr}
    if prog.rebuild_defines:
        failure = verify_rebuild(src, out, report, prog.rebuild_defines, {prog.macro_kernel})
        if failure:
            return {**result, "stage": "rebuild " + " ".join(f"-D{d}" for d in prog.rebuild_defines),
                    "detail": failure}
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
                  f"hazard={r['hazard']} guard={r['guard']} macro={r['macro_kernel']} cursor={r['cursor']} "
                  f"waves={r['waves']}" + ("" if r["ok"] else "\n" + r["detail"]), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
