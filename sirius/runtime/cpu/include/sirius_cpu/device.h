// Sirius CPU backend: device-side built-ins.
//
// Barriers and warp operations suspend the calling CUDA thread (a fiber) and
// let the runtime's scheduler run the others of the block; see runtime.cpp for
// the rules. Atomics are real atomics (blocks run on several OS threads).
#pragma once
#pragma GCC system_header

#include <cmath>
#include <cstdint>
#include <cstring>
#include <math.h>
#include <type_traits>

#include "types.h"

namespace __sirius {
// Kinds of block-wide and warp-wide synchronizing operations.
enum SyncOp {
  kBarrier = 0, kBarrierCount = 1, kBarrierAnd = 2, kBarrierOr = 3, kGridBarrier = 4,
  kShflIdx = 10, kShflUp = 11, kShflDown = 12, kShflXor = 13,
  kBallot = 20, kAny = 21, kAll = 22, kSyncWarp = 23, kMatchAny = 24, kMatchAll = 25,
  kReduceAdd = 30, kReduceMin = 31, kReduceMax = 32, kReduceMinU = 33, kReduceMaxU = 34,
  kReduceAnd = 35, kReduceOr = 36, kReduceXor = 37
};

int block_sync(int op, int pred, const char* file, int line);
// Named barrier `id` (0..15; 0 is __syncthreads()'s): waits for `count`
// threads when `counted`, else for every live thread of the block.
void named_barrier_sync(unsigned id, unsigned count, bool counted, const char* file, int line);
// this_grid().sync(): a block barrier at the call site, then a wait for every
// other block of the (cooperative) grid.
void grid_sync(const char* file, int line);
// Whether the running kernel was launched with cudaLaunchCooperativeKernel.
bool cooperative_launch();
// Exchanges `size` bytes at `data` among the lanes in `mask`; the result
// replaces them. Returns the predicate result (match_all).
int warp_sync(int op, unsigned mask, void* data, int size, int arg, int width, const char* file,
              int line);
unsigned active_mask();
void trap(const char* what, const char* file, int line);
void poison_shared(const volatile void* p, size_t bytes);
unsigned long long clock_ticks();

// Per OS thread: the serial number of the block being run and the base of its
// dynamic shared memory.
extern __thread unsigned long long block_serial;
extern __thread unsigned char* dynamic_shared_base;

inline void* dynamic_shared() { return dynamic_shared_base; }

// First touch of a static __shared__ variable in a block: fill it with the
// block's poison pattern (see runtime.cpp), so a read before any write of
// this block shows.
inline void shared_fresh(const volatile void* p, size_t bytes, unsigned long long* gen) {
  if (*gen != block_serial) {
    *gen = block_serial;
    poison_shared(p, bytes);
  }
}

// A __shared__ variable at namespace scope: its address on the running OS
// thread, poisoned at the start of every block.
struct SharedRegistration {
  SharedRegistration(void* (*address)(), size_t bytes);
};

template <class T> struct IsWarpValue {
  static constexpr bool value = std::is_trivially_copyable<T>::value && sizeof(T) <= 16;
};
}  // namespace __sirius

// --- barriers -----------------------------------------------------------------

#define __syncthreads() ::__sirius::block_sync(::__sirius::kBarrier, 1, __FILE__, __LINE__)
#define __syncthreads_count(p) \
  ::__sirius::block_sync(::__sirius::kBarrierCount, (p) ? 1 : 0, __FILE__, __LINE__)
#define __syncthreads_and(p) \
  ::__sirius::block_sync(::__sirius::kBarrierAnd, (p) ? 1 : 0, __FILE__, __LINE__)
#define __syncthreads_or(p) \
  ::__sirius::block_sync(::__sirius::kBarrierOr, (p) ? 1 : 0, __FILE__, __LINE__)

