// Block-level patterns whose barriers matter: a max reduction, a sum
// reduction, a stencil reading the left neighbour, and a dynamic-shared-memory
// reversal. -DDROP=<kernel> removes the barrier that kernel needs:
//   1 max tree step, 2 sum tree step, 3 stencil, 4 reversal.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#ifndef DROP
#define DROP 0
#endif
#define THREADS 256
#define BLOCKS 6

__global__ void block_max(const float* x, float* out) {
  __shared__ float s[THREADS];
  int t = threadIdx.x;
  s[t] = x[blockIdx.x * THREADS + t];
  __syncthreads();
  for (int w = THREADS / 2; w > 0; w >>= 1) {
    if (t < w) s[t] = fmaxf(s[t], s[t + w]);
#if DROP != 1
    __syncthreads();
#endif
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

__global__ void block_sum(const float* x, float* out) {
  __shared__ float s[THREADS];
  int t = threadIdx.x;
  s[t] = x[blockIdx.x * THREADS + t];
  __syncthreads();
  for (int w = THREADS / 2; w > 0; w >>= 1) {
    if (t < w) s[t] += s[t + w];
#if DROP != 2
    __syncthreads();
#endif
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

// y[i] = x[i] + x[i - 1] within the block (x[-1] taken as 0).
__global__ void stencil(const float* x, float* y) {
  __shared__ float s[THREADS];
  int t = threadIdx.x;
  s[t] = x[blockIdx.x * THREADS + t];
#if DROP != 3
  __syncthreads();
#endif
  y[blockIdx.x * THREADS + t] = s[t] + (t > 0 ? s[t - 1] : 0.0f);
}

// y = x reversed within each block, through dynamic shared memory.
__global__ void reverse(const float* x, float* y) {
  extern __shared__ float s[];
  int t = threadIdx.x;
  s[t] = x[blockIdx.x * blockDim.x + t];
#if DROP != 4
  __syncthreads();
#endif
  y[blockIdx.x * blockDim.x + t] = s[blockDim.x - 1 - t];
}

int main() {
  const int n = THREADS * BLOCKS;
  float* x = (float*)malloc(sizeof(float) * n);
  for (int i = 0; i < n; ++i) x[i] = (float)((i * 37) % 101) - 50.0f;
  float *dx, *dm, *ds, *dy, *dr;
  cudaMalloc(&dx, sizeof(float) * n);
  cudaMalloc(&dm, sizeof(float) * BLOCKS);
  cudaMalloc(&ds, sizeof(float) * BLOCKS);
  cudaMalloc(&dy, sizeof(float) * n);
  cudaMalloc(&dr, sizeof(float) * n);
  cudaMemcpy(dx, x, sizeof(float) * n, cudaMemcpyHostToDevice);
  block_max<<<BLOCKS, THREADS>>>(dx, dm);
  block_sum<<<BLOCKS, THREADS>>>(dx, ds);
  stencil<<<BLOCKS, THREADS>>>(dx, dy);
  reverse<<<BLOCKS, THREADS, THREADS * sizeof(float)>>>(dx, dr);
  float m[BLOCKS], s[BLOCKS];
  float* y = (float*)malloc(sizeof(float) * n);
  float* r = (float*)malloc(sizeof(float) * n);
  cudaMemcpy(m, dm, sizeof m, cudaMemcpyDeviceToHost);
  cudaMemcpy(s, ds, sizeof s, cudaMemcpyDeviceToHost);
  cudaMemcpy(y, dy, sizeof(float) * n, cudaMemcpyDeviceToHost);
  cudaMemcpy(r, dr, sizeof(float) * n, cudaMemcpyDeviceToHost);
  int bad_max = 0, bad_sum = 0, bad_stencil = 0, bad_reverse = 0;
  for (int b = 0; b < BLOCKS; ++b) {
    float wm = x[b * THREADS], ws = 0.0f;
    for (int t = 0; t < THREADS; ++t) {
      float v = x[b * THREADS + t];
      wm = v > wm ? v : wm;
      ws += v;  // integers: exact in any order
      float want = v + (t > 0 ? x[b * THREADS + t - 1] : 0.0f);
      if (y[b * THREADS + t] != want) ++bad_stencil;
      if (r[b * THREADS + t] != x[b * THREADS + THREADS - 1 - t]) ++bad_reverse;
    }
    if (m[b] != wm) ++bad_max;
    if (s[b] != ws) ++bad_sum;
  }
  printf("max: %s\nsum: %s\nstencil: %s\nreverse: %s\n", bad_max ? "MISMATCH" : "OK",
         bad_sum ? "MISMATCH" : "OK", bad_stencil ? "MISMATCH" : "OK",
         bad_reverse ? "MISMATCH" : "OK");
  return (bad_max || bad_sum || bad_stencil || bad_reverse) ? 1 : 0;
}
