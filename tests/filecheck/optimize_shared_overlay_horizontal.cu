// RUN: sirius optimize %s -o -
// Two independent block reductions side by side (horizontal): each block runs one of
// them, so a block needs only the larger one's shared memory. The shared-overlay
// pass gives both the start of one pool: 2048 bytes per block instead of 1024 + 2048.
//
// CHECK-LABEL: {{^}}// fragment of kernel row_max
// CHECK: {{^}}  float (&part)[256] = *reinterpret_cast<float (*)[256]>(sirius_pool + 0);
// CHECK-LABEL: {{^}}// fragment of kernel row_sum
// CHECK: {{^}}  float (&acc)[512] = *reinterpret_cast<float (*)[512]>(sirius_pool + 0);
// CHECK-LABEL: {{^}}__global__ void __launch_bounds__(256) sirius_fused_0(
// CHECK: {{^}}  __shared__ __align__(128) unsigned char sirius_pool[2048];
// CHECK: sirius_frag_row_max({{.*}}, sirius_pool + 0, s{{[0-9]+}}_x, s{{[0-9]+}}_m);
// CHECK: sirius_frag_row_sum({{.*}}, sirius_pool + 0, s{{[0-9]+}}_y, s{{[0-9]+}}_t);
#include <cstdio>
#include <cstdlib>
#define ROWS 32
#define COLS 256

__global__ void row_max(const float* x, float* m) {
  __shared__ float part[COLS];
  part[threadIdx.x] = x[blockIdx.x * COLS + threadIdx.x];
  __syncthreads();
  for (int s = COLS / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] = fmaxf(part[threadIdx.x], part[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) m[blockIdx.x] = part[0];
}

__global__ void row_sum(const float* y, float* t) {
  __shared__ float acc[2 * COLS];
  acc[threadIdx.x] = y[blockIdx.x * COLS + threadIdx.x];
  acc[COLS + threadIdx.x] = 0.0f;
  __syncthreads();
  for (int s = COLS / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) acc[threadIdx.x] += acc[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) t[blockIdx.x] = acc[0] + acc[COLS];
}

int main() {
  const int n = ROWS * COLS;
  float *x, *y, *m, *t;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  cudaMalloc(&m, ROWS * sizeof(float));
  cudaMalloc(&t, ROWS * sizeof(float));
  float* h = (float*)malloc(n * sizeof(float));
  for (int i = 0; i < n; ++i) h[i] = (float)((i * 7919) % 1000) / 100.0f;
  cudaMemcpy(x, h, n * sizeof(float), cudaMemcpyHostToDevice);
  for (int i = 0; i < n; ++i) h[i] = (float)((i * 104729) % 977) / 50.0f;
  cudaMemcpy(y, h, n * sizeof(float), cudaMemcpyHostToDevice);
  row_max<<<ROWS, COLS>>>(x, m);
  row_sum<<<ROWS, COLS>>>(y, t);
  float hm[ROWS], ht[ROWS];
  cudaMemcpy(hm, m, sizeof(hm), cudaMemcpyDeviceToHost);
  cudaMemcpy(ht, t, sizeof(ht), cudaMemcpyDeviceToHost);
  double s = 0;
  for (int i = 0; i < ROWS; ++i) s += hm[i] + ht[i];
  printf("checksum %.3f\n", s);
  return 0;
}
