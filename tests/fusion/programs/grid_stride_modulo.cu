// Grid-stride kernels (their stride from gridDim.x) in a time loop, each reading an element
// of another block through a modulo: the blind red team of whole-loop launches. The analysis
// ran for minutes on one question of isl's (whether a dependence stays within iterations).
#include <cstdio>
#include <cuda_runtime.h>
#define N 5000
#define STEPS 4
__global__ void gs_a(const float* in, float* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = in[(i + 1) % n] * 0.5f + (float)(gridDim.x) * 0.001f;
}
__global__ void gs_b(const float* in, float* out, int n) {
  int stride = gridDim.x * blockDim.x;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = in[(i + 777) % n] + in[i] * 0.25f;
}
int main() {
  static float h[N];
  for (int i = 0; i < N; i++) h[i] = (i % 17) * 0.3f;
  float *a, *b; cudaMalloc(&a, N*4); cudaMalloc(&b, N*4);
  cudaMemcpy(a, h, N*4, cudaMemcpyHostToDevice);
  for (int t = 0; t < STEPS; t++) {
    gs_a<<<7, 64>>>(a, b, N);
    gs_b<<<5, 128>>>(b, a, N);
  }
  cudaMemcpy(h, a, N*4, cudaMemcpyDeviceToHost);
  double c = 0; for (int i = 0; i < N; i++) c += h[i]*(i%7+1);
  printf("checksum %.6f\n", c);
  return 0;
}
