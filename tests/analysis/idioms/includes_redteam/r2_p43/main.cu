#include <cstdio>
#include <cuda_runtime.h>
#include "kern.cuh"
int main() {
  const int n = 4096;
  float *hx = new float[n], *hz = new float[n];
  unsigned htags[32];
  for (int i = 0; i < n; ++i) hx[i] = (float)(i % 17) * 0.5f;
  float *x, *y, *z; unsigned *tags;
  cudaMalloc(&x, n * sizeof(float)); cudaMalloc(&y, n * sizeof(float)); cudaMalloc(&z, n * sizeof(float));
  cudaMalloc(&tags, 32 * sizeof(unsigned));
  cudaMemcpy(x, hx, n * sizeof(float), cudaMemcpyHostToDevice);
  run_pair(z, y, x, n, tags);
  cudaMemcpy(hz, z, n * sizeof(float), cudaMemcpyDeviceToHost);
  cudaMemcpy(htags, tags, sizeof htags, cudaMemcpyDeviceToHost);
  double s = 0; for (int i = 0; i < n; ++i) s += hz[i] * (i % 7 + 1);
  printf("checksum %.6f tags %08x %08x\n", s, htags[0], htags[16]);
  return 0;
}
