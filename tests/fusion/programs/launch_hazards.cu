// What the blind red team of run-time grids found, one pair each (sizes from argv):
// a macro standing for the grid and the block, a macro standing for two arguments, a
// launch over its kernel's __launch_bounds__, a launch-status query after a launch whose
// grid may be empty, and the same query after launches of constant shapes.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define LAUNCH_1D(n) ((n) + 255) / 256, 256
#define SHAPE2(s) (s).rows, (s).cols

struct Shape { int rows, cols; };

__global__ void twice(float* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] *= 2.0f; }
__global__ void inc(float* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] += 1.0f; }
__global__ void scale_rows(float* a, int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows * cols) a[i] *= 1.0f + (i / cols) % 3;
}
__global__ void shift_cols(float* a, int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows * cols) a[i] += (i % cols) * 0.5f;
}
__global__ void __launch_bounds__(128) bounded(float* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = a[i] * 0.5f + 1.0f;
}

static float h[8192];

double sum(const float* d) {
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  double s = 0;
  for (int i = 0; i < 8192; i++) s += h[i] * (i % 7 + 1);
  return s;
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 3000;
  Shape s = {argc > 2 ? atoi(argv[2]) : 40, argc > 3 ? atoi(argv[3]) : 70};
  if (n < 0 || n > 8192 || s.rows * s.cols > 8192) return 2;
  for (int i = 0; i < 8192; i++) h[i] = (i % 11) * 0.25f;
  float* a;
  cudaMalloc(&a, sizeof h);
  cudaMemcpy(a, h, sizeof h, cudaMemcpyHostToDevice);
  twice<<<LAUNCH_1D(n)>>>(a, n);
  inc<<<LAUNCH_1D(n)>>>(a, n);
  printf("config macro: %.3f\n", sum(a));
  scale_rows<<<(s.rows * s.cols + 255) / 256, 256>>>(a, SHAPE2(s));
  shift_cols<<<(s.rows * s.cols + 255) / 256, 256>>>(a, SHAPE2(s));
  printf("argument macro: %.3f\n", sum(a));
  bounded<<<(n + 255) / 256, 256>>>(a, n);
  inc<<<(n + 255) / 256, 256>>>(a, n);
  printf("launch bounds: %.3f %s\n", sum(a), cudaGetErrorName(cudaGetLastError()));
  twice<<<(n + 255) / 256, 256>>>(a, n);
  cudaError_t first = cudaGetLastError();
  inc<<<(n + 255) / 256, 256>>>(a, n);
  cudaError_t second = cudaGetLastError();
  printf("status read between: %.3f %s %s\n", sum(a), cudaGetErrorName(first), cudaGetErrorName(second));
  twice<<<32, 256>>>(a, 8192);
  first = cudaGetLastError();
  inc<<<32, 256>>>(a, 8192);
  printf("constant shapes: %.3f %s\n", sum(a), cudaGetErrorName(first));
  cudaFree(a);
  return 0;
}
