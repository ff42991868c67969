"""Palette templates through shared memory and barriers: block-local neighbours, 2-D
tiles, the tiled transpose, and block and full reductions.
"""

from __future__ import annotations

from sirius.testing.progen.footprint import Access, Footprint, _threads_1d
from sirius.testing.progen.templates import (
    _BARRIER_SUFFIX, Ctx, Template, _barrier, _barrier_features, _kernel,
)


class BlockNeighbor(Template):
    """Each block stages its chunk in shared memory (optionally reversed),
    synchronises, and combines a thread's element with its neighbour's; the
    result is stored at the thread's slot or the mirrored one."""

    pattern = "block_neighbor"
    roles = ("r", "w")
    barriers = True

    def __init__(self, ctx: Ctx, block: int, rev_read: bool, rev_write: bool,
                 variant: str | None = None):
        self.ctx, self.block, self.rev_read, self.rev_write = ctx, block, rev_read, rev_write
        self.variant = variant
        self.features = _barrier_features(variant)

    @property
    def name(self) -> str:
        return (f"nbr{self.block}_r{int(self.rev_read)}w{int(self.rev_write)}"
                + _BARRIER_SUFFIX[self.variant])

    def code(self) -> str:
        B = self.block
        src = f"base + ({B - 1} - t)" if self.rev_read else "base + t"
        dst = f"base + ({B - 1} - t)" if self.rev_write else "base + t"
        bar, bonus = _barrier(self.variant, "tile[t]")
        return _kernel(self.name, "const float* a, float* out", [
            f"__shared__ float tile[{B}];",
            "int t = threadIdx.x;",
            f"int base = blockIdx.x * {B};",
            f"tile[t] = a[{src}];",
            bar,
            f"out[{dst}] = 0.5f * tile[t] + 0.25f * tile[(t + 1) % {B}]{bonus};",
        ])

    def shape(self):
        return (self.ctx.n // self.block, 1, 1), (self.block, 1, 1)

    def accesses(self):
        rd, wr = Footprint(), Footprint()
        B = self.block
        grid, _ = self.shape()
        for bd, td, b, t in _threads_1d(grid[0], B):
            base = b * B
            rd.touch(base + (B - 1 - t if self.rev_read else t), bd, td)
            wr.touch(base + (B - 1 - t if self.rev_write else t), bd, td)
        return [Access(0, False, rd), Access(1, True, wr)]


class TileMap(Template):
    """2-D tile of a ``side x side`` buffer through shared memory: element
    (y, x) becomes a mix of tile[y][x] and tile[x][y]. With ``swap`` the tile
    is loaded transposed within the block (a block-level read)."""

    pattern = "tile_map"
    roles = ("r", "w")
    barriers = True

    def __init__(self, ctx: Ctx, tile: int, swap: bool, variant: str | None = None):
        assert ctx.side and ctx.side % tile == 0
        self.ctx, self.tile, self.swap, self.variant = ctx, tile, swap, variant
        self.features = _barrier_features(variant)

    @property
    def name(self) -> str:
        return f"tile_map{self.tile}_s{int(self.swap)}" + _BARRIER_SUFFIX[self.variant]

    def code(self) -> str:
        T = self.tile
        src = (f"a[(blockIdx.y * {T} + threadIdx.x) * side + blockIdx.x * {T} + threadIdx.y]"
               if self.swap else "a[y * side + x]")
        bar, bonus = _barrier(self.variant, "tile[threadIdx.y][threadIdx.x]")
        return _kernel(self.name, "const float* a, float* out, int side", [
            f"__shared__ float tile[{T}][{T + 1}];",
            f"int x = blockIdx.x * {T} + threadIdx.x;",
            f"int y = blockIdx.y * {T} + threadIdx.y;",
            f"tile[threadIdx.y][threadIdx.x] = {src};",
            bar,
            "out[y * side + x] = 0.5f * tile[threadIdx.y][threadIdx.x]"
            f" + 0.25f * tile[threadIdx.x][threadIdx.y]{bonus};",
        ])

    def shape(self):
        g = self.ctx.side // self.tile
        return (g, g, 1), (self.tile, self.tile, 1)

    def scalars(self):
        return ("side",)

    def accesses(self):
        rd, wr = Footprint(), Footprint()
        T, S = self.tile, self.ctx.side
        g = S // T
        for by in range(g):
            for bx in range(g):
                for ty in range(T):
                    for tx in range(T):
                        bd, td = (bx, by, 0), (tx, ty, 0)
                        x, y = bx * T + tx, by * T + ty
                        if self.swap:
                            rd.touch((by * T + tx) * S + bx * T + ty, bd, td)
                        else:
                            rd.touch(y * S + x, bd, td)
                        wr.touch(y * S + x, bd, td)
        return [Access(0, False, rd), Access(1, True, wr)]


class Transpose(Template):
    """Classic tiled transpose through a padded shared tile."""

    pattern = "transpose"
    roles = ("r", "w")
    barriers = True

    def __init__(self, ctx: Ctx, tile: int):
        assert ctx.side and ctx.side % tile == 0
        self.ctx, self.tile = ctx, tile

    @property
    def name(self) -> str:
        return f"transpose{self.tile}"

    def code(self) -> str:
        T = self.tile
        return _kernel(self.name, "const float* a, float* out, int side", [
            f"__shared__ float tile[{T}][{T + 1}];",
            f"int x = blockIdx.x * {T} + threadIdx.x;",
            f"int y = blockIdx.y * {T} + threadIdx.y;",
            "tile[threadIdx.y][threadIdx.x] = a[y * side + x];",
            "__syncthreads();",
            f"int ox = blockIdx.y * {T} + threadIdx.x;",
            f"int oy = blockIdx.x * {T} + threadIdx.y;",
            "out[oy * side + ox] = tile[threadIdx.x][threadIdx.y];",
        ])

    def shape(self):
        g = self.ctx.side // self.tile
        return (g, g, 1), (self.tile, self.tile, 1)

    def scalars(self):
        return ("side",)

    def accesses(self):
        rd, wr = Footprint(), Footprint()
        T, S = self.tile, self.ctx.side
        g = S // T
        for by in range(g):
            for bx in range(g):
                for ty in range(T):
                    for tx in range(T):
                        bd, td = (bx, by, 0), (tx, ty, 0)
                        rd.touch((by * T + ty) * S + bx * T + tx, bd, td)
                        wr.touch((bx * T + ty) * S + by * T + tx, bd, td)
        return [Access(0, False, rd), Access(1, True, wr)]


class BlockReduce(Template):
    """One sum per ``chunk`` elements: ``chunk / 2`` threads each add two
    elements while loading, then a shared-memory tree; thread 0 writes
    ``out[blockIdx.x]``."""

    pattern = "block_reduce"
    roles = ("r", "w")
    barriers = True

    def __init__(self, ctx: Ctx, chunk: int, variant: str | None = None):
        self.ctx, self.chunk, self.variant = ctx, chunk, variant
        self.features = _barrier_features(variant)

    @property
    def name(self) -> str:
        return f"block_sum{self.chunk}" + _BARRIER_SUFFIX[self.variant]

    def code(self) -> str:
        C, H = self.chunk, self.chunk // 2
        bar, bonus = _barrier(self.variant, "s[t]")
        return _kernel(self.name, "const float* a, float* out", [
            f"__shared__ float s[{H}];",
            "int t = threadIdx.x;",
            f"int base = blockIdx.x * {C};",
            f"s[t] = a[base + t] + a[base + t + {H}];",
            bar,
            f"for (int k = {H // 2}; k > 0; k >>= 1) {{",
            "  if (t < k) s[t] += s[t + k];",
            "  __syncthreads();",
            "}",
            f"if (t == 0) out[blockIdx.x] = s[0]{bonus};",
        ])

    def shape(self):
        return (self.ctx.n // self.chunk, 1, 1), (self.chunk // 2, 1, 1)

    def accesses(self):
        rd, wr = Footprint(), Footprint()
        C, H = self.chunk, self.chunk // 2
        grid, _ = self.shape()
        for bd, td, b, t in _threads_1d(grid[0], H):
            rd.touch(b * C + t, bd, td)
            rd.touch(b * C + t + H, bd, td)
            if t == 0:
                wr.touch(b, bd, td)
        return [Access(0, False, rd), Access(1, True, wr)]


class FullReduce(Template):
    """A single block sums the first ``count`` elements (grid-stride loop,
    then a shared-memory tree) into ``out[0]``."""

    pattern = "full_reduce"
    roles = ("r", "w")
    barriers = True

    def __init__(self, ctx: Ctx, threads: int, count: int, count_text: str,
                 variant: str | None = None):
        self.ctx, self.threads, self.count, self.count_text = ctx, threads, count, count_text
        self.variant = variant
        self.features = _barrier_features(variant)

    @property
    def name(self) -> str:
        return f"full_sum{self.threads}" + _BARRIER_SUFFIX[self.variant]

    def code(self) -> str:
        T = self.threads
        bar, bonus = _barrier(self.variant, "acc")
        return _kernel(self.name, "const float* a, float* out, int n", [
            f"__shared__ float s[{T}];",
            "int t = threadIdx.x;",
            "float acc = 0.0f;",
            f"for (int j = t; j < n; j += {T}) acc += a[j];",
            "s[t] = acc;",
            bar,
            f"for (int k = {T // 2}; k > 0; k >>= 1) {{",
            "  if (t < k) s[t] += s[t + k];",
            "  __syncthreads();",
            "}",
            f"if (t == 0) out[0] = s[0]{bonus};",
        ])

    def shape(self):
        return (1, 1, 1), (self.threads, 1, 1)

    def scalars(self):
        return (self.count_text,)

    def accesses(self):
        rd, wr = Footprint(), Footprint()
        for bd, td, _, t in _threads_1d(1, self.threads):
            for j in range(t, self.count, self.threads):
                rd.touch(j, bd, td)
            if t == 0:
                wr.touch(0, bd, td)
        return [Access(0, False, rd), Access(1, True, wr)]
