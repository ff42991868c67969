"""Palette templates without shared memory: element-wise maps (any block size), the
early-return tail, the cross-block shift, the broadcast of a reduced value, the atomic
histogram and the accumulation in a host loop.
"""

from __future__ import annotations

from sirius.testing.progen.footprint import _MULTI, Access, Footprint, _threads_1d
from sirius.testing.progen.templates import BINARY_OPS, UNARY_OPS, Ctx, Template, _kernel


class Map(Template):
    """``out[i] = op(a[i] [, b[i]])`` with a bound check; any block size."""

    def __init__(self, ctx: Ctx, op: int, arity: int, block: int, gidx: bool = False):
        self.ctx, self.op, self.arity, self.block, self.gidx = ctx, op, arity, block, gidx
        self.pattern = "map" if block == ctx.block else "map_reblock"
        self.roles = ("r",) * arity + ("w",)
        if gidx:
            self.features, self.helpers = ("gidx_helper",), ("gidx",)

    @property
    def name(self) -> str:
        return f"map{self.arity}_op{self.op}" + ("_gi" if self.gidx else "")

    def expr(self) -> str:
        if self.arity == 1:
            return UNARY_OPS[self.op].format(a="a[i]")
        return BINARY_OPS[self.op].format(a="a[i]", b="b[i]")

    def code(self) -> str:
        ins = ["const float* a", "const float* b"][: self.arity]
        return _kernel(self.name, ", ".join(ins + ["float* out", "int n"]), [
            "int i = gidx();" if self.gidx else "int i = blockIdx.x * blockDim.x + threadIdx.x;",
            "if (i < n) {",
            f"  out[i] = {self.expr()};",
            "}",
        ])

    def shape(self):
        return (self.ctx.n // self.block, 1, 1), (self.block, 1, 1)

    def grid_text(self) -> str:
        return "(n + threads - 1) / threads" if self._from_argv else super().grid_text()

    def block_text(self) -> str:
        return "threads" if self._from_argv else super().block_text()

    @property
    def _from_argv(self) -> bool:
        return self.ctx.argv_block and self.block == self.ctx.block

    def scalars(self):
        return ("n",)

    def accesses(self):
        fps = [Footprint() for _ in range(self.arity + 1)]
        grid, block = self.shape()
        for bd, td, b, t in _threads_1d(grid[0], block[0]):
            i = b * block[0] + t
            if i < self.ctx.n:
                for fp in fps:
                    fp.touch(i, bd, td)
        return [Access(k, k == self.arity, fp) for k, fp in enumerate(fps)]


class _TailCut(Template):
    """A launch over the first ``n - cut`` elements, rounded up to whole blocks of
    ``block`` threads: the last block has threads past the end."""

    def count(self) -> int:
        return self.ctx.n - self.cut

    def shape(self):
        return ((self.count() + self.block - 1) // self.block, 1, 1), (self.block, 1, 1)

    def grid_text(self) -> str:
        return f"(n - {self.cut} + {self.block - 1}) / {self.block}"

    def scalars(self):
        return (f"n - {self.cut}",)


class Tail(_TailCut):
    """Element-wise with an early ``return`` over ``n - cut`` elements."""

    pattern = "tail_return"
    roles = ("r", "w")

    def __init__(self, ctx: Ctx, op: int, block: int, cut: int):
        self.ctx, self.op, self.block, self.cut = ctx, op, block, cut

    @property
    def name(self) -> str:
        return f"tail_op{self.op}"

    def code(self) -> str:
        return _kernel(self.name, "const float* a, float* out, int n", [
            "int i = blockIdx.x * blockDim.x + threadIdx.x;",
            "if (i >= n) return;",
            f"out[i] = {UNARY_OPS[self.op].format(a='a[i]')};",
        ])

    def accesses(self):
        rd, wr = Footprint(), Footprint()
        grid, block = self.shape()
        for bd, td, b, t in _threads_1d(grid[0], block[0]):
            i = b * block[0] + t
            if i >= self.count():
                continue
            rd.touch(i, bd, td)
            wr.touch(i, bd, td)
        return [Access(0, False, rd), Access(1, True, wr)]


class Shift(Template):
    """``out[i] = (a[i] + a[(i + k) % n]) / 2``: reads across block boundaries."""

    pattern = "shift"
    roles = ("r", "w")

    def __init__(self, ctx: Ctx, k: int, block: int, gidx: bool = False):
        self.ctx, self.k, self.block, self.gidx = ctx, k, block, gidx
        if gidx:
            self.features, self.helpers = ("gidx_helper",), ("gidx",)

    @property
    def name(self) -> str:
        return f"shift{self.k}" + ("_gi" if self.gidx else "")

    def code(self) -> str:
        return _kernel(self.name, "const float* a, float* out, int n", [
            "int i = gidx();" if self.gidx else "int i = blockIdx.x * blockDim.x + threadIdx.x;",
            "if (i < n) {",
            f"  out[i] = 0.5f * (a[i] + a[(i + {self.k}) % n]);",
            "}",
        ])

    def shape(self):
        return (self.ctx.n // self.block, 1, 1), (self.block, 1, 1)

    def scalars(self):
        return ("n",)

    def accesses(self):
        rd, wr = Footprint(), Footprint()
        n = self.ctx.n
        grid, block = self.shape()
        for bd, td, b, t in _threads_1d(grid[0], block[0]):
            i = b * block[0] + t
            if i < n:
                rd.touch(i, bd, td)
                rd.touch((i + self.k) % n, bd, td)
                wr.touch(i, bd, td)
        return [Access(0, False, rd), Access(1, True, wr)]


class Broadcast(Template):
    """Element-wise over ``a`` plus a clamped reduced value ``s[0]`` (every
    thread reads it) or ``s[blockIdx.x]`` (one per block)."""

    pattern = "broadcast"
    roles = ("r", "r", "w")

    def __init__(self, ctx: Ctx, block: int, per_block: bool):
        self.ctx, self.block, self.per_block = ctx, block, per_block

    @property
    def name(self) -> str:
        return "bcast_block" if self.per_block else "bcast_first"

    def code(self) -> str:
        idx = "blockIdx.x" if self.per_block else "0"
        return _kernel(self.name, "const float* a, const float* s, float* out, int n", [
            "int i = blockIdx.x * blockDim.x + threadIdx.x;",
            "if (i < n) {",
            f"  float m = fminf(fmaxf(s[{idx}] * 0.00390625f, -4.0f), 4.0f);",
            "  out[i] = 0.5f * a[i] + 0.25f * m;",
            "}",
        ])

    def shape(self):
        return (self.ctx.n // self.block, 1, 1), (self.block, 1, 1)

    def scalars(self):
        return ("n",)

    def accesses(self):
        ra, rs, wr = Footprint(), Footprint(), Footprint()
        grid, block = self.shape()
        for bd, td, b, t in _threads_1d(grid[0], block[0]):
            i = b * block[0] + t
            ra.touch(i, bd, td)
            rs.touch(b if self.per_block else 0, bd, td)
            wr.touch(i, bd, td)
        return [Access(0, False, ra), Access(1, False, rs), Access(2, True, wr)]


class Hist(Template):
    """Counts elements of ``a`` into ``bins`` data-dependent bins of ``h``
    with ``atomicAdd(.., 1.0f)``: every order of the additions gives the same
    floats, so the result is deterministic."""

    pattern = "atomic_hist"
    roles = ("r", "rw")

    def __init__(self, ctx: Ctx, block: int, bins: int):
        self.ctx, self.block, self.bins = ctx, block, bins

    @property
    def name(self) -> str:
        return f"hist{self.bins}"

    def code(self) -> str:
        return _kernel(self.name, "const float* a, float* h, int n", [
            "int i = blockIdx.x * blockDim.x + threadIdx.x;",
            "if (i < n) {",
            "  float v = fabsf(a[i]);",
            "  v = v - floorf(v);",
            f"  int bin = (int)(v * {float(self.bins)}f) & {self.bins - 1};",
            "  atomicAdd(&h[bin], 1.0f);",
            "}",
        ])

    def shape(self):
        return (self.ctx.n // self.block, 1, 1), (self.block, 1, 1)

    def scalars(self):
        return ("n",)

    def accesses(self):
        rd, h = Footprint(), Footprint()
        grid, block = self.shape()
        for bd, td, b, t in _threads_1d(grid[0], block[0]):
            rd.touch(b * block[0] + t, bd, td)
        # any thread may hit any bin
        many_blocks = _MULTI if grid[0] > 1 else (0, 0, 0)
        for k in range(self.bins):
            h.touch_by_many(k, many_blocks)
        return [Access(0, False, rd), Access(1, False, h), Access(1, True, h)]


class Accumulate(Template):
    """``acc[i] = acc[i] / 2 + x[i] / 4 + c`` with ``c`` from the host loop."""

    pattern = "accumulate"
    roles = ("rw", "r")

    def __init__(self, ctx: Ctx, block: int, step_text: str):
        self.ctx, self.block, self.step_text = ctx, block, step_text

    @property
    def name(self) -> str:
        return "accum"

    def code(self) -> str:
        return _kernel(self.name, "float* acc, const float* x, float c, int n", [
            "int i = blockIdx.x * blockDim.x + threadIdx.x;",
            "if (i < n) {",
            "  acc[i] = 0.5f * acc[i] + 0.25f * x[i] + c;",
            "}",
        ])

    def shape(self):
        return (self.ctx.n // self.block, 1, 1), (self.block, 1, 1)

    def scalars(self):
        return (self.step_text, "n")

    def accesses(self):
        acc, x = Footprint(), Footprint()
        grid, block = self.shape()
        for bd, td, b, t in _threads_1d(grid[0], block[0]):
            i = b * block[0] + t
            acc.touch(i, bd, td)
            x.touch(i, bd, td)
        return [Access(0, False, acc), Access(0, True, acc), Access(1, False, x)]
