// Sirius CPU backend: __nv_bfloat16 over the compiler's __bf16 (8 exponent
// bits, 7 mantissa bits). As for __half, every operation rounds to bfloat16
// (programs are built with -fexcess-precision=16); the float -> bfloat16
// conversions the compiler calls are in the runtime (round to nearest even).
#pragma once
#pragma GCC system_header

#include "sirius_cpu.h"

typedef __bf16 __nv_bfloat16;
typedef __nv_bfloat16 nv_bfloat16;

struct __nv_bfloat16_raw {
  unsigned short x;
  __nv_bfloat16_raw() = default;
  constexpr __nv_bfloat16_raw(unsigned short bits) : x(bits) {}
  __nv_bfloat16_raw(__nv_bfloat16 h) { std::memcpy(&x, &h, 2); }
  operator __nv_bfloat16() const {
    __nv_bfloat16 h;
    std::memcpy(&h, &x, 2);
    return h;
  }
};

struct __attribute__((aligned(4))) __nv_bfloat162 {
  __nv_bfloat16 x, y;
  __nv_bfloat162() = default;
  constexpr __nv_bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) : x(a), y(b) {}
};
typedef __nv_bfloat162 nv_bfloat162;

namespace __sirius {
template <> struct ElemCodeOf<__nv_bfloat162> { static constexpr int value = kBF16; };
inline unsigned short bf16_bits(__nv_bfloat16 h) {
  unsigned short b;
  std::memcpy(&b, &h, 2);
  return b;
}
inline __nv_bfloat16 bf16_from_bits(unsigned short b) {
  __nv_bfloat16 h;
  std::memcpy(&h, &b, 2);
  return h;
}
}  // namespace __sirius

inline __nv_bfloat16 __float2bfloat16(float f) { return (__nv_bfloat16)f; }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return (__nv_bfloat16)f; }
inline __nv_bfloat16 __float2bfloat16_rz(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (__nv_bfloat16)f;
  return ::__sirius::bf16_from_bits((unsigned short)(u >> 16));
}
inline float __bfloat162float(__nv_bfloat16 h) { return (float)h; }
inline __nv_bfloat16 __double2bfloat16(double d) { return (__nv_bfloat16)d; }
inline __nv_bfloat16 __int2bfloat16_rn(int i) { return (__nv_bfloat16)(float)i; }
inline int __bfloat162int_rn(__nv_bfloat16 h) { return (int)nearbyintf((float)h); }
inline int __bfloat162int_rz(__nv_bfloat16 h) { return (int)(float)h; }
inline short __bfloat16_as_short(__nv_bfloat16 h) { return (short)::__sirius::bf16_bits(h); }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return ::__sirius::bf16_bits(h); }
inline __nv_bfloat16 __short_as_bfloat16(short s) {
  return ::__sirius::bf16_from_bits((unsigned short)s);
}
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short s) {
  return ::__sirius::bf16_from_bits(s);
}

inline __nv_bfloat16 __hadd(__nv_bfloat16 a, __nv_bfloat16 b) { return a + b; }
inline __nv_bfloat16 __hsub(__nv_bfloat16 a, __nv_bfloat16 b) { return a - b; }
inline __nv_bfloat16 __hmul(__nv_bfloat16 a, __nv_bfloat16 b) { return a * b; }
inline __nv_bfloat16 __hdiv(__nv_bfloat16 a, __nv_bfloat16 b) { return a / b; }
inline __nv_bfloat16 __hneg(__nv_bfloat16 a) { return -a; }
inline __nv_bfloat16 __habs(__nv_bfloat16 a) {
  return ::__sirius::bf16_from_bits((unsigned short)(::__sirius::bf16_bits(a) & 0x7fff));
}
inline __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) {
  return (__nv_bfloat16)fma((double)a, (double)b, (double)c);
}
inline __nv_bfloat16 __hmax(__nv_bfloat16 a, __nv_bfloat16 b) {
  return (__nv_bfloat16)fmaxf((float)a, (float)b);
}
inline __nv_bfloat16 __hmin(__nv_bfloat16 a, __nv_bfloat16 b) {
  return (__nv_bfloat16)fminf((float)a, (float)b);
}
inline bool __heq(__nv_bfloat16 a, __nv_bfloat16 b) { return a == b; }
inline bool __hne(__nv_bfloat16 a, __nv_bfloat16 b) { return a != b && a == a && b == b; }
inline bool __hlt(__nv_bfloat16 a, __nv_bfloat16 b) { return a < b; }
inline bool __hle(__nv_bfloat16 a, __nv_bfloat16 b) { return a <= b; }
inline bool __hgt(__nv_bfloat16 a, __nv_bfloat16 b) { return a > b; }
inline bool __hge(__nv_bfloat16 a, __nv_bfloat16 b) { return a >= b; }
inline bool __hisnan(__nv_bfloat16 a) { return a != a; }

#define SIRIUS_BF16_MATH(name, f) \
  inline __nv_bfloat16 name(__nv_bfloat16 a) { return (__nv_bfloat16)f((float)a); }
