// Probe: launches written through a function-like macro with __VA_ARGS__.
// scale then shift, element-wise, same shape: a plain vertical fusion.
// Correct outcome: the launches are left as written, with the macro as the reason (the
// expansion cannot be rewritten where it is written); the program compiles (nvcc and
// clang) and its results equal the original's.
#include <cstdio>
#include <cuda_runtime.h>

#define N 640
#define LAUNCH1D(k, n, ...) k<<<((n) + 127) / 128, 128>>>(__VA_ARGS__)

__global__ void scale(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * 3.0f;
}

__global__ void shift(const float* y, float* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = y[i] - 7.0f;
}

int main() {
  float h_x[N], h_z[N];
  for (int i = 0; i < N; ++i) h_x[i] = (float)((i * 37 + 11) % 101) - 50.0f;
  float *d_x, *d_y, *d_z;
  cudaMalloc(&d_x, N * sizeof(float));
  cudaMalloc(&d_y, N * sizeof(float));
  cudaMalloc(&d_z, N * sizeof(float));
  cudaMemcpy(d_x, h_x, N * sizeof(float), cudaMemcpyHostToDevice);

  LAUNCH1D(scale, N, d_x, d_y, N);
  LAUNCH1D(shift, N, d_y, d_z, N);
  cudaDeviceSynchronize();

  cudaMemcpy(h_z, d_z, N * sizeof(float), cudaMemcpyDeviceToHost);
  double checksum = 0.0;
  for (int i = 0; i < N; ++i) checksum += h_z[i];
  printf("checksum: %.6f\n", checksum);
  cudaFree(d_x);
  cudaFree(d_y);
  cudaFree(d_z);
  return 0;
}
