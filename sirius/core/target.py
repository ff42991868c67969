"""The GPU a program is optimized for: the limits legality is checked against and the
costs the cost model charges, in one object.

``target_for(arch)`` is what the analysis and fusion use (an architecture's limits);
``H100`` carries the costs measured on one (launch, graph node, grid barrier: the medians of
back-to-back empty kernels with CUDA 13.0; bandwidth: achievable, not the data-sheet 3.35
TB/s; access latency and loads in flight: fitted to the hand-written LSTM's 33 us gemv
launches). Other architectures take the H100's costs with their own limits: the cost
model ranks arrangements, and its constants were measured on that card only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

KB = 1024
STATIC_SHARED_LIMIT = 48 * KB  # a block's shared memory without the opt-in, on every architecture
MAX_BLOCK_THREADS = 1024  # threads per block, on every architecture
MAX_GRID = (2**31 - 1, 65535, 65535)  # blocks per grid axis, on every architecture since sm_30
WARP_SIZE = 32  # threads per warp, on every architecture


@dataclass(frozen=True)
class Target:
    name: str
    arch: str = "sm_90"
    # limits of one launch
    max_block_threads: int = MAX_BLOCK_THREADS
    static_shared_limit: int = STATIC_SHARED_LIMIT
    shared_opt_in_limit: int = 227 * KB  # with cudaFuncSetAttribute(MaxDynamicSharedMemorySize)
    max_block_registers: int = 64 * KB  # 32-bit registers (every architecture since sm_50)
    max_thread_registers: int = 255  # the most ptxas gives one thread (every architecture since sm_35)
    # one streaming multiprocessor
    sm_count: int = 132
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    shared_per_sm: int = 228 * KB
    registers_per_sm: int = 64 * KB
    # costs (measured on an H100, see the module's docstring)
    bandwidth_gbs: float = 3000.0
    launch_direct_us: float = 4.2
    graph_node_us: float = 0.85
    grid_sync_us: float = 1.15
    cooperative_launch_us: float = 6.6
    global_latency_us: float = 0.5
    loads_in_flight: int = 8
    shared_access_us: float = 0.01
    barrier_us: float = 0.02
    register_unit: int = 256  # registers are given to a warp in units of this many

    def block_registers(self, registers: int, threads: int) -> int:
        """Registers a block of ``threads`` threads using ``registers`` each takes: given per
        warp, in units of ``register_unit``."""
        warps = -(-threads // 32)
        per_warp = -(-registers * 32 // self.register_unit) * self.register_unit
        return warps * per_warp


H100 = Target("NVIDIA H100 (measured constants, CUDA 13.0)", arch="sm_90", sm_count=132)

# most shared memory one block may have after the opt-in, per architecture
_OPT_IN_SHARED = {"sm_75": 64 * KB, "sm_80": 163 * KB, "sm_86": 99 * KB, "sm_87": 163 * KB,
                  "sm_89": 99 * KB, "sm_90": 227 * KB, "sm_100": 227 * KB, "sm_120": 99 * KB}


def needs_shared_opt_in(static: int, dynamic: int) -> bool:
    """A launch whose block holds this much shared memory fails on a GPU unless the program
    first raises the kernel's limit with cudaFuncSetAttribute(MaxDynamicSharedMemorySize)."""
    return static + dynamic > STATIC_SHARED_LIMIT


def target_for(arch: str) -> Target:
    """The target of ``arch`` (``sm_90``, ``sm_90a``...): its opt-in shared memory limit (the
    48 KB without opt-in when the architecture is unknown), the H100's other figures."""
    base = arch.rstrip("af")
    if base == H100.arch:
        return H100
    return dataclasses.replace(H100, name=arch, arch=base,
                               shared_opt_in_limit=_OPT_IN_SHARED.get(base, H100.static_shared_limit))