SIRIUS_BF16_MATH(hexp, expf)
SIRIUS_BF16_MATH(hexp2, exp2f)
SIRIUS_BF16_MATH(hexp10, exp10f)
SIRIUS_BF16_MATH(hlog, logf)
SIRIUS_BF16_MATH(hlog2, log2f)
SIRIUS_BF16_MATH(hlog10, log10f)
SIRIUS_BF16_MATH(hsqrt, sqrtf)
SIRIUS_BF16_MATH(hsin, sinf)
SIRIUS_BF16_MATH(hcos, cosf)
SIRIUS_BF16_MATH(htanh, tanhf)
SIRIUS_BF16_MATH(hfloor, floorf)
SIRIUS_BF16_MATH(hceil, ceilf)
SIRIUS_BF16_MATH(htrunc, truncf)
SIRIUS_BF16_MATH(hrint, nearbyintf)
#undef SIRIUS_BF16_MATH
inline __nv_bfloat16 hrsqrt(__nv_bfloat16 a) { return (__nv_bfloat16)(1.0f / sqrtf((float)a)); }
inline __nv_bfloat16 hrcp(__nv_bfloat16 a) { return (__nv_bfloat16)(1.0f / (float)a); }

inline __nv_bfloat162 make_bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __nv_bfloat162(a, b);
}
inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __nv_bfloat162(a, b);
}
inline __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16 a) { return __nv_bfloat162(a, a); }
inline __nv_bfloat162 __float2bfloat162_rn(float f) {
  return __nv_bfloat162((__nv_bfloat16)f, (__nv_bfloat16)f);
}
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) {
  return __nv_bfloat162((__nv_bfloat16)a, (__nv_bfloat16)b);
}
inline __nv_bfloat162 __float22bfloat162_rn(float2 f) {
  return __nv_bfloat162((__nv_bfloat16)f.x, (__nv_bfloat16)f.y);
}
inline float2 __bfloat1622float2(__nv_bfloat162 h) { return make_float2((float)h.x, (float)h.y); }
inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 h) { return h.x; }
inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 h) { return h.y; }
inline float __low2float(__nv_bfloat162 h) { return (float)h.x; }
inline float __high2float(__nv_bfloat162 h) { return (float)h.y; }
inline __nv_bfloat162 __hadd2(__nv_bfloat162 a, __nv_bfloat162 b) {
  return __nv_bfloat162(a.x + b.x, a.y + b.y);
}
inline __nv_bfloat162 __hsub2(__nv_bfloat162 a, __nv_bfloat162 b) {
  return __nv_bfloat162(a.x - b.x, a.y - b.y);
}
inline __nv_bfloat162 __hmul2(__nv_bfloat162 a, __nv_bfloat162 b) {
  return __nv_bfloat162(a.x * b.x, a.y * b.y);
}
inline __nv_bfloat162 __h2div(__nv_bfloat162 a, __nv_bfloat162 b) {
  return __nv_bfloat162(a.x / b.x, a.y / b.y);
}
inline __nv_bfloat162 __hfma2(__nv_bfloat162 a, __nv_bfloat162 b, __nv_bfloat162 c) {
  return __nv_bfloat162(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y));
}
inline __nv_bfloat162 __hmax2(__nv_bfloat162 a, __nv_bfloat162 b) {
  return __nv_bfloat162(__hmax(a.x, b.x), __hmax(a.y, b.y));
}
inline __nv_bfloat162 __hmin2(__nv_bfloat162 a, __nv_bfloat162 b) {
  return __nv_bfloat162(__hmin(a.x, b.x), __hmin(a.y, b.y));
}
inline __nv_bfloat162 operator+(const __nv_bfloat162& a, const __nv_bfloat162& b) {
  return __hadd2(a, b);
}
inline __nv_bfloat162 operator-(const __nv_bfloat162& a, const __nv_bfloat162& b) {
  return __hsub2(a, b);
}
inline __nv_bfloat162 operator*(const __nv_bfloat162& a, const __nv_bfloat162& b) {
  return __hmul2(a, b);
}
inline __nv_bfloat162 operator/(const __nv_bfloat162& a, const __nv_bfloat162& b) {
  return __h2div(a, b);
}
inline __nv_bfloat162& operator+=(__nv_bfloat162& a, const __nv_bfloat162& b) { return a = a + b; }
inline __nv_bfloat162& operator*=(__nv_bfloat162& a, const __nv_bfloat162& b) { return a = a * b; }

inline __nv_bfloat16 atomicAdd(__nv_bfloat16* p, __nv_bfloat16 v) {
  return __sirius_atomic_fp<__nv_bfloat16, unsigned short>(
      p, [v](__nv_bfloat16 o) { return (__nv_bfloat16)(o + v); });
}
inline __nv_bfloat162 atomicAdd(__nv_bfloat162* p, __nv_bfloat162 v) {
  return __sirius_atomic_fp<__nv_bfloat162, unsigned>(p, [v](__nv_bfloat162 o) { return o + v; });
}

#define CUDART_INF_BF16 ::__sirius::bf16_from_bits(0x7f80)
#define CUDART_NAN_BF16 ::__sirius::bf16_from_bits(0x7fff)
#define CUDART_MAX_NORMAL_BF16 ::__sirius::bf16_from_bits(0x7f7f)
#define CUDART_ZERO_BF16 ::__sirius::bf16_from_bits(0x0000)
#define CUDART_ONE_BF16 ::__sirius::bf16_from_bits(0x3f80)
