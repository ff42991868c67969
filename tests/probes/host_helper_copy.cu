// Probe: a call of the program's own host function between two launches;
// the helper (refresh) rewrites, with cudaMemcpy, the buffer both kernels read.
// affine reads x; refresh(d_x, ...) uploads new values into x; mul reads x.
// Correct outcome: affine and mul are NOT fused across the call (fusing would make
// one of them see the wrong x); the refusal reason names `refresh`.
#include <cstdio>
#include <cuda_runtime.h>

#define N 512
#define THREADS 128

__global__ void affine(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i] + 1.0f;
}

__global__ void mul(const float* x, const float* y, float* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = x[i] * y[i];
}

static void refresh(float* d, const float* h, int n) {
  cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);
}

int main() {
  float h_x[N], h_x2[N], h_y[N], h_z[N];
  for (int i = 0; i < N; ++i) {
    h_x[i] = (float)((i * 13 + 7) % 29) - 14.0f;
    h_x2[i] = (float)((i * 5 + 3) % 17) - 8.0f;
  }
  float *d_x, *d_y, *d_z;
  cudaMalloc(&d_x, N * sizeof(float));
  cudaMalloc(&d_y, N * sizeof(float));
  cudaMalloc(&d_z, N * sizeof(float));
  cudaMemcpy(d_x, h_x, N * sizeof(float), cudaMemcpyHostToDevice);

  int grid = (N + THREADS - 1) / THREADS;
  affine<<<grid, THREADS>>>(d_x, d_y, N);
  refresh(d_x, h_x2, N);
  mul<<<grid, THREADS>>>(d_x, d_y, d_z, N);
  cudaDeviceSynchronize();

  cudaMemcpy(h_y, d_y, N * sizeof(float), cudaMemcpyDeviceToHost);
  cudaMemcpy(h_z, d_z, N * sizeof(float), cudaMemcpyDeviceToHost);
  double checksum = 0.0;
  for (int i = 0; i < N; ++i) checksum += h_y[i] + h_z[i];
  printf("checksum: %.6f\n", checksum);
  cudaFree(d_x);
  cudaFree(d_y);
  cudaFree(d_z);
  return 0;
}
