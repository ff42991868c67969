// Probe: a __device__ helper with its own __shared__ array (a block-wide tree
// reduction), called by two different kernels with the same launch shape.
// center: y[i] = x[i] - mean of x over the block; energy: z[i] = y[i] * sum of
// y^2 over the block (element-wise on center's output). In one fused lane both
// calls use the same shared array s: the second call's writes race with the
// first call's final reads of s[0] unless a barrier separates them.
// Correct outcome: results equal the original's; if center and energy are fused
// vertically into one lane, the group has at least one barrier inserted.
#include <cstdio>
#include <cuda_runtime.h>

#define N 512
#define THREADS 128

__device__ float block_sum(float v) {
  __shared__ float s[128];
  s[threadIdx.x] = v;
  __syncthreads();
  for (int stride = 64; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
    __syncthreads();
  }
  return s[0];
}

__global__ void center(const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = x[i];
  float total = block_sum(v);
  y[i] = v - total * (1.0f / 128.0f);
}

__global__ void energy(const float* y, float* z) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = y[i];
  float e = block_sum(v * v);
  z[i] = v * e;
}

int main() {
  float h_x[N], h_y[N], h_z[N];
  for (int i = 0; i < N; ++i) h_x[i] = (float)((i * 37 + 11) % 101) - 50.0f;
  float *d_x, *d_y, *d_z;
  cudaMalloc(&d_x, N * sizeof(float));
  cudaMalloc(&d_y, N * sizeof(float));
  cudaMalloc(&d_z, N * sizeof(float));
  cudaMemcpy(d_x, h_x, N * sizeof(float), cudaMemcpyHostToDevice);

  center<<<N / THREADS, THREADS>>>(d_x, d_y);
  energy<<<N / THREADS, THREADS>>>(d_y, d_z);
  cudaDeviceSynchronize();

  cudaMemcpy(h_y, d_y, N * sizeof(float), cudaMemcpyDeviceToHost);
  cudaMemcpy(h_z, d_z, N * sizeof(float), cudaMemcpyDeviceToHost);
  double checksum = 0.0;
  for (int i = 0; i < N; ++i) checksum += (i % 3) * h_y[i] + 1e-3 * h_z[i];
  printf("checksum: %.6f\n", checksum);
  cudaFree(d_x);
  cudaFree(d_y);
  cudaFree(d_z);
  return 0;
}
