"""The public description of a generated program: the vocabularies (dependence widths,
patterns, structures, features, host statements) and the records ``generate_program``
returns (``Launch``, ``HostOp``, ``Dependence``, ``GeneratedProgram``).
"""

from __future__ import annotations

from dataclasses import dataclass


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
    files: tuple[tuple[str, str], ...] = ()  # (name, text) of files the source includes, written beside it
    layouts: tuple[str, ...] = ()  # of progen.layouts.LAYOUTS: how the program is laid out

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
            "files": [name for name, _ in self.files],
            "layouts": list(self.layouts),
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