// PTX bar.sync id[, count] (sm_30_intrinsics.h): threads at different barrier
// ids wait independently, so part of a block can synchronize on its own.
inline void __barrier_sync(unsigned id, const char* file = __builtin_FILE(),
                           int line = __builtin_LINE()) {
  ::__sirius::named_barrier_sync(id, 0u, false, file, line);
}
inline void __barrier_sync_count(unsigned id, unsigned count, const char* file = __builtin_FILE(),
                                 int line = __builtin_LINE()) {
  ::__sirius::named_barrier_sync(id, count, true, file, line);
}

inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

inline void __syncwarp(unsigned mask = 0xffffffffu, const char* file = __builtin_FILE(),
                       int line = __builtin_LINE()) {
  ::__sirius::warp_sync(::__sirius::kSyncWarp, mask, nullptr, 0, 0, 32, file, line);
}
inline unsigned __activemask() { return ::__sirius::active_mask(); }

// --- warp shuffles and votes ----------------------------------------------------

template <class T>
inline T __sirius_shfl(int op, unsigned mask, T var, int arg, int width, const char* file,
                       int line) {
  static_assert(::__sirius::IsWarpValue<T>::value,
                "warp shuffle of a type larger than 16 bytes or not trivially copyable");
  unsigned char buf[16];
  std::memcpy(buf, &var, sizeof(T));
  ::__sirius::warp_sync(op, mask, buf, (int)sizeof(T), arg, width, file, line);
  T r;
  std::memcpy(&r, buf, sizeof(T));
  return r;
}

template <class T>
inline T __shfl_sync(unsigned mask, T var, int src_lane, int width = 32,
                     const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return __sirius_shfl(::__sirius::kShflIdx, mask, var, src_lane, width, file, line);
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32,
                        const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return __sirius_shfl(::__sirius::kShflUp, mask, var, (int)delta, width, file, line);
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32,
                          const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return __sirius_shfl(::__sirius::kShflDown, mask, var, (int)delta, width, file, line);
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32,
                         const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return __sirius_shfl(::__sirius::kShflXor, mask, var, lane_mask, width, file, line);
}
// Pre-Volta forms: the whole warp.
template <class T>
inline T __shfl(T var, int src_lane, int width = 32, const char* file = __builtin_FILE(),
                int line = __builtin_LINE()) {
  return __sirius_shfl(::__sirius::kShflIdx, 0xffffffffu, var, src_lane, width, file, line);
}
template <class T>
inline T __shfl_up(T var, unsigned delta, int width = 32, const char* file = __builtin_FILE(),
                   int line = __builtin_LINE()) {
  return __sirius_shfl(::__sirius::kShflUp, 0xffffffffu, var, (int)delta, width, file, line);
}
template <class T>
inline T __shfl_down(T var, unsigned delta, int width = 32, const char* file = __builtin_FILE(),
                     int line = __builtin_LINE()) {
  return __sirius_shfl(::__sirius::kShflDown, 0xffffffffu, var, (int)delta, width, file, line);
}
template <class T>
inline T __shfl_xor(T var, int lane_mask, int width = 32, const char* file = __builtin_FILE(),
                    int line = __builtin_LINE()) {
  return __sirius_shfl(::__sirius::kShflXor, 0xffffffffu, var, lane_mask, width, file, line);
}

