// Two independent launches a horizontal fusion puts side by side: a 16-thread warp
// reduction per row (blocks of half a warp, the mask from __activemask() as TVM writes
// it) and an elementwise kernel over 128-thread blocks.
#include <cstdio>
#include <cuda_runtime.h>

#define ROWS 40
#define WIDTH 16
#define N 1024

__global__ void row_sums(float* __restrict__ sums, const float* __restrict__ m) {
  float v = m[blockIdx.x * WIDTH + threadIdx.x];
  unsigned mask = __activemask();
  for (int offset = WIDTH / 2; offset > 0; offset >>= 1) v += __shfl_xor_sync(mask, v, offset, WIDTH);
  if (threadIdx.x == 3) sums[blockIdx.x] = v;
}

__global__ void scale(float* __restrict__ y, const float* __restrict__ x) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = 3.0f * x[i] - 1.0f;
}

int main() {
  float *m, *sums, *x, *y;
  cudaMalloc(&m, ROWS * WIDTH * sizeof(float));
  cudaMalloc(&sums, ROWS * sizeof(float));
  cudaMalloc(&x, N * sizeof(float));
  cudaMalloc(&y, N * sizeof(float));
  static float hm[ROWS * WIDTH], hx[N];
  for (int i = 0; i < ROWS * WIDTH; ++i) hm[i] = (i % 17) * 0.125f;
  for (int i = 0; i < N; ++i) hx[i] = i * 0.5f;
  cudaMemcpy(m, hm, sizeof hm, cudaMemcpyHostToDevice);
  cudaMemcpy(x, hx, sizeof hx, cudaMemcpyHostToDevice);
  row_sums<<<ROWS, WIDTH>>>(sums, m);
  scale<<<N / 128, 128>>>(y, x);
  static float hs[ROWS], hy[N];
  cudaMemcpy(hs, sums, sizeof hs, cudaMemcpyDeviceToHost);
  cudaMemcpy(hy, y, sizeof hy, cudaMemcpyDeviceToHost);
  double total = 0;
  for (int i = 0; i < ROWS; ++i) total += hs[i] * (i + 1);
  for (int i = 0; i < N; ++i) total += hy[i];
  printf("%.3f\n", total);
  return 0;
}
