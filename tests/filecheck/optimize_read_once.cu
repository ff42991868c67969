// RUN: sirius optimize %s --passes read-once -o -
// Two layers read the same input x, the same element in the same thread; neither
// kernel nor the third writes x. With the pass alone, x (and the weights, one
// allocation) are read through one `const __restrict__` base each, every other
// parameter into them derived from it: nvcc then loads x[k] once for both layers.
// The output buffer y is written, so it gets no promise.
#include <cuda_runtime.h>
#include <cstdio>

__global__ void layer(const float* W, const float* x, float* y, int rows) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows) {
    float acc = 0.0f;
    for (int k = 0; k < 32; ++k) acc += W[r * 32 + k] * x[k];
    y[r] = acc;
  }
}
__global__ void combine(const float* a, const float* b, const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] * b[i] + x[i % 32];
}
int main() {
  const int rows = 256;
  float *W, *x, *y, *out;
  cudaMalloc(&W, 2 * rows * 32 * sizeof(float)); cudaMalloc(&x, 32 * sizeof(float));
  cudaMalloc(&y, 2 * rows * sizeof(float)); cudaMalloc(&out, rows * sizeof(float));
  static float h[2 * 256 * 32];
  for (int i = 0; i < 2 * rows * 32; ++i) h[i] = (float)(i % 5) * 0.5f - 1.0f;
  cudaMemcpy(W, h, 2 * rows * 32 * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(x, h + 7, 32 * sizeof(float), cudaMemcpyHostToDevice);
  layer<<<rows / 128, 128>>>(W, x, y, rows);
  layer<<<rows / 128, 128>>>(W + rows * 32, x, y + rows, rows);
  combine<<<rows / 128, 128>>>(y, y + rows, x, out, rows);
  cudaMemcpy(h, out, rows * sizeof(float), cudaMemcpyDeviceToHost);
  double sum = 0.0;
  for (int i = 0; i < rows; ++i) sum += h[i] * (i % 3 + 1);
  printf("checksum %.6f\n", sum);
  return 0;
}

// CHECK: __global__ void __launch_bounds__(128) sirius_fused_0(const float * __restrict__ [[W:s[0-9]+_W]], const float * __restrict__ [[X:s[0-9]+_x]], float * [[Y:s[0-9]+_y]], int {{s[0-9]+_rows}}, float * [[Y2:s[0-9]+_y]], int [[ROWS2:s[0-9]+_rows]], const float * [[A:s[0-9]+_a]], const float * [[B:s[0-9]+_b]], float * [[OUT:s[0-9]+_out]], int {{s[0-9]+_n}}) {
// CHECK-NEXT: const float * [[W2:s[0-9]+_W]] = (const float *)((const char*)[[W]] + 32768);
// CHECK-NEXT: const float * [[X2:s[0-9]+_x]] = (const float *)((const char*)[[X]] + 0);
// CHECK-NEXT: const float * [[X3:s[0-9]+_x]] = (const float *)((const char*)[[X]] + 0);
// CHECK-NEXT: sirius_frag_layer({{.*}}, [[W]], [[X]], [[Y]], {{s[0-9]+_rows}});
// CHECK-NEXT: sirius_frag_layer({{.*}}, [[W2]], [[X2]], [[Y2]], [[ROWS2]]);
// CHECK-NEXT: sirius_frag_combine({{.*}}, [[A]], [[B]], [[X3]], [[OUT]], {{s[0-9]+_n}});
