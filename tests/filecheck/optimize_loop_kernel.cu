// RUN: sirius optimize %s --cooperative --persistent -o -
// A stencil's time loop of two kernels as one persistent cooperative kernel: the loop
// body is read as one copy of itself (a loop of one layer), each step a wave; the loop
// runs in the kernel, the two launches of a step its phases, a grid barrier between
// them and between two steps. The host first runs the loop without launching, to check
// the values the kernel assumes (80 launches); where the launch fails, the loop runs as
// written.
//
// CHECK-LABEL: {{^}}__global__ void __launch_bounds__(128) sirius_cells_0(char* const sirius_base_next, char* const sirius_base_source, char* const sirius_base_u) {
// CHECK-NEXT: for (int sirius_w = 0; sirius_w < 40; sirius_w += 1) {
// CHECK: // phase 0: relax (32 blocks per cell)
// CHECK: sirius_frag_relax(sirius_bid, sirius_tid, sirius_bdim, sirius_gdim,
// CHECK: cooperative_groups::this_grid().sync();
// CHECK-NEXT: // phase 1: commit (32 blocks per cell)
// CHECK: sirius_frag_commit(sirius_bid, sirius_tid, sirius_bdim, sirius_gdim,
// CHECK: if (sirius_w < 39) cooperative_groups::this_grid().sync();
// CHECK-LABEL: sirius: the loop in one kernel: its 2 launches per step are phases
// CHECK: sirius_cells_ok = sirius_cells_ok && sirius_holds({{[0-9]+}}, (sirius_checked == 80LL));
// CHECK: sirius_waves_ran = cudaLaunchCooperativeKernel(sirius_cells_0, dim3(sirius_grid), dim3(128), sirius_args, 0, 0) == cudaSuccess;
// CHECK-NEXT: if (!sirius_waves_ran) (void)cudaGetLastError();
// CHECK: if (sirius_waves_ran) { sirius_took({{[0-9]+}}); }
// CHECK-NEXT: else { /* sirius: not the values optimized for, or no cooperative launches: the loop as written */
// Jacobi relaxation on a 1-D rod: a time loop of two kernels (relax into the scratch
// array, copy back with a source term), as a hand-written solver does it.
#include <cstdio>
#include <cuda_runtime.h>

#define N 4096
#define STEPS 40
#define THREADS 128

__global__ void relax(float* __restrict__ next, const float* __restrict__ u) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0 || i == N - 1) { next[i] = u[i]; return; }
  next[i] = 0.5f * (u[i - 1] + u[i + 1]);
}

__global__ void commit(float* __restrict__ u, const float* __restrict__ next, const float* __restrict__ source) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  u[i] = next[i] + 0.01f * source[i];
}

int main() {
  float *u, *next, *source;
  cudaMalloc(&u, N * sizeof(float));
  cudaMalloc(&next, N * sizeof(float));
  cudaMalloc(&source, N * sizeof(float));
  static float h[N];
  for (int i = 0; i < N; ++i) h[i] = (i % 97) * 0.01f;
  cudaMemcpy(u, h, sizeof h, cudaMemcpyHostToDevice);
  for (int i = 0; i < N; ++i) h[i] = (i % 13 == 0) ? 1.0f : 0.0f;
  cudaMemcpy(source, h, sizeof h, cudaMemcpyHostToDevice);
  for (int t = 0; t < STEPS; ++t) {
    relax<<<N / THREADS, THREADS>>>(next, u);
    commit<<<N / THREADS, THREADS>>>(u, next, source);
  }
  cudaMemcpy(h, u, sizeof h, cudaMemcpyDeviceToHost);
  double s = 0;
  for (int i = 0; i < N; ++i) s += h[i] * (1 + i % 7);
  printf("%.6f\n", s);
  return 0;
}
