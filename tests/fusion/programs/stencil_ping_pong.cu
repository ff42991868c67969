// A heat-equation time loop written the common way: one launch per step reads one
// array and writes the other, and the host swaps the two pointers after each step.
// Step t + 1 reads the neighbours step t wrote: a dependence across the whole grid,
// carried from one iteration of the host loop to the next.
#include <cstdio>
#include <cuda_runtime.h>

#define N 2048
#define STEPS 16
#define THREADS 128

__global__ void step(float* __restrict__ next, const float* __restrict__ cur) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float left = i > 0 ? cur[i - 1] : cur[i], right = i < N - 1 ? cur[i + 1] : cur[i];
  next[i] = 0.25f * left + 0.5f * cur[i] + 0.25f * right;
}

int main() {
  float *a, *b;
  cudaMalloc(&a, N * sizeof(float));
  cudaMalloc(&b, N * sizeof(float));
  static float h[N];
  for (int i = 0; i < N; ++i) h[i] = (i % 61) * 0.25f;
  cudaMemcpy(a, h, sizeof h, cudaMemcpyHostToDevice);
  for (int t = 0; t < STEPS; ++t) {
    step<<<N / THREADS, THREADS>>>(b, a);
    float* spare = a;
    a = b;
    b = spare;
  }
  cudaMemcpy(h, a, sizeof h, cudaMemcpyDeviceToHost);
  double s = 0;
  for (int i = 0; i < N; ++i) s += h[i] * (1 + i % 7);
  printf("%.6f\n", s);
  return 0;
}
