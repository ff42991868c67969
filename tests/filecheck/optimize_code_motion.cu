// RUN: sirius optimize %s --arrangement vertical -o -
// Two independent chains, each a row total (thread 0 of a block writes it) and the
// row divided by it (every thread of the block reads it): in program order one lane
// needs a barrier in each chain. Code motion runs the two totals first, then the two
// divisions: one barrier orders both chains.
//
// CHECK-LABEL: {{^}}__global__ void __launch_bounds__(256) sirius_fused_0(
// CHECK: sirius_frag_row_total({{.*}}, s8_x, s8_total);
// CHECK-NEXT: sirius_frag_row_total({{.*}}, s10_x, s10_total);
// CHECK-NEXT: __syncthreads();
// CHECK-NEXT: sirius_frag_scale_by({{.*}}, s9_x, s9_total, s9_y);
// CHECK-NEXT: sirius_frag_scale_by({{.*}}, s11_x, s11_total, s11_y);
// CHECK-NEXT: }
#include <cstdio>
#include <cstdlib>
#define ROWS 64
#define COLS 256

// Two independent chains over the rows: a row total, then the row scaled by it
// (block-level: thread 0 writes the total every thread reads).
__global__ void row_total(const float* x, float* total) {
  if (threadIdx.x == 0) {
    float s = 0.0f;
    for (int i = 0; i < COLS; ++i) s += x[blockIdx.x * COLS + i];
    total[blockIdx.x] = s;
  }
}

__global__ void scale_by(const float* x, const float* total, float* y) {
  int i = blockIdx.x * COLS + threadIdx.x;
  y[i] = x[i] / total[blockIdx.x];
}

int main() {
  const int n = ROWS * COLS;
  float *a, *b, *ta, *tb, *ya, *yb;
  cudaMalloc(&a, n * sizeof(float));
  cudaMalloc(&b, n * sizeof(float));
  cudaMalloc(&ta, ROWS * sizeof(float));
  cudaMalloc(&tb, ROWS * sizeof(float));
  cudaMalloc(&ya, n * sizeof(float));
  cudaMalloc(&yb, n * sizeof(float));
  float* h = (float*)malloc(n * sizeof(float));
  for (int i = 0; i < n; ++i) h[i] = 1.0f + (float)((i * 7919) % 1000) / 100.0f;
  cudaMemcpy(a, h, n * sizeof(float), cudaMemcpyHostToDevice);
  for (int i = 0; i < n; ++i) h[i] = 2.0f + (float)((i * 104729) % 977) / 50.0f;
  cudaMemcpy(b, h, n * sizeof(float), cudaMemcpyHostToDevice);
  row_total<<<ROWS, COLS>>>(a, ta);
  scale_by<<<ROWS, COLS>>>(a, ta, ya);
  row_total<<<ROWS, COLS>>>(b, tb);
  scale_by<<<ROWS, COLS>>>(b, tb, yb);
  double s = 0;
  cudaMemcpy(h, ya, n * sizeof(float), cudaMemcpyDeviceToHost);
  for (int i = 0; i < n; ++i) s += h[i];
  cudaMemcpy(h, yb, n * sizeof(float), cudaMemcpyDeviceToHost);
  for (int i = 0; i < n; ++i) s += h[i];
  printf("checksum %.6f\n", s);
  return 0;
}
