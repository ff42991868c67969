// Probe: kernels that touch only __device__ arrays (no parameters but n).
// produce writes g_a[i]; reverse reads g_a[n - 1 - i] (the mirrored element,
// written by another block: a global dependence) and writes g_b[i].
// Correct outcome: produce and reverse are NOT fused; results equal the original's.
#include <cstdio>
#include <cuda_runtime.h>

#define N 256
#define THREADS 64

__device__ float g_in[N];
__device__ float g_a[N];
__device__ float g_b[N];

__global__ void produce(int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) g_a[i] = g_in[i] * 2.0f + 1.0f;
}

__global__ void reverse(int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) g_b[i] = g_a[n - 1 - i] - (float)i;
}

int main() {
  float h_in[N], h_a[N], h_b[N];
  for (int i = 0; i < N; ++i) h_in[i] = (float)((i * 37 + 11) % 101) - 50.0f;
  cudaMemcpyToSymbol(g_in, h_in, sizeof(h_in));

  int grid = (N + THREADS - 1) / THREADS;
  produce<<<grid, THREADS>>>(N);
  reverse<<<grid, THREADS>>>(N);
  cudaDeviceSynchronize();

  cudaMemcpyFromSymbol(h_a, g_a, sizeof(h_a));
  cudaMemcpyFromSymbol(h_b, g_b, sizeof(h_b));
  double checksum = 0.0;
  for (int i = 0; i < N; ++i) checksum += h_a[i] + (i % 5) * h_b[i];
  printf("checksum: %.6f\n", checksum);
  return 0;
}