inline unsigned __sirius_vote(int op, unsigned mask, int pred, const char* file, int line) {
  unsigned buf[4] = {pred ? 1u : 0u, 0, 0, 0};
  ::__sirius::warp_sync(op, mask, buf, 4, 0, 32, file, line);
  return buf[0];
}
inline unsigned __ballot_sync(unsigned mask, int pred, const char* file = __builtin_FILE(),
                              int line = __builtin_LINE()) {
  return __sirius_vote(::__sirius::kBallot, mask, pred, file, line);
}
inline int __any_sync(unsigned mask, int pred, const char* file = __builtin_FILE(),
                      int line = __builtin_LINE()) {
  return (int)__sirius_vote(::__sirius::kAny, mask, pred, file, line);
}
inline int __all_sync(unsigned mask, int pred, const char* file = __builtin_FILE(),
                      int line = __builtin_LINE()) {
  return (int)__sirius_vote(::__sirius::kAll, mask, pred, file, line);
}
inline unsigned __ballot(int pred, const char* file = __builtin_FILE(),
                         int line = __builtin_LINE()) {
  return __sirius_vote(::__sirius::kBallot, 0xffffffffu, pred, file, line);
}
inline int __any(int pred, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return (int)__sirius_vote(::__sirius::kAny, 0xffffffffu, pred, file, line);
}
inline int __all(int pred, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return (int)__sirius_vote(::__sirius::kAll, 0xffffffffu, pred, file, line);
}
template <class T>
inline unsigned __match_any_sync(unsigned mask, T value, const char* file = __builtin_FILE(),
                                 int line = __builtin_LINE()) {
  unsigned char buf[16] = {0};
  std::memcpy(buf, &value, sizeof(T));
  ::__sirius::warp_sync(::__sirius::kMatchAny, mask, buf, (int)sizeof(T), 0, 32, file, line);
  unsigned r;
  std::memcpy(&r, buf, 4);
  return r;
}
template <class T>
inline unsigned __match_all_sync(unsigned mask, T value, int* pred,
                                 const char* file = __builtin_FILE(),
                                 int line = __builtin_LINE()) {
  unsigned char buf[16] = {0};
  std::memcpy(buf, &value, sizeof(T));
  int p = ::__sirius::warp_sync(::__sirius::kMatchAll, mask, buf, (int)sizeof(T), 0, 32, file,
                                line);
  if (pred) *pred = p;
  unsigned r;
  std::memcpy(&r, buf, 4);
  return r;
}
#define SIRIUS_WARP_REDUCE(name, T, op)                                                 \
  inline T name(unsigned mask, T value, const char* file = __builtin_FILE(),            \
                int line = __builtin_LINE()) {                                         \
    unsigned char buf[16] = {0};                                                       \
    std::memcpy(buf, &value, sizeof(T));                                               \
    ::__sirius::warp_sync(op, mask, buf, (int)sizeof(T), 0, 32, file, line);            \
    T r;                                                                               \
    std::memcpy(&r, buf, sizeof(T));                                                   \
    return r;                                                                          \
  }
SIRIUS_WARP_REDUCE(__reduce_add_sync, int, ::__sirius::kReduceAdd)
SIRIUS_WARP_REDUCE(__reduce_add_sync, unsigned, ::__sirius::kReduceAdd)
SIRIUS_WARP_REDUCE(__reduce_min_sync, int, ::__sirius::kReduceMin)
SIRIUS_WARP_REDUCE(__reduce_min_sync, unsigned, ::__sirius::kReduceMinU)
SIRIUS_WARP_REDUCE(__reduce_max_sync, int, ::__sirius::kReduceMax)
SIRIUS_WARP_REDUCE(__reduce_max_sync, unsigned, ::__sirius::kReduceMaxU)
SIRIUS_WARP_REDUCE(__reduce_and_sync, unsigned, ::__sirius::kReduceAnd)
SIRIUS_WARP_REDUCE(__reduce_or_sync, unsigned, ::__sirius::kReduceOr)
SIRIUS_WARP_REDUCE(__reduce_xor_sync, unsigned, ::__sirius::kReduceXor)
#undef SIRIUS_WARP_REDUCE

// --- atomics ---------------------------------------------------------------------

#define SIRIUS_ATOMIC_INT(T)                                                              \
  inline T atomicAdd(T* p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }     \
  inline T atomicSub(T* p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); }     \
  inline T atomicExch(T* p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); }   \
  inline T atomicAnd(T* p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); }     \
  inline T atomicOr(T* p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }       \
  inline T atomicXor(T* p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED); }     \
  inline T atomicMin(T* p, T v) {                                                         \
    T old = __atomic_load_n(p, __ATOMIC_RELAXED);                                         \
    while (v < old &&                                                                     \
           !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) { \
    }                                                                                     \
    return old;                                                                           \
  }                                                                                       \
  inline T atomicMax(T* p, T v) {                                                         \
    T old = __atomic_load_n(p, __ATOMIC_RELAXED);                                         \
    while (v > old &&                                                                     \
           !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) { \
    }                                                                                     \
    return old;                                                                           \
  }                                                                                       \
  inline T atomicCAS(T* p, T compare, T v) {                                              \
    __atomic_compare_exchange_n(p, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED); \
    return compare;                                                                       \
  }
