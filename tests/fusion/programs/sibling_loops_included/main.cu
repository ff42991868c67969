// Sibling loops in a program whose kernels, and a helper launching them, are in a header it
// includes: fragments of the header's kernels make every #line of the emitted program name its file.
#include <cstdio>
#include <cuda_runtime.h>
#include "kernels.cuh"
int main() {
  const int n = 1000, steps = 4;
  float *x, *y, *z;
  size_t bytes = steps * n * sizeof(float);
  cudaMalloc(&x, bytes); cudaMalloc(&y, bytes); cudaMalloc(&z, bytes);
  float* h = (float*)malloc(bytes);
  for (int i = 0; i < steps * n; ++i) h[i] = i % 13;
  cudaMemcpy(x, h, bytes, cudaMemcpyHostToDevice);
  for (int s = 0; s < steps; ++s) {
    produce<<<(n + 255) / 256, 256>>>(y, x, n, s);
  }
  for (int s = 0; s < steps; ++s) {
    consume<<<(n + 255) / 256, 256>>>(z, y, n, s);
  }
  run_both(y, z, x, n, steps);
  cudaMemcpy(h, z, bytes, cudaMemcpyDeviceToHost);
  double sum = 0; for (int i = 0; i < steps * n; ++i) sum += h[i];
  printf("%f\n", sum);
  return 0;
}
