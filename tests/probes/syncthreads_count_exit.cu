// Probe: an early exit before __syncthreads_count.
// mark: threads with threadIdx.x >= limit (limit < blockDim.x) return, the rest
// count positive inputs of their block with __syncthreads_count and scale by it;
// smooth (same shape, element-wise on mark's output) stages y in shared memory
// behind a __syncthreads(). In a fused kernel the exited threads would reach
// smooth's barrier while the others wait in __syncthreads_count.
// Correct outcome: mark and smooth are NOT fused; the refusal reason says the
// kernel "returns early" (before a barrier). Results equal the original's.
#include <cstdio>
#include <cuda_runtime.h>

#define N 512
#define THREADS 128
#define LIMIT 96

__global__ void mark(const float* x, float* y, int* counts, int limit) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (threadIdx.x >= limit) return;
  float v = x[i];
  int c = __syncthreads_count(v > 0.0f);
  y[i] = v * (float)c;
  if (threadIdx.x == 0) counts[blockIdx.x] = c;
}

__global__ void smooth(const float* y, float* z, int n) {
  __shared__ float tile[THREADS];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? y[i] : 0.0f;
  __syncthreads();
  int left = threadIdx.x > 0 ? threadIdx.x - 1 : 0;
  if (i < n) z[i] = tile[threadIdx.x] + 0.5f * tile[left];
}

int main() {
  const int blocks = N / THREADS;
  float h_x[N], h_y[N], h_z[N];
  int h_counts[N / THREADS];
  for (int i = 0; i < N; ++i) h_x[i] = (float)((i * 37 + 11) % 101) - 50.0f;
  float *d_x, *d_y, *d_z;
  int* d_counts;
  cudaMalloc(&d_x, N * sizeof(float));
  cudaMalloc(&d_y, N * sizeof(float));
  cudaMalloc(&d_z, N * sizeof(float));
  cudaMalloc(&d_counts, blocks * sizeof(int));
  cudaMemcpy(d_x, h_x, N * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemset(d_y, 0, N * sizeof(float));

  mark<<<blocks, THREADS>>>(d_x, d_y, d_counts, LIMIT);
  smooth<<<blocks, THREADS>>>(d_y, d_z, N);
  cudaDeviceSynchronize();

  cudaMemcpy(h_y, d_y, N * sizeof(float), cudaMemcpyDeviceToHost);
  cudaMemcpy(h_z, d_z, N * sizeof(float), cudaMemcpyDeviceToHost);
  cudaMemcpy(h_counts, d_counts, blocks * sizeof(int), cudaMemcpyDeviceToHost);
  double checksum = 0.0;
  for (int i = 0; i < N; ++i) checksum += h_y[i] + h_z[i];
  for (int b = 0; b < blocks; ++b) checksum += h_counts[b];
  printf("checksum: %.6f\n", checksum);
  cudaFree(d_x);
  cudaFree(d_y);
  cudaFree(d_z);
  cudaFree(d_counts);
  return 0;
}
