// RUN: sirius optimize %s -o -
// `rotate` -> `scale` is a block-level dependence (a thread reads what its
// neighbour wrote), so a barrier separates them in their lane. The lane runs
// in 128-thread blocks of a kernel whose blocks have 256 threads (`square`'s
// lane): the threads beyond 128 skip the fragments but must reach the
// barrier, so the barrier stands outside the guard of the lane's threads.
#include <cuda_runtime.h>
#include <cstdio>

__global__ void rotate(const float* x, float* a) {
  int i = blockIdx.x * 128 + threadIdx.x;
  a[blockIdx.x * 128 + (threadIdx.x + 1) % 128] = x[i] * 2.0f;
}
__global__ void scale(const float* a, float* b) {
  int i = blockIdx.x * 128 + threadIdx.x;
  b[i] = a[i] + 1.0f;
}
__global__ void square(float* c) {
  int i = blockIdx.x * 256 + threadIdx.x;
  c[i] = c[i] * c[i];
}
int main() {
  float *x, *a, *b, *c;
  cudaMalloc(&x, 4096); cudaMalloc(&a, 4096); cudaMalloc(&b, 4096); cudaMalloc(&c, 4096);
  cudaMemset(x, 0, 4096); cudaMemset(c, 0, 4096);
  rotate<<<8, 128>>>(x, a);
  scale<<<8, 128>>>(a, b);
  square<<<4, 256>>>(c);
  float h[4]; cudaMemcpy(h, b, 16, cudaMemcpyDeviceToHost);
  printf("%f\n", h[0]);
  return 0;
}

// CHECK: __global__ void __launch_bounds__(256) sirius_fused_0(
// CHECK: if (sirius_block < 8u) {
// CHECK: const uint3 sirius_tid = make_uint3(sirius_thread % 128u,
// CHECK-NEXT: if (sirius_thread < 128u) {
// CHECK-NEXT: sirius_frag_rotate(
// CHECK-NEXT: }
// CHECK-NEXT: __syncthreads();
// CHECK-NEXT: if (sirius_thread < 128u) {
// CHECK-NEXT: sirius_frag_scale(
// CHECK-NEXT: }
// CHECK-NEXT: } else if (sirius_block < 12u) {
