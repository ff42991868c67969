// Sirius CPU backend: __half over the compiler's _Float16 (IEEE binary16).
// Programs are built with -fexcess-precision=16, so every half operation
// rounds to half as on the GPU (no float intermediates).
#pragma once
#pragma GCC system_header

#include "sirius_cpu.h"

typedef _Float16 __half;
typedef __half half;

struct __half_raw {
  unsigned short x;
  __half_raw() = default;
  constexpr __half_raw(unsigned short bits) : x(bits) {}
  __half_raw(__half h) { std::memcpy(&x, &h, 2); }
  operator __half() const {
    __half h;
    std::memcpy(&h, &x, 2);
    return h;
  }
};

struct __attribute__((aligned(4))) __half2 {
  __half x, y;
  __half2() = default;
  constexpr __half2(__half a, __half b) : x(a), y(b) {}
};
typedef __half2 half2;

struct __half2_raw {
  unsigned short x, y;
};

namespace __sirius {
template <> struct ElemCodeOf<__half2> { static constexpr int value = kF16; };

inline unsigned short half_bits(__half h) {
  unsigned short b;
  std::memcpy(&b, &h, 2);
  return b;
}
inline __half half_from_bits(unsigned short b) {
  __half h;
  std::memcpy(&h, &b, 2);
  return h;
}
inline unsigned short half_next_up(unsigned short b) {
  if ((b & 0x7fff) > 0x7c00 || b == 0x7c00) return b;
  if (b == 0x8000) return 0x0001;
  return (b & 0x8000) ? (unsigned short)(b - 1) : (unsigned short)(b + 1);
}
inline unsigned short half_next_down(unsigned short b) {
  if ((b & 0x7fff) > 0x7c00 || b == 0xfc00) return b;
  if (b == 0x0000) return 0x8001;
  return (b & 0x8000) ? (unsigned short)(b + 1) : (unsigned short)(b - 1);
}
// float -> half with rounding toward -inf (mode -1), nearest even (0), +inf (1).
inline __half float_to_half(float f, int mode) {
  __half h = (__half)f;
  if (mode == 0 || f != f) return h;
  float back = (float)h;
  if (mode < 0 && back > f) return half_from_bits(half_next_down(half_bits(h)));
  if (mode > 0 && back < f) return half_from_bits(half_next_up(half_bits(h)));
  return h;
}
}  // namespace __sirius

// --- conversions ---------------------------------------------------------------

inline __half __float2half(float f) { return (__half)f; }
inline __half __float2half_rn(float f) { return (__half)f; }
inline __half __float2half_rd(float f) { return ::__sirius::float_to_half(f, -1); }
inline __half __float2half_ru(float f) { return ::__sirius::float_to_half(f, 1); }
inline __half __float2half_rz(float f) {
  return ::__sirius::float_to_half(f, f > 0.0f ? -1 : (f < 0.0f ? 1 : 0));
}
inline float __half2float(__half h) { return (float)h; }
inline __half __double2half(double d) { return (__half)d; }
inline double __half2double(__half h) { return (double)h; }
inline __half __int2half_rn(int i) { return (__half)(float)i; }
inline __half __int2half_rz(int i) { return __float2half_rz((float)i); }
inline __half __int2half_rd(int i) { return __float2half_rd((float)i); }
inline __half __int2half_ru(int i) { return __float2half_ru((float)i); }
inline __half __uint2half_rn(unsigned i) { return (__half)(float)i; }
inline __half __short2half_rn(short i) { return (__half)(float)i; }
inline __half __ushort2half_rn(unsigned short i) { return (__half)(float)i; }
inline __half __ll2half_rn(long long i) { return (__half)(float)i; }
inline __half __ull2half_rn(unsigned long long i) { return (__half)(float)i; }
inline int __half2int_rn(__half h) { return (int)nearbyintf((float)h); }
inline int __half2int_rz(__half h) { return (int)(float)h; }
inline int __half2int_rd(__half h) { return (int)floorf((float)h); }
inline int __half2int_ru(__half h) { return (int)ceilf((float)h); }
inline unsigned __half2uint_rn(__half h) { return (unsigned)nearbyintf((float)h); }
inline unsigned __half2uint_rz(__half h) { return (unsigned)(float)h; }
inline short __half2short_rn(__half h) { return (short)nearbyintf((float)h); }
inline short __half2short_rz(__half h) { return (short)(float)h; }
inline unsigned short __half2ushort_rn(__half h) { return (unsigned short)nearbyintf((float)h); }
inline unsigned short __half2ushort_rz(__half h) { return (unsigned short)(float)h; }
inline long long __half2ll_rn(__half h) { return (long long)nearbyintf((float)h); }
inline long long __half2ll_rz(__half h) { return (long long)(float)h; }
inline short __half_as_short(__half h) { return (short)::__sirius::half_bits(h); }
inline unsigned short __half_as_ushort(__half h) { return ::__sirius::half_bits(h); }
inline __half __short_as_half(short s) { return ::__sirius::half_from_bits((unsigned short)s); }
inline __half __ushort_as_half(unsigned short s) { return ::__sirius::half_from_bits(s); }

