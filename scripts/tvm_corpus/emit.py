"""KernelPlan(s) of one model -> one self-contained CUDA program.

Layout of the emitted file::

    header comment, host includes, host helpers (fill, float16 bits, checksum)
    #ifdef SIRIUS_SMALL
      TVM's CUDA source of the small configuration, verbatim
      model_forward(...)   the launch sequence (host loop for stepped models)
      run_model(iters)     allocate, fill, run once, print checksums, time
    #else
      the same for the full configuration
    #endif
    main: run_model(argc > 1 ? atoi(argv[1]) : 0)

TVM bakes sizes into its kernels, so each configuration carries its own kernels.
"""

from __future__ import annotations

from .fill import HASH_MUL, seed_of
from .lower import KernelPlan
from .program import ProgramSpec, c_ident

C_TYPE = {"float32": "float", "float16": "half", "int32": "int", "int64": "int64_t"}
ELEM_SIZE = {"float32": 4, "float16": 2, "int32": 4, "int64": 8}
WARMUP = 10

HELPERS = r"""
// clang does not define nvcc's version macros, which TVM's preamble tests (it
// declares htanh itself only before CUDA 12.8); give clang nvcc's view of them.
#if defined(__clang__) && defined(__CUDA__) && !defined(__CUDACC_VER_MAJOR__)
#include <cuda.h>
#define __CUDACC_VER_MAJOR__ (CUDA_VERSION / 1000)
#define __CUDACC_VER_MINOR__ (CUDA_VERSION % 1000 / 10)
#endif
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <cuda_runtime.h>

#define SIRIUS_CHECK(call)                                                    \
  do {                                                                        \
    cudaError_t err_ = (call);                                                \
    if (err_ != cudaSuccess) {                                                \
      fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(err_),   \
              __FILE__, __LINE__);                                            \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

// Deterministic values: element i of the array with seed mix s.
static float sirius_fill_value(size_t i, uint32_t seed_mix, float scale) {
  uint32_t h = ((uint32_t)i * HASH_MULu) ^ seed_mix;
  return ((float)((h >> 16) & 1023u) / 1024.0f - 0.5f) * scale;
}

static void sirius_upload_f32(void* dst, size_t n, uint32_t seed_mix, float scale) {
  float* h = (float*)malloc(n * sizeof(float));
  for (size_t i = 0; i < n; ++i) h[i] = sirius_fill_value(i, seed_mix, scale);
  SIRIUS_CHECK(cudaMemcpy(dst, h, n * sizeof(float), cudaMemcpyHostToDevice));
  free(h);
}

// checksum: sum of x[i] * (i % 17 + 1), in double.
static void sirius_report_f32(const char* name, const void* src, size_t n) {
  float* h = (float*)malloc(n * sizeof(float));
  SIRIUS_CHECK(cudaMemcpy(h, src, n * sizeof(float), cudaMemcpyDeviceToHost));
  double s = 0.0;
  for (size_t i = 0; i < n; ++i) s += (double)h[i] * (double)(i % 17 + 1);
  printf("output %s: checksum: %.6f\n", name, s);
  free(h);
}

static int sirius_cmp_float(const void* a, const void* b) {
  float x = *(const float*)a, y = *(const float*)b;
  return (x > y) - (x < y);
}
""".replace("HASH_MUL", str(HASH_MUL))

HELPERS_F16 = r"""
// float32 -> float16 bits, round to nearest even (the fill values are exact).
static uint16_t sirius_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = (int32_t)((x >> 23) & 0xffu) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (((x >> 23) & 0xffu) == 0xffu) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u));
  if (exp >= 31) return (uint16_t)(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return (uint16_t)sign;
    mant |= 0x800000u;
    uint32_t shift = (uint32_t)(14 - exp);
    uint32_t half_mant = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t mid = 1u << (shift - 1u);
    if (rem > mid || (rem == mid && (half_mant & 1u))) half_mant++;
    return (uint16_t)(sign | half_mant);
  }
  uint32_t h = sign | ((uint32_t)exp << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
  return (uint16_t)h;
}

static float sirius_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) { mant <<= 1; exp--; }
      x = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000u | (mant << 13);
  } else {
    x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  memcpy(&f, &x, 4);
  return f;
}

static void sirius_upload_f16(void* dst, size_t n, uint32_t seed_mix, float scale) {
  uint16_t* h = (uint16_t*)malloc(n * sizeof(uint16_t));
  for (size_t i = 0; i < n; ++i) h[i] = sirius_f32_to_f16(sirius_fill_value(i, seed_mix, scale));
  SIRIUS_CHECK(cudaMemcpy(dst, h, n * sizeof(uint16_t), cudaMemcpyHostToDevice));
  free(h);
}

static void sirius_report_f16(const char* name, const void* src, size_t n) {
  uint16_t* h = (uint16_t*)malloc(n * sizeof(uint16_t));
  SIRIUS_CHECK(cudaMemcpy(h, src, n * sizeof(uint16_t), cudaMemcpyDeviceToHost));
  double s = 0.0;
  for (size_t i = 0; i < n; ++i) s += (double)sirius_f16_to_f32(h[i]) * (double)(i % 17 + 1);
  printf("output %s: checksum: %.6f\n", name, s);
  free(h);
}

"""

