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

Constructs that once made the optimizer miscompile are mixed in, each with a
small probability (decided by a second random stream, so a program without
them is close to what older versions generated for its seed):

- host statements between launches (``HostOp``): ``cudaMemcpy2D``,
  ``cudaMemcpy`` and ``cudaMemcpyAsync`` device to device, ``cudaMemset``, a
  device-to-host read folded into the ``probe`` line, a call of the program's
  own host helper that uploads a buffer, ``cudaMemcpyToSymbol``;
- a host helper function that launches a kernel itself (structure ``helper``);
- two overloaded ``__global__`` functions of one name (``overload``);
- ``__device__ float g<k>[n]`` arrays read and written by kernels without
  pointer parameters (``global_array``), a ``__constant__ float c0`` rewritten
  between launches that read it (``const_symbol``, also in a host loop:
  ``loop_symbol``), a ``__device__ float* gp`` set with ``cudaMemcpyToSymbol``
  and written through (``global_pointer``); globals are buffers of their own
  (``GeneratedProgram.symbols``), read back with ``cudaMemcpyFromSymbol``;
- ``__syncthreads_count/_and/_or`` in place of ``__syncthreads()``, their
  result folded into the output (``Launch.features``), and an element-wise
  kernel with ``if (i >= n) return;`` before a barrier (``tail_barrier``; the
  threads that return never reach a barrier, the others of the block do);
- ``__device__`` helpers: ``gidx()`` computing the global index, and
  ``block_sum_dev()`` with a static ``__shared__`` array, called by two
  kernels (``helper_reduce``);
- a two-deep host loop nest over cells (s, c) as in ``cuda_inputs/lstm.cu``
  (``loop_nest``): cell (s, c) reads slots written by cells (s - 1, c),
  (s, c - 1) and (s - 1, c + 1), the last on the same anti-diagonal. Its
  dependences are computed per pair of iterations.

In a program drawn for them (``P_HAZARDS``, from a third stream: ``hazards=False`` gives
the program older versions generated), constructs a transformation once took for what they
are not (issue 26), as launches of their own and in place of palette templates of the same
footprint: shared floats read back through ``unsigned char*`` / ``short*`` at a neighbour's
byte offset after the barrier (``byte_neighbor``), ``__ldg`` and ``const __restrict__`` in
``__device__ __noinline__`` helpers (``ldg_helper``), over 48 KB of dynamic shared memory
with the program's ``cudaFuncSetAttribute`` opt-in (``big_shared``), and macros the build
may redefine: ``SHIFT`` only in a kernel body (``macro_shift``) and a float ``GAIN`` with no
short decimal passed as an argument (``float_macro``); ``GeneratedProgram.rebuild_defines``
gives the other values a rebuild is verified with.

A host statement between launches is an ordering point: ``HostOp`` lists the
buffers it reads and writes and ``Dependence.host_between`` the host
statements that run between a producer and a consumer.
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
    "tail_barrier",    # ``if (i >= n) return;`` before a barrier (shared neighbour)
    "overload",        # one of two overloaded __global__ functions of one name
    "global_array",    # reads/writes ``__device__ float g<k>[n]`` (no pointer parameter for it)
    "const_symbol",    # element-wise, adds ``__constant__ float c0`` (rewritten by the host)
    "global_pointer",  # writes through ``__device__ float* gp``
    "helper_reduce",   # calls ``block_sum_dev`` (static __shared__ inside a __device__ helper)
    "nest_cell",       # a launch of a cell of a two-deep host loop nest
    "byte_neighbor",   # block_neighbor read back through ``unsigned char*`` / ``short*`` (sub-word)
    "ldg_helper",      # element-wise, its input read by a ``__device__ __noinline__`` helper
    "big_shared",      # over 48 KB of dynamic shared memory (the program opts in for the kernel)
    "macro_shift",     # ``a[(i + SHIFT) % n]``: a macro the build may redefine (``-DSHIFT=...``)
    "float_macro",     # a float argument from a macro whose value has no short decimal
)

#: How a launch sits in the host program (``Launch.structure``).
STRUCTURES = ("plain", "branch", "loop_pingpong", "loop_swap", "loop_accumulate",
              "helper", "loop_symbol", "loop_nest")

#: Kernel variants orthogonal to the pattern (``Launch.features``).
FEATURES = (
    "syncthreads_count", "syncthreads_and", "syncthreads_or",  # in place of __syncthreads()
    "gidx_helper",      # the index comes from ``__device__ int gidx()``
    "shared_helper",    # a __device__ helper holding a static __shared__ array
    "char_view",        # shared floats read back through ``unsigned char*``
    "short_view",       # shared floats read back through ``short*``
    "ldg_in_helper",    # ``__ldg`` inside a ``__device__ __noinline__`` helper
    "restrict_in_helper",  # a ``const float* __restrict__`` parameter of a noinline helper
)

#: Host statements between launches (``HostOp.kind``).
HOST_OPS = (
    "memcpy2d",       # cudaMemcpy2D device to device, a rectangle between two buffers
    "memset",         # cudaMemset(.., 0, ..) of a whole buffer or a part
    "memcpy_d2d",     # cudaMemcpy device to device
    "memcpy_async",   # cudaMemcpyAsync device to device on the default stream
    "readback",       # cudaMemcpy device to host, folded into the ``probe`` line
    "helper_upload",  # call of the program's host helper that cudaMemcpy's a host array up
    "to_symbol",      # cudaMemcpyToSymbol of ``c0`` (a value) or ``gp`` (a buffer's address)
)


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
    loop: int | None = None  # id of the enclosing host loop (one id for a whole loop nest)
    trips: int = 1  # times the statement runs
    step: int = 0  # launches made by one generator step (a branch group, a loop body) share it
    features: tuple[str, ...] = ()  # of FEATURES
    nest: tuple[int, ...] = ()  # trip counts of a loop nest, outer first (``loop_nest``)