// --- arithmetic and comparisons -------------------------------------------------

inline __half __hadd(__half a, __half b) { return a + b; }
inline __half __hsub(__half a, __half b) { return a - b; }
inline __half __hmul(__half a, __half b) { return a * b; }
inline __half __hdiv(__half a, __half b) { return a / b; }
inline __half __hneg(__half a) { return -a; }
inline __half __habs(__half a) {
  return ::__sirius::half_from_bits((unsigned short)(::__sirius::half_bits(a) & 0x7fff));
}
inline __half __hfma(__half a, __half b, __half c) {
  return (__half)fma((double)a, (double)b, (double)c);
}
inline __half __sirius_hsat(__half a) {
  return a != a ? (__half)0.0f : (a < (__half)0.0f ? (__half)0.0f : (a > (__half)1.0f ? (__half)1.0f : a));
}
inline __half __hadd_sat(__half a, __half b) { return __sirius_hsat(a + b); }
inline __half __hsub_sat(__half a, __half b) { return __sirius_hsat(a - b); }
inline __half __hmul_sat(__half a, __half b) { return __sirius_hsat(a * b); }
inline __half __hfma_sat(__half a, __half b, __half c) { return __sirius_hsat(__hfma(a, b, c)); }
inline __half __hfma_relu(__half a, __half b, __half c) {
  __half r = __hfma(a, b, c);
  return r < (__half)0.0f ? (__half)0.0f : r;
}
inline __half __hmax(__half a, __half b) { return (__half)fmaxf((float)a, (float)b); }
inline __half __hmin(__half a, __half b) { return (__half)fminf((float)a, (float)b); }
inline __half __hmax_nan(__half a, __half b) { return (a != a || b != b) ? (__half)NAN : __hmax(a, b); }
inline __half __hmin_nan(__half a, __half b) { return (a != a || b != b) ? (__half)NAN : __hmin(a, b); }
inline bool __heq(__half a, __half b) { return a == b; }
inline bool __hne(__half a, __half b) { return a != b && a == a && b == b; }
inline bool __hlt(__half a, __half b) { return a < b; }
inline bool __hle(__half a, __half b) { return a <= b; }
inline bool __hgt(__half a, __half b) { return a > b; }
inline bool __hge(__half a, __half b) { return a >= b; }
inline bool __hequ(__half a, __half b) { return !(a < b || a > b); }
inline bool __hneu(__half a, __half b) { return a != b; }
inline bool __hltu(__half a, __half b) { return !(a >= b); }
inline bool __hleu(__half a, __half b) { return !(a > b); }
inline bool __hgtu(__half a, __half b) { return !(a <= b); }
inline bool __hgeu(__half a, __half b) { return !(a < b); }
inline bool __hisnan(__half a) { return a != a; }
inline int __hisinf(__half a) {
  unsigned short b = ::__sirius::half_bits(a);
  return b == 0x7c00 ? 1 : (b == 0xfc00 ? -1 : 0);
}

#define SIRIUS_HALF_MATH(name, f) \
  inline __half name(__half a) { return (__half)f((float)a); }
