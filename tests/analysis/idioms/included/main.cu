// Kernels and the helper that launches them in a .cu file the main file includes.
#include <cstdio>
#include "kernels.cu"
#define N 4096
int main() {
  float* d; cudaMalloc(&d, N * sizeof(float));
  float h[N]; for (int i = 0; i < N; ++i) h[i] = (float)i;
  cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
  forward(d, N);
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  printf("%f\n", h[5]);
  return 0;
}
