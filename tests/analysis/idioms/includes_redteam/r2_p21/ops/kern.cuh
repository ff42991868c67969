#pragma once
#include "log.h"
__global__ void scale(float *y, const float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}
__global__ void addb(float *z, const float *y, float b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = y[i] + b;
}
static void run_pair(float *z, float *y, const float *x, int n) {
  trace("run_pair begin");
  scale<<<(n + 255) / 256, 256>>>(y, x, 2.0f, n);
  addb<<<(n + 255) / 256, 256>>>(z, y, 1.0f, n);
  trace("run_pair end");
}
