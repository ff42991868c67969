// Probe: a __device__ pointer variable set once with cudaMemcpyToSymbol to a
// cudaMalloc'ed buffer; kernels without pointer parameters use it.
// update writes g_buf[i]; shift reads g_buf[(i + 1) % n] (the neighbour, which
// for the last thread of a block belongs to the next block) and writes g_out[i].
// Correct outcome: update and shift are NOT fused (the dependence through g_buf
// is global); they end up in different groups.
#include <cstdio>
#include <cuda_runtime.h>

#define N 256
#define THREADS 128

__device__ float* g_buf;
__device__ float g_out[N];

__global__ void update(int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) g_buf[i] = g_buf[i] * 3.0f + 1.0f;
}

__global__ void shift(int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) g_out[i] = g_buf[(i + 1) % n] * 2.0f;
}

int main() {
  float h_buf[N], h_out[N];
  for (int i = 0; i < N; ++i) h_buf[i] = (float)((i * 37 + 11) % 101) - 50.0f;
  float* dptr;
  cudaMalloc(&dptr, N * sizeof(float));
  cudaMemcpy(dptr, h_buf, N * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpyToSymbol(g_buf, &dptr, sizeof(float*));

  int grid = (N + THREADS - 1) / THREADS;
  update<<<grid, THREADS>>>(N);
  shift<<<grid, THREADS>>>(N);
  cudaDeviceSynchronize();

  cudaMemcpy(h_buf, dptr, N * sizeof(float), cudaMemcpyDeviceToHost);
  cudaMemcpyFromSymbol(h_out, g_out, sizeof(h_out));
  double checksum = 0.0;
  for (int i = 0; i < N; ++i) checksum += h_buf[i] + (i % 3) * h_out[i];
  printf("checksum: %.6f\n", checksum);
  cudaFree(dptr);
  return 0;
}
