// Kernels declared in a namespace before the launching helper, defined after main: the fused
// kernel would be declared in one scope and defined in another; the check undoes it.
#include <cstdio>
#include <cuda_runtime.h>
namespace ops {
__global__ void inc(float* d, int n);
__global__ void dbl(float* d, int n);
}
static void forward(float* d, int n) {
  ops::inc<<<n / 256, 256>>>(d, n);
  ops::dbl<<<n / 256, 256>>>(d, n);
}
int main() {
  float h[1024];
  for (int i = 0; i < 1024; ++i) h[i] = (float)(i % 13);
  float* d; cudaMalloc(&d, sizeof h);
  cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
  forward(d, 1024);
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  printf("%f %f\n", h[5], h[1000]);
  return 0;
}
namespace ops {
__global__ void inc(float* d, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) d[i] += 1.0f; }
__global__ void dbl(float* d, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) d[i] *= 2.0f; }
}
