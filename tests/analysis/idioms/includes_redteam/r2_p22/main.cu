#include <cstdio>
#include <cassert>
#include <cuda_runtime.h>
// verbose error checking: every checked call is logged with its place
#define CK(call) do { cudaError_t e_ = (call); printf("%-28s %s:%d\n", cudaGetErrorName(e_), __FILE__, __LINE__); } while (0)
#include "ops/kern.cuh"
int main() {
  const int n = 4096;
  float *hx = new float[n], *hz = new float[n];
  for (int i = 0; i < n; ++i) hx[i] = (float)(i % 17) * 0.5f;
  float *x, *y, *z;
  CK(cudaMalloc(&x, n * sizeof(float))); CK(cudaMalloc(&y, n * sizeof(float))); CK(cudaMalloc(&z, n * sizeof(float)));
  CK(cudaMemcpy(x, hx, n * sizeof(float), cudaMemcpyHostToDevice));
  run_pair(z, y, x, n);
  CK(cudaMemcpy(hz, z, n * sizeof(float), cudaMemcpyDeviceToHost));
  double s = 0; for (int i = 0; i < n; ++i) s += hz[i] * (i % 7 + 1);
  printf("checksum %.6f\n", s);
  return 0;
}
