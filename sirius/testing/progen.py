"""Seeded random multi-kernel CUDA programs, for differential fuzzing of fusion
and for property tests of the dependence analysis.

``generate_program(seed)`` returns one complete ``.cu`` program: a few float
buffers of ``size`` elements initialised on the host from an integer formula,
a sequence of kernel launches drawn from a palette of templates (element-wise,
re-blocked element-wise, early-return tail, cross-block shift, block-local
neighbour through shared memory, 2-D tiles through shared memory, tiled
transpose, block and full reductions, broadcast of a reduced value, an atomic
histogram, an accumulation), arranged as straight-line launches, independent
branches and host ``for`` loops (ping-pong, pointer swap, accumulation), and a
``checksum <buffer>: %.6f`` line per written buffer at the end.

Everything is a function of the seed: the same seed gives the same text, so a
failure is reproducible from its seed alone.

Alongside the source the generator returns what it *intended*: per launch the
kernel, shape, buffers read and written and the template; per pair of launches
the dependence width. Widths come from footprints: each template mirrors its
kernel's global-memory address stream in Python (which thread instance reads
or writes which element), and a pair of accesses to one buffer, at least one a
write, is

- ``thread`` if every element both touch is touched on both sides by one and
  the same (block, thread) instance,
- ``block`` if every such element is touched on both sides by one and the same
  block (so producer blocks touch disjoint elements),
- ``global`` otherwise; ``none`` when the launches share no buffer that one
  of them writes.

Data-dependent addresses (the histogram bins) are over-approximated: every
thread may touch every bin. Launch shapes are compared as launched: block and
thread indices are compared as 3-D coordinates (a 1-D launch has y = z = 0),
so an element-wise producer and a re-blocked or 2-D consumer are ``global``
although a fused kernel could re-map them.

Programs are deterministic and race-free by construction: a launch never
writes a buffer it reads unless each element is read and written by one
thread, float atomics only add ``1.0f`` (every order gives the same sums),
reductions use a fixed tree, and arithmetic multiplies only by powers of two
so contracting ``a * b + c`` into an FMA cannot change a result.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Iterator

# --------------------------------------------------------------------------
# Public description of a generated program

WIDTHS = ("none", "thread", "block", "global")
_WIDTH_RANK = {w: r for r, w in enumerate(WIDTHS)}

#: Kernel templates of the palette (``Launch.pattern``).
PATTERNS = (
    "map",             # element-wise, the program's default block size
    "map_reblock",     # the same element-wise code launched with another block size
    "tail_return",     # element-wise with ``if (i >= n) return;``, n not a multiple of the block
    "shift",           # reads a neighbour element across block boundaries
    "block_neighbor",  # block-local neighbour read through shared memory + barrier
    "tile_map",        # 2-D tile through shared memory + barrier, tile-aligned
    "transpose",       # tiled transpose through a shared tile + barriers
    "block_reduce",    # one sum per block (shared memory tree + barriers)
    "full_reduce",     # one block sums a whole buffer
    "broadcast",       # element-wise, also reads a reduced value
    "atomic_hist",     # atomicAdd of 1.0f into data-dependent bins
    "accumulate",      # acc = f(acc, x, it) inside a host loop
)

#: How a launch sits in the host program (``Launch.structure``).
STRUCTURES = ("plain", "branch", "loop_pingpong", "loop_swap", "loop_accumulate")


@dataclass(frozen=True)
class Launch:
    """One launch statement of the generated host code."""

    index: int
    kernel: str
    pattern: str
    structure: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    args: tuple[str, ...]
    loop: int | None = None  # id of the enclosing host loop
    trips: int = 1  # times the statement runs
    step: int = 0  # launches made by one generator step (a branch group, a loop body) share it


@dataclass(frozen=True)
class Dependence:
    """What the generator intended between launch ``producer`` and ``consumer``.

    ``producer < consumer`` in program order, or ``producer == consumer`` for a
    launch in a host loop that conflicts with its own next iteration.
    ``kinds`` lists ``raw``/``war``/``waw`` from producer to consumer;
    ``carried_kinds`` those from the consumer to the producer in the next
    iteration of a common host loop (``loop_carried`` is true when there are
    any). ``width`` is the widest over all of them.
    """

    producer: int
    consumer: int
    width: str
    buffers: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    carried_kinds: tuple[str, ...] = ()

    @property
    def loop_carried(self) -> bool:
        return bool(self.carried_kinds)


@dataclass(frozen=True)
class GeneratedProgram:
    seed: int
    source: str
    launches: tuple[Launch, ...]
    expected_dependences: tuple[Dependence, ...]
    buffers: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()  # buffers written, in checksum order
    size: int = 0
    kernels: tuple[str, ...] = ()  # distinct kernels, in source order

    def dependence(self, producer: int, consumer: int) -> Dependence | None:
        for dep in self.expected_dependences:
            if dep.producer == producer and dep.consumer == consumer:
                return dep
        return None

    def describe(self) -> dict:
        """A JSON-ready summary (everything but the source)."""
        return {
            "seed": self.seed,
            "size": self.size,
            "buffers": list(self.buffers),
            "outputs": list(self.outputs),
            "kernels": list(self.kernels),
            "launches": [
                {
                    "index": l.index, "kernel": l.kernel, "pattern": l.pattern,
                    "structure": l.structure, "grid": list(l.grid), "block": list(l.block),
                    "reads": list(l.reads), "writes": list(l.writes), "args": list(l.args),
                    "loop": l.loop, "trips": l.trips, "step": l.step,
                }
                for l in self.launches
            ],
            "expected_dependences": [
                {
                    "producer": d.producer, "consumer": d.consumer, "width": d.width,
                    "buffers": list(d.buffers), "kinds": list(d.kinds),
                    "carried_kinds": list(d.carried_kinds),
                }
                for d in self.expected_dependences
            ],
        }


# --------------------------------------------------------------------------
# Footprints: which thread instance touches which element

_MULTI = "*"  # more than one instance (or block) touches the element

Dim3 = tuple[int, int, int]


class Footprint:
    """Element -> (the one instance touching it or ``*``, the one block or ``*``)."""

    __slots__ = ("cells",)

    def __init__(self) -> None:
        self.cells: dict[int, tuple] = {}

    def touch(self, elem: int, blk: Dim3, thr: Dim3) -> None:
        inst = (blk, thr)
        cur = self.cells.get(elem)
        if cur is None:
            self.cells[elem] = (inst, blk)
            return
        if cur[0] == inst:
            return
        cur_inst, cur_blk = cur
        self.cells[elem] = (
            cur_inst if cur_inst == inst else _MULTI,
            cur_blk if cur_blk == blk else _MULTI,
        )

    def touch_by_many(self, elem: int, blk: Dim3 | str) -> None:
        """``elem`` is touched by several threads, all of block ``blk`` (or of several)."""
        cur = self.cells.get(elem)
        if cur is not None and cur[1] != blk:
            blk = _MULTI
        self.cells[elem] = (_MULTI, blk)

    def merged(self, other: "Footprint") -> "Footprint":
        out = Footprint()
        out.cells = dict(self.cells)
        for elem, (inst, blk) in other.cells.items():
            cur = out.cells.get(elem)
            if cur is None:
                out.cells[elem] = (inst, blk)
            else:
                out.cells[elem] = (
                    cur[0] if cur[0] == inst and inst != _MULTI else _MULTI,
                    cur[1] if cur[1] == blk and blk != _MULTI else _MULTI,
                )
        return out


def footprint_width(earlier: Footprint, later: Footprint) -> str:
    """Width of the conflict between two accesses of one buffer (one a write)."""
    a, b = earlier.cells, later.cells
    if len(b) < len(a):
        a, b = b, a
    width = "none"
    for elem, (inst_a, blk_a) in a.items():
        other = b.get(elem)
        if other is None:
            continue
        inst_b, blk_b = other
        if inst_a != _MULTI and inst_a == inst_b:
            w = "thread"
        elif blk_a != _MULTI and blk_a == blk_b:
            w = "block"
        else:
            return "global"
        if _WIDTH_RANK[w] > _WIDTH_RANK[width]:
            width = w
    return width


def _threads_1d(grid: int, block: int) -> Iterator[tuple[Dim3, Dim3, int, int]]:
    for b in range(grid):
        for t in range(block):
            yield (b, 0, 0), (t, 0, 0), b, t


# --------------------------------------------------------------------------
# Kernel templates: CUDA text and the Python mirror of its address stream

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


@dataclass(frozen=True)
class Access:
    arg: int  # index of the pointer argument
    write: bool
    footprint: Footprint = field(compare=False)


class Template:
    """One kernel template instance: code, launch shape, pointer roles, footprint.

    ``roles`` has one entry per pointer parameter: ``r`` read, ``w`` written,
    ``rw`` both. ``scalars`` are the host expressions of the scalar arguments
    that follow the pointers.
    """

    pattern: str = ""
    roles: tuple[str, ...] = ()
    barriers = False

    @property
    def name(self) -> str:
        raise NotImplementedError

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

    def accesses(self) -> list[Access]:
        raise NotImplementedError

    def key(self) -> tuple:
        """Identifies code, launch shape and scalars: equal keys, equal footprints."""
        return (type(self).__name__, self.name, self.shape(), self.scalars(), self.ctx)

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


class Map(Template):
    """``out[i] = op(a[i] [, b[i]])`` with a bound check; any block size."""

    def __init__(self, ctx: Ctx, op: int, arity: int, block: int):
        self.ctx, self.op, self.arity, self.block = ctx, op, arity, block
        self.pattern = "map" if block == ctx.block else "map_reblock"
        self.roles = ("r",) * arity + ("w",)

    @property
    def name(self) -> str:
        return f"map{self.arity}_op{self.op}"

    def expr(self) -> str:
        if self.arity == 1:
            return UNARY_OPS[self.op].format(a="a[i]")
        return BINARY_OPS[self.op].format(a="a[i]", b="b[i]")

    def code(self) -> str:
        ins = ["const float* a", "const float* b"][: self.arity]
        return _kernel(self.name, ", ".join(ins + ["float* out", "int n"]), [
            "int i = blockIdx.x * blockDim.x + threadIdx.x;",
            "if (i < n) {",
            f"  out[i] = {self.expr()};",
            "}",
        ])

    def shape(self):
        return (self.ctx.n // self.block, 1, 1), (self.block, 1, 1)

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


class Tail(Template):
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

    def count(self) -> int:
        return self.ctx.n - self.cut

    def shape(self):
        return ((self.count() + self.block - 1) // self.block, 1, 1), (self.block, 1, 1)

    def grid_text(self) -> str:
        return f"(n - {self.cut} + {self.block - 1}) / {self.block}"

    def scalars(self):
        return (f"n - {self.cut}",)

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

    def __init__(self, ctx: Ctx, k: int, block: int):
        self.ctx, self.k, self.block = ctx, k, block

    @property
    def name(self) -> str:
        return f"shift{self.k}"

    def code(self) -> str:
        return _kernel(self.name, "const float* a, float* out, int n", [
            "int i = blockIdx.x * blockDim.x + threadIdx.x;",
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


class BlockNeighbor(Template):
    """Each block stages its chunk in shared memory (optionally reversed),
    synchronises, and combines a thread's element with its neighbour's; the
    result is stored at the thread's slot or the mirrored one."""

    pattern = "block_neighbor"
    roles = ("r", "w")
    barriers = True

    def __init__(self, ctx: Ctx, block: int, rev_read: bool, rev_write: bool):
        self.ctx, self.block, self.rev_read, self.rev_write = ctx, block, rev_read, rev_write

    @property
    def name(self) -> str:
        return f"nbr{self.block}_r{int(self.rev_read)}w{int(self.rev_write)}"

    def code(self) -> str:
        B = self.block
        src = f"base + ({B - 1} - t)" if self.rev_read else "base + t"
        dst = f"base + ({B - 1} - t)" if self.rev_write else "base + t"
        return _kernel(self.name, "const float* a, float* out", [
            f"__shared__ float tile[{B}];",
            "int t = threadIdx.x;",
            f"int base = blockIdx.x * {B};",
            f"tile[t] = a[{src}];",
            "__syncthreads();",
            f"out[{dst}] = 0.5f * tile[t] + 0.25f * tile[(t + 1) % {B}];",
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

    def __init__(self, ctx: Ctx, tile: int, swap: bool):
        assert ctx.side and ctx.side % tile == 0
        self.ctx, self.tile, self.swap = ctx, tile, swap

    @property
    def name(self) -> str:
        return f"tile_map{self.tile}_s{int(self.swap)}"

    def code(self) -> str:
        T = self.tile
        src = (f"a[(blockIdx.y * {T} + threadIdx.x) * side + blockIdx.x * {T} + threadIdx.y]"
               if self.swap else "a[y * side + x]")
        return _kernel(self.name, "const float* a, float* out, int side", [
            f"__shared__ float tile[{T}][{T + 1}];",
            f"int x = blockIdx.x * {T} + threadIdx.x;",
            f"int y = blockIdx.y * {T} + threadIdx.y;",
            f"tile[threadIdx.y][threadIdx.x] = {src};",
            "__syncthreads();",
            "out[y * side + x] = 0.5f * tile[threadIdx.y][threadIdx.x]"
            " + 0.25f * tile[threadIdx.x][threadIdx.y];",
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

    def __init__(self, ctx: Ctx, chunk: int):
        self.ctx, self.chunk = ctx, chunk

    @property
    def name(self) -> str:
        return f"block_sum{self.chunk}"

    def code(self) -> str:
        C, H = self.chunk, self.chunk // 2
        return _kernel(self.name, "const float* a, float* out", [
            f"__shared__ float s[{H}];",
            "int t = threadIdx.x;",
            f"int base = blockIdx.x * {C};",
            f"s[t] = a[base + t] + a[base + t + {H}];",
            "__syncthreads();",
            f"for (int k = {H // 2}; k > 0; k >>= 1) {{",
            "  if (t < k) s[t] += s[t + k];",
            "  __syncthreads();",
            "}",
            "if (t == 0) out[blockIdx.x] = s[0];",
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

    def __init__(self, ctx: Ctx, threads: int, count: int, count_text: str):
        self.ctx, self.threads, self.count, self.count_text = ctx, threads, count, count_text

    @property
    def name(self) -> str:
        return f"full_sum{self.threads}"

    def code(self) -> str:
        T = self.threads
        return _kernel(self.name, "const float* a, float* out, int n", [
            f"__shared__ float s[{T}];",
            "int t = threadIdx.x;",
            "float acc = 0.0f;",
            f"for (int j = t; j < n; j += {T}) acc += a[j];",
            "s[t] = acc;",
            "__syncthreads();",
            f"for (int k = {T // 2}; k > 0; k >>= 1) {{",
            "  if (t < k) s[t] += s[t + k];",
            "  __syncthreads();",
            "}",
            "if (t == 0) out[0] = s[0];",
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


# --------------------------------------------------------------------------
# The generator


@dataclass
class _Stmt:
    """A launch as generated, before numbering: template and pointer arguments.

    ``ptrs`` are buffer names; for a pointer-swap loop ``alts`` holds the
    other assignment of the same statement (the footprint covers both).
    """

    tmpl: Template
    ptrs: tuple[str, ...]
    arg_text: tuple[str, ...]
    structure: str
    loop: int | None = None
    trips: int = 1
    alts: tuple[tuple[str, ...], ...] = ()
    step: int = 0


class _Gen:
    def __init__(self, seed: int, max_kernels: int, size: int, max_buffers: int):
        self.seed = seed
        self.rng = random.Random(seed)
        self.size = size
        side = _isqrt(size)
        self.side = side if side * side == size and side % 16 == 0 else None
        self.ctx = Ctx(n=size, side=self.side, block=self.rng.choice((128, 256)))
        self.max_kernels = max_kernels
        self.max_buffers = max_buffers
        self.buffers: list[str] = []
        self.recent: list[str] = []  # buffers in order of last write, newest last
        self.reduced: dict[str, str] = {}  # buffer -> "first"/"block:<chunk>" when it holds reduced values
        self.body: list[str] = []  # host statements (launches and loops)
        self.stmts: list[_Stmt] = []
        self.n_loops = 0
        self.n_steps = 0
        for _ in range(self.rng.randint(3, 4)):
            self.new_buffer()

    # ---- buffers
    def new_buffer(self) -> str:
        name = f"b{len(self.buffers)}"
        self.buffers.append(name)
        return name

    def pick_input(self, exclude: tuple[str, ...] = ()) -> str:
        recent = [b for b in self.recent if b not in exclude]
        if recent and self.rng.random() < 0.7:
            # one of the three newest results: chains of dependences
            return self.rng.choice(recent[-3:])
        pool = [b for b in self.buffers if b not in exclude]
        if not pool:
            return self.new_buffer()
        return self.rng.choice(pool)

    def pick_output(self, exclude: tuple[str, ...] = ()) -> str:
        pool = [b for b in self.buffers if b not in exclude]
        if not pool or (len(self.buffers) < self.max_buffers and self.rng.random() < 0.45):
            return self.new_buffer()
        return self.rng.choice(pool)

    def wrote(self, *names: str) -> None:
        for b in names:
            if b in self.recent:
                self.recent.remove(b)
            self.recent.append(b)
            self.reduced.pop(b, None)

    # ---- templates
    def other_block(self) -> int:
        choices = [b for b in (64, 128, 256, 512) if b != self.ctx.block and self.size % b == 0]
        return self.rng.choice(choices)

    def unary_template(self, allow_2d: bool = True) -> Template:
        """A one-input one-output template (for loops and plain steps)."""
        kinds = ["map", "map", "map_reblock", "tail", "shift", "nbr"]
        if allow_2d and self.side:
            kinds += ["tile", "transpose"]
        kind = self.rng.choice(kinds)
        ctx, rng = self.ctx, self.rng
        if kind == "map":
            return Map(ctx, rng.randrange(len(UNARY_OPS)), 1, ctx.block)
        if kind == "map_reblock":
            return Map(ctx, rng.randrange(len(UNARY_OPS)), 1, self.other_block())
        if kind == "tail":
            block = rng.choice((ctx.block, self.other_block()))
            cut = rng.randint(1, 200)
            if cut % block == 0:
                cut += 1  # the count must not be a multiple of the block size
            return Tail(ctx, rng.randrange(len(UNARY_OPS)), block, cut)
        if kind == "shift":
            return Shift(ctx, rng.choice((1, 3, 64)), ctx.block)
        if kind == "nbr":
            block = ctx.block if rng.random() < 0.7 else rng.choice((128, 256))
            return BlockNeighbor(ctx, block, rng.random() < 0.7, rng.random() < 0.3)
        if kind == "tile":
            return TileMap(ctx, 16, rng.random() < 0.5)
        return Transpose(ctx, 16)

    # ---- steps
    def emit(self, stmt: _Stmt, indent: int = 1) -> None:
        stmt.step = self.n_steps
        self.stmts.append(stmt)
        t = stmt.tmpl
        args = ", ".join(stmt.arg_text + t.scalars())
        self.body.append("  " * indent + f"{t.name}<<<{t.grid_text()}, {t.block_text()}>>>({args});")

    def plain(self, tmpl: Template, ptrs: tuple[str, ...], structure: str = "plain") -> None:
        self.emit(_Stmt(tmpl, ptrs, tuple(f"d_{p}" for p in ptrs), structure))
        self.wrote(*[p for p, r in zip(ptrs, tmpl.roles) if "w" in r])

    def step_unary(self) -> None:
        tmpl = self.unary_template()
        a = self.pick_input()
        self.plain(tmpl, (a, self.pick_output((a,))))

    def step_map2(self) -> None:
        block = self.ctx.block if self.rng.random() < 0.75 else self.other_block()
        tmpl = Map(self.ctx, self.rng.randrange(len(BINARY_OPS)), 2, block)
        a = self.pick_input()
        b = self.pick_input((a,)) if self.rng.random() < 0.8 else a
        self.plain(tmpl, (a, b, self.pick_output((a, b))))

    def step_block_reduce(self) -> None:
        if self.rng.random() < 0.6:
            chunk = self.ctx.block  # one sum per block of the usual element-wise launch
        else:
            chunk = self.rng.choice([c for c in (128, 256, 512) if self.size % c == 0])
        a = self.pick_input()
        out = self.pick_output((a,))
        self.plain(BlockReduce(self.ctx, chunk), (a, out))
        self.reduced[out] = f"block:{chunk}"

    def step_full_reduce(self) -> None:
        a = self.pick_input()
        kind = self.reduced.get(a, "")
        if kind.startswith("block:") and self.rng.random() < 0.7:
            chunk = int(kind.split(":")[1])
            count, text = self.size // chunk, f"n / {chunk}"
        else:
            count, text = self.size, "n"
        out = self.pick_output((a,))
        self.plain(FullReduce(self.ctx, self.rng.choice((128, 256)), count, text), (a, out))
        self.reduced[out] = "first"

    def step_broadcast(self) -> None:
        red = [b for b in self.recent if b in self.reduced]
        s = self.rng.choice(red) if red else self.pick_input()
        kind = self.reduced.get(s, "")
        per_block = kind.startswith("block:") and self.rng.random() < 0.8
        if per_block:
            block = int(kind.split(":")[1])  # one value per consumer block
        elif kind.startswith("block:") and self.rng.random() < 0.5:
            per_block, block = True, self.ctx.block
        else:
            block = self.ctx.block
        a = self.pick_input((s,)) if self.rng.random() < 0.8 else s
        self.plain(Broadcast(self.ctx, block, per_block), (a, s, self.pick_output((a, s))))

    def step_hist(self) -> None:
        block = self.ctx.block if self.rng.random() < 0.7 else self.other_block()
        a = self.pick_input()
        self.plain(Hist(self.ctx, block, 64), (a, self.pick_output((a,))))

    def step_branches(self, room: int) -> None:
        k = self.rng.randint(2, min(3, room))
        same_code = self.rng.random() < 0.75
        x = self.pick_input()
        outs: list[str] = []
        weights: list[str] = [x]
        for _ in range(k):
            outs.append(self.pick_output((x, *outs)))
        binary = self.rng.random() < 0.6
        op = self.rng.randrange(len(BINARY_OPS) if binary else len(UNARY_OPS))
        for j in range(k):
            if not same_code:
                op = self.rng.randrange(len(BINARY_OPS) if binary else len(UNARY_OPS))
            if binary:
                # a weight of its own per branch, as for Q, K and V
                w = self.pick_input((x, *outs, *weights))
                weights.append(w)
                self.plain(Map(self.ctx, op, 2, self.ctx.block), (x, w, outs[j]), "branch")
            else:
                # fully disjoint: each branch reads an input of its own
                src = x if j == 0 else self.pick_input((*outs, *weights))
                weights.append(src)
                self.plain(Map(self.ctx, op, 1, self.ctx.block), (src, outs[j]), "branch")

    def loop_header(self, trips: int) -> str:
        self.n_loops += 1
        return f"for (int it = 0; it < {trips}; ++it) {{"

    def step_pingpong(self) -> None:
        tmpl = self.unary_template()
        x = self.pick_input()
        y = self.pick_output((x,))
        trips = self.rng.randint(2, 3)
        loop = self.n_loops
        self.body.append("  " + self.loop_header(trips))
        for src, dst in ((x, y), (y, x)):
            self.emit(_Stmt(tmpl, (src, dst), (f"d_{src}", f"d_{dst}"), "loop_pingpong", loop, trips), 2)
        self.body.append("  }")
        self.wrote(y, x)

    def step_swap(self) -> None:
        tmpl = self.unary_template()
        x = self.pick_input()
        y = self.pick_output((x,))
        trips = self.rng.randint(2, 4)
        loop = self.n_loops
        src, dst = f"src{loop}", f"dst{loop}"
        self.body.append("  {")
        self.body.append(f"    float* {src} = d_{x};")
        self.body.append(f"    float* {dst} = d_{y};")
        self.body.append("    " + self.loop_header(trips))
        self.emit(_Stmt(tmpl, (x, y), (src, dst), "loop_swap", loop, trips, alts=((y, x),)), 3)
        self.body.append(f"      float* tmp = {src};")
        self.body.append(f"      {src} = {dst};")
        self.body.append(f"      {dst} = tmp;")
        self.body.append("    }")
        self.body.append("  }")
        # after an even number of trips the last write went to x
        if trips % 2 == 0:
            self.wrote(y, x)
        else:
            self.wrote(x, y)

    def step_accumulate(self, room: int) -> None:
        acc = self.pick_output()
        x = self.pick_input((acc,))
        trips = self.rng.randint(2, 4)
        loop = self.n_loops
        block = self.ctx.block if self.rng.random() < 0.8 else self.other_block()
        self.body.append("  " + self.loop_header(trips))
        tmpl = Accumulate(self.ctx, block, "0.125f * (float)it")
        if room >= 2 and self.rng.random() < 0.4:
            # a producer inside the loop body feeding the accumulation
            feed = self.unary_template(allow_2d=False)
            src = self.pick_input((acc, x))
            self.emit(_Stmt(feed, (src, x), (f"d_{src}", f"d_{x}"), "loop_accumulate", loop, trips), 2)
            self.wrote(x)
        self.emit(_Stmt(tmpl, (acc, x), (f"d_{acc}", f"d_{x}"), "loop_accumulate", loop, trips), 2)
        self.body.append("  }")
        self.wrote(acc)

    def run(self) -> None:
        target = self.rng.randint(2, self.max_kernels)
        steps = [
            (3, 1, self.step_unary), (2, 1, self.step_map2), (1, 1, self.step_block_reduce),
            (1, 1, self.step_full_reduce), (1, 1, self.step_broadcast), (1, 1, self.step_hist),
            (1, 2, self.step_branches), (1, 2, self.step_pingpong), (1, 1, self.step_swap),
            (1, 1, self.step_accumulate),
        ]
        while len(self.stmts) < target:
            room = target - len(self.stmts)
            options = [(w, fn) for w, need, fn in steps if need <= room]
            fn = self.rng.choices([fn for _, fn in options], [w for w, _ in options])[0]
            if fn in (self.step_branches, self.step_accumulate):
                fn(room)
            else:
                fn()
            self.n_steps += 1


def _isqrt(v: int) -> int:
    r = int(v ** 0.5)
    while r * r > v:
        r -= 1
    while (r + 1) * (r + 1) <= v:
        r += 1
    return r


# --------------------------------------------------------------------------
# Dependences


def _effects(stmt: _Stmt) -> tuple[dict[str, Footprint], dict[str, Footprint]]:
    """Buffer -> footprint of the reads and of the writes of one launch."""
    reads: dict[str, Footprint] = {}
    writes: dict[str, Footprint] = {}
    for ptrs in (stmt.ptrs, *stmt.alts):
        for acc in stmt.tmpl.cached_accesses():
            target = writes if acc.write else reads
            buf = ptrs[acc.arg]
            target[buf] = target[buf].merged(acc.footprint) if buf in target else acc.footprint
    return reads, writes


def _conflicts(first, second) -> tuple[str, set[str], set[str]]:
    """Width, buffers and kinds of the conflicts of ``first`` followed by ``second``."""
    (r1, w1), (r2, w2) = first, second
    width, bufs, kinds = "none", set(), set()
    for kind, x, y in (("raw", w1, r2), ("war", r1, w2), ("waw", w1, w2)):
        for buf in sorted(set(x) & set(y)):
            w = footprint_width(x[buf], y[buf])
            if w == "none":
                continue
            bufs.add(buf)
            kinds.add(kind)
            if _WIDTH_RANK[w] > _WIDTH_RANK[width]:
                width = w
    return width, bufs, kinds


def dependence_width(first: Template, first_buffers: tuple[str, ...],
                     second: Template, second_buffers: tuple[str, ...]) -> str:
    """Width of the dependence of launch ``second`` on launch ``first``, each
    a template with the buffer names of its pointer arguments."""
    a = _Stmt(first, tuple(first_buffers), (), "plain")
    b = _Stmt(second, tuple(second_buffers), (), "plain")
    return _conflicts(_effects(a), _effects(b))[0]


def _dependences(stmts: list[_Stmt]) -> list[Dependence]:
    eff = [_effects(s) for s in stmts]
    deps: list[Dependence] = []
    for j, sj in enumerate(stmts):
        if sj.loop is not None and sj.trips > 1:
            width, bufs, kinds = _conflicts(eff[j], eff[j])
            if width != "none":
                deps.append(Dependence(j, j, width, tuple(sorted(bufs)), (), tuple(sorted(kinds))))
    for i in range(len(stmts)):
        for j in range(i + 1, len(stmts)):
            width, bufs, kinds = _conflicts(eff[i], eff[j])
            carried: set[str] = set()
            same_loop = stmts[i].loop is not None and stmts[i].loop == stmts[j].loop
            if same_loop and stmts[i].trips > 1:
                cw, cbufs, carried = _conflicts(eff[j], eff[i])
                bufs |= cbufs
                if _WIDTH_RANK[cw] > _WIDTH_RANK[width]:
                    width = cw
            deps.append(Dependence(i, j, width, tuple(sorted(bufs)), tuple(sorted(kinds)),
                                   tuple(sorted(carried))))
    deps.sort(key=lambda d: (d.producer, d.consumer))
    return deps


# --------------------------------------------------------------------------
# Source assembly


def _assemble(gen: _Gen, outputs: list[str]) -> str:
    rng = gen.rng
    n = gen.size
    lines = ["#include <cstdio>", "#include <cuda_runtime.h>", ""]
    lines.append(f"// generated by sirius.testing.progen, seed {gen.seed}")
    lines.append("")
    seen: dict[str, str] = {}
    for stmt in gen.stmts:
        t = stmt.tmpl
        code = t.code()
        if t.name in seen:
            assert seen[t.name] == code, f"two codes for kernel {t.name}"
            continue
        seen[t.name] = code
        lines.append(code)
    main = ["int main() {", f"  const int n = {n};"]
    if gen.side and any(s.tmpl.scalars() == ("side",) for s in gen.stmts):
        main.append(f"  const int side = {gen.side};")
    main.append("  float* h = new float[n];")
    pooled = rng.random() < 0.3
    nb = len(gen.buffers)
    if pooled:
        # one allocation carved into buffers: aliasing facts come from pointer arithmetic
        main.append("  float* d_pool = nullptr;")
        main.append(f"  cudaMalloc(&d_pool, {nb} * n * sizeof(float));")
        for k, b in enumerate(gen.buffers):
            main.append(f"  float* d_{b} = d_pool + {k} * n;")
    else:
        for b in gen.buffers:
            main.append(f"  float* d_{b} = nullptr;")
            main.append(f"  cudaMalloc(&d_{b}, n * sizeof(float));")
    for b in gen.buffers:
        mul, add = rng.randrange(1, 96, 2), rng.randrange(97)
        main.append(f"  for (int i = 0; i < n; ++i) h[i] = (float)((i * {mul} + {add}) % 97 - 48) * 0.015625f;")
        main.append(f"  cudaMemcpy(d_{b}, h, n * sizeof(float), cudaMemcpyHostToDevice);")
    main.extend(gen.body)
    main.append("  cudaDeviceSynchronize();")
    for b in outputs:
        main.append(f"  cudaMemcpy(h, d_{b}, n * sizeof(float), cudaMemcpyDeviceToHost);")
        main.append("  {")
        main.append("    double sum = 0.0;")
        main.append("    for (int i = 0; i < n; ++i) sum += (double)h[i] * (double)(i % 13 + 1);")
        main.append(f'    printf("checksum {b}: %.6f\\n", sum);')
        main.append("  }")
    if pooled:
        main.append("  cudaFree(d_pool);")
    else:
        for b in gen.buffers:
            main.append(f"  cudaFree(d_{b});")
    main += ["  delete[] h;", "  return 0;", "}"]
    return "\n".join(lines + main) + "\n"


def generate_program(seed: int, *, max_kernels: int = 8, size: int = 4096,
                     max_buffers: int = 8) -> GeneratedProgram:
    """A complete random CUDA program with 2..``max_kernels`` launches.

    ``size`` is the number of floats per buffer, a positive multiple of 256;
    the 2-D templates (tiles, transpose) appear when it is the square of a
    multiple of 16 (the default 4096 = 64 x 64).
    """
    if size <= 0 or size % 256:
        raise ValueError(f"size must be a positive multiple of 256, not {size}")
    if max_kernels < 2:
        raise ValueError("max_kernels must be at least 2")
    if max_buffers < 3:
        raise ValueError("max_buffers must be at least 3")
    gen = _Gen(seed, max_kernels, size, max_buffers)
    gen.run()
    stmts = gen.stmts
    launches: list[Launch] = []
    for idx, s in enumerate(stmts):
        grid, block = s.tmpl.shape()
        reads, writes = set(), set()
        for ptrs in (s.ptrs, *s.alts):
            for p, role in zip(ptrs, s.tmpl.roles):
                if "r" in role:
                    reads.add(p)
                if "w" in role:
                    writes.add(p)
        launches.append(Launch(
            index=idx, kernel=s.tmpl.name, pattern=s.tmpl.pattern, structure=s.structure,
            grid=grid, block=block, reads=tuple(sorted(reads, key=_buf_key)),
            writes=tuple(sorted(writes, key=_buf_key)),
            args=s.arg_text + s.tmpl.scalars(), loop=s.loop, trips=s.trips, step=s.step,
        ))
    outputs = sorted({b for l in launches for b in l.writes}, key=_buf_key)
    source = _assemble(gen, outputs)
    kernels = tuple(dict.fromkeys(s.tmpl.name for s in stmts))
    return GeneratedProgram(
        seed=seed, source=source, launches=tuple(launches),
        expected_dependences=tuple(_dependences(stmts)), buffers=tuple(gen.buffers),
        outputs=tuple(outputs), size=size, kernels=kernels,
    )


def _buf_key(name: str) -> int:
    return int(name[1:])
