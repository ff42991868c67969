// Which allocation relu6 writes is chosen when the program is built: optimized with
// INPLACE 0 (y apart from x: relu6 and diff fuse), rebuilt with -DINPLACE=1 relu6 writes
// x in place while diff reads it. The fused launch checks at run time that the
// allocations it took apart are apart, and runs the original launches otherwise.
#include <cstdio>
#include <cuda_runtime.h>

#ifndef INPLACE
#define INPLACE 0
#endif
#define N 1024
#define T 256

__global__ void relu6(const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = fminf(fmaxf(x[i], 0.0f), 6.0f);
}

__global__ void diff(const float* x, float* d) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  d[i] = x[(i + 1) % N] - x[i];
}

int main() {
  float h[N];
  for (int i = 0; i < N; ++i) h[i] = (float)((i * 37) % 19) - 6.0f;
  float *x, *y, *d;
  cudaMalloc(&x, N * sizeof(float));
  cudaMalloc(&y, N * sizeof(float));
  cudaMalloc(&d, N * sizeof(float));
  cudaMemcpy(x, h, N * sizeof(float), cudaMemcpyHostToDevice);
  float* out = INPLACE ? x : y;
  relu6<<<N / T, T>>>(x, out);
  diff<<<N / T, T>>>(x, d);
  cudaMemcpy(h, d, N * sizeof(float), cudaMemcpyDeviceToHost);
  double s = 0;
  for (int i = 0; i < N; ++i) s += h[i] * (1 + i % 3);
  cudaMemcpy(h, out, N * sizeof(float), cudaMemcpyDeviceToHost);
  for (int i = 0; i < N; ++i) s += h[i];
  printf("checksum %.4f\n", s);
  return 0;
}