# identifiers the program (or TVM's preamble macros) already uses
RESERVED = {"uint", "uchar", "ushort", "half", "half2", "dim3", "main", "run_model", "model_forward",
            "int", "float", "double", "char", "short", "long", "signed", "unsigned", "void", "bool",
            "auto", "const", "static", "inline", "if", "else", "for", "while", "do", "return",
            "switch", "case", "default", "break", "continue", "struct", "union", "enum", "class",
            "new", "delete", "this", "template", "typename", "register", "volatile", "extern",
            "sizeof", "goto", "true", "false", "nullptr", "operator", "private", "public"}

UPLOAD = {"float32": "sirius_upload_f32", "float16": "sirius_upload_f16"}
REPORT = {"float32": "sirius_report_f32", "float16": "sirius_report_f16"}


def _float_lit(x: float) -> str:
    r = repr(float(x))
    if "e" not in r and "." not in r:
        r += ".0"
    return r + "f"


def _dims(d) -> str:
    return f"dim3({d[0]}, {d[1]}, {d[2]})"


class _Names:
    """C identifiers of host arrays, storages and tensors, kept distinct."""

    def __init__(self):
        self.used = set()

    def take(self, want: str) -> str:
        base = c_ident(want)
        name, k = base, 1
        while name in self.used:
            name = f"{base}_{k}"
            k += 1
        self.used.add(name)
        return name


def _steps_macro(spec: ProgramSpec, phase) -> str:
    looped = [p for p in spec.phases if p.steps]
    return "STEPS" if len(looped) == 1 else f"STEPS_{c_ident(phase.func).upper()}"


def _phase_body(spec: ProgramSpec, phase, plan: KernelPlan, arr_names, storage_names,
                names: _Names) -> list[str]:
    """Tensor pointers and launches of one phase, for model_forward."""
    tensor_c: dict[str, str] = {}
    pre, loop = [], []
    loop_dependent: set[str] = set()

    out_binding = {}
    for i, oname in enumerate(plan.outputs):
        root = plan.root(oname)
        if root.kind != "alloc":
            raise ValueError(f"{spec.model}: output {oname} is not a fresh allocation ({root.kind})")
        out_binding[root.name] = phase.outputs[i]

    def binding_expr(b, dtype) -> tuple[str, bool]:
        arr = arr_names[b.array]
        if spec.array(b.array).dtype != dtype:
            raise ValueError(f"{spec.model}: {b.array} has dtype {spec.array(b.array).dtype}, tensor {dtype}")
        parts = [arr]
        if b.offset:
            parts.append(str(b.offset))
        if b.step_stride:
            if not phase.steps:
                raise ValueError(f"{spec.model}: per-step binding of {b.array} outside a loop")
            parts.append(f"(size_t)step * {b.step_stride}")
        return " + ".join(parts), bool(b.step_stride)

    # declare only the tensors the launches use (every function gets every
    # model parameter from TVM's exporter), with the tensors their views read
    used = {a for l in plan.launches for a in l.args}
    for t in reversed(list(plan.tensors.values())):
        if t.name in used and t.kind == "view":
            used.add(t.base)
    for t in plan.tensors.values():
        if t.name not in used:
            continue
        ctype = C_TYPE[t.dtype]
        cname = names.take(t.name)
        tensor_c[t.name] = cname
        if t.kind == "param":
            if t.name not in phase.params:
                raise ValueError(f"{spec.model}: parameter {t.name} of {phase.func} has no binding")
            expr, per_step = binding_expr(phase.params[t.name], t.dtype)
        elif t.kind == "planned":
            expr, per_step = f"({ctype}*)({storage_names[(phase.func, t.storage)]} + {t.offset})", False
        elif t.kind == "alloc":
            if t.name in out_binding:
                expr, per_step = binding_expr(out_binding[t.name], t.dtype)
            else:
                expr, per_step = f"({ctype}*){storage_names[(phase.func, t.name)]}", False
        else:  # view
            expr, per_step = f"({ctype}*){tensor_c[t.base]}", t.base in loop_dependent
        line = f"{ctype}* {cname} = {expr};"
        if phase.steps and per_step:
            loop.append(line)
            loop_dependent.add(t.name)
        else:
            pre.append(line)
    for l in plan.launches:
        args = ", ".join(tensor_c[a] for a in l.args)
        shm = f", {l.shmem}" if l.shmem else ""
        loop.append(f"{l.kernel}<<<{_dims(l.grid)}, {_dims(l.block)}{shm}>>>({args});")

    body = [f"  // {phase.func}: {len(plan.launches)} launches"
            + (f" per step, {phase.steps} steps" if phase.steps else "")]
    body += ["  " + s for s in pre]
    if phase.steps:
        body.append(f"  for (int step = 0; step < {_steps_macro(spec, phase)}; ++step) {{")
        body += ["    " + s for s in loop]
        body.append("  }")
    else:
        body += ["  " + s for s in loop]
    return body


