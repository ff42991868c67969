#include <cstdio>
#include <cuda_runtime.h>
#include "kern.cuh"
int main() {
  const int n = 4096;
  float *hx = new float[n], *hz = new float[n];
  for (int i = 0; i < n; ++i) hx[i] = (float)(i % 17) * 0.5f;
  float *x, *y, *z;
  cudaMalloc(&x, n * sizeof(float)); cudaMalloc(&y, n * sizeof(float)); cudaMalloc(&z, n * sizeof(float));
  cudaMemcpy(x, hx, n * sizeof(float), cudaMemcpyHostToDevice);
  run_report_exit(z, y, x, hz, n);
}
