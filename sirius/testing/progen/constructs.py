"""Templates of the constructs that once made the optimizer miscompile (drawn from the
generator's second stream): an early return before a barrier, two overloaded kernels of
one name, device globals (arrays, a ``__constant__``, a pointer), a ``__device__``
helper holding static shared memory, and the cells of a host loop nest.
"""

from __future__ import annotations

from sirius.testing.progen.elementwise import _TailCut
from sirius.testing.progen.footprint import (
    Access, Footprint, _every_thread_reads_first, _map_accesses, _threads_1d,
)
from sirius.testing.progen.templates import (
    _BARRIER_SUFFIX, BINARY_OPS, UNARY_OPS, Ctx, Template, _barrier, _barrier_features, _kernel,
)


class TailBarrier(_TailCut):
    """Element-wise with ``if (i >= n) return;`` *before* a barrier: the last
    block's returning threads never reach it, the others do. Each thread
    stages its element in shared memory and mixes in its right neighbour's
    (its own when the neighbour returned)."""

    pattern = "tail_barrier"
    roles = ("r", "w")
    barriers = True

    def __init__(self, ctx: Ctx, op: int, block: int, cut: int, variant: str | None = None):
        self.ctx, self.op, self.block, self.cut, self.variant = ctx, op, block, cut, variant
        self.features = _barrier_features(variant)

    @property
    def name(self) -> str:
        return f"tailbar{self.block}_op{self.op}" + _BARRIER_SUFFIX[self.variant]

    def code(self) -> str:
        B = self.block
        bar, bonus = _barrier(self.variant, "tile[t]")
        return _kernel(self.name, "const float* a, float* out, int n", [
            f"__shared__ float tile[{B}];",
            "int t = threadIdx.x;",
            f"int i = blockIdx.x * {B} + t;",
            "if (i >= n) return;",
            "tile[t] = a[i];",
            bar,
            f"int u = (t + 1 < {B} && i + 1 < n) ? t + 1 : t;",
            f"out[i] = {UNARY_OPS[self.op].format(a='tile[t]')} + 0.25f * tile[u]{bonus};",
        ])

    def accesses(self):
        grid, block = self.shape()
        return _map_accesses(grid[0], block[0], self.count(), (False, True))