def _config_block(spec: ProgramSpec, plans: dict[str, KernelPlan]) -> list[str]:
    names = _Names()
    first = plans[spec.phases[0].func]
    names.used.update({"step", "iters", "argc", "argv"} | RESERVED | set(first.kernels))
    arr_names = {a.name: names.take("d_" + a.name) for a in spec.arrays}
    # device allocations of the memory plan, per phase: planned storages and
    # tensors with their own allocation that are not outputs
    storage_names, storage_sizes = {}, []
    for phase in spec.phases:
        plan = plans[phase.func]
        outs = {plan.root(o).name for o in plan.outputs}
        prefix = "d_" if len(spec.phases) == 1 else f"d_{phase.func}_"
        items = [(s.name, s.nbytes) for s in plan.storages]
        items += [(t.name, t.nbytes) for t in plan.tensors.values() if t.kind == "alloc" and t.name not in outs]
        for n, nbytes in items:
            cn = names.take(prefix + n)
            storage_names[(phase.func, n)] = cn
            storage_sizes.append((cn, nbytes))

    out = []
    sizes = ", ".join(f"{k}={v}" for k, v in spec.sizes.items())
    out.append(f"// ===== configuration '{spec.config}': {sizes}")
    counts = [f"{p.func}: {len(plans[p.func].launches)} launches" + (f" x {p.steps} steps" if p.steps else "")
              for p in spec.phases]
    out.append(f"// {len(first.kernels)} kernels; " + "; ".join(counts))
    out.append(f'#define SIRIUS_CONFIG "{spec.config}"')
    for p in spec.phases:
        if p.steps:
            out.append(f"#define {_steps_macro(spec, p)} {p.steps}")
    out.append("// ----- TVM-generated CUDA source (verbatim) -----")
    out.extend(first.source.rstrip("\n").splitlines())
    out.append("// ----- end of TVM-generated source -----")
    out.append("")

    params = [f"{C_TYPE[a.dtype]}* {arr_names[a.name]}" for a in spec.arrays]
    params += [f"char* {cn}" for cn, _ in storage_sizes]
    out.append("// The launch sequence of the model, in the order the TVM runtime issues it.")
    out.append("static void model_forward(" + ", ".join(params) + ") {")
    for phase in spec.phases:
        out.extend(_phase_body(spec, phase, plans[phase.func], arr_names, storage_names, names))
    out.append("}")
    out.append("")
    call_args = ", ".join([arr_names[a.name] for a in spec.arrays] + [cn for cn, _ in storage_sizes])

    out.append("static int run_model(int iters) {")
    out.append(f'  printf("model {spec.model} config %s\\n", SIRIUS_CONFIG);')
    for a in spec.arrays:
        cn, ct = arr_names[a.name], C_TYPE[a.dtype]
        nbytes = a.numel * ELEM_SIZE[a.dtype]
        out.append(f"  {ct}* {cn} = nullptr;")
        out.append(f"  SIRIUS_CHECK(cudaMalloc((void**)&{cn}, {nbytes}));")
        if a.scale is None:
            out.append(f"  SIRIUS_CHECK(cudaMemset({cn}, 0, {nbytes}));")
        else:
            out.append(f"  {UPLOAD[a.dtype]}({cn}, {a.numel}, {seed_of(a.seed)}u, {_float_lit(a.scale)});")
    for cn, nbytes in storage_sizes:
        out.append(f"  char* {cn} = nullptr;")
        out.append(f"  SIRIUS_CHECK(cudaMalloc((void**)&{cn}, {nbytes}));")
    out.append(f"  model_forward({call_args});")
    out.append("  SIRIUS_CHECK(cudaGetLastError());")
    out.append("  SIRIUS_CHECK(cudaDeviceSynchronize());")
    for a in spec.arrays:
        if a.checksum:
            out.append(f'  {REPORT[a.dtype]}("{a.name}", {arr_names[a.name]}, {a.numel});')
    out.append("  if (iters > 0) {")
    out.append("    cudaEvent_t start, stop;")
    out.append("    SIRIUS_CHECK(cudaEventCreate(&start));")
    out.append("    SIRIUS_CHECK(cudaEventCreate(&stop));")
    out.append(f"    for (int i = 0; i < {WARMUP}; ++i) model_forward({call_args});")
    out.append("    SIRIUS_CHECK(cudaDeviceSynchronize());")
    out.append("    float* times = (float*)malloc(sizeof(float) * iters);")
    out.append("    for (int i = 0; i < iters; ++i) {")
    out.append("      SIRIUS_CHECK(cudaEventRecord(start));")
    out.append(f"      model_forward({call_args});")
    out.append("      SIRIUS_CHECK(cudaEventRecord(stop));")
    out.append("      SIRIUS_CHECK(cudaEventSynchronize(stop));")
    out.append("      SIRIUS_CHECK(cudaEventElapsedTime(&times[i], start, stop));")
    out.append("    }")
    out.append("    SIRIUS_CHECK(cudaGetLastError());")
    out.append("    qsort(times, iters, sizeof(float), sirius_cmp_float);")
    out.append("    float median = (iters % 2) ? times[iters / 2] : 0.5f * (times[iters / 2 - 1] + times[iters / 2]);")
    out.append(f'    printf("time_ms: median %.4f min %.4f max %.4f over %d runs ({WARMUP} warm-up)\\n",')
    out.append("           median, times[0], times[iters - 1], iters);")
    out.append("    free(times);")
    out.append("    SIRIUS_CHECK(cudaEventDestroy(start));")
    out.append("    SIRIUS_CHECK(cudaEventDestroy(stop));")
    out.append("  }")
    for a in spec.arrays:
        out.append(f"  SIRIUS_CHECK(cudaFree({arr_names[a.name]}));")
    for cn, _ in storage_sizes:
        out.append(f"  SIRIUS_CHECK(cudaFree({cn}));")
    out.append("  return 0;")
    out.append("}")
    return out


