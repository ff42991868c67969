// RUN: sirius optimize %s --print-after guards -o /dev/null
// The guards stage: what the fused path assumes, as conditions the host checks before it
// launches the fused kernel. scale and shift fuse vertically; host constant propagation
// folds n (1024) and the launch shape into the kernel, so the region's guard compares
// them, beside the launch shapes, the distance between the two pointers into y and the
// allocations x and y apart.
//
// CHECK-LABEL: kernel sirius_fused_0 (group 0, vertical)
// CHECK: param s[[S:[0-9]+]]_n: int = 1024
// CHECK: param s[[T:[0-9]+]]_y: float * -> y + 0 = s[[S]]_y + 0 bytes
// CHECK: shapes: constants
// CHECK: region 0: launches S[[S]] S[[T]] issue group 0
// CHECK-NEXT: guard: sirius_g[[S]].x == 4u
// CHECK: guard: sirius_b[[S]].x == 256u
// CHECK: guard: (long long)(sirius_a[[S]]_2) == 1024LL
// CHECK: guard: (const char*)(sirius_a[[T]]_0) - (const char*)(sirius_a[[S]]_0) == 0
// CHECK-NEXT: guard: (long long)(sirius_a[[T]]_1) == 1024LL
// CHECK-NEXT: guard: ((unsigned long long)((const char*)(sirius_a[[S]]_1) - 0) + 4096ULL <=
// CHECK-LABEL: optimized
#include <cstdio>
#include <cuda_runtime.h>

__global__ void scale(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}

__global__ void shift(float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += 1.0f;
}

int main() {
  const int n = 1024;
  float *x, *y;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  cudaMemset(x, 0, n * sizeof(float));
  scale<<<n / 256, 256>>>(y, x, n);
  shift<<<n / 256, 256>>>(y, n);
  float h[4];
  cudaMemcpy(h, y, sizeof h, cudaMemcpyDeviceToHost);
  printf("%f\n", h[0]);
  return 0;
}