@dataclass(frozen=True)
class Dependence:
    """What the generator intended between launch ``producer`` and ``consumer``.

    ``producer < consumer`` in program order, or ``producer == consumer`` for a
    launch in a host loop that conflicts with its own next iteration.
    ``kinds`` lists ``raw``/``war``/``waw`` from producer to consumer;
    ``carried_kinds`` those from the consumer to the producer in the next
    iteration of a common host loop (``loop_carried`` is true when there are
    any). ``width`` is the widest over all of them.

    ``host_between`` lists the host statements (``HostOp.index``) that lie
    between the two in program order, and for launches in a common host loop
    every host statement of that loop: ordering points whatever they touch.
    """

    producer: int
    consumer: int
    width: str
    buffers: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    carried_kinds: tuple[str, ...] = ()
    host_between: tuple[int, ...] = ()

    @property
    def loop_carried(self) -> bool:
        return bool(self.carried_kinds)


@dataclass(frozen=True)
class HostOp:
    """A host statement between launches other than a launch (an ordering point).

    It runs after launch ``position - 1`` and before launch ``position`` (in
    the order of ``GeneratedProgram.launches``); ``loop`` is the enclosing
    host loop, if any.
    """

    index: int
    kind: str
    position: int
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    text: str  # its source lines, stripped
    loop: int | None = None