def emit_program(title: str, description: list[str], configs: list[tuple[ProgramSpec, dict]],
                 regenerate: str) -> str:
    """configs: [(full spec, {func: KernelPlan}), (small spec, {func: KernelPlan})]."""
    if [s.config for s, _ in configs] != ["full", "small"]:
        raise ValueError("expected the configurations full and small, in that order")
    (full, full_plan), (small, small_plan) = configs
    lines = [
        f"// {title}",
        "//",
        "// Generated by scripts/gen_tvm_models.py; do not edit. Regenerate with:",
        f"//   {regenerate}",
        "//",
    ]
    lines += [f"// {d}" if d else "//" for d in description]
    lines += [
        "//",
        "// Kernels: TVM 0.27 (apache-tvm), Relax pipeline \"zero\" + dlight default GPU",
        "// schedules, target {\"kind\": \"cuda\", \"arch\": \"sm_90\"}, copied verbatim. The host",
        "// code issues the launches the TVM runtime would, on the buffers of TVM's static",
        "// memory plan (tensors share planned storages as TVM assigns them).",
        "//",
        "// Configurations (TVM bakes sizes into the kernels, so each has its own kernels):",
        "//   default          full:  " + ", ".join(f"{k}={v}" for k, v in full.sizes.items()),
        "//   -DSIRIUS_SMALL   small: " + ", ".join(f"{k}={v}" for k, v in small.sizes.items()),
        "//",
        "// Usage: PROGRAM [ITERATIONS]  -- runs the model once and prints one",
        "// 'checksum:' line per output (sum of x[i] * (i % 17 + 1)); with ITERATIONS > 0",
        f"// also times the whole launch sequence with CUDA events ({WARMUP} warm-up runs,",
        "// then ITERATIONS timed runs, median reported).",
    ]
    lines.append(HELPERS.rstrip("\n"))
    if any(a.dtype == "float16" for spec, _ in configs for a in spec.arrays):
        lines.append(HELPERS_F16.rstrip("\n"))
    lines.append("")
    lines.append("#ifdef SIRIUS_SMALL")
    lines.extend(_config_block(small, small_plan))
    lines.append("#else  // full configuration")
    lines.extend(_config_block(full, full_plan))
    lines.append("#endif  // SIRIUS_SMALL")
    lines.append("")
    lines.append("int main(int argc, char** argv) {")
    lines.append("  int iters = argc > 1 ? atoi(argv[1]) : 0;")
    lines.append("  return run_model(iters);")
    lines.append("}")
    return "\n".join(lines) + "\n"
