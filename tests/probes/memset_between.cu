// Probe: a cudaMemset between two launches, of the buffer the second reads.
// blend reads acc (last round's sums) into y; cudaMemset clears acc; accumulate
// adds y^2 into the cleared acc (element-wise, no atomics).
// Correct outcome: blend and accumulate are NOT fused; the refusal reason mentions
// cudaMemset. Results equal the original's.
#include <cstdio>
#include <cuda_runtime.h>

#define N 256
#define THREADS 64

__global__ void blend(const float* x, const float* acc, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * 0.5f + acc[i];
}

__global__ void accumulate(const float* y, float* acc, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) acc[i] += y[i] * y[i];
}

int main() {
  float h_x[N], h_acc[N], h_y[N];
  for (int i = 0; i < N; ++i) {
    h_x[i] = (float)((i * 37 + 11) % 101) - 50.0f;
    h_acc[i] = (float)((i * 7 + 2) % 13);
  }
  float *d_x, *d_acc, *d_y;
  cudaMalloc(&d_x, N * sizeof(float));
  cudaMalloc(&d_acc, N * sizeof(float));
  cudaMalloc(&d_y, N * sizeof(float));
  cudaMemcpy(d_x, h_x, N * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(d_acc, h_acc, N * sizeof(float), cudaMemcpyHostToDevice);

  int grid = (N + THREADS - 1) / THREADS;
  blend<<<grid, THREADS>>>(d_x, d_acc, d_y, N);
  cudaMemset(d_acc, 0, N * sizeof(float));
  accumulate<<<grid, THREADS>>>(d_y, d_acc, N);
  cudaDeviceSynchronize();

  cudaMemcpy(h_y, d_y, N * sizeof(float), cudaMemcpyDeviceToHost);
  cudaMemcpy(h_acc, d_acc, N * sizeof(float), cudaMemcpyDeviceToHost);
  double checksum = 0.0;
  for (int i = 0; i < N; ++i) checksum += h_y[i] + h_acc[i];
  printf("checksum: %.6f\n", checksum);
  cudaFree(d_x);
  cudaFree(d_acc);
  cudaFree(d_y);
  return 0;
}
