// Probe: two kernels whose shared memory fits a block alone but not together
// under the default limit: `tile_shift` holds 40 KB of static shared memory,
// `window_flip` takes 16 KB of dynamic shared memory at launch. Fused into one
// kernel, a block needs 56 KB, over the 48 KB a launch gets by default: the
// launch fails on a GPU unless the program first raises the kernel's limit with
// cudaFuncSetAttribute(..., cudaFuncAttributeMaxDynamicSharedMemorySize, ...).
// Correct outcome: fused with that opt-in, or refused with the reason.
#include <cstdio>
#include <cuda_runtime.h>

#define BLOCKS 8
#define THREADS 256
#define PER_THREAD 40  // 40 floats x 256 threads = 40 KB
#define N (BLOCKS * THREADS)

__global__ void tile_shift(const float* a, float* out) {
  __shared__ float tile[THREADS * PER_THREAD];
  int i = blockIdx.x * THREADS + threadIdx.x;
  for (int k = 0; k < PER_THREAD; ++k) tile[k * THREADS + threadIdx.x] = a[i] * (float)(k + 1);
  __syncthreads();
  float s = 0.0f;
  for (int k = 0; k < PER_THREAD; ++k) s += tile[k * THREADS + (threadIdx.x + k) % THREADS];
  out[i] = s;
}

__global__ void window_flip(const float* b, float* out) {
  extern __shared__ float win[];
  int i = blockIdx.x * THREADS + threadIdx.x;
  for (int k = 0; k < 16; ++k) win[k * THREADS + threadIdx.x] = b[i] + (float)k;
  __syncthreads();
  out[i] = win[THREADS - 1 - threadIdx.x] - win[15 * THREADS + threadIdx.x];
}

int main() {
  float h_a[N], h_b[N], h_x[N], h_y[N];
  for (int i = 0; i < N; ++i) {
    h_a[i] = (float)((i * 29 + 3) % 61) / 8.0f;
    h_b[i] = (float)((i * 17 + 7) % 53) / 4.0f;
  }
  float *d_a, *d_b, *d_x, *d_y;
  cudaMalloc(&d_a, N * sizeof(float));
  cudaMalloc(&d_b, N * sizeof(float));
  cudaMalloc(&d_x, N * sizeof(float));
  cudaMalloc(&d_y, N * sizeof(float));
  cudaMemcpy(d_a, h_a, N * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(d_b, h_b, N * sizeof(float), cudaMemcpyHostToDevice);

  tile_shift<<<BLOCKS, THREADS>>>(d_a, d_x);
  window_flip<<<BLOCKS, THREADS, 16 * THREADS * sizeof(float)>>>(d_b, d_y);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    printf("launch failed: %s\n", cudaGetErrorString(err));
    return 1;
  }

  cudaMemcpy(h_x, d_x, N * sizeof(float), cudaMemcpyDeviceToHost);
  cudaMemcpy(h_y, d_y, N * sizeof(float), cudaMemcpyDeviceToHost);
  double checksum = 0.0;
  for (int i = 0; i < N; ++i) checksum += h_x[i] + 2.0 * h_y[i];
  printf("checksum: %.6f\n", checksum);
  cudaFree(d_a);
  cudaFree(d_b);
  cudaFree(d_x);
  cudaFree(d_y);
  return 0;
}
