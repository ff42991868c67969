#pragma once
#include <cstdio>
#include <cstdlib>
#ifndef BS
#define BS 256
#endif
__global__ void scale(float *y, const float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}
__global__ void addb(float *z, const float *y, float b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = y[i] + b;
}
// benchmark driver: run the pipeline once, report, and exit the process
[[noreturn]] static void run_report_exit(float *z, float *y, const float *x, float *hz, int n) {
  scale<<<(n + BS - 1) / BS, BS>>>(y, x, 2.0f, n);
  addb<<<(n + BS - 1) / BS, BS>>>(z, y, 1.0f, n);
  cudaMemcpy(hz, z, n * sizeof(float), cudaMemcpyDeviceToHost);
  double s = 0; for (int i = 0; i < n; ++i) s += hz[i] * (i % 7 + 1);
  printf("checksum %.6f\n", s);
  exit(0);
}