SIRIUS_HALF_MATH(hexp, expf)
SIRIUS_HALF_MATH(hexp2, exp2f)
SIRIUS_HALF_MATH(hexp10, exp10f)
SIRIUS_HALF_MATH(hlog, logf)
SIRIUS_HALF_MATH(hlog2, log2f)
SIRIUS_HALF_MATH(hlog10, log10f)
SIRIUS_HALF_MATH(hsqrt, sqrtf)
SIRIUS_HALF_MATH(hsin, sinf)
SIRIUS_HALF_MATH(hcos, cosf)
SIRIUS_HALF_MATH(htanh, tanhf)
SIRIUS_HALF_MATH(htanh_approx, tanhf)
SIRIUS_HALF_MATH(hfloor, floorf)
SIRIUS_HALF_MATH(hceil, ceilf)
SIRIUS_HALF_MATH(htrunc, truncf)
SIRIUS_HALF_MATH(hrint, nearbyintf)
#undef SIRIUS_HALF_MATH
inline __half hrsqrt(__half a) { return (__half)(1.0f / sqrtf((float)a)); }
inline __half hrcp(__half a) { return (__half)(1.0f / (float)a); }

// --- __half2 ----------------------------------------------------------------------

inline __half2 make_half2(__half a, __half b) { return __half2(a, b); }
inline __half2 __halves2half2(__half a, __half b) { return __half2(a, b); }
inline __half2 __half2half2(__half a) { return __half2(a, a); }
inline __half2 __float2half2_rn(float f) { return __half2((__half)f, (__half)f); }
inline __half2 __floats2half2_rn(float a, float b) { return __half2((__half)a, (__half)b); }
inline __half2 __float22half2_rn(float2 f) { return __half2((__half)f.x, (__half)f.y); }
inline float2 __half22float2(__half2 h) { return make_float2((float)h.x, (float)h.y); }
inline __half __low2half(__half2 h) { return h.x; }
inline __half __high2half(__half2 h) { return h.y; }
inline float __low2float(__half2 h) { return (float)h.x; }
inline float __high2float(__half2 h) { return (float)h.y; }
inline __half2 __lows2half2(__half2 a, __half2 b) { return __half2(a.x, b.x); }
inline __half2 __highs2half2(__half2 a, __half2 b) { return __half2(a.y, b.y); }
inline __half2 __low2half2(__half2 a) { return __half2(a.x, a.x); }
inline __half2 __high2half2(__half2 a) { return __half2(a.y, a.y); }
inline __half2 __lowhigh2highlow(__half2 a) { return __half2(a.y, a.x); }

#define SIRIUS_HALF2_BIN(name, expr)                  \
  inline __half2 name(__half2 a, __half2 b) {         \
    return __half2(expr(a.x, b.x), expr(a.y, b.y));   \
  }
SIRIUS_HALF2_BIN(__hadd2, __hadd)
SIRIUS_HALF2_BIN(__hsub2, __hsub)
SIRIUS_HALF2_BIN(__hmul2, __hmul)
SIRIUS_HALF2_BIN(__h2div, __hdiv)
SIRIUS_HALF2_BIN(__hmax2, __hmax)
SIRIUS_HALF2_BIN(__hmin2, __hmin)
SIRIUS_HALF2_BIN(__hadd2_sat, __hadd_sat)
SIRIUS_HALF2_BIN(__hsub2_sat, __hsub_sat)
SIRIUS_HALF2_BIN(__hmul2_sat, __hmul_sat)
#undef SIRIUS_HALF2_BIN
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) {
  return __half2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y));
}
inline __half2 __hfma2_relu(__half2 a, __half2 b, __half2 c) {
  return __half2(__hfma_relu(a.x, b.x, c.x), __hfma_relu(a.y, b.y, c.y));
}
inline __half2 __hneg2(__half2 a) { return __half2(-a.x, -a.y); }
inline __half2 __habs2(__half2 a) { return __half2(__habs(a.x), __habs(a.y)); }
#define SIRIUS_HALF2_CMP(name, f)                                               \
  inline __half2 name(__half2 a, __half2 b) {                                   \
    return __half2(f(a.x, b.x) ? (__half)1.0f : (__half)0.0f,                   \
                   f(a.y, b.y) ? (__half)1.0f : (__half)0.0f);                  \
  }
