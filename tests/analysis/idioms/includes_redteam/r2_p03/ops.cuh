#pragma once
#include <cuda_runtime.h>
namespace ops {
__global__ void scale_kernel(float *y, const float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}
__global__ void bias_kernel(float *z, const float *y, float b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = y[i] + b;
}
void scale_bias(float *z, float *y, const float *x, int n) {
  scale_kernel<<<(n + 255) / 256, 256>>>(y, x, 2.0f, n);
  bias_kernel<<<(n + 255) / 256, 256>>>(z, y, 1.0f, n);
}
}  // namespace ops
