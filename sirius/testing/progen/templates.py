"""What every kernel template shares: the arithmetic of the kernels, the launch context
(``Ctx``), the ``Template`` base (CUDA text, launch shape, operand roles, cached
footprints), the ``__device__`` helpers kernels call and the barrier variants.
"""

from __future__ import annotations

from dataclasses import dataclass

from sirius.testing.progen.footprint import Access, Dim3


UNARY_OPS = (
    "0.5f * {a} + 0.25f",
    "fmaxf({a}, -0.5f) * 0.5f",
    "0.25f - 0.5f * fabsf({a})",
    "{a} * 0.25f - 0.125f",
    "fminf({a}, 1.0f) + 0.5f",
)
BINARY_OPS = (
    "0.5f * ({a} + {b})",
    "0.5f * {a} - 0.25f * {b}",
    "fmaxf({a}, {b}) * 0.5f",
    "fminf({a}, {b}) + 0.125f",
)


@dataclass(frozen=True)
class Ctx:
    n: int  # elements per buffer
    side: int | None  # n == side * side when 2-D templates are possible
    block: int  # default block size of element-wise launches
    # element-wise launches of the default block size take it from the command line
    # (``threads``, argv[1], ``block`` when absent): a launch shape the host computes
    argv_block: bool = False


class Template:
    """One kernel template instance: code, launch shape, pointer roles, footprint.

    ``roles`` has one entry per operand: ``r`` read, ``w`` written, ``rw``
    both. Operands are the pointer parameters, in order, unless ``params``
    says otherwise: an operand that is a device global (or a buffer reached
    through one) is named in the code, not passed. ``scalars`` are the host
    expressions of the scalar arguments that follow the pointers.
    """

    pattern: str = ""
    roles: tuple[str, ...] = ()
    barriers = False
    features: tuple[str, ...] = ()
    helpers: tuple[str, ...] = ()  # __device__ helpers the code calls (keys of DEVICE_HELPERS)
    macros: tuple[str, ...] = ()  # program macros (``PROGRAM_MACROS``) the kernel or its launch uses
    dynamic_shared = 0  # bytes of dynamic shared memory per block (the launch's third argument)

    @property
    def name(self) -> str:
        raise NotImplementedError

    @property
    def params(self) -> tuple[bool, ...]:
        """Per operand: is it a pointer parameter?"""
        return (True,) * len(self.roles)

    @property
    def def_key(self) -> str:
        """Identifies the definition: the name, or name and signature for an overload."""
        return self.name

    def code(self) -> str:
        raise NotImplementedError

    def shape(self) -> tuple[Dim3, Dim3]:
        raise NotImplementedError

    def scalars(self) -> tuple[str, ...]:
        return ()

    def grid_text(self) -> str:
        grid, _ = self.shape()
        return str(grid[0]) if grid[1:] == (1, 1) else f"dim3({grid[0]}, {grid[1]})"

    def block_text(self) -> str:
        _, block = self.shape()
        return str(block[0]) if block[1:] == (1, 1) else f"dim3({block[0]}, {block[1]})"

    def launch_config(self) -> str:
        """What goes between ``<<<`` and ``>>>``."""
        shared = f", {self.dynamic_shared}" if self.dynamic_shared else ""
        return f"{self.grid_text()}, {self.block_text()}{shared}"

    def accesses(self) -> list[Access]:
        raise NotImplementedError

    def key(self) -> tuple:
        """Identifies code, launch shape, scalars and every constructor choice: equal keys,
        equal footprints. The choices count even where the code's text does not show them
        (``MacroShift``'s shift is a macro's value: one kernel text, two footprints)."""
        choices = tuple(sorted((k, repr(v)) for k, v in vars(self).items() if k != "ctx"))
        return (type(self).__name__, self.name, self.shape(), self.scalars(), self.ctx, choices)

    def cached_accesses(self) -> list[Access]:
        key = self.key()
        found = _ACCESS_CACHE.get(key)
        if found is None:
            if len(_ACCESS_CACHE) > 256:
                _ACCESS_CACHE.clear()
            found = _ACCESS_CACHE[key] = self.accesses()
        return found


# footprints are never modified once built, so templates with one key share them
_ACCESS_CACHE: dict[tuple, list[Access]] = {}


def _kernel(name: str, params: str, body: list[str]) -> str:
    lines = [f"__global__ void {name}({params}) {{"]
    lines += ["  " + l if l else "" for l in body]
    lines.append("}")
    return "\n".join(lines) + "\n"


#: ``__device__`` helper functions, emitted before the kernels that call them.
DEVICE_HELPERS = {
    "gidx": (
        "__device__ int gidx() {\n"
        "  return blockIdx.x * blockDim.x + threadIdx.x;\n"
        "}\n"
    ),
    # a static __shared__ array inside a helper: one per block, shared by every
    # caller; the trailing barrier lets a second call overwrite it
    "block_sum": (
        "__device__ float block_sum_dev(float v) {\n"
        "  __shared__ float red[512];\n"
        "  int t = threadIdx.x;\n"
        "  red[t] = v;\n"
        "  __syncthreads();\n"
        "  for (int k = blockDim.x / 2; k > 0; k >>= 1) {\n"
        "    if (t < k) red[t] += red[t + k];\n"
        "    __syncthreads();\n"
        "  }\n"
        "  float r = red[0];\n"
        "  __syncthreads();\n"
        "  return r;\n"
        "}\n"
    ),
    # promises a kernel makes through a call nvcc keeps out of line: a read through the
    # read-only cache, and a restrict pointer nvcc may turn into one (LDG.E.CONSTANT)
    "ldg_load": (
        "__device__ __noinline__ float ro_load(const float* p, int i) {\n"
        "  return __ldg(p + i);\n"
        "}\n"
    ),
    "restrict_load": (
        "__device__ __noinline__ float ro_half(const float* __restrict__ p, int i) {\n"
        "  return 0.5f * p[i];\n"
        "}\n"
    ),
}

#: Barrier kinds: ``None`` is ``__syncthreads()``.
BARRIER_VARIANTS = (None, "count", "and", "or")
_BARRIER_SUFFIX = {None: "", "count": "_bc", "and": "_ba", "or": "_bo"}


def _barrier(variant: str | None, value: str) -> tuple[str, str]:
    """The barrier line and a term adding its result to an output (exactly:
    a small integer times a power of two), for a value the thread staged."""
    if variant is None:
        return "__syncthreads();", ""
    if variant == "count":
        return (f"int bar = __syncthreads_count({value} > 0.0f);",
                " + (float)bar * 0.0009765625f")
    if variant == "and":
        return f"int bar = __syncthreads_and({value} < 0.5f);", " + (float)bar * 0.125f"
    return f"int bar = __syncthreads_or({value} > 0.25f);", " + (float)bar * 0.125f"


def _barrier_features(variant: str | None) -> tuple[str, ...]:
    return () if variant is None else (f"syncthreads_{variant}",)