SIRIUS_HALF2_CMP(__heq2, __heq)
SIRIUS_HALF2_CMP(__hne2, __hne)
SIRIUS_HALF2_CMP(__hlt2, __hlt)
SIRIUS_HALF2_CMP(__hle2, __hle)
SIRIUS_HALF2_CMP(__hgt2, __hgt)
SIRIUS_HALF2_CMP(__hge2, __hge)
#undef SIRIUS_HALF2_CMP
inline bool __hbeq2(__half2 a, __half2 b) { return a.x == b.x && a.y == b.y; }
inline bool __hblt2(__half2 a, __half2 b) { return a.x < b.x && a.y < b.y; }
inline bool __hbgt2(__half2 a, __half2 b) { return a.x > b.x && a.y > b.y; }
#define SIRIUS_HALF2_MATH(name, f) \
  inline __half2 name(__half2 a) { return __half2(f(a.x), f(a.y)); }
SIRIUS_HALF2_MATH(h2exp, hexp)
SIRIUS_HALF2_MATH(h2exp2, hexp2)
SIRIUS_HALF2_MATH(h2log, hlog)
SIRIUS_HALF2_MATH(h2log2, hlog2)
SIRIUS_HALF2_MATH(h2sqrt, hsqrt)
SIRIUS_HALF2_MATH(h2rsqrt, hrsqrt)
SIRIUS_HALF2_MATH(h2rcp, hrcp)
SIRIUS_HALF2_MATH(h2sin, hsin)
SIRIUS_HALF2_MATH(h2cos, hcos)
SIRIUS_HALF2_MATH(h2floor, hfloor)
SIRIUS_HALF2_MATH(h2ceil, hceil)
SIRIUS_HALF2_MATH(h2trunc, htrunc)
SIRIUS_HALF2_MATH(h2rint, hrint)
#undef SIRIUS_HALF2_MATH

inline __half2 operator+(const __half2& a, const __half2& b) { return __hadd2(a, b); }
inline __half2 operator-(const __half2& a, const __half2& b) { return __hsub2(a, b); }
inline __half2 operator*(const __half2& a, const __half2& b) { return __hmul2(a, b); }
inline __half2 operator/(const __half2& a, const __half2& b) { return __h2div(a, b); }
inline __half2 operator-(const __half2& a) { return __hneg2(a); }
inline __half2 operator+(const __half2& a) { return a; }
inline __half2& operator+=(__half2& a, const __half2& b) { return a = a + b; }
inline __half2& operator-=(__half2& a, const __half2& b) { return a = a - b; }
inline __half2& operator*=(__half2& a, const __half2& b) { return a = a * b; }
inline __half2& operator/=(__half2& a, const __half2& b) { return a = a / b; }
inline bool operator==(const __half2& a, const __half2& b) { return __hbeq2(a, b); }
inline bool operator!=(const __half2& a, const __half2& b) { return !(a.x == b.x && a.y == b.y); }

// --- atomics ------------------------------------------------------------------------

inline __half atomicAdd(__half* p, __half v) {
  return __sirius_atomic_fp<__half, unsigned short>(p, [v](__half o) { return (__half)(o + v); });
}
inline __half2 atomicAdd(__half2* p, __half2 v) {
  return __sirius_atomic_fp<__half2, unsigned>(p, [v](__half2 o) { return o + v; });
}

#define CUDART_INF_FP16 ::__sirius::half_from_bits(0x7c00)
#define CUDART_NAN_FP16 ::__sirius::half_from_bits(0x7fff)
#define CUDART_MIN_DENORM_FP16 ::__sirius::half_from_bits(0x0001)
#define CUDART_MAX_NORMAL_FP16 ::__sirius::half_from_bits(0x7bff)
#define CUDART_NEG_ZERO_FP16 ::__sirius::half_from_bits(0x8000)
#define CUDART_ZERO_FP16 ::__sirius::half_from_bits(0x0000)
#define CUDART_ONE_FP16 ::__sirius::half_from_bits(0x3c00)
