// Launches written in a host helper the compiler inlines into main, its kernels defined
// after it: rewritten in the helper, the fused kernel declared before it.
#include <cstdio>
#define N 4096
__global__ void scale(float* x, int n);
__global__ void shift(float* x, int n);
static void forward(float* d, int n) {
  scale<<<n / 256, 256>>>(d, n);
  shift<<<n / 256, 256>>>(d, n);
}
__global__ void scale(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }
__global__ void shift(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1.0f; }
int main() {
  float* d; cudaMalloc(&d, N * sizeof(float));
  float h[N]; for (int i = 0; i < N; ++i) h[i] = (float)i;
  cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
  for (int t = 0; t < 3; ++t) forward(d, N);
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  printf("%f\n", h[5]);
  return 0;
}
