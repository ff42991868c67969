"""Templates of the constructs a transformation once took for what they are not (issue 26,
drawn from the generator's third stream): shared floats read back through sub-word
views, promises made inside ``__noinline__`` helpers, over 48 KB of dynamic shared
memory, and program macros a rebuild may redefine.
"""

from __future__ import annotations

from sirius.testing.progen.footprint import Access, Footprint, _map_accesses, _threads_1d
from sirius.testing.progen.templates import UNARY_OPS, Ctx, Template, _kernel


class ByteNeighbor(Template):
    """A block stages its floats in shared memory and, after the barrier, reads back
    part of its right neighbour's float through ``unsigned char*`` (its high byte) or
    ``short*`` (its high half): a 1- or 2-byte read inside another thread's 4-byte store,
    which only byte ranges see (the starts of the two accesses differ)."""

    pattern = "byte_neighbor"
    roles = ("r", "w")
    barriers = True

    def __init__(self, ctx: Ctx, block: int, view: str):
        assert view in ("char", "short")
        self.ctx, self.block, self.view = ctx, block, view
        self.features = (f"{view}_view",)

    @property
    def name(self) -> str:
        return f"nbr{self.block}_{self.view}"

    def code(self) -> str:
        B = self.block
        if self.view == "char":  # (float)byte * 2^-7 is exact
            view = ["const unsigned char* bytes = (const unsigned char*)tile;",
                    f"float part = (float)bytes[4 * ((t + 1) % {B}) + 3] * 0.0078125f;"]
        else:  # (float)short * 2^-14 is exact
            view = ["const short* halves = (const short*)tile;",
                    f"float part = (float)halves[2 * ((t + 1) % {B}) + 1] * 0.00006103515625f;"]
        return _kernel(self.name, "const float* a, float* out", [
            f"__shared__ float tile[{B}];",
            "int t = threadIdx.x;",
            f"int i = blockIdx.x * {B} + t;",
            "tile[t] = a[i];",
            "__syncthreads();",
            *view,
            "out[i] = 0.5f * tile[t] + part;",
        ])

    def shape(self):
        return (self.ctx.n // self.block, 1, 1), (self.block, 1, 1)

    def accesses(self):
        grid, block = self.shape()
        return _map_accesses(grid[0], block[0], self.ctx.n, (False, True))


class LdgHelper(Template):
    """Element-wise, its input read by a ``__device__ __noinline__`` helper: through
    ``__ldg`` or through a ``const float* __restrict__`` parameter. The kernel's own
    text promises nothing; the promise is in the callee."""

    pattern = "ldg_helper"
    roles = ("r", "w")

    def __init__(self, ctx: Ctx, op: int, via: str):
        assert via in ("ldg", "restrict")
        self.ctx, self.op, self.via = ctx, op, via
        self.features = (f"{via}_in_helper",)
        self.helpers = ("ldg_load",) if via == "ldg" else ("restrict_load",)

    @property
    def name(self) -> str:
        return f"{self.via}_map_op{self.op}"

    def code(self) -> str:
        value = "ro_load(a, i)" if self.via == "ldg" else "2.0f * ro_half(a, i)"
        return _kernel(self.name, "const float* a, float* out, int n", [
            "int i = blockIdx.x * blockDim.x + threadIdx.x;",
            "if (i < n) {",
            f"  float v = {value};",
            f"  out[i] = {UNARY_OPS[self.op].format(a='v')};",
            "}",
        ])

    def shape(self):
        return (self.ctx.n // self.ctx.block, 1, 1), (self.ctx.block, 1, 1)

    def scalars(self):
        return ("n",)

    def accesses(self):
        grid, block = self.shape()
        return _map_accesses(grid[0], block[0], self.ctx.n, (False, True))


#: Bytes of dynamic shared memory ``BigShared`` asks for: each over the 48 KB a block gets
#: without ``cudaFuncSetAttribute``, each within every architecture's opt-in limit (99 KB).
BIG_SHARED_BYTES = (50176, 57344, 65536)


class BigShared(Template):
    """Element-wise through a per-block staging area of ``bytes`` of dynamic shared memory
    (over 48 KB: the program opts in with ``cudaFuncSetAttribute`` for this kernel): each
    thread fills its column of every slot, and after the barrier reads a neighbour's
    column of a slot that depends on the thread."""

    pattern = "big_shared"
    roles = ("r", "w")
    barriers = True

    def __init__(self, ctx: Ctx, bytes_: int):
        self.ctx, self.dynamic_shared = ctx, bytes_

    @property
    def name(self) -> str:
        return "stage_big"

    def slots(self) -> int:
        return self.dynamic_shared // (4 * self.ctx.block)

    def code(self) -> str:
        return _kernel(self.name, "const float* a, float* out, int slots", [
            "extern __shared__ float stage[];",
            "int t = threadIdx.x;",
            "int i = blockIdx.x * blockDim.x + t;",
            "for (int k = 0; k < slots; ++k) stage[k * blockDim.x + t] = 0.5f * a[i] + (float)(k & 7) * 0.0625f;",
            "__syncthreads();",
            "int k = (t * 5) % slots;",
            "out[i] = stage[k * blockDim.x + (t + 1) % blockDim.x] - 0.25f * stage[t];",
        ])

    def shape(self):
        return (self.ctx.n // self.ctx.block, 1, 1), (self.ctx.block, 1, 1)

    def scalars(self):
        return (str(self.slots()),)

    def key(self):
        return super().key() + (self.dynamic_shared,)

    def accesses(self):
        grid, block = self.shape()
        return _map_accesses(grid[0], block[0], self.ctx.n, (False, True))


#: Macros a program may define with a default (``#ifndef``) and a rebuild may redefine
#: with ``-D``: name -> the values a generated program defaults to, and the value its
#: rebuild uses (the optimized program must then take the original launches).
PROGRAM_MACROS = {
    # an index shift used only inside a kernel body: 0 makes the kernel element-wise
    "SHIFT": (("0", "0", "1"), "300"),
    # a float argument with no short decimal form (folded, it must be compared bit for bit)
    "GAIN": (("0.1f", "(1.0f / 3.0f)", "0.7f", "(2.0f / 7.0f)"), "0.3f"),
}


class MacroShift(Template):
    """``out[i] = (a[i] + a[(i + SHIFT) % n]) / 2`` with ``SHIFT`` a program macro: the
    accesses are those of the default value (``shift``); a rebuild may change them."""

    pattern = "macro_shift"
    roles = ("r", "w")
    macros = ("SHIFT",)

    def __init__(self, ctx: Ctx, shift: int):
        self.ctx, self.shift = ctx, shift

    @property
    def name(self) -> str:
        return "shift_macro"

    def code(self) -> str:
        return _kernel(self.name, "const float* a, float* out, int n", [
            "int i = blockIdx.x * blockDim.x + threadIdx.x;",
            "if (i < n) {",
            "  out[i] = 0.5f * (a[i] + a[(i + SHIFT) % n]);",
            "}",
        ])

    def shape(self):
        return (self.ctx.n // self.ctx.block, 1, 1), (self.ctx.block, 1, 1)

    def scalars(self):
        return ("n",)

    def accesses(self):
        rd, wr = Footprint(), Footprint()
        n = self.ctx.n
        grid, block = self.shape()
        for bd, td, b, t in _threads_1d(grid[0], block[0]):
            i = b * block[0] + t
            rd.touch(i, bd, td)
            rd.touch((i + self.shift) % n, bd, td)
            wr.touch(i, bd, td)
        return [Access(0, False, rd), Access(1, True, wr)]


class FloatMacro(Template):
    """``out[i] = min(g * a[i], 1) + 0.25`` with ``g`` passed as ``GAIN``, a program macro
    whose float has no short decimal form. (``fminf`` between the product and the sum:
    nothing to contract into an FMA.)"""

    pattern = "float_macro"
    roles = ("r", "w")
    macros = ("GAIN",)

    def __init__(self, ctx: Ctx):
        self.ctx = ctx

    @property
    def name(self) -> str:
        return "gain_map"

    def code(self) -> str:
        return _kernel(self.name, "const float* a, float* out, float g, int n", [
            "int i = blockIdx.x * blockDim.x + threadIdx.x;",
            "if (i < n) {",
            "  out[i] = fminf(g * a[i], 1.0f) + 0.25f;",
            "}",
        ])

    def shape(self):
        return (self.ctx.n // self.ctx.block, 1, 1), (self.ctx.block, 1, 1)

    def scalars(self):
        return ("GAIN", "n")

    def accesses(self):
        grid, block = self.shape()
        return _map_accesses(grid[0], block[0], self.ctx.n, (False, True))
