// RUN: sirius optimize %s -o /dev/null
// Two producer/consumer pairs, each joined by a global dependence (every
// consumer thread reads all of its producer's output). isl's global schedule
// puts both producers on step 0 and both consumers on step 1; P3 fuses each
// step horizontally: 4 launches become 2, and no pair is fused across its
// global dependence.
#include <cuda_runtime.h>

__global__ void produce(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}

__global__ void total(float* z, const float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float acc = 0.0f;
    for (int j = 0; j < n; ++j) acc += y[j];
    z[i] = acc;
  }
}

int main() {
  float *x, *y1, *y2, *z1, *z2;
  cudaMalloc(&x, 512 * sizeof(float));
  cudaMalloc(&y1, 512 * sizeof(float));
  cudaMalloc(&y2, 512 * sizeof(float));
  cudaMalloc(&z1, 512 * sizeof(float));
  cudaMalloc(&z2, 512 * sizeof(float));
  cudaMemset(x, 0, 512 * sizeof(float));
  produce<<<4, 128>>>(y1, x, 512);
  total<<<4, 128>>>(z1, y1, 512);
  produce<<<2, 128>>>(y2, x, 256);
  total<<<2, 128>>>(z2, y2, 256);
  cudaDeviceSynchronize();
  return 0;
}

// CHECK:      launches per run: 4 -> 2
// CHECK:      (region 0, step 0): horizontal, 0 barriers inserted: produce (line 31) | produce (line 33)
// CHECK-NEXT: keeps __restrict__ on 1 of 4 pointer parameters; launch bounds 128
// CHECK-NEXT: runs when the host values match those optimized for
// CHECK-NEXT: (region 0, step 1): horizontal, 0 barriers inserted: total (line 32) | total (line 34)
// CHECK:      global dependence on y1
// CHECK:      global dependence on y2
// CHECK:      pass read-once: sirius_fused_0: x read by S6, S8 through s6_x
