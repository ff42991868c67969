// RUN: sirius optimize %s -o -
// The kernels live in an included file: their fragments, printed into this file, say so
// with #line and the file's name (__LINE__ and __FILE__ in them read as where they are
// written, and so do diagnostics), and what follows them is this file's again, by name.
#include <cstdio>
#include "included/stamp_kernels.cu"
#define N 1024
__global__ void local_scale(int* where, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) where[i] *= 2;
}
int main() {
  int* d; cudaMalloc(&d, N * sizeof(int));
  stamp<<<N / 128, 128>>>(d, N);
  offset<<<N / 128, 128>>>(d, N);
  local_scale<<<N / 128, 128>>>(d, N);
  static int h[N];
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  printf("%d %d\n", h[0], h[N - 1]);
  return 0;
}
// Before anything else of the program, sirius names it:
// CHECK: #line 1 "{{.*}}filecheck/optimize_included_fragment.cu"
// The fragment of this file's kernel follows the kernel, at its lines:
// CHECK: static __device__ __forceinline__ void sirius_frag_local_scale(
// CHECK: #line 8 "{{.*}}filecheck/optimize_included_fragment.cu"
// CHECK-NEXT: {
// CHECK-NEXT:   int i = blockIdx.x * blockDim.x + threadIdx.x;
// CHECK-NEXT:   if (i < n) where[i] *= 2;
// CHECK: #line 11 "{{.*}}filecheck/optimize_included_fragment.cu"
// The included file's fragments name that file, and each is followed by this file again:
// CHECK: static __device__ __forceinline__ void sirius_frag_stamp(
// CHECK: #line 4 "{{.*}}filecheck/included/stamp_kernels.cu"
// CHECK-NEXT: {
// CHECK-NEXT:   int i = blockIdx.x * blockDim.x + threadIdx.x;
// CHECK-NEXT:   if (i < n) where[i] = __LINE__ * 1000 + (int)sizeof(__FILE__);
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: #line {{[0-9]+}} "{{.*}}filecheck/optimize_included_fragment.cu"
// CHECK: static __device__ __forceinline__ void sirius_frag_offset(
// CHECK: #line 8 "{{.*}}filecheck/included/stamp_kernels.cu"
// CHECK: #line {{[0-9]+}} "{{.*}}filecheck/optimize_included_fragment.cu"
// CHECK: sirius_fused_0(
// CHECK: // ---- end of generated kernels ----
// CHECK: #line 11 "{{.*}}filecheck/optimize_included_fragment.cu"
// CHECK: int main() {
// CHECK-NOT: #line {{[0-9]+}}{{$}}
