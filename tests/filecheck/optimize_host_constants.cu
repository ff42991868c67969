// RUN: sirius optimize %s --disable-pass read-once -o -
// Two matrix-vector products whose matrices lie in one allocation, then a sum.
// The fused launch only runs when the host's values are those found here (the
// guard), so inside the fused kernel they are constants: the integer sizes
// become constexpr, the second matrix an offset from the first, and the lane's
// launch shape constants instead of blockDim/gridDim.
#include <cuda_runtime.h>
#include <cstdio>
#ifndef ROWS_PER_MATRIX
#define ROWS_PER_MATRIX 256
#endif

__global__ void gemv(const float* W, const float* x, float* y, int rows) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows) {
    float acc = 0.0f;
    for (int k = 0; k < 64; ++k) acc += W[r * 64 + k] * x[k];
    y[r] = acc;
  }
}
__global__ void add(const float* a, const float* b, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}
int main() {
  const int rows = ROWS_PER_MATRIX;
  float *W, *x, *y, *out;
  cudaMalloc(&W, 2 * rows * 64 * sizeof(float)); cudaMalloc(&x, 64 * sizeof(float));
  cudaMalloc(&y, 2 * rows * sizeof(float)); cudaMalloc(&out, rows * sizeof(float));
  float h[2 * 256 * 64];
  for (int i = 0; i < 2 * rows * 64; ++i) h[i] = (float)(i % 7) * 0.25f;
  cudaMemcpy(W, h, 2 * rows * 64 * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(x, h, 64 * sizeof(float), cudaMemcpyHostToDevice);
  gemv<<<rows / 128, 128>>>(W, x, y, rows);
  gemv<<<rows / 128, 128>>>(W + rows * 64, x, y + rows, rows);
  add<<<rows / 128, 128>>>(y, y + rows, out, rows);
  cudaMemcpy(h, out, rows * sizeof(float), cudaMemcpyDeviceToHost);
  printf("%f %f\n", h[0], h[rows - 1]);
  return 0;
}

// CHECK: __global__ void __launch_bounds__(128) sirius_fused_0(const float * [[W:s[0-9]+_W]], const float * [[X:s[0-9]+_x]], float * [[Y:s[0-9]+_y]], float * [[OUT:s[0-9]+_out]]) {
// CHECK-NEXT: constexpr int [[ROWS:s[0-9]+_rows]] = 256;
// CHECK-NEXT: const float * [[W2:s[0-9]+_W]] = (const float *)((const char*)[[W]] + 65536);
// CHECK-NEXT: const float * [[X2:s[0-9]+_x]] = (const float *)((const char*)[[X]] + 0);
// CHECK-NEXT: float * [[Y2:s[0-9]+_y]] = (float *)((const char*)[[Y]] + 1024);
// CHECK-NEXT: constexpr int [[ROWS2:s[0-9]+_rows]] = 256;
// CHECK-NEXT: const float * [[A:s[0-9]+_a]] = (const float *)((const char*)[[Y]] + 0);
// CHECK-NEXT: const float * [[B:s[0-9]+_b]] = (const float *)((const char*)[[Y]] + 1024);
// CHECK-NEXT: constexpr int [[N:s[0-9]+_n]] = 256;
// CHECK-NEXT: sirius_frag_gemv(blockIdx, threadIdx, dim3(128, 1, 1), dim3(2, 1, 1), [[W]], [[X]], [[Y]], [[ROWS]]);
// CHECK-NEXT: sirius_frag_gemv(blockIdx, threadIdx, dim3(128, 1, 1), dim3(2, 1, 1), [[W2]], [[X2]], [[Y2]], [[ROWS2]]);
// CHECK-NEXT: sirius_frag_add(blockIdx, threadIdx, dim3(128, 1, 1), dim3(2, 1, 1), [[A]], [[B]], [[OUT]], [[N]]);
// CHECK: int main() {
// CHECK: if ({{.*}}(const char*)(sirius_a{{[0-9]+}}_0) - (const char*)(sirius_a{{[0-9]+}}_0) == 65536{{.*}}) { /* sirius: fused launches */ sirius_took(0); sirius_fused_0<<<sirius_g{{[0-9]+}}, sirius_b{{[0-9]+}}, 0>>>(sirius_a{{[0-9]+}}_0, sirius_a{{[0-9]+}}_1, sirius_a{{[0-9]+}}_2, sirius_a{{[0-9]+}}_2); }
