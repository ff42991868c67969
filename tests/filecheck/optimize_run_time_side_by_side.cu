// RUN: sirius optimize %s -o -
// Two independent launches whose grids the host computes from argv, and one of a constant
// grid: side by side in one launch. The fused kernel is passed each run-time grid and adds
// up their blocks to find a lane's first block; the host launches every lane's blocks and
// takes the fused path only where each run-time grid is one its launch could run in and
// the sum fits a grid (else the original launches). The kernels' __restrict__ promises stay:
// the grids are passed by value, which touches no device memory.
//
// CHECK-LABEL: {{^}}__global__ void __launch_bounds__(256) sirius_fused_0(float *__restrict s{{[0-9]+}}_x,
// CHECK-SAME: float *__restrict s{{[0-9]+}}_z,
// CHECK-SAME: const dim3 sirius_grid[[S:[0-9]+]], const dim3 sirius_grid[[B:[0-9]+]]) {
// CHECK: if (sirius_block < sirius_grid[[S]].x * sirius_grid[[S]].y * sirius_grid[[S]].z) {
// CHECK-NEXT: const unsigned sirius_local = sirius_block - 0u;
// CHECK-NEXT: const dim3 sirius_gdim = sirius_grid[[S]];
// CHECK-NEXT: const dim3 sirius_bdim(256, 1, 1);
// CHECK-NEXT: const uint3 sirius_bid = make_uint3(sirius_local % sirius_gdim.x, (sirius_local / sirius_gdim.x) % sirius_gdim.y, sirius_local / (sirius_gdim.x * sirius_gdim.y));
// CHECK: sirius_frag_scale(
// CHECK: } else if (sirius_block < sirius_grid[[S]].x * sirius_grid[[S]].y * sirius_grid[[S]].z + sirius_grid[[B]].x * sirius_grid[[B]].y * sirius_grid[[B]].z) {
// CHECK-NEXT: const unsigned sirius_local = sirius_block - (sirius_grid[[S]].x * sirius_grid[[S]].y * sirius_grid[[S]].z);
// CHECK-NEXT: const dim3 sirius_gdim = sirius_grid[[B]];
// CHECK: if (sirius_thread < 128u) {  // this fragment's block is smaller
// CHECK: sirius_frag_bias(
// CHECK: } else if (sirius_block < 2u + sirius_grid[[S]].x
// CHECK-NEXT: const unsigned sirius_local = sirius_block - (sirius_grid[[S]].x
// CHECK-NEXT: const dim3 sirius_gdim(2, 1, 1);
// CHECK: sirius_frag_clear(
// CHECK-LABEL: int main(
// CHECK: sirius_g[[S]].x >= 1u && sirius_g[[S]].x <= 2147483647u
// CHECK-SAME: sirius_g[[B]].z >= 1u && sirius_g[[B]].z <= 65535u
// CHECK-SAME: (2ULL + (unsigned long long)sirius_g[[S]].x * sirius_g[[S]].y * sirius_g[[S]].z + (unsigned long long)sirius_g[[B]].x * sirius_g[[B]].y * sirius_g[[B]].z <= 2147483647ULL)
// CHECK-SAME: sirius_fused_0<<<dim3(2u + sirius_g[[S]].x * sirius_g[[S]].y * sirius_g[[S]].z + sirius_g[[B]].x * sirius_g[[B]].y * sirius_g[[B]].z), dim3(256), 0>>>(
// CHECK-SAME: sirius_g[[S]], sirius_g[[B]]);
// CHECK-SAME: else { /* sirius: not the shapes optimized for: the original launches */
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void scale(float* __restrict__ x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}

__global__ void bias(float* __restrict__ z, int m) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m) z[i] += 1.0f;
}

__global__ void clear(float* c) { c[blockIdx.x * blockDim.x + threadIdx.x] = 0.0f; }

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1000;
  int m = argc > 2 ? atoi(argv[2]) : 300;
  float *x, *z, *c;
  cudaMalloc(&x, sizeof(float) * n);
  cudaMalloc(&z, sizeof(float) * m);
  cudaMalloc(&c, sizeof(float) * 512);
  scale<<<(n + 255) / 256, 256>>>(x, n);
  bias<<<(m + 127) / 128, 128>>>(z, m);
  clear<<<2, 256>>>(c);
  cudaDeviceSynchronize();
  printf("done\n");
  return 0;
}