@dataclass(frozen=True)
class GeneratedProgram:
    seed: int
    source: str
    launches: tuple[Launch, ...]
    expected_dependences: tuple[Dependence, ...]
    buffers: tuple[str, ...] = ()  # cudaMalloc'd buffers, then the device globals
    outputs: tuple[str, ...] = ()  # buffers written, in checksum order
    size: int = 0
    kernels: tuple[str, ...] = ()  # kernel definitions in source order (an overloaded name twice)
    host_ops: tuple[HostOp, ...] = ()
    symbols: tuple[str, ...] = ()  # the device globals among ``buffers`` (g<k>, c0, gp)
    # ``NAME=VALUE`` for each program macro the kernels use (PROGRAM_MACROS): a rebuild with
    # these must compute what the original rebuilt with them computes
    rebuild_defines: tuple[str, ...] = ()
    macro_kernels: tuple[str, ...] = ()  # the kernels whose code or launch uses those macros

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
            "symbols": list(self.symbols),
            "rebuild_defines": list(self.rebuild_defines),
            "macro_kernels": list(self.macro_kernels),
            "launches": [
                {
                    "index": l.index, "kernel": l.kernel, "pattern": l.pattern,
                    "structure": l.structure, "grid": list(l.grid), "block": list(l.block),
                    "reads": list(l.reads), "writes": list(l.writes), "args": list(l.args),
                    "loop": l.loop, "trips": l.trips, "step": l.step,
                    "features": list(l.features), "nest": list(l.nest),
                }
                for l in self.launches
            ],
            "host_ops": [
                {
                    "index": o.index, "kind": o.kind, "position": o.position,
                    "reads": list(o.reads), "writes": list(o.writes), "text": o.text,
                    "loop": o.loop,
                }
                for o in self.host_ops
            ],
            "expected_dependences": [
                {
                    "producer": d.producer, "consumer": d.consumer, "width": d.width,
                    "buffers": list(d.buffers), "kinds": list(d.kinds),
                    "carried_kinds": list(d.carried_kinds),
                    "host_between": list(d.host_between),
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

    def shifted(self, offset: int) -> "Footprint":
        """The same accesses through a pointer ``offset`` elements further."""
        if not offset:
            return self
        out = Footprint()
        out.cells = {elem + offset: v for elem, v in self.cells.items()}
        return out

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
    # element-wise launches of the default block size take it from the command line
    # (``threads``, argv[1], ``block`` when absent): a launch shape the host computes
    argv_block: bool = False


@dataclass(frozen=True)
class Access:
    arg: int  # index of the pointer argument
    write: bool
    footprint: Footprint = field(compare=False)


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


def _map_accesses(grid: int, block: int, n: int, flags: tuple[bool, ...]) -> list[Access]:
    """Element-wise ``i = blockIdx.x * block + threadIdx.x`` accesses (``i < n``),
    one per operand; ``flags`` says which are writes."""
    fps = [Footprint() for _ in flags]
    for bd, td, b, t in _threads_1d(grid, block):
        i = b * block + t
        if i < n:
            for fp in fps:
                fp.touch(i, bd, td)
    return [Access(k, w, fp) for k, (w, fp) in enumerate(zip(flags, fps))]


def _every_thread_reads_first(grid: int, block: int) -> Footprint:
    """Element 0 read by every thread (a scalar symbol, a pointer variable)."""
    fp = Footprint()
    for bd, td, _, _ in _threads_1d(grid, block):
        fp.touch(0, bd, td)
    return fp


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


# --------------------------------------------------------------------------
# The generator


@dataclass
class _Stmt:
    """A launch as generated, before numbering: template and operands.

    ``ptrs`` are buffer names, one per operand of the template (a device
    global by its own name); ``arg_text`` the pointer arguments as written.
    For a pointer-swap loop ``alts`` holds the other assignment of the same
    statement (the footprint covers both). In a loop nest ``iters`` holds,
    per iteration in execution order, each operand's element offset into its
    buffer.
    """

    tmpl: Template
    ptrs: tuple[str, ...]
    arg_text: tuple[str, ...]
    structure: str
    loop: int | None = None
    trips: int = 1
    alts: tuple[tuple[str, ...], ...] = ()
    step: int = 0
    iters: tuple[tuple[int, ...], ...] = ()
    nest: tuple[int, ...] = ()


@dataclass
class _HostStmt:
    kind: str
    position: int  # launches emitted before it
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    text: str
    loop: int | None = None


# Probabilities of the constructs that once made the optimizer miscompile
# (drawn from the second random stream, ``_Gen.xrng``).
P_HOST_OP = 0.12          # a host statement before a generator step (at most MAX_HOST_OPS)
MAX_HOST_OPS = 3
P_NEW_STEP = 0.22         # a step of the new kinds below instead of a palette step
P_BARRIER_VARIANT = 0.3   # __syncthreads_count/_and/_or in a barrier template
P_TAIL_BARRIER = 0.35     # a tail_return template becomes tail_barrier
P_GIDX = 0.2              # a program's element-wise kernels call gidx()
# Constructs that made a transformation take as a fact what it only assumed (issue 26): in a
# program drawn for them (P_HAZARDS), each replaces a palette template of the same footprint.
# They come from a third stream (``_Gen.hrng``), so that the palette's and the other newer
# constructs' choices stay those of the other two streams, and a program not drawn for them
# is the one older versions generated for its seed.
P_HAZARDS = 0.4           # the program holds these constructs
P_HAZARD_STEP = 0.35      # in such a program, a launch of one of them before a generator step
P_BYTE_VIEW = 0.8         # a block_neighbor read back through unsigned char* / short*
P_MACRO_SHIFT = 0.8       # a shift by the program macro SHIFT (rebuilt with another value)
P_LDG_HELPER = 0.3        # an element-wise map reading through a noinline __ldg / restrict helper
P_FLOAT_MACRO = 0.25      # an element-wise map scaled by the float macro GAIN
P_BIG_SHARED = 0.25       # an element-wise map through over 48 KB of dynamic shared memory
#: New step kinds: (launches needed, name); each at most once per program.
NEW_STEPS = (
    (1, "helper_call"), (2, "overload"), (2, "globals"), (2, "const_symbol"),
    (1, "global_pointer"), (2, "helper_reduce"), (2, "loop_nest"),
)

_UPLOAD_HELPER = """static void upload(float* d, float* h, int n, int k) {
  for (int i = 0; i < n; ++i) h[i] = (float)((i * k + 5) % 97 - 48) * 0.015625f;
  cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);
}
"""


class _Gen:
    def __init__(self, seed: int, max_kernels: int, size: int, max_buffers: int, argv_block: bool = False,
                 hazards: bool = True):
        self.seed = seed
        self.rng = random.Random(seed)
        # a second stream for the newer constructs, so that the palette's
        # choices stay those of the main stream
        self.xrng = random.Random(seed * 7919 + 104729)
        self.hrng = random.Random(seed * 15485863 + 32452843)
        self.hazards = self.hrng.random() < P_HAZARDS and hazards
        # the default value of each program macro (PROGRAM_MACROS) the kernels may use
        self.macro_defaults = {name: self.hrng.choice(values) for name, (values, _) in PROGRAM_MACROS.items()}
        self.size = size
        side = _isqrt(size)
        self.side = side if side * side == size and side % 16 == 0 else None
        self.ctx = Ctx(n=size, side=self.side, block=self.rng.choice((128, 256)), argv_block=argv_block)
        self.max_kernels = max_kernels
        self.max_buffers = max_buffers
        self.buffers: list[str] = []
        self.recent: list[str] = []  # buffers in order of last write, newest last
        self.reduced: dict[str, str] = {}  # buffer -> "first"/"block:<chunk>" when it holds reduced values
        self.body: list[str] = []  # host statements (launches and loops)
        self.stmts: list[_Stmt] = []
        self.host_ops: list[_HostStmt] = []
        self.host_helpers: list[str] = []  # host helper functions, emitted before main
        self.symbols: dict[str, str] = {}  # device global -> "array" / "constant" / "pointer"
        self.probe = False  # a device-to-host read feeds the probe line
        self.used_new: set[str] = set()
        self.gidx = self.xrng.random() < P_GIDX
        self.n_loops = 0
        self.n_steps = 0
        for _ in range(self.rng.randint(3, 4)):
            self.new_buffer()

    # ---- buffers
    def new_buffer(self) -> str:
        name = f"b{len(self.buffers)}"
        self.buffers.append(name)
        return name

    def new_symbol(self, kind: str) -> str:
        if kind == "constant":
            name = "c0"
        elif kind == "pointer":
            name = "gp"
        else:
            name = f"g{sum(1 for k in self.symbols.values() if k == 'array')}"
        self.symbols.setdefault(name, kind)
        return name

    def pick_input(self, exclude: tuple[str, ...] = (), rng: random.Random | None = None) -> str:
        rng = rng or self.rng
        recent = [b for b in self.recent if b not in exclude]
        if recent and rng.random() < 0.7:
            # one of the three newest results: chains of dependences
            return rng.choice(recent[-3:])
        pool = [b for b in self.buffers if b not in exclude]
        if not pool:
            return self.new_buffer()
        return rng.choice(pool)

    def pick_output(self, exclude: tuple[str, ...] = (), rng: random.Random | None = None) -> str:
        rng = rng or self.rng
        pool = [b for b in self.buffers if b not in exclude]
        if not pool or (len(self.buffers) < self.max_buffers and rng.random() < 0.45):
            return self.new_buffer()
        return rng.choice(pool)

    def wrote(self, *names: str) -> None:
        for b in names:
            if b in self.symbols:
                continue
            if b in self.recent:
                self.recent.remove(b)
            self.recent.append(b)
            self.reduced.pop(b, None)

    # ---- templates
    def other_block(self, rng: random.Random | None = None) -> int:
        rng = rng or self.rng
        choices = [b for b in (64, 128, 256, 512) if b != self.ctx.block and self.size % b == 0]
        return rng.choice(choices)

    def variant(self) -> str | None:
        """The barrier of a barrier template: usually ``__syncthreads()``."""
        if self.xrng.random() < P_BARRIER_VARIANT:
            return self.xrng.choice(BARRIER_VARIANTS[1:])
        return None

    def unary_template(self, allow_2d: bool = True, rng: random.Random | None = None) -> Template:
        """A one-input one-output template (for loops and plain steps)."""
        kinds = ["map", "map", "map_reblock", "tail", "shift", "nbr"]
        if allow_2d and self.side:
            kinds += ["tile", "transpose"]
        rng = rng or self.rng
        kind = rng.choice(kinds)
        tmpl = self._palette_unary(kind, rng)
        return self._hazard_variant(kind, tmpl)

    def _hazard_variant(self, kind: str, tmpl: Template) -> Template:
        """``tmpl``, or in its place a template of the same footprint holding a construct a
        transformation once took for what it is not (drawn from ``hrng`` only)."""
        h, ctx = self.hrng, self.ctx
        if not self.hazards:
            return tmpl
        if kind == "nbr" and not tmpl.features and h.random() < P_BYTE_VIEW:
            return ByteNeighbor(ctx, tmpl.block, h.choice(("char", "short")))
        if kind == "shift" and not self.gidx and h.random() < P_MACRO_SHIFT:
            return MacroShift(ctx, int(self.macro_defaults["SHIFT"]))
        if kind == "map" and not self.gidx:
            draw = h.random()
            if draw < P_LDG_HELPER:
                return LdgHelper(ctx, tmpl.op, h.choice(("ldg", "restrict")))
            if draw < P_LDG_HELPER + P_FLOAT_MACRO:
                return FloatMacro(ctx)
            if draw < P_LDG_HELPER + P_FLOAT_MACRO + P_BIG_SHARED:
                return BigShared(ctx, h.choice(BIG_SHARED_BYTES))
        return tmpl

    def step_hazard(self) -> None:
        """A plain launch of one of the constructs ``_hazard_variant`` substitutes, those
        not launched yet first (a program drawn for them holds several)."""
        h, ctx = self.hrng, self.ctx
        kinds = ["byte_neighbor", "macro_shift", "ldg_helper", "float_macro", "big_shared"]
        fresh = [k for k in kinds if k not in {s.tmpl.pattern for s in self.stmts}]
        kind = h.choice(fresh or kinds)
        if kind == "byte_neighbor":
            tmpl: Template = ByteNeighbor(ctx, h.choice((ctx.block, 128, 256)), h.choice(("char", "short")))
        elif kind == "macro_shift":
            tmpl = MacroShift(ctx, int(self.macro_defaults["SHIFT"]))
        elif kind == "ldg_helper":
            tmpl = LdgHelper(ctx, h.randrange(len(UNARY_OPS)), h.choice(("ldg", "restrict")))
        elif kind == "float_macro":
            tmpl = FloatMacro(ctx)
        else:
            tmpl = BigShared(ctx, h.choice(BIG_SHARED_BYTES))
        a = self.pick_input(rng=h)
        self.plain(tmpl, (a, self.pick_output((a,), rng=h)))

    def _palette_unary(self, kind: str, rng: random.Random) -> Template:
        ctx = self.ctx
        if kind == "map":
            return Map(ctx, rng.randrange(len(UNARY_OPS)), 1, ctx.block, self.gidx)
        if kind == "map_reblock":
            return Map(ctx, rng.randrange(len(UNARY_OPS)), 1, self.other_block(rng), self.gidx)
        if kind == "tail":
            block = rng.choice((ctx.block, self.other_block(rng)))
            cut = rng.randint(1, 200)
            if cut % block == 0:
                cut += 1  # the count must not be a multiple of the block size
            op = rng.randrange(len(UNARY_OPS))
            if self.xrng.random() < P_TAIL_BARRIER:
                return TailBarrier(ctx, op, block, cut, self.variant())
            return Tail(ctx, op, block, cut)
        if kind == "shift":
            return Shift(ctx, rng.choice((1, 3, 64)), ctx.block, self.gidx)
        if kind == "nbr":
            block = ctx.block if rng.random() < 0.7 else rng.choice((128, 256))
            return BlockNeighbor(ctx, block, rng.random() < 0.7, rng.random() < 0.3, self.variant())
        if kind == "tile":
            return TileMap(ctx, 16, rng.random() < 0.5, self.variant())
        return Transpose(ctx, 16)

    # ---- steps
    def emit(self, stmt: _Stmt, indent: int = 1) -> None:
        stmt.step = self.n_steps
        self.stmts.append(stmt)
        t = stmt.tmpl
        args = ", ".join(stmt.arg_text + t.scalars())
        self.body.append("  " * indent + f"{t.name}<<<{t.launch_config()}>>>({args});")

    def plain(self, tmpl: Template, ptrs: tuple[str, ...], structure: str = "plain") -> None:
        args = tuple(f"d_{p}" for p, param in zip(ptrs, tmpl.params) if param)
        self.emit(_Stmt(tmpl, ptrs, args, structure))
        self.wrote(*[p for p, r in zip(ptrs, tmpl.roles) if "w" in r])

    def host(self, kind: str, reads: tuple[str, ...], writes: tuple[str, ...], lines: list[str],
             indent: int = 1, loop: int | None = None) -> None:
        self.host_ops.append(_HostStmt(kind, len(self.stmts), reads, writes,
                                       "\n".join(l.strip() for l in lines), loop))
        self.body.extend("  " * indent + l for l in lines)

    def step_unary(self) -> None:
        tmpl = self.unary_template()
        a = self.pick_input()
        self.plain(tmpl, (a, self.pick_output((a,))))

    def step_map2(self) -> None:
        block = self.ctx.block if self.rng.random() < 0.75 else self.other_block()
        tmpl = Map(self.ctx, self.rng.randrange(len(BINARY_OPS)), 2, block, self.gidx)
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
        self.plain(BlockReduce(self.ctx, chunk, self.variant()), (a, out))
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
        threads = self.rng.choice((128, 256))
        self.plain(FullReduce(self.ctx, threads, count, text, self.variant()), (a, out))
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
                self.plain(Map(self.ctx, op, 2, self.ctx.block, self.gidx), (x, w, outs[j]), "branch")
            else:
                # fully disjoint: each branch reads an input of its own
                src = x if j == 0 else self.pick_input((*outs, *weights))
                weights.append(src)
                self.plain(Map(self.ctx, op, 1, self.ctx.block, self.gidx), (src, outs[j]), "branch")

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

    # ---- the newer constructs (all drawn from ``xrng``)
    def step_host_op(self) -> None:
        """A host statement between launches (an ordering point)."""
        x, n = self.xrng, self.size
        kind = x.choice(("memcpy2d", "memset", "memcpy_d2d", "memcpy_async", "readback"))
        if kind == "readback":
            b = self.pick_input(rng=x)
            self.probe = True
            self.host(kind, (b,), (), [
                f"cudaMemcpy(h, d_{b}, n * sizeof(float), cudaMemcpyDeviceToHost);",
                "for (int i = 0; i < n; ++i) probe += (double)h[i] * (double)(i % 7 + 1);",
            ])
            return
        if kind == "memset":
            b = self.pick_output(rng=x)
            if x.random() < 0.5:
                line = f"cudaMemset(d_{b}, 0, n * sizeof(float));"
            else:
                off = x.randrange(0, n // 2, 32)
                cnt = x.randrange(32, n - off + 1, 32)
                line = f"cudaMemset({_at(b, off)}, 0, {cnt} * sizeof(float));"
            self.host(kind, (), (b,), [line])
            self.wrote(b)
            return
        src = self.pick_input(rng=x)
        dst = self.pick_output((src,), rng=x)
        red = self.reduced.get(src)
        whole = False
        if kind == "memcpy2d":
            # a rectangle of h rows of w floats, rows spitch / dpitch floats apart
            sp, dp = x.choice((64, 128)), x.choice((64, 128))
            w = x.choice((8, 16, 32, 48))
            h = x.randint(2, max(2, min(n // sp, n // dp) // 2))
            so = x.randrange(0, n // sp - h + 1) * sp + x.randrange(0, sp - w + 1)
            do = x.randrange(0, n // dp - h + 1) * dp + x.randrange(0, dp - w + 1)
            line = (f"cudaMemcpy2D({_at(dst, do)}, {dp} * sizeof(float), {_at(src, so)}, "
                    f"{sp} * sizeof(float), {w} * sizeof(float), {h}, cudaMemcpyDeviceToDevice);")
        else:
            whole = x.random() < 0.6
            if whole:
                so = do = 0
                count = "n"
            else:
                cnt = x.randrange(64, n // 2 + 1, 64)
                so, do = x.randrange(0, n - cnt + 1, 64), x.randrange(0, n - cnt + 1, 64)
                count = str(cnt)
            if kind == "memcpy_d2d":
                line = (f"cudaMemcpy({_at(dst, do)}, {_at(src, so)}, {count} * sizeof(float), "
                        "cudaMemcpyDeviceToDevice);")
            else:
                line = (f"cudaMemcpyAsync({_at(dst, do)}, {_at(src, so)}, {count} * sizeof(float), "
                        "cudaMemcpyDeviceToDevice, 0);")
        self.host(kind, (src,), (dst,), [line])
        self.wrote(dst)
        if whole and red:
            self.reduced[dst] = red

    def step_helper_call(self, room: int) -> bool:
        """Call of the program's own host helper: it uploads a host array, or
        launches a kernel itself."""
        x = self.xrng
        if not self.stmts:
            return False  # between launches, not before the first
        if x.random() < 0.5:
            b = self.pick_output(rng=x)
            self.host_helpers.append(_UPLOAD_HELPER)
            self.host("helper_upload", (), (b,), [f"upload(d_{b}, h, n, {x.randrange(1, 96, 2)});"])
            self.wrote(b)
            return True
        tmpl = self.unary_template(allow_2d=False, rng=x)
        a = self.pick_input(rng=x)
        out = self.pick_output((a,), rng=x)
        stmt = _Stmt(tmpl, (a, out), ("a", "out"), "helper", step=self.n_steps)
        self.stmts.append(stmt)
        args = ", ".join(stmt.arg_text + tmpl.scalars())
        self.host_helpers.append(
            "static void launch_helper(const float* a, float* out, int n) {\n"
            f"  {tmpl.name}<<<{tmpl.launch_config()}>>>({args});\n"
            "}\n")
        self.body.append(f"  launch_helper(d_{a}, d_{out}, n);")
        self.wrote(out)
        return True

    def step_overload(self, room: int) -> bool:
        """Both of two overloaded kernels of one name, in either order."""
        x = self.xrng
        first = x.random() < 0.5
        for reverse in (first, not first):
            a = self.pick_input(rng=x)
            self.plain(Overload(self.ctx, reverse, x.randrange(len(UNARY_OPS))),
                       (a, self.pick_output((a,), rng=x)))
        return True

    def step_globals(self, room: int) -> bool:
        """``__device__`` arrays: filled from a buffer (or left as initialised),
        mapped into another by a kernel without pointer parameters, read back
        into a buffer or by cudaMemcpyFromSymbol at the end."""
        x, ctx = self.xrng, self.ctx
        g = self.new_symbol("array")
        used = 0
        if x.random() < 0.6:
            a = self.pick_input(rng=x)
            self.plain(GlobalArray(ctx, "put", a, g, x.randrange(len(UNARY_OPS)), gidx=self.gidx), (a, g))
            used += 1
        if x.random() < 0.3:
            self.plain(GlobalArray(ctx, "map", g, g, x.randrange(len(UNARY_OPS)), gidx=self.gidx), (g, g))
            last = g
        else:
            last = self.new_symbol("array")
            if x.random() < 0.4:
                tmpl = GlobalArray(ctx, "shift", g, last, k=x.choice((1, 5, 64)), gidx=self.gidx)
            else:
                tmpl = GlobalArray(ctx, "map", g, last, x.randrange(len(UNARY_OPS)), gidx=self.gidx)
            self.plain(tmpl, (g, last))
        used += 1
        if used < room and (used < 2 or x.random() < 0.5):
            out = self.pick_output(rng=x)
            self.plain(GlobalArray(ctx, "get", last, "out", x.randrange(len(UNARY_OPS)),
                                   gidx=self.gidx), (last, out))
        return True

    def step_const_symbol(self, room: int) -> bool:
        """``__constant__ float c0`` read by launches and rewritten with
        cudaMemcpyToSymbol between them (or in each trip of a host loop)."""
        x = self.xrng
        c = self.new_symbol("constant")
        tmpl = ConstMap(self.ctx, x.randrange(len(UNARY_OPS)))
        if x.random() < 0.5:
            a = self.pick_input(rng=x)
            self.plain(tmpl, (a, c, self.pick_output((a,), rng=x)))
            v = x.choice(("0.375f", "-0.25f", "0.125f", "0.0f"))
            self.host("to_symbol", (), (c,), [f"{{ float v = {v}; cudaMemcpyToSymbol(c0, &v, sizeof(float)); }}"])
            a = self.pick_input(rng=x)
            self.plain(tmpl, (a, c, self.pick_output((a,), rng=x)))
            return True
        src = self.pick_input(rng=x)
        dst = self.pick_output((src,), rng=x)
        trips = x.randint(2, 3)
        loop = self.n_loops
        self.body.append("  " + self.loop_header(trips))
        self.host("to_symbol", (), (c,), [
            "{ float v = 0.125f * (float)it - 0.25f; cudaMemcpyToSymbol(c0, &v, sizeof(float)); }"],
            indent=2, loop=loop)
        for a, b in ((src, dst), (dst, src)):
            self.emit(_Stmt(tmpl, (a, c, b), (f"d_{a}", f"d_{b}"), "loop_symbol", loop, trips), 2)
        self.body.append("  }")
        self.wrote(dst, src)
        return True

    def step_global_pointer(self, room: int) -> bool:
        """``__device__ float* gp`` set to a buffer by cudaMemcpyToSymbol and
        written through by a kernel; sometimes re-pointed and launched again."""
        x = self.xrng
        gp = self.new_symbol("pointer")
        tmpl = PtrWrite(self.ctx, x.randrange(len(UNARY_OPS)))
        for k in range(2 if room >= 2 and x.random() < 0.5 else 1):
            target = self.pick_output(rng=x)
            a = self.pick_input((target,), rng=x)
            self.host("to_symbol", (), (gp,), [f"cudaMemcpyToSymbol(gp, &d_{target}, sizeof(float*));"])
            self.plain(tmpl, (a, gp, target))
        return True

    def step_helper_reduce(self, room: int) -> bool:
        """Two different kernels calling ``block_sum_dev`` (static __shared__
        inside the helper), in either order."""
        x, B = self.xrng, self.ctx.block
        order = ("sum", "norm") if x.random() < 0.5 else ("norm", "sum")
        for kind in order:
            a = self.pick_input(rng=x)
            out = self.pick_output((a,), rng=x)
            self.plain(HelperReduce(self.ctx, kind, B), (a, out))
            if kind == "sum":
                self.reduced[out] = f"block:{B}"
        return True

    def step_loop_nest(self, room: int) -> bool:
        """Cells (s, c) of a two-deep host loop nest over slots of one buffer
        (cuda_inputs/lstm.cu): slot (t, j) starts at (t * (C + 2) + j) * W.
        Cell (s, c) reads slots (s + 1, c) (written by cell (s, c - 1)),
        (s, c + 1) (by cell (s - 1, c)) and (s, c + 2) (by cell (s - 1, c + 1),
        on the same anti-diagonal), writes slot (s + 1, c + 1), through a
        per-column temporary of another buffer."""
        x, n = self.xrng, self.size
        S, C = x.randint(2, 3), x.randint(2, 3)
        P = C + 2
        fits = [w for w in (128, 64, 32) if (S + 1) * P * w <= n]
        if not fits:
            return False
        W = fits[0]
        B = x.choice([b for b in (32, 64, 128) if b <= W])
        H = self.pick_output(rng=x)
        T = self.pick_output((H,), rng=x)
        cell_a = NestCell(self.ctx, "a", W, B, op=x.randrange(len(BINARY_OPS)))
        cell_b = NestCell(self.ctx, "b", W, B, rev=x.random() < 0.3)
        iters_a, iters_b = [], []
        for s in range(S):
            for c in range(C):
                xo, ho, do = ((s + 1) * P + c) * W, (s * P + c + 1) * W, (s * P + c + 2) * W
                no, go = ((s + 1) * P + c + 1) * W, c * W
                iters_a.append((xo, ho, go))
                iters_b.append((go, do, no))
        loop = self.n_loops
        self.n_loops += 1
        self.body += [
            "  {",
            f"    for (int s = 0; s < {S}; ++s) {{",
            f"      for (int c = 0; c < {C}; ++c) {{",
            f"        const float* x = d_{H} + ((s + 1) * {P} + c) * {W};",
            f"        const float* hp = d_{H} + (s * {P} + c + 1) * {W};",
            f"        const float* dg = d_{H} + (s * {P} + c + 2) * {W};",
            f"        float* hn = d_{H} + ((s + 1) * {P} + c + 1) * {W};",
            f"        float* g = d_{T} + c * {W};",
        ]
        self.emit(_Stmt(cell_a, (H, H, T), ("x", "hp", "g"), "loop_nest", loop, S * C,
                        iters=tuple(iters_a), nest=(S, C)), 4)
        self.emit(_Stmt(cell_b, (T, H, H), ("g", "dg", "hn"), "loop_nest", loop, S * C,
                        iters=tuple(iters_b), nest=(S, C)), 4)
        self.body += ["      }", "    }", "  }"]
        self.wrote(T, H)
        return True

    def run(self) -> None:
        target = self.rng.randint(2, self.max_kernels)
        steps = [
            (3, 1, self.step_unary), (2, 1, self.step_map2), (1, 1, self.step_block_reduce),
            (1, 1, self.step_full_reduce), (1, 1, self.step_broadcast), (1, 1, self.step_hist),
            (1, 2, self.step_branches), (1, 2, self.step_pingpong), (1, 1, self.step_swap),
            (1, 1, self.step_accumulate),
        ]
        x = self.xrng
        while len(self.stmts) < target:
            room = target - len(self.stmts)
            if self.stmts and len(self.host_ops) < MAX_HOST_OPS and x.random() < P_HOST_OP:
                self.step_host_op()  # a launch always follows: the loop goes on
            if self.hazards and self.hrng.random() < P_HAZARD_STEP:
                self.step_hazard()
                self.n_steps += 1
                continue
            if x.random() < P_NEW_STEP:
                options = [name for need, name in NEW_STEPS if need <= room and name not in self.used_new]
                if options:
                    name = x.choice(options)
                    self.used_new.add(name)
                    if getattr(self, f"step_{name}")(room):
                        self.n_steps += 1
                        continue
            options = [(w, fn) for w, need, fn in steps if need <= room]
            fn = self.rng.choices([fn for _, fn in options], [w for w, _ in options])[0]
            if fn in (self.step_branches, self.step_accumulate):
                fn(room)
            else:
                fn()
            self.n_steps += 1


def _at(buf: str, offset: int) -> str:
    return f"d_{buf} + {offset}" if offset else f"d_{buf}"


def _isqrt(v: int) -> int:
    r = int(v ** 0.5)
    while r * r > v:
        r -= 1
    while (r + 1) * (r + 1) <= v:
        r += 1
    return r


# --------------------------------------------------------------------------
# Dependences


def _iteration_effects(stmt: _Stmt) -> list[tuple[dict[str, Footprint], dict[str, Footprint]]]:
    """Per iteration of a loop nest (one entry otherwise): buffer -> footprint
    of the reads and of the writes of one launch."""
    out = []
    accesses = stmt.tmpl.cached_accesses()
    for offsets in stmt.iters or ((0,) * len(stmt.ptrs),):
        reads: dict[str, Footprint] = {}
        writes: dict[str, Footprint] = {}
        for ptrs in (stmt.ptrs, *stmt.alts):
            for acc in accesses:
                target = writes if acc.write else reads
                buf = ptrs[acc.arg]
                fp = acc.footprint.shifted(offsets[acc.arg])
                target[buf] = target[buf].merged(fp) if buf in target else fp
        out.append((reads, writes))
    return out


def _effects(stmt: _Stmt) -> tuple[dict[str, Footprint], dict[str, Footprint]]:
    """Buffer -> footprint of the reads and of the writes of one launch (over
    every iteration of a loop nest)."""
    its = _iteration_effects(stmt)
    reads, writes = its[0]
    for r, w in its[1:]:
        for mine, other in ((reads, r), (writes, w)):
            for buf, fp in other.items():
                mine[buf] = mine[buf].merged(fp) if buf in mine else fp
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


def _widest(a: str, b: str) -> str:
    return a if _WIDTH_RANK[a] >= _WIDTH_RANK[b] else b


def _nest_conflicts(ei: list, ej: list, same: bool) -> tuple[str, set[str], set[str], set[str]]:
    """Conflicts between two launches of one loop nest, iteration by
    iteration (iterations in execution order): width, buffers, kinds of the
    first's instances followed by the second's, kinds of the second's
    followed by the first's (``same``: one launch with itself, all carried)."""
    width, bufs, kinds, carried = "none", set(), set(), set()
    for p, fi in enumerate(ei):
        for q, fj in enumerate(ej):
            if same and q <= p:
                continue
            forward = same or p <= q
            w, b, k = _conflicts(fi, fj) if forward else _conflicts(fj, fi)
            if w == "none":
                continue
            width = _widest(width, w)
            bufs |= b
            (carried if same or not forward else kinds).update(k)
    return width, bufs, kinds, carried


def _dependences(stmts: list[_Stmt], host_ops: list[_HostStmt] = ()) -> list[Dependence]:
    eff = [_effects(s) for s in stmts]
    per_iter = {j: _iteration_effects(s) for j, s in enumerate(stmts) if s.iters}

    def nest_pair(i: int, j: int) -> bool:
        return i in per_iter and j in per_iter and stmts[i].loop == stmts[j].loop

    def between(i: int, j: int) -> tuple[int, ...]:
        loop = stmts[i].loop if stmts[i].loop == stmts[j].loop else None
        return tuple(k for k, o in enumerate(host_ops)
                     if (i < o.position <= j) or (loop is not None and o.loop == loop))

    deps: list[Dependence] = []
    for j, sj in enumerate(stmts):
        if sj.loop is not None and sj.trips > 1:
            if nest_pair(j, j):
                width, bufs, _, kinds = _nest_conflicts(per_iter[j], per_iter[j], True)
            else:
                width, bufs, kinds = _conflicts(eff[j], eff[j])
            if width != "none":
                deps.append(Dependence(j, j, width, tuple(sorted(bufs)), (), tuple(sorted(kinds)),
                                       between(j, j)))
    for i in range(len(stmts)):
        for j in range(i + 1, len(stmts)):
            if nest_pair(i, j):
                width, bufs, kinds, carried = _nest_conflicts(per_iter[i], per_iter[j], False)
            else:
                width, bufs, kinds = _conflicts(eff[i], eff[j])
                carried = set()
                same_loop = stmts[i].loop is not None and stmts[i].loop == stmts[j].loop
                if same_loop and stmts[i].trips > 1:
                    cw, cbufs, carried = _conflicts(eff[j], eff[i])
                    bufs |= cbufs
                    width = _widest(width, cw)
            deps.append(Dependence(i, j, width, tuple(sorted(bufs)), tuple(sorted(kinds)),
                                   tuple(sorted(carried)), between(i, j)))
    deps.sort(key=lambda d: (d.producer, d.consumer))
    return deps


# --------------------------------------------------------------------------
# Source assembly


def _assemble(gen: _Gen, outputs: list[str]) -> tuple[str, tuple[str, ...]]:
    """The program text and its kernel definitions' names, in source order."""
    rng = gen.rng
    n = gen.size
    lines = ["#include <cstdio>", "#include <cuda_runtime.h>", ""]
    lines.append(f"// generated by sirius.testing.progen, seed {gen.seed}")
    lines.append("")
    for name, kind in gen.symbols.items():
        decl = {"array": f"__device__ float {name}[{n}];", "constant": f"__constant__ float {name};",
                "pointer": f"__device__ float* {name};"}[kind]
        lines.append(decl)
    if gen.symbols:
        lines.append("")
    macros = _macros_used(gen)
    for name in macros:  # a default the build may override with -D
        lines += [f"#ifndef {name}", f"#define {name} {gen.macro_defaults[name]}", "#endif"]
    if macros:
        lines.append("")
    helpers = {h for stmt in gen.stmts for h in stmt.tmpl.helpers}
    for h, code in DEVICE_HELPERS.items():
        if h in helpers:
            lines.append(code)
    seen: dict[str, str] = {}
    names: list[str] = []
    for stmt in gen.stmts:
        t = stmt.tmpl
        code = t.code()
        if t.def_key in seen:
            assert seen[t.def_key] == code, f"two codes for kernel {t.def_key}"
            continue
        seen[t.def_key] = code
        names.append(t.name)
        lines.append(code)
    for code in dict.fromkeys(gen.host_helpers):
        lines.append(code)
    if gen.ctx.argv_block:
        # a file-scope variable: host helpers launch element-wise kernels too
        lines[2:2] = ["#include <cstdlib>", "", f"static int threads = {gen.ctx.block};"]
        main = ["int main(int argc, char** argv) {", f"  const int n = {n};",
                "  if (argc > 1) threads = atoi(argv[1]);"]
    else:
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
    for name, kind in gen.symbols.items():
        if kind == "array":
            mul, add = gen.xrng.randrange(1, 96, 2), gen.xrng.randrange(97)
            main.append(f"  for (int i = 0; i < n; ++i) h[i] = (float)((i * {mul} + {add}) % 97 - 48) * 0.015625f;")
            main.append(f"  cudaMemcpyToSymbol({name}, h, n * sizeof(float));")
        elif kind == "constant":
            main.append(f"  {{ float v = 0.25f; cudaMemcpyToSymbol({name}, &v, sizeof(float)); }}")
    opt_in: dict[str, int] = {}  # kernel -> the most dynamic shared memory a launch of it asks for
    for stmt in gen.stmts:
        if stmt.tmpl.dynamic_shared > 48 * 1024:
            opt_in[stmt.tmpl.name] = max(opt_in.get(stmt.tmpl.name, 0), stmt.tmpl.dynamic_shared)
    for name, size in opt_in.items():
        main.append(f"  cudaFuncSetAttribute({name}, cudaFuncAttributeMaxDynamicSharedMemorySize, {size});")
    if gen.probe:
        main.append("  double probe = 0.0;")
    main.extend(gen.body)
    main.append("  cudaDeviceSynchronize();")
    for b in outputs:
        if b in gen.symbols:
            main.append(f"  cudaMemcpyFromSymbol(h, {b}, n * sizeof(float));")
        else:
            main.append(f"  cudaMemcpy(h, d_{b}, n * sizeof(float), cudaMemcpyDeviceToHost);")
        main.append("  {")
        main.append("    double sum = 0.0;")
        main.append("    for (int i = 0; i < n; ++i) sum += (double)h[i] * (double)(i % 13 + 1);")
        main.append(f'    printf("checksum {b}: %.6f\\n", sum);')
        main.append("  }")
    if gen.probe:
        main.append('  printf("probe checksum: %.6f\\n", probe);')
    if pooled:
        main.append("  cudaFree(d_pool);")
    else:
        for b in gen.buffers:
            main.append(f"  cudaFree(d_{b});")
    main += ["  delete[] h;", "  return 0;", "}"]
    return "\n".join(lines + main) + "\n", tuple(names)


def _macros_used(gen: _Gen) -> list[str]:
    """The program macros (PROGRAM_MACROS) the generated kernels or launches use."""
    used = {m for stmt in gen.stmts for m in stmt.tmpl.macros}
    return [name for name in PROGRAM_MACROS if name in used]


def generate_program(seed: int, *, max_kernels: int = 8, size: int = 4096,
                     max_buffers: int = 8, argv_block: bool = False, hazards: bool = True) -> GeneratedProgram:
    """A complete random CUDA program with 2..``max_kernels`` launches.

    ``size`` is the number of floats per buffer, a positive multiple of 256;
    the 2-D templates (tiles, transpose) appear when it is the square of a
    multiple of 16 (the default 4096 = 64 x 64). With ``argv_block`` the element-wise
    launches of the default block size take their block size from the program's first
    argument (grid rounded up, the kernels check bounds); the description (shapes,
    footprints, dependences) is then that of a run without arguments. With ``hazards`` false
    no program holds the constructs of ``P_HAZARDS``: each seed gives the program older
    versions generated (seeds kept as regressions of those versions keep their program).
    """
    if size <= 0 or size % 256:
        raise ValueError(f"size must be a positive multiple of 256, not {size}")
    if max_kernels < 2:
        raise ValueError("max_kernels must be at least 2")
    if max_buffers < 3:
        raise ValueError("max_buffers must be at least 3")
    gen = _Gen(seed, max_kernels, size, max_buffers, argv_block, hazards)
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
            features=s.tmpl.features, nest=s.nest,
        ))
    host_ops = tuple(
        HostOp(index=k, kind=o.kind, position=o.position, reads=tuple(sorted(o.reads, key=_buf_key)),
               writes=tuple(sorted(o.writes, key=_buf_key)), text=o.text, loop=o.loop)
        for k, o in enumerate(gen.host_ops))
    # data written by launches or host statements (not the scalar c0, not the pointer gp)
    written = {b for l in launches for b in l.writes} | {b for o in host_ops for b in o.writes}
    outputs = sorted((b for b in written if gen.symbols.get(b, "array") == "array"), key=_buf_key)
    source, kernels = _assemble(gen, outputs)
    return GeneratedProgram(
        seed=seed, source=source, launches=tuple(launches),
        expected_dependences=tuple(_dependences(stmts, gen.host_ops)),
        buffers=tuple(gen.buffers) + tuple(gen.symbols), outputs=tuple(outputs), size=size,
        kernels=kernels, host_ops=host_ops, symbols=tuple(gen.symbols),
        rebuild_defines=tuple(f"{name}={PROGRAM_MACROS[name][1]}" for name in _macros_used(gen)),
        macro_kernels=tuple(sorted({s.tmpl.name for s in stmts if s.tmpl.macros})),
    )


def _buf_key(name: str) -> tuple:
    """b0, b1, ..., b10, then the device globals g0, g1, ..., c0, gp."""
    digits = name[1:]
    return (name[0] != "b", name[0] != "g", int(digits) if digits.isdigit() else 0, name)
