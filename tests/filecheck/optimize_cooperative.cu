// RUN: sirius optimize %s --cooperative -o -
// Three launches joined by a global dependence: scale and block_sums fuse vertically (each
// thread reads what it wrote), total reads the sums of every block. With --cooperative the
// two groups are phases of one kernel: each a loop over its blocks as virtual blocks of a
// grid sized at run time, a grid barrier between them; total's smaller block runs on the
// first 64 threads; the host falls back to the original launches when the device cannot
// launch cooperatively.
//
// CHECK: // sirius-regions: {"version":1,"regions":[{"id":0,"kind":"cooperative",
// CHECK: #include <cooperative_groups.h>  // sirius: cooperative launches below
// CHECK-LABEL: {{^}}__global__ void __launch_bounds__(256) sirius_coop_0(const float * s{{[0-9]+}}_x,
// CHECK: // phase 0: scale, block_sums (64 blocks)
// CHECK-NEXT: for (unsigned sirius_vb = blockIdx.x; sirius_vb < 64u; sirius_vb += gridDim.x) {
// CHECK-NEXT: const unsigned sirius_block = sirius_vb;
// CHECK: sirius_frag_scale(sirius_bid, sirius_tid, sirius_bdim, sirius_gdim,
// CHECK-NEXT: sirius_frag_block_sums(sirius_bid, sirius_tid, sirius_bdim, sirius_gdim,
// CHECK: __syncthreads();  // the next virtual block reuses this block's shared memory
// CHECK: cooperative_groups::this_grid().sync();
// CHECK-NEXT: // phase 1: total (1 blocks)
// CHECK: if (sirius_thread < 64u) {
// CHECK-NEXT: const uint3 sirius_tid
// CHECK-NEXT: sirius_frag_total(
// CHECK-NOT: this_grid
// CHECK: cudaOccupancyMaxActiveBlocksPerMultiprocessor(&sirius_per_sm, sirius_coop_0, 256, 0);
// CHECK-SAME: if (sirius_grid > 64u) sirius_grid = 64u;
// CHECK: cudaLaunchCooperativeKernel(sirius_coop_0, dim3(sirius_grid), dim3(256), sirius_args, 0, 0)
// CHECK-SAME: if (!sirius_coop_done) { sirius_took(4); scale<<<
// CHECK-SAME: } else sirius_took(1); } else { /* sirius: not the shapes optimized for: the original launches */ sirius_fell_back(5, {{[0-9]+}}); scale<<<
#include <cstdio>
#include <cuda_runtime.h>

#ifndef BLOCKS
#define BLOCKS 64
#endif
#define THREADS 256
#define N (BLOCKS * THREADS)

__global__ void scale(const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = 2.0f * x[i] + 1.0f;
}

__global__ void block_sums(const float* y, float* sums) {
  __shared__ float part[THREADS];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  part[threadIdx.x] = y[i];
  __syncthreads();
  for (int s = THREADS / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) sums[blockIdx.x] = part[0];
}

__global__ void total(const float* sums, float* out) {
  int t = threadIdx.x;
  out[t] = sums[t] + sums[(t + 1) % BLOCKS];
}

int main() {
  float* hx = (float*)malloc(sizeof(float) * N);
  for (int i = 0; i < N; ++i) hx[i] = (float)((i * 37) % 101) / 101.0f;
  float *x, *y, *sums, *out;
  cudaMalloc(&x, sizeof(float) * N);
  cudaMalloc(&y, sizeof(float) * N);
  cudaMalloc(&sums, sizeof(float) * BLOCKS);
  cudaMalloc(&out, sizeof(float) * BLOCKS);
  cudaMemcpy(x, hx, sizeof(float) * N, cudaMemcpyHostToDevice);
  scale<<<BLOCKS, THREADS>>>(x, y);
  block_sums<<<BLOCKS, THREADS>>>(y, sums);
  total<<<1, BLOCKS>>>(sums, out);
  float hout[BLOCKS];
  cudaMemcpy(hout, out, sizeof(float) * BLOCKS, cudaMemcpyDeviceToHost);
  double check = 0;
  for (int b = 0; b < BLOCKS; ++b) check += hout[b];
  printf("checksum %.6f\n", check);
  return 0;
}
