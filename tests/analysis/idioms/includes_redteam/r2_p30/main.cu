#include <cstdio>
#include <cuda_runtime.h>
// configuration probes, written once here and used by the op headers
#define HAS_LOCAL(f) __has_include(#f)
#define DEPTH (__INCLUDE_LEVEL__ + 1)
#include "ops/kern.cuh"
int main() {
  const int n = 4096;
  float *hx = new float[n], *hz = new float[n];
  for (int i = 0; i < n; ++i) hx[i] = (float)(i % 17) * 0.5f;
  float *x, *y, *z;
  cudaMalloc(&x, n * sizeof(float)); cudaMalloc(&y, n * sizeof(float)); cudaMalloc(&z, n * sizeof(float));
  cudaMemcpy(x, hx, n * sizeof(float), cudaMemcpyHostToDevice);
  run_pair(z, y, x, n);
  cudaMemcpy(hz, z, n * sizeof(float), cudaMemcpyDeviceToHost);
  double s = 0; for (int i = 0; i < n; ++i) s += hz[i] * (i % 7 + 1);
  printf("scale %.1f depth %d checksum %.6f\n", kScale, DEPTH, s);
  return 0;
}
