// Launch arguments that are a parameter pack expansion.
#include <cstdio>
#include <cuda_runtime.h>
__global__ void inc(float* d, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) d[i] += 1.0f; }
__global__ void dbl(float* d, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) d[i] *= 2.0f; }
template <typename... A> static void twice(A... a) {
  inc<<<4, 256>>>(a...);
  dbl<<<4, 256>>>(a...);
}
int main() {
  float h[1024]; for (int i = 0; i < 1024; ++i) h[i] = (float)(i % 13);
  float* d; cudaMalloc(&d, sizeof h);
  cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
  twice(d, 1024);
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  printf("%f %f\n", h[5], h[1000]);
  return 0;
}