class Overload(Template):
    """One of two ``__global__ void ovl(...)`` of one name: ``(const float*,
    float*, int)`` is element-wise; ``(const float*, float*, float, int)``
    reads the input reversed and adds a scalar."""

    pattern = "overload"
    roles = ("r", "w")

    def __init__(self, ctx: Ctx, reverse: bool, op: int):
        self.ctx, self.reverse, self.op = ctx, reverse, op

    @property
    def name(self) -> str:
        return "ovl"

    @property
    def def_key(self) -> str:
        return "ovl(const float*, float*, float, int)" if self.reverse else "ovl(const float*, float*, int)"

    def code(self) -> str:
        if self.reverse:
            return _kernel(self.name, "const float* a, float* out, float c, int n", [
                "int i = blockIdx.x * blockDim.x + threadIdx.x;",
                "if (i < n) {",
                "  out[i] = 0.5f * a[n - 1 - i] + c;",
                "}",
            ])
        return _kernel(self.name, "const float* a, float* out, int n", [
            "int i = blockIdx.x * blockDim.x + threadIdx.x;",
            "if (i < n) {",
            f"  out[i] = {UNARY_OPS[self.op].format(a='a[i]')};",
            "}",
        ])

    def shape(self):
        return (self.ctx.n // self.ctx.block, 1, 1), (self.ctx.block, 1, 1)

    def scalars(self):
        return ("0.125f", "n") if self.reverse else ("n",)

    def key(self):
        return (type(self).__name__, self.def_key, self.shape(), self.ctx)

    def accesses(self):
        if not self.reverse:
            grid, block = self.shape()
            return _map_accesses(grid[0], block[0], self.ctx.n, (False, True))
        rd, wr = Footprint(), Footprint()
        n = self.ctx.n
        grid, block = self.shape()
        for bd, td, b, t in _threads_1d(grid[0], block[0]):
            i = b * block[0] + t
            rd.touch(n - 1 - i, bd, td)
            wr.touch(i, bd, td)
        return [Access(0, False, rd), Access(1, True, wr)]


class GlobalArray(Template):
    """Element-wise over ``__device__ float`` arrays named in the code.

    ``kind``: ``put`` (buffer -> global), ``map`` (global -> global, no
    pointer parameter at all; in place when ``src == dst``), ``shift``
    (global -> other global, reading ``(i + k) % n`` too, no pointer
    parameter), ``get`` (global -> buffer).
    """

    pattern = "global_array"
    roles = ("r", "w")

    def __init__(self, ctx: Ctx, kind: str, src: str, dst: str, op: int = 0, k: int = 1,
                 gidx: bool = False):
        self.ctx, self.kind, self.src, self.dst, self.op, self.k = ctx, kind, src, dst, op, k
        self.gidx = gidx
        if gidx:
            self.features, self.helpers = ("gidx_helper",), ("gidx",)

    @property
    def params(self):
        return (self.kind == "put", self.kind == "get")

    @property
    def name(self) -> str:
        base = {"put": f"gput_{self.dst}_op{self.op}", "map": f"gmap_{self.src}_{self.dst}_op{self.op}",
                "shift": f"gshift{self.k}_{self.src}_{self.dst}", "get": f"gget_{self.src}_op{self.op}"}
        return base[self.kind] + ("_gi" if self.gidx else "")

    def code(self) -> str:
        src = "a" if self.kind == "put" else self.src
        dst = "out" if self.kind == "get" else self.dst
        params = {"put": "const float* a, int n", "get": "float* out, int n"}.get(self.kind, "int n")
        if self.kind == "shift":
            expr = f"0.5f * ({src}[i] + {src}[(i + {self.k}) % n])"
        else:
            expr = UNARY_OPS[self.op].format(a=f"{src}[i]")
        return _kernel(self.name, params, [
            "int i = gidx();" if self.gidx else "int i = blockIdx.x * blockDim.x + threadIdx.x;",
            "if (i < n) {",
            f"  {dst}[i] = {expr};",
            "}",
        ])

    def shape(self):
        return (self.ctx.n // self.ctx.block, 1, 1), (self.ctx.block, 1, 1)

    def scalars(self):
        return ("n",)

    def accesses(self):
        grid, block = self.shape()
        if self.kind != "shift":
            return _map_accesses(grid[0], block[0], self.ctx.n, (False, True))
        rd, wr = Footprint(), Footprint()
        n = self.ctx.n
        for bd, td, b, t in _threads_1d(grid[0], block[0]):
            i = b * block[0] + t
            rd.touch(i, bd, td)
            rd.touch((i + self.k) % n, bd, td)
            wr.touch(i, bd, td)
        return [Access(0, False, rd), Access(1, True, wr)]


class _SymbolMap(Template):
    """``out[i] = op(a[i])`` combined with a device symbol that every thread reads
    (operand 1, named in the code, not passed): the subclasses say which symbol and
    how the statement uses it."""

    roles = ("r", "r", "w")
    prefix = ""  # of the kernel's name
    signature = ""
    statement = ""  # ``{v}`` is op(a[i])

    def __init__(self, ctx: Ctx, op: int):
        self.ctx, self.op = ctx, op

    @property
    def name(self) -> str:
        return f"{self.prefix}_op{self.op}"

    def code(self) -> str:
        return _kernel(self.name, self.signature, [
            "int i = blockIdx.x * blockDim.x + threadIdx.x;",
            "if (i < n) {",
            "  " + self.statement.format(v=UNARY_OPS[self.op].format(a="a[i]")),
            "}",
        ])

    def shape(self):
        return (self.ctx.n // self.ctx.block, 1, 1), (self.ctx.block, 1, 1)

    def scalars(self):
        return ("n",)

    def accesses(self):
        grid, block = self.shape()
        a, out = _map_accesses(grid[0], block[0], self.ctx.n, (False, True))
        symbol = _every_thread_reads_first(grid[0], block[0])
        return [Access(0, False, a.footprint), Access(1, False, symbol), Access(2, True, out.footprint)]


class ConstMap(_SymbolMap):
    """``out[i] = op(a[i]) + c0`` with ``__constant__ float c0``."""

    pattern = "const_symbol"
    params = (True, False, True)
    prefix, signature, statement = "cmap", "const float* a, float* out, int n", "out[i] = {v} + c0;"


class PtrWrite(_SymbolMap):
    """``gp[i] = op(a[i])`` through ``__device__ float* gp``: operand 1 is the pointer
    variable, operand 2 the buffer it points to (written)."""

    pattern = "global_pointer"
    params = (True, False, False)
    prefix, signature, statement = "gpw", "const float* a, int n", "gp[i] = {v};"


class HelperReduce(Template):
    """Kernels calling ``block_sum_dev`` (a static ``__shared__`` array inside
    a ``__device__`` helper). ``sum``: one sum per block into
    ``out[blockIdx.x]``; ``norm``: element-wise, plus the clamped block sum."""

    pattern = "helper_reduce"
    roles = ("r", "w")
    barriers = True
    features = ("shared_helper",)
    helpers = ("block_sum",)

    def __init__(self, ctx: Ctx, kind: str, block: int):
        assert block <= 512 and block & (block - 1) == 0
        self.ctx, self.kind, self.block = ctx, kind, block

    @property
    def name(self) -> str:
        return f"h{self.kind}{self.block}"

    def code(self) -> str:
        B = self.block
        if self.kind == "sum":
            return _kernel(self.name, "const float* a, float* out", [
                f"float r = block_sum_dev(a[blockIdx.x * {B} + threadIdx.x]);",
                "if (threadIdx.x == 0) out[blockIdx.x] = r;",
            ])
        return _kernel(self.name, "const float* a, float* out", [
            f"int i = blockIdx.x * {B} + threadIdx.x;",
            "float s = block_sum_dev(a[i]);",
            "out[i] = 0.5f * a[i] + 0.25f * fminf(fmaxf(s * 0.00390625f, -4.0f), 4.0f);",
        ])

    def shape(self):
        return (self.ctx.n // self.block, 1, 1), (self.block, 1, 1)

    def accesses(self):
        grid, block = self.shape()
        if self.kind == "norm":
            return _map_accesses(grid[0], block[0], self.ctx.n, (False, True))
        rd, wr = Footprint(), Footprint()
        for bd, td, b, t in _threads_1d(grid[0], block[0]):
            rd.touch(b * block[0] + t, bd, td)
            if t == 0:
                wr.touch(b, bd, td)
        return [Access(0, False, rd), Access(1, True, wr)]


class NestCell(Template):
    """A launch of a cell of a two-deep host loop nest, over one slot of
    ``width`` elements. ``a``: ``g = op(x, h)``; ``b``: ``hn = g / 2 - d / 4``,
    ``d`` read reversed within the slot when ``rev``."""

    pattern = "nest_cell"
    roles = ("r", "r", "w")

    def __init__(self, ctx: Ctx, kind: str, width: int, block: int, op: int = 0,
                 rev: bool = False):
        self.ctx, self.kind, self.width, self.block, self.op, self.rev = ctx, kind, width, block, op, rev

    @property
    def name(self) -> str:
        if self.kind == "a":
            return f"cell_a_op{self.op}"
        return "cell_b_rev" if self.rev else "cell_b"

    def code(self) -> str:
        if self.kind == "a":
            params, body = "const float* x, const float* h, float* g, int w", (
                f"g[i] = {BINARY_OPS[self.op].format(a='x[i]', b='h[i]')};")
        else:
            d = "d[w - 1 - i]" if self.rev else "d[i]"
            params, body = "const float* g, const float* d, float* hn, int w", (
                f"hn[i] = 0.5f * g[i] - 0.25f * {d};")
        return _kernel(self.name, params, [
            "int i = blockIdx.x * blockDim.x + threadIdx.x;",
            "if (i < w) {",
            "  " + body,
            "}",
        ])

    def shape(self):
        return (self.width // self.block, 1, 1), (self.block, 1, 1)

    def scalars(self):
        return (str(self.width),)

    def accesses(self):
        grid, block = self.shape()
        acc = _map_accesses(grid[0], block[0], self.width, (False, False, True))
        if self.kind == "b" and self.rev:
            d = Footprint()
            for bd, td, b, t in _threads_1d(grid[0], block[0]):
                d.touch(self.width - 1 - (b * block[0] + t), bd, td)
            acc[1] = Access(1, False, d)
        return acc
