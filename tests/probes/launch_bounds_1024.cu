// Probe: `spread` is declared __launch_bounds__(1024) and keeps many values
// live at once; launched with 1024 threads per block it fits the register file
// only because the bound makes nvcc limit it to 64 registers. Fused with
// `offset` (also 1024 threads), a fused kernel without the bound gets more
// registers than 1024 threads may have, and its launch fails on a GPU.
// Correct outcome: the fused kernel carries __launch_bounds__(1024), or the
// fusion is refused with the reason.
#include <cstdio>
#include <cuda_runtime.h>

#define BLOCKS 4
#define THREADS 1024
#define N (BLOCKS * THREADS)
#define LIVE 96

__global__ void __launch_bounds__(1024) spread(const float* x, float* y) {
  int i = blockIdx.x * THREADS + threadIdx.x;
  float v[LIVE];
#pragma unroll
  for (int k = 0; k < LIVE; ++k) v[k] = x[(i + k * 37) % N];
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < LIVE; ++k) s += v[k] * v[(k * 7 + 3) % LIVE] - v[(k * 5 + 1) % LIVE];
  y[i] = s;
}

__global__ void offset(const float* y, float* z) {
  int i = blockIdx.x * THREADS + threadIdx.x;
  z[i] = y[i] * 0.5f + 1.0f;
}

int main() {
  static float h_x[N], h_z[N];
  for (int i = 0; i < N; ++i) h_x[i] = (float)((i * 41 + 9) % 67) / 16.0f;
  float *d_x, *d_y, *d_z;
  cudaMalloc(&d_x, N * sizeof(float));
  cudaMalloc(&d_y, N * sizeof(float));
  cudaMalloc(&d_z, N * sizeof(float));
  cudaMemcpy(d_x, h_x, N * sizeof(float), cudaMemcpyHostToDevice);

  spread<<<BLOCKS, THREADS>>>(d_x, d_y);
  offset<<<BLOCKS, THREADS>>>(d_y, d_z);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    printf("launch failed: %s\n", cudaGetErrorString(err));
    return 1;
  }

  cudaMemcpy(h_z, d_z, N * sizeof(float), cudaMemcpyDeviceToHost);
  double checksum = 0.0;
  for (int i = 0; i < N; ++i) checksum += h_z[i];
  printf("checksum: %.6f\n", checksum);
  cudaFree(d_x);
  cudaFree(d_y);
  cudaFree(d_z);
  return 0;
}
