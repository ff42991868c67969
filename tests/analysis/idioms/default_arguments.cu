// A kernel launched with its declaration's default arguments.
#include <cstdio>
#include <cuda_runtime.h>
#define N 1024
#define T 256
__global__ void inc(float* d, int n = N, float by = 1.0f);
__global__ void dbl(float* d, int n = N);
int main() {
  float h[N]; for (int i = 0; i < N; ++i) h[i] = (float)(i % 13);
  float* d; cudaMalloc(&d, sizeof h);
  cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
  inc<<<N / T, T>>>(d);
  dbl<<<N / T, T>>>(d);
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  double s = 0; for (int i = 0; i < N; ++i) s += h[i] * (i % 7 + 1);
  printf("%f\n", s);
  return 0;
}
__global__ void inc(float* d, int n, float by) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) d[i] += by; }
__global__ void dbl(float* d, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) d[i] *= 2.0f; }
