// Sirius CPU backend: CUDA's built-in vector types, dim3, and the built-in
// index variables (threadIdx, blockIdx, blockDim, gridDim, warpSize).
#pragma once
#pragma GCC system_header

#include <cstddef>

// --- vector types (layout and alignment as in CUDA's vector_types.h) -------

#define SIRIUS_VEC1(name, T, A) \
  struct __attribute__((aligned(A))) name { T x; };
#define SIRIUS_VEC2(name, T, A) \
  struct __attribute__((aligned(A))) name { T x, y; };
#define SIRIUS_VEC3(name, T) \
  struct name { T x, y, z; };
#define SIRIUS_VEC4(name, T, A) \
  struct __attribute__((aligned(A))) name { T x, y, z, w; };

#define SIRIUS_VECS(prefix, T, A1, A2, A4) \
  SIRIUS_VEC1(prefix##1, T, A1)           \
  SIRIUS_VEC2(prefix##2, T, A2)           \
  SIRIUS_VEC3(prefix##3, T)               \
  SIRIUS_VEC4(prefix##4, T, A4)

SIRIUS_VECS(char, signed char, 1, 2, 4)
SIRIUS_VECS(uchar, unsigned char, 1, 2, 4)
SIRIUS_VECS(short, short, 2, 4, 8)
SIRIUS_VECS(ushort, unsigned short, 2, 4, 8)
SIRIUS_VECS(int, int, 4, 8, 16)
SIRIUS_VECS(uint, unsigned int, 4, 8, 16)
SIRIUS_VECS(long, long, 8, 16, 16)
SIRIUS_VECS(ulong, unsigned long, 8, 16, 16)
SIRIUS_VECS(longlong, long long, 8, 16, 16)
SIRIUS_VECS(ulonglong, unsigned long long, 8, 16, 16)
SIRIUS_VECS(float, float, 4, 8, 16)
SIRIUS_VECS(double, double, 8, 16, 16)

#undef SIRIUS_VECS
#undef SIRIUS_VEC1
#undef SIRIUS_VEC2
#undef SIRIUS_VEC3
#undef SIRIUS_VEC4

#define SIRIUS_MAKE1(name, T) \
  static inline name make_##name(T x) { name r; r.x = x; return r; }
#define SIRIUS_MAKE2(name, T) \
  static inline name make_##name(T x, T y) { name r; r.x = x; r.y = y; return r; }
#define SIRIUS_MAKE3(name, T)                    \
  static inline name make_##name(T x, T y, T z) { \
    name r; r.x = x; r.y = y; r.z = z; return r;  \
  }
#define SIRIUS_MAKE4(name, T)                              \
  static inline name make_##name(T x, T y, T z, T w) {      \
    name r; r.x = x; r.y = y; r.z = z; r.w = w; return r;   \
  }
#define SIRIUS_MAKES(prefix, T) \
  SIRIUS_MAKE1(prefix##1, T)    \
  SIRIUS_MAKE2(prefix##2, T)    \
  SIRIUS_MAKE3(prefix##3, T)    \
  SIRIUS_MAKE4(prefix##4, T)

SIRIUS_MAKES(char, signed char)
SIRIUS_MAKES(uchar, unsigned char)
SIRIUS_MAKES(short, short)
SIRIUS_MAKES(ushort, unsigned short)
SIRIUS_MAKES(int, int)
SIRIUS_MAKES(uint, unsigned int)
SIRIUS_MAKES(long, long)
SIRIUS_MAKES(ulong, unsigned long)
SIRIUS_MAKES(longlong, long long)
SIRIUS_MAKES(ulonglong, unsigned long long)
SIRIUS_MAKES(float, float)
SIRIUS_MAKES(double, double)

#undef SIRIUS_MAKES
#undef SIRIUS_MAKE1
#undef SIRIUS_MAKE2
#undef SIRIUS_MAKE3
#undef SIRIUS_MAKE4

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

// --- built-in variables ------------------------------------------------------
// Per OS thread: the runtime runs all CUDA threads of a block on one OS thread
// (as fibers) and sets these before it resumes each CUDA thread.
extern __thread uint3 threadIdx;
extern __thread uint3 blockIdx;
extern __thread dim3 blockDim;
extern __thread dim3 gridDim;
static constexpr int warpSize = 32;
