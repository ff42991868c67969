// A loop the persistent kernel could run whole, whose body redefines the macro naming the
// kernel it launches first: the emitted program writes the loop's text twice (its values
// checked, then the loop as written), and the second copy would launch scale_v2 from its
// first iteration on (the blind red team of renamed loop variables). Its launches stay
// apart, and the loop stays a loop.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void scale(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 1.5f + 0.5f;
}
__global__ void scale_v2(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 1.5f - 7.0f;
}
__global__ void addto(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = y[i] * 0.5f + x[i];
}
#define STEP_KERNEL scale

int main() {
  const int n = 4096, chunk = 1024;
  static float hx[n], hy[n];
  for (int q = 0; q < n; ++q) { hx[q] = (q % 17) * 0.25f; hy[q] = (q % 5) * 1.0f; }
  float *x, *y;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  cudaMemcpy(x, hx, n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(y, hy, n * sizeof(float), cudaMemcpyHostToDevice);
  for (int i = 0; i < 4; ++i) {
    const int off = i * chunk;
    dim3 block(256), grid(chunk / 256);
    STEP_KERNEL<<<grid, block>>>(x + off, chunk);
#undef STEP_KERNEL
#define STEP_KERNEL scale_v2
    addto<<<grid, block>>>(y + off, x + off, chunk);
  }
  cudaMemcpy(hx, x, n * sizeof(float), cudaMemcpyDeviceToHost);
  cudaMemcpy(hy, y, n * sizeof(float), cudaMemcpyDeviceToHost);
  double s = 0;
  for (int q = 0; q < n; ++q) s += hx[q] * (q % 7) + hy[q];
  printf("checksum %.6f\n", s);
  return 0;
}
