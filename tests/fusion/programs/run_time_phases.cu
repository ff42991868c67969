// Launches whose grids the host computes at run time, as phases of one cooperative launch
// (--cooperative): the sizes n and m come from the command line; each phase's loop over
// virtual blocks counts its blocks from the grids the host passes.
//   scale (n, blocks of 256) and bias (m, blocks of 64): independent, side by side;
//   neighbour reads x[i + 1], which scale wrote in another block: a grid barrier before it;
//   gather reads y at (7i) mod (n - 1): another barrier.
// Then an elimination whose grid shrinks with the pivot k (M constant): each step scales
// column k below the pivot, then updates the trailing block in a 2-D grid of
// ((M - k - 1 + 31) / 32, M - k - 1) blocks, which reads the column just scaled: one
// cooperative launch of two phases per step; with --persistent, the whole loop in one (the
// kernel computes each step's grid).
//
// Usage: run_time_phases [n [m]], defaults 3000, 700; n >= 2, m >= 1.

#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define M 48

__global__ void scale(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}

__global__ void neighbour(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i + 1 < n) y[i] = x[i + 1] - x[i];
}

__global__ void bias(float* z, int m) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m) z[i] += 1.0f;
}

__global__ void gather(const float* y, float* z, int m, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m) z[i] += y[(i * 7) % (n - 1)];
}

__global__ void scale_column(float* a, int k) {
  int i = k + 1 + blockIdx.x * blockDim.x + threadIdx.x;
  if (i < M) a[i * M + k] /= a[k * M + k];
}

__global__ void update(float* a, int k) {
  int i = k + 1 + blockIdx.y;
  int j = k + 1 + blockIdx.x * blockDim.x + threadIdx.x;
  if (i < M && j < M) a[i * M + j] -= a[i * M + k] * a[k * M + j];
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 3000;
  int m = argc > 2 ? atoi(argv[2]) : 700;
  if (n < 2 || m < 1) {
    fprintf(stderr, "usage: %s [n [m]] with n >= 2, m >= 1\n", argv[0]);
    return 2;
  }
  float *x, *y, *z, *a;
  cudaMalloc(&x, sizeof(float) * n);
  cudaMalloc(&y, sizeof(float) * n);
  cudaMalloc(&z, sizeof(float) * m);
  cudaMalloc(&a, sizeof(float) * M * M);
  float* h = (float*)malloc(sizeof(float) * (n > M * M ? n : M * M));
  for (int i = 0; i < n; ++i) h[i] = (float)(i % 13) - 6.0f;
  cudaMemcpy(x, h, sizeof(float) * n, cudaMemcpyHostToDevice);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < M; ++j) h[i * M + j] = i == j ? 8.0f + i * 0.1f : ((i * 7 + j * 3) % 11) * 0.05f;
  cudaMemcpy(a, h, sizeof(float) * M * M, cudaMemcpyHostToDevice);
  cudaMemset(y, 0, sizeof(float) * n);
  cudaMemset(z, 0, sizeof(float) * m);

  scale<<<(n + 255) / 256, 256>>>(x, n);
  neighbour<<<(n + 127) / 128, 128>>>(x, y, n);
  bias<<<(m + 63) / 64, 64>>>(z, m);
  gather<<<(m + 255) / 256, 256>>>(y, z, m, n);
  for (int k = 0; k < M - 1; k++) {
    scale_column<<<(M - k - 1 + 31) / 32, 32>>>(a, k);
    update<<<dim3((M - k - 1 + 31) / 32, M - k - 1), 32>>>(a, k);
  }
  cudaDeviceSynchronize();

  float* o = (float*)malloc(sizeof(float) * (2 * n + m + M * M));
  cudaMemcpy(o, x, sizeof(float) * n, cudaMemcpyDeviceToHost);
  cudaMemcpy(o + n, y, sizeof(float) * n, cudaMemcpyDeviceToHost);
  cudaMemcpy(o + 2 * n, z, sizeof(float) * m, cudaMemcpyDeviceToHost);
  cudaMemcpy(o + 2 * n + m, a, sizeof(float) * M * M, cudaMemcpyDeviceToHost);
  double s = 0;
  for (int i = 0; i < 2 * n + m + M * M; ++i) s += o[i] * (double)(i % 5 + 1);
  printf("checksum %.4f\n", s);
  return 0;
}
