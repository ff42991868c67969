"""Execution backends: run a CUDA program and capture what it copies back.

``cpu``      builds the program as a CPU program (clang-22 + the runtime in
             ``sirius/runtime/cpu``) and runs it (``sirius run``).
``gpu``      builds it with nvcc and runs it on a CUDA GPU, when one is present.
``rewrite``  the source rewrite the CPU build needs.
``compare``  reads the copies both runs dumped and compares them
             (``sirius verify``).

How the CPU backend runs a grid (details in ``runtime/cpu/src/runtime.cpp``):
blocks are spread over worker OS threads; the threads of a block are fibers
on one OS thread, each running until it finishes or reaches a barrier or a
warp operation. A block has 16 named barriers: ``__syncthreads()`` (barrier
0) and ``__barrier_sync(id)`` release when every thread of the block that has
not exited waits at that barrier, ``__barrier_sync_count(id, n)`` when n
threads do (n a nonzero multiple of 32, at most the block's size; else exit
2). Threads at different barriers wait independently; threads waiting at
different call sites of one barrier are reported as a divergent barrier
(kernel, block, source lines), exit 2, as is a deadlock (with where each
thread waits). ``__shared__`` variables are per-block storage. Missing
barriers show deterministically: between barriers the threads of a block run
one at a time, in increasing order in even blocks and decreasing order in odd
ones, and shared memory holds a poison pattern until written (+3.4e38 as
float in even blocks, -3.4e38 in odd ones); device allocations start as NaN
bytes.
A cooperative launch (``cudaLaunchCooperativeKernel``) runs all its blocks at
once, each on an OS thread of its own, so that ``this_grid().sync()`` waits
for every block; a block that finishes while others wait at a grid barrier,
or a grid barrier in a kernel not launched cooperatively, is reported (exit
2). A grid larger than can be co-resident fails with
``cudaErrorCooperativeLaunchTooLarge``: at most the occupancy (blocks per SM
for the block size, 132 SMs) and at most ``SIRIUS_CPU_COOP_BLOCKS`` blocks and
16384 threads; programs see the default block limit as
``SIRIUS_COOPERATIVE_MAX_BLOCKS``.
Unsupported (refused with file and line, exit 2): texture and surface objects,
multi-device cooperative launches (multi-grid groups), CUDA graphs, CUDA
arrays, inline assembly, kernel launches from device code.

Environment variables read by built programs (``sirius run`` / ``sirius
verify`` set them from their options; documented here):

``SIRIUS_CPU_THREADS``  worker OS threads running blocks (default: one per core)
``SIRIUS_CPU_STACK_KB`` stack of each CUDA thread in KiB (default 512)
``SIRIUS_CPU_COOP_BLOCKS`` most blocks of a cooperative grid, each an OS thread (default 64)
``SIRIUS_DUMP``         file receiving every device-to-host copy
``SIRIUS_LAUNCH_LOG``   file receiving the name of every kernel launched, a line each
``SIRIUS_ERROR_FILE``   file receiving the message of a fatal runtime error

Read by optimized programs on either backend (``sirius/fusion/region_paths.py``):

``SIRIUS_PATH_COUNTS``  file to which the program appends, at exit, how often each
                        fused region took each path
"""
