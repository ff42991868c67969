"""Execution backends: run a CUDA program and capture what it copies back.

``cpu``      builds the program as a CPU program (clang-22 + the runtime in
             ``sirius/runtime/cpu``) and runs it (``sirius run``).
``gpu``      builds it with nvcc and runs it on a CUDA GPU, when one is present.
``rewrite``  the source rewrite the CPU build needs.
``compare``  reads the copies both runs dumped and compares them
             (``sirius verify``).

How the CPU backend runs a grid (details in ``runtime/cpu/src/runtime.cpp``):
blocks are spread over worker OS threads; the threads of a block are fibers
on one OS thread, each running until it finishes or reaches ``__syncthreads()``
or a warp operation; a barrier releases when every thread of the block that
has not exited waits at it, and threads waiting at different barriers are
reported as a divergent barrier (kernel, block, source lines), exit 2, as is a
deadlock. ``__shared__`` variables are per-block storage. Missing barriers show
deterministically: between barriers the threads of a block run one at a time,
in increasing order in even blocks and decreasing order in odd ones, and
shared memory holds a poison pattern until written (+3.4e38 as float in even
blocks, -3.4e38 in odd ones); device allocations start as NaN bytes.
Unsupported (refused with file and line, exit 2): texture and surface objects,
cooperative grid synchronization, CUDA graphs, CUDA arrays, inline assembly,
kernel launches from device code.

Environment variables read by built programs (``sirius run`` / ``sirius
verify`` set them from their options; documented here):

``SIRIUS_CPU_THREADS``  worker OS threads running blocks (default: one per core)
``SIRIUS_CPU_STACK_KB`` stack of each CUDA thread in KiB (default 512)
``SIRIUS_DUMP``         file receiving every device-to-host copy
``SIRIUS_LAUNCH_LOG``   file receiving the name of every kernel launched, a line each
``SIRIUS_ERROR_FILE``   file receiving the message of a fatal runtime error
"""
