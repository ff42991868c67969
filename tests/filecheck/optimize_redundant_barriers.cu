// RUN: sirius optimize %s -o -
// Four kernels over the rows of a matrix, fused vertically into one block per row.
// Placement puts a barrier before shift and before scale (each reads the row's
// maximum that thread 0 of row_max wrote). Redundant barrier elimination removes
// both: reverse, run in between, passes a barrier of its own on every path, which
// orders row_max before everything after it. It also leaves out row_max's second
// barrier, which orders nothing (thread 0 reads what thread 0 wrote), and keeps its
// first (every thread's write of part before thread 0 reads it) and reverse's.
//
// CHECK-LABEL: {{^}}// fragment of kernel row_max
// CHECK: {{^}}  __syncthreads();
// CHECK-NOT: __syncthreads
// CHECK: /* barrier removed: it orders no dependence */
// CHECK-LABEL: {{^}}// fragment of kernel reverse
// CHECK: {{^}}  __syncthreads();
// CHECK-LABEL: {{^}}__global__ void __launch_bounds__(256) sirius_fused_0(
// CHECK-NEXT: const float * s{{[0-9]+}}_x = (const float *)((const char*)s{{[0-9]+}}_x + 0);
// CHECK-NOT: __syncthreads
// CHECK: sirius_frag_row_max(
// CHECK-NEXT: sirius_frag_reverse(
// CHECK-NEXT: sirius_frag_shift(
// CHECK-NEXT: sirius_frag_scale(
// CHECK-NEXT: }
#include <cstdio>
#include <cstdlib>

#define ROWS 64
#define COLS 256

__global__ void row_max(const float* x, float* m) {
  __shared__ float part[COLS];
  __shared__ float result;
  part[threadIdx.x] = x[blockIdx.x * COLS + threadIdx.x];
  __syncthreads();
  if (threadIdx.x == 0) {
    float v = part[0];
    for (int i = 1; i < COLS; ++i) v = fmaxf(v, part[i]);
    result = v;
  }
  __syncthreads();
  if (threadIdx.x == 0) m[blockIdx.x] = result;
}

__global__ void reverse(const float* x, float* w) {
  __shared__ float row[COLS];
  row[threadIdx.x] = x[blockIdx.x * COLS + threadIdx.x];
  __syncthreads();
  w[blockIdx.x * COLS + threadIdx.x] = row[COLS - 1 - threadIdx.x];
}

__global__ void shift(const float* w, const float* m, float* y) {
  int i = blockIdx.x * COLS + threadIdx.x;
  y[i] = w[i] - m[blockIdx.x];
}

__global__ void scale(const float* x, const float* m, float* z) {
  int i = blockIdx.x * COLS + threadIdx.x;
  z[i] = x[i] * m[blockIdx.x];
}

int main() {
  const int n = ROWS * COLS;
  float *x, *m, *w, *y, *z;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&m, ROWS * sizeof(float));
  cudaMalloc(&w, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  cudaMalloc(&z, n * sizeof(float));
  float* h = (float*)malloc(n * sizeof(float));
  for (int i = 0; i < n; ++i) h[i] = (float)((i * 7919) % 1000) / 100.0f;
  cudaMemcpy(x, h, n * sizeof(float), cudaMemcpyHostToDevice);
  row_max<<<ROWS, COLS>>>(x, m);
  reverse<<<ROWS, COLS>>>(x, w);
  shift<<<ROWS, COLS>>>(w, m, y);
  scale<<<ROWS, COLS>>>(x, m, z);
  double s = 0;
  cudaMemcpy(h, y, n * sizeof(float), cudaMemcpyDeviceToHost);
  for (int i = 0; i < n; ++i) s += h[i];
  cudaMemcpy(h, z, n * sizeof(float), cudaMemcpyDeviceToHost);
  for (int i = 0; i < n; ++i) s += h[i];
  printf("checksum %.3f\n", s);
  return 0;
}
