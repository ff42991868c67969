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

With ``layouts=True`` (``progen.layouts``, a fourth stream) some programs are laid out as
application code is, computing the same: the buffers as elements of an array of device
pointers allocated by index, the first kernels in a file the main file includes
(``GeneratedProgram.files``), launches of ``main`` in host helpers it calls (some through
another), CRLF line ends (``GeneratedProgram.layouts`` names those a program shows).

A host statement between launches is an ordering point: ``HostOp`` lists the
buffers it reads and writes and ``Dependence.host_between`` the host
statements that run between a producer and a consumer.

The package has one module per job: ``model`` (the public description), ``footprint``
(which thread instance touches which element), ``templates`` (what every kernel template
shares), the templates by family in ``elementwise``, ``shared_memory``, ``constructs`` and
``hazards``, ``statements`` (a launch or host statement as generated), ``generator`` with
its steps in ``palette_steps`` and ``construct_steps``, ``dependences`` (the intended
dependences), ``assemble`` (the program text) and ``generate`` (``generate_program``).
Everything public is re-exported here.
"""

from __future__ import annotations

from sirius.testing.progen.model import (
    FEATURES, HOST_OPS, PATTERNS, STRUCTURES, WIDTHS, Dependence, GeneratedProgram, HostOp,
    Launch,
)
from sirius.testing.progen.footprint import Access, Dim3, Footprint, footprint_width
from sirius.testing.progen.templates import (
    BARRIER_VARIANTS, BINARY_OPS, DEVICE_HELPERS, UNARY_OPS, Ctx, Template,
)
from sirius.testing.progen.elementwise import Accumulate, Broadcast, Hist, Map, Shift, Tail
from sirius.testing.progen.shared_memory import (
    BlockNeighbor, BlockReduce, FullReduce, TileMap, Transpose,
)
from sirius.testing.progen.constructs import (
    ConstMap, GlobalArray, HelperReduce, NestCell, Overload, PtrWrite, TailBarrier,
)
from sirius.testing.progen.hazards import (
    BIG_SHARED_BYTES, PROGRAM_MACROS, BigShared, ByteNeighbor, FloatMacro, LdgHelper,
    MacroShift,
)
from sirius.testing.progen.generator import (
    MAX_HOST_OPS, NEW_STEPS, P_BARRIER_VARIANT, P_BIG_SHARED, P_BYTE_VIEW, P_FLOAT_MACRO,
    P_GIDX, P_HAZARDS, P_HAZARD_STEP, P_HOST_OP, P_LDG_HELPER, P_MACRO_SHIFT, P_NEW_STEP,
    P_TAIL_BARRIER,
)
from sirius.testing.progen.layouts import LAYOUTS
from sirius.testing.progen.dependences import dependence_width
from sirius.testing.progen.generate import generate_program

__all__ = [
    "FEATURES", "HOST_OPS", "PATTERNS", "STRUCTURES", "WIDTHS", "Dependence",
    "GeneratedProgram", "HostOp", "Launch", "Access", "Dim3", "Footprint", "footprint_width",
    "BARRIER_VARIANTS", "BINARY_OPS", "DEVICE_HELPERS", "UNARY_OPS", "Ctx", "Template",
    "Accumulate", "Broadcast", "Hist", "Map", "Shift", "Tail", "BlockNeighbor", "BlockReduce",
    "FullReduce", "TileMap", "Transpose", "ConstMap", "GlobalArray", "HelperReduce", "NestCell",
    "Overload", "PtrWrite", "TailBarrier", "BIG_SHARED_BYTES", "PROGRAM_MACROS", "BigShared",
    "ByteNeighbor", "FloatMacro", "LdgHelper", "MacroShift", "MAX_HOST_OPS", "NEW_STEPS",
    "P_BARRIER_VARIANT", "P_BIG_SHARED", "P_BYTE_VIEW", "P_FLOAT_MACRO", "P_GIDX", "P_HAZARDS",
    "P_HAZARD_STEP", "P_HOST_OP", "P_LDG_HELPER", "P_MACRO_SHIFT", "P_NEW_STEP",
    "P_TAIL_BARRIER", "dependence_width", "generate_program", "LAYOUTS",
]
