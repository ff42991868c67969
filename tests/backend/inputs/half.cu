// __half arithmetic where cuda_fp16.h is used: conversions, operators,
// intrinsics, half2, a shuffle of halves and atomicAdd on __half. The host
// computes the same with float arithmetic rounded to half after each step.
#include <cstdio>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define N 256

__global__ void half_ops(const __half* a, const __half* b, __half* out, __half* acc) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  __half x = a[i], y = b[i];
  __half s = x + y;                         // operators
  __half p = __hmul(x, y);                  // intrinsic
  __half f = __hfma(x, y, s);               // fused, one rounding
  __half m = __hmax(x, y);
  __half e = hexp(__hmul(x, __float2half(0.25f)));
  half2 v = __halves2half2(x, y);
  v = __hadd2(v, v);
  __half r = __high2half(v);                // 2 * y
  __half sh = __shfl_xor_sync(0xffffffffu, x, 1);
  out[5 * i + 0] = s;
  out[5 * i + 1] = p;
  out[5 * i + 2] = f;
  out[5 * i + 3] = __hgt(m, e) ? m : e;
  out[5 * i + 4] = r + sh;
  atomicAdd(acc, __float2half(0.5f));
}

static float round_half(float v) { return __half2float(__float2half(v)); }

int main() {
  __half ha[N], hb[N], hout[5 * N], hacc = __float2half(0.0f);
  for (int i = 0; i < N; ++i) {
    ha[i] = __float2half((float)(i % 17) * 0.37f - 3.0f);
    hb[i] = __float2half((float)(i % 13) * 0.61f - 2.5f);
  }
  __half *da, *db, *dout, *dacc;
  cudaMalloc(&da, sizeof ha);
  cudaMalloc(&db, sizeof hb);
  cudaMalloc(&dout, sizeof hout);
  cudaMalloc(&dacc, sizeof(__half));
  cudaMemcpy(da, ha, sizeof ha, cudaMemcpyHostToDevice);
  cudaMemcpy(db, hb, sizeof hb, cudaMemcpyHostToDevice);
  cudaMemcpy(dacc, &hacc, sizeof hacc, cudaMemcpyHostToDevice);
  half_ops<<<N / 64, 64>>>(da, db, dout, dacc);
  cudaMemcpy(hout, dout, sizeof hout, cudaMemcpyDeviceToHost);
  cudaMemcpy(&hacc, dacc, sizeof hacc, cudaMemcpyDeviceToHost);
  int bad = 0;
  for (int i = 0; i < N; ++i) {
    float x = __half2float(ha[i]), y = __half2float(hb[i]);
    float s = round_half(x + y);
    float p = round_half(x * y);
    float f = round_half((float)((double)x * y + s));
    float m = x > y ? x : y;
    float e = round_half(expf(round_half(x * 0.25f)));
    float sh = __half2float(ha[i ^ 1]);
    float want[5] = {s, p, f, m > e ? m : e, round_half(round_half(2 * y) + sh)};
    for (int k = 0; k < 5; ++k)
      if (__half2float(hout[5 * i + k]) != want[k]) {
        if (bad < 5)
          printf("element %d op %d: got %g want %g\n", i, k, __half2float(hout[5 * i + k]),
                 want[k]);
        ++bad;
      }
  }
  if (__half2float(hacc) != 0.5f * N) ++bad;
  printf("half: %s\n", bad ? "MISMATCH" : "OK");
  return bad ? 1 : 0;
}
