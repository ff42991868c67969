// Sirius CPU backend: the prelude every program is built with (the build
// includes it before the program's first line, as nvcc does with
// cuda_runtime.h). It pulls in the whole CUDA surface the backend provides,
// except cuda_fp16.h / cuda_bf16.h / cooperative_groups.h, which a program
// includes itself.
#pragma once
#pragma GCC system_header

#ifndef __CUDACC__
#define __CUDACC__ 1
#endif
#define __NVCC__ 1
#define __CUDACC_VER_MAJOR__ 13
#define __CUDACC_VER_MINOR__ 0
#define __CUDACC_VER_BUILD__ 0
#define __SIRIUS_CPU__ 1

// The most blocks of a cooperative grid the CPU backend runs by default (each
// is an OS thread; SIRIUS_CPU_COOP_BLOCKS sets the limit a run enforces): host
// code that sizes a cooperative grid can stay within it.
#ifndef SIRIUS_COOPERATIVE_MAX_BLOCKS
#define SIRIUS_COOPERATIVE_MAX_BLOCKS 64
#endif
// ... and the most CUDA threads in all (each a fiber with a stack of its own)
#ifndef SIRIUS_COOPERATIVE_MAX_THREADS
#define SIRIUS_COOPERATIVE_MAX_THREADS 16384
#endif

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <math.h>
#include <new>
#include <stdarg.h>
#include <tuple>
#include <type_traits>
#include <utility>

#include "sirius_cpu/types.h"
#include "sirius_cpu/api.h"
#include "sirius_cpu/device.h"
#include "sirius_cpu/launch.h"

// printf from a kernel is buffered per block and written, in block order,
// when the launch ends (so output does not depend on which OS thread ran
// which block); from host code it is plain printf.
int __sirius_printf(const char* format, ...) __attribute__((format(printf, 1, 2)));
namespace std {
using ::__sirius_printf;
}
#define printf(...) __sirius_printf(__VA_ARGS__)
