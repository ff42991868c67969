// Probe: no cudaMalloc at all; data lives in __constant__ / __device__ symbols.
// scale_a writes out1 using coef; cudaMemcpyToSymbol(coef, ...) sets a new value;
// scale_b writes out2 using the new coef. Results come back with cudaMemcpyFromSymbol.
// Correct outcome: results equal the original's; scale_a and scale_b are NOT fused
// across the symbol copy; the refusal reason mentions cudaMemcpyToSymbol.
#include <cstdio>
#include <cuda_runtime.h>

#define N 256
#define THREADS 128

__constant__ float coef;
__device__ float in[N];
__device__ float out1[N], out2[N];

__global__ void scale_a(int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out1[i] = in[i] * coef;
}

__global__ void scale_b(int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out2[i] = in[i] + coef;
}

int main() {
  float h_in[N], h_out1[N], h_out2[N];
  for (int i = 0; i < N; ++i) h_in[i] = (float)((i * 37 + 11) % 101) - 50.0f;
  cudaMemcpyToSymbol(in, h_in, sizeof(h_in));
  float c = 1.5f;
  cudaMemcpyToSymbol(coef, &c, sizeof(float));

  int grid = (N + THREADS - 1) / THREADS;
  scale_a<<<grid, THREADS>>>(N);
  c = -0.75f;
  cudaMemcpyToSymbol(coef, &c, sizeof(float));
  scale_b<<<grid, THREADS>>>(N);
  cudaDeviceSynchronize();

  cudaMemcpyFromSymbol(h_out1, out1, sizeof(h_out1));
  cudaMemcpyFromSymbol(h_out2, out2, sizeof(h_out2));
  double checksum = 0.0;
  for (int i = 0; i < N; ++i) checksum += h_out1[i] + 2.0 * h_out2[i];
  printf("checksum: %.6f\n", checksum);
  return 0;
}
