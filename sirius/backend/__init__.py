"""Execution backends: run a CUDA program and capture what it copies back.

``cpu``      builds the program as a CPU program (clang-22 + the runtime in
             ``sirius/runtime/cpu``) and runs it: blocks on worker threads,
             CUDA threads as fibers with real barriers, per-block shared
             memory, warp operations and atomics.
``gpu``      builds it with nvcc and runs it on a CUDA GPU, when one is present.
``rewrite``  the source rewrite the CPU build needs.
``compare``  reads the copies both runs dumped and compares them (``verify``).

Environment variables read by built programs (set by ``sirius run`` /
``sirius verify``; documented here):

``SIRIUS_CPU_THREADS``  worker OS threads running blocks (default: one per core)
``SIRIUS_CPU_STACK_KB`` stack of each CUDA thread in KiB (default 512)
``SIRIUS_DUMP``         file receiving every device-to-host copy
``SIRIUS_ERROR_FILE``   file receiving the message of a fatal runtime error
"""