SIRIUS_ATOMIC_INT(int)
SIRIUS_ATOMIC_INT(unsigned int)
SIRIUS_ATOMIC_INT(long long)
SIRIUS_ATOMIC_INT(unsigned long long)
#undef SIRIUS_ATOMIC_INT

inline unsigned short atomicCAS(unsigned short* p, unsigned short compare, unsigned short v) {
  __atomic_compare_exchange_n(p, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return compare;
}

inline unsigned atomicInc(unsigned* p, unsigned limit) {
  unsigned old = __atomic_load_n(p, __ATOMIC_RELAXED);
  unsigned next;
  do {
    next = old >= limit ? 0u : old + 1u;
  } while (!__atomic_compare_exchange_n(p, &old, next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return old;
}
inline unsigned atomicDec(unsigned* p, unsigned limit) {
  unsigned old = __atomic_load_n(p, __ATOMIC_RELAXED);
  unsigned next;
  do {
    next = (old == 0u || old > limit) ? limit : old - 1u;
  } while (!__atomic_compare_exchange_n(p, &old, next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return old;
}

// Floating-point atomics: compare-and-swap on the bit pattern.
template <class T, class Bits, class F>
inline T __sirius_atomic_fp(T* p, F update) {
  Bits* q = reinterpret_cast<Bits*>(p);
  Bits old_bits = __atomic_load_n(q, __ATOMIC_RELAXED);
  for (;;) {
    T old_value;
    std::memcpy(&old_value, &old_bits, sizeof(T));
    T new_value = update(old_value);
    Bits new_bits;
    std::memcpy(&new_bits, &new_value, sizeof(T));
    if (__atomic_compare_exchange_n(q, &old_bits, new_bits, true, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED))
      return old_value;
  }
}
inline float atomicAdd(float* p, float v) {
  return __sirius_atomic_fp<float, unsigned>(p, [v](float o) { return o + v; });
}
inline double atomicAdd(double* p, double v) {
  return __sirius_atomic_fp<double, unsigned long long>(p, [v](double o) { return o + v; });
}
inline float atomicSub(float* p, float v) {
  return __sirius_atomic_fp<float, unsigned>(p, [v](float o) { return o - v; });
}
inline float atomicExch(float* p, float v) {
  return __sirius_atomic_fp<float, unsigned>(p, [v](float) { return v; });
}
inline double atomicExch(double* p, double v) {
  return __sirius_atomic_fp<double, unsigned long long>(p, [v](double) { return v; });
}
inline float atomicMin(float* p, float v) {
  return __sirius_atomic_fp<float, unsigned>(p, [v](float o) { return fminf(o, v); });
}
inline float atomicMax(float* p, float v) {
  return __sirius_atomic_fp<float, unsigned>(p, [v](float o) { return fmaxf(o, v); });
}
inline double atomicMin(double* p, double v) {
  return __sirius_atomic_fp<double, unsigned long long>(p, [v](double o) { return fmin(o, v); });
}
inline double atomicMax(double* p, double v) {
  return __sirius_atomic_fp<double, unsigned long long>(p, [v](double o) { return fmax(o, v); });
}

#define SIRIUS_ATOMIC_SCOPES(name)                                                   \
  template <class T, class... A> inline auto name##_block(T* p, A... a) {            \
    return name(p, a...);                                                            \
  }                                                                                  \
  template <class T, class... A> inline auto name##_system(T* p, A... a) {           \
    return name(p, a...);                                                            \
  }
SIRIUS_ATOMIC_SCOPES(atomicAdd)
SIRIUS_ATOMIC_SCOPES(atomicSub)
SIRIUS_ATOMIC_SCOPES(atomicExch)
SIRIUS_ATOMIC_SCOPES(atomicMin)
SIRIUS_ATOMIC_SCOPES(atomicMax)
SIRIUS_ATOMIC_SCOPES(atomicAnd)
SIRIUS_ATOMIC_SCOPES(atomicOr)
SIRIUS_ATOMIC_SCOPES(atomicXor)
SIRIUS_ATOMIC_SCOPES(atomicCAS)
SIRIUS_ATOMIC_SCOPES(atomicInc)
SIRIUS_ATOMIC_SCOPES(atomicDec)
#undef SIRIUS_ATOMIC_SCOPES

// --- cache-hinted loads and stores -------------------------------------------------

template <class T> inline T __ldg(const T* p) { return *p; }
template <class T> inline T __ldcg(const T* p) { return *p; }
template <class T> inline T __ldca(const T* p) { return *p; }
template <class T> inline T __ldcs(const T* p) { return *p; }
template <class T> inline T __ldlu(const T* p) { return *p; }
template <class T> inline T __ldcv(const T* p) { return *p; }
template <class T> inline void __stwb(T* p, T v) { *p = v; }
template <class T> inline void __stcg(T* p, T v) { *p = v; }
template <class T> inline void __stcs(T* p, T v) { *p = v; }
template <class T> inline void __stwt(T* p, T v) { *p = v; }

// --- min / max, as CUDA's math_functions.hpp overloads them --------------------------

#define SIRIUS_MINMAX(R, A, B)                                 \
  inline R min(A a, B b) { return (R)a < (R)b ? (R)a : (R)b; } \
  inline R max(A a, B b) { return (R)a > (R)b ? (R)a : (R)b; }
SIRIUS_MINMAX(int, int, int)
SIRIUS_MINMAX(unsigned int, unsigned int, unsigned int)
SIRIUS_MINMAX(unsigned int, int, unsigned int)
SIRIUS_MINMAX(unsigned int, unsigned int, int)
SIRIUS_MINMAX(long, long, long)
SIRIUS_MINMAX(unsigned long, unsigned long, unsigned long)
SIRIUS_MINMAX(unsigned long, long, unsigned long)
SIRIUS_MINMAX(unsigned long, unsigned long, long)
SIRIUS_MINMAX(long long, long long, long long)
SIRIUS_MINMAX(unsigned long long, unsigned long long, unsigned long long)
SIRIUS_MINMAX(unsigned long long, long long, unsigned long long)
SIRIUS_MINMAX(unsigned long long, unsigned long long, long long)
#undef SIRIUS_MINMAX
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
inline double min(float a, double b) { return fmin((double)a, b); }
inline double max(float a, double b) { return fmax((double)a, b); }
inline double min(double a, float b) { return fmin(a, (double)b); }
inline double max(double a, float b) { return fmax(a, (double)b); }

// --- float and double intrinsics ----------------------------------------------------

inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return exp10f(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline void __sincosf(float x, float* s, float* c) { sincosf(x, s, c); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float x, float y) { return x / y; }
inline float fdividef(float x, float y) { return x / y; }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : (x != x ? 0.0f : x)); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
inline double rcbrt(double x) { return 1.0 / cbrt(x); }
inline float sinpif(float x) { return sinf((float)M_PI * x); }
inline float cospif(float x) { return cosf((float)M_PI * x); }
inline double sinpi(double x) { return sin(M_PI * x); }
inline double cospi(double x) { return cos(M_PI * x); }
inline void sincospif(float x, float* s, float* c) { sincosf((float)M_PI * x, s, c); }
inline void sincospi(double x, double* s, double* c) { sincos(M_PI * x, s, c); }
inline float norm3df(float a, float b, float c) { return sqrtf(a * a + b * b + c * c); }
inline float rnorm3df(float a, float b, float c) { return 1.0f / sqrtf(a * a + b * b + c * c); }
inline float norm4df(float a, float b, float c, float d) {
  return sqrtf(a * a + b * b + c * c + d * d);
}
inline float rhypotf(float a, float b) { return 1.0f / hypotf(a, b); }
inline float normcdff(float x) { return 0.5f * erfcf(-x * (float)M_SQRT1_2); }
inline double normcdf(double x) { return 0.5 * erfc(-x * M_SQRT1_2); }
inline double erfinv(double y) {
  // Newton iterations on erf(x) - y from a rational first guess.
  if (y <= -1.0) return -HUGE_VAL;
  if (y >= 1.0) return HUGE_VAL;
  double w = -log((1.0 - y) * (1.0 + y));
  double x = copysign(sqrt(w > 0 ? w : 0.0) * 0.886226925452758, y);
  for (int i = 0; i < 40; ++i) {
    double err = erf(x) - y;
    x -= err / (1.1283791670955126 * exp(-x * x));
  }
  return x;
}
inline float erfinvf(float y) { return (float)erfinv((double)y); }
inline double erfcinv(double y) { return erfinv(1.0 - y); }
inline float erfcinvf(float y) { return (float)erfinv(1.0 - (double)y); }
inline double normcdfinv(double p) { return M_SQRT2 * erfinv(2.0 * p - 1.0); }
inline float normcdfinvf(float p) { return (float)normcdfinv((double)p); }

inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __frcp_rn(float a) { return 1.0f / a; }
inline float __fsqrt_rn(float a) { return sqrtf(a); }
inline float __frsqrt_rn(float a) { return 1.0f / sqrtf(a); }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline float __fmaf_ieee_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __drcp_rn(double a) { return 1.0 / a; }
inline double __dsqrt_rn(double a) { return sqrt(a); }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }

inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
inline int __float2int_rz(float x) { return (int)x; }
inline int __float2int_rd(float x) { return (int)floorf(x); }
inline int __float2int_ru(float x) { return (int)ceilf(x); }
inline unsigned __float2uint_rn(float x) { return (unsigned)nearbyintf(x); }
inline unsigned __float2uint_rz(float x) { return (unsigned)x; }
inline unsigned __float2uint_rd(float x) { return (unsigned)floorf(x); }
inline unsigned __float2uint_ru(float x) { return (unsigned)ceilf(x); }
inline long long __float2ll_rn(float x) { return (long long)nearbyintf(x); }
inline long long __float2ll_rz(float x) { return (long long)x; }
inline unsigned long long __float2ull_rn(float x) { return (unsigned long long)nearbyintf(x); }
inline unsigned long long __float2ull_rz(float x) { return (unsigned long long)x; }
inline int __double2int_rn(double x) { return (int)nearbyint(x); }
inline int __double2int_rz(double x) { return (int)x; }
inline int __double2int_rd(double x) { return (int)floor(x); }
inline int __double2int_ru(double x) { return (int)ceil(x); }
inline unsigned __double2uint_rn(double x) { return (unsigned)nearbyint(x); }
inline unsigned __double2uint_rz(double x) { return (unsigned)x; }
inline long long __double2ll_rn(double x) { return (long long)nearbyint(x); }
inline long long __double2ll_rz(double x) { return (long long)x; }
inline float __double2float_rn(double x) { return (float)x; }
inline float __int2float_rn(int x) { return (float)x; }
inline float __uint2float_rn(unsigned x) { return (float)x; }
inline float __ll2float_rn(long long x) { return (float)x; }
inline float __ull2float_rn(unsigned long long x) { return (float)x; }
inline double __int2double_rn(int x) { return (double)x; }
inline double __uint2double_rn(unsigned x) { return (double)x; }
inline double __ll2double_rn(long long x) { return (double)x; }
inline double __ull2double_rn(unsigned long long x) { return (double)x; }

template <class To, class From> inline To __sirius_bits(From v) {
  static_assert(sizeof(To) == sizeof(From), "bit cast between types of different sizes");
  To r;
  std::memcpy(&r, &v, sizeof(To));
  return r;
}
inline float __int_as_float(int x) { return __sirius_bits<float>(x); }
inline int __float_as_int(float x) { return __sirius_bits<int>(x); }
inline float __uint_as_float(unsigned x) { return __sirius_bits<float>(x); }
inline unsigned __float_as_uint(float x) { return __sirius_bits<unsigned>(x); }
inline double __longlong_as_double(long long x) { return __sirius_bits<double>(x); }
inline long long __double_as_longlong(double x) { return __sirius_bits<long long>(x); }
inline int __double2hiint(double x) { return (int)(__double_as_longlong(x) >> 32); }
inline int __double2loint(double x) { return (int)(unsigned)__double_as_longlong(x); }
inline double __hiloint2double(int hi, int lo) {
  return __longlong_as_double((long long)(((unsigned long long)(unsigned)hi << 32) | (unsigned)lo));
}

// --- integer intrinsics ------------------------------------------------------------

inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) { return __builtin_bitreverse32(x); }
inline unsigned long long __brevll(unsigned long long x) { return __builtin_bitreverse64(x); }
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  unsigned long long v = ((unsigned long long)y << 32) | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) {
    unsigned sel = (s >> (4 * i)) & 7u;
    r |= (unsigned)((v >> (8 * sel)) & 0xffu) << (8 * i);
  }
  return r;
}
inline int __mul24(int a, int b) { return (int)(((long long)(a << 8 >> 8)) * (long long)(b << 8 >> 8)); }
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffffu) * (b & 0xffffffu); }
inline int __mulhi(int a, int b) { return (int)(((long long)a * (long long)b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) {
  return (unsigned)(((unsigned long long)a * (unsigned long long)b) >> 32);
}
inline long long __mul64hi(long long a, long long b) {
  return (long long)(((__int128)a * (__int128)b) >> 64);
}
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)(((unsigned __int128)a * (unsigned __int128)b) >> 64);
}
inline int __hadd(int a, int b) { return (int)(((long long)a + (long long)b) >> 1); }
inline int __rhadd(int a, int b) { return (int)(((long long)a + (long long)b + 1) >> 1); }
inline unsigned __uhadd(unsigned a, unsigned b) {
  return (unsigned)(((unsigned long long)a + b) >> 1);
}
inline unsigned __urhadd(unsigned a, unsigned b) {
  return (unsigned)(((unsigned long long)a + b + 1) >> 1);
}
inline unsigned __sad(int a, int b, unsigned c) {
  return c + (unsigned)(a > b ? (long long)a - b : (long long)b - a);
}
inline unsigned __usad(unsigned a, unsigned b, unsigned c) { return c + (a > b ? a - b : b - a); }
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
  unsigned long long v = ((unsigned long long)hi << 32) | lo;
  return (unsigned)((v << (shift & 31)) >> 32);
}
inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned shift) {
  unsigned long long v = ((unsigned long long)hi << 32) | lo;
  return (unsigned)((v << (shift > 32 ? 32 : shift)) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
  unsigned long long v = ((unsigned long long)hi << 32) | lo;
  return (unsigned)(v >> (shift & 31));
}
inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned shift) {
  unsigned long long v = ((unsigned long long)hi << 32) | lo;
  return (unsigned)(v >> (shift > 32 ? 32 : shift));
}
inline int __dp4a(int a, int b, int c) {
  for (int i = 0; i < 4; ++i)
    c += (int)(signed char)(a >> (8 * i)) * (int)(signed char)(b >> (8 * i));
  return c;
}
inline unsigned __dp4a(unsigned a, unsigned b, unsigned c) {
  for (int i = 0; i < 4; ++i) c += ((a >> (8 * i)) & 0xffu) * ((b >> (8 * i)) & 0xffu);
  return c;
}

// --- timing, traps, misc ------------------------------------------------------------

inline long long clock64() { return (long long)::__sirius::clock_ticks(); }
inline void __nanosleep(unsigned) {}
inline void __brkpt() {}
#define __trap() ::__sirius::trap("__trap()", __FILE__, __LINE__)
inline bool __isGlobal(const void*) { return true; }
inline bool __isShared(const void*) { return false; }
inline bool __isConstant(const void*) { return false; }
inline bool __isLocal(const void*) { return false; }
