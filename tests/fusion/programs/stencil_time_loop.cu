// Jacobi relaxation on a 1-D rod: a time loop of two kernels (relax into the scratch
// array, copy back with a source term), as a hand-written solver does it.
#include <cstdio>
#include <cuda_runtime.h>

#define N 4096
#define STEPS 40
#define THREADS 128

__global__ void relax(float* __restrict__ next, const float* __restrict__ u) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0 || i == N - 1) { next[i] = u[i]; return; }
  next[i] = 0.5f * (u[i - 1] + u[i + 1]);
}

__global__ void commit(float* __restrict__ u, const float* __restrict__ next, const float* __restrict__ source) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  u[i] = next[i] + 0.01f * source[i];
}

int main() {
  float *u, *next, *source;
  cudaMalloc(&u, N * sizeof(float));
  cudaMalloc(&next, N * sizeof(float));
  cudaMalloc(&source, N * sizeof(float));
  static float h[N];
  for (int i = 0; i < N; ++i) h[i] = (i % 97) * 0.01f;
  cudaMemcpy(u, h, sizeof h, cudaMemcpyHostToDevice);
  for (int i = 0; i < N; ++i) h[i] = (i % 13 == 0) ? 1.0f : 0.0f;
  cudaMemcpy(source, h, sizeof h, cudaMemcpyHostToDevice);
  for (int t = 0; t < STEPS; ++t) {
    relax<<<N / THREADS, THREADS>>>(next, u);
    commit<<<N / THREADS, THREADS>>>(u, next, source);
  }
  cudaMemcpy(h, u, sizeof h, cudaMemcpyDeviceToHost);
  double s = 0;
  for (int i = 0; i < N; ++i) s += h[i] * (1 + i % 7);
  printf("%.6f\n", s);
  return 0;
}
