// A kernel with 56 KB of dynamic shared memory, over the 48 KB a launch gets by default:
// the program opts in for its own kernel with cudaFuncSetAttribute. The next kernel reads
// what other blocks wrote (a global dependence), so with --cooperative the two become
// phases of one cooperative kernel, which needs an opt-in of its own for the same size:
// a GPU rejects the cooperative launch without it (and the fallback would run unreported).
#include <cstdio>
#include <cuda_runtime.h>

#define BLOCKS 8
#define THREADS 256
#define PER_THREAD 56  // 56 floats x 256 threads = 56 KB
#define DYNAMIC_BYTES (PER_THREAD * THREADS * sizeof(float))
#define N (BLOCKS * THREADS)

__global__ void window_sum(const float* a, float* partial) {
  extern __shared__ float window[];
  int i = blockIdx.x * THREADS + threadIdx.x;
  for (int k = 0; k < PER_THREAD; ++k) window[k * THREADS + threadIdx.x] = a[i] * (float)(k + 1);
  __syncthreads();
  float s = 0.0f;  // the window of a neighbouring thread: the block shares it
  for (int k = 0; k < PER_THREAD; ++k) s += window[k * THREADS + (threadIdx.x + k) % THREADS];
  partial[i] = s;
}

__global__ void next_block_diff(const float* partial, float* out) {
  int i = blockIdx.x * THREADS + threadIdx.x;
  out[i] = partial[(i + THREADS) % N] - partial[i];  // another block's value
}

int main() {
  static float h_a[N], h_out[N];
  for (int i = 0; i < N; ++i) h_a[i] = (float)((i * 29 + 3) % 61) / 8.0f;
  float *d_a, *d_partial, *d_out;
  cudaMalloc(&d_a, N * sizeof(float));
  cudaMalloc(&d_partial, N * sizeof(float));
  cudaMalloc(&d_out, N * sizeof(float));
  cudaMemcpy(d_a, h_a, N * sizeof(float), cudaMemcpyHostToDevice);

  cudaFuncSetAttribute(window_sum, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)DYNAMIC_BYTES);
  window_sum<<<BLOCKS, THREADS, DYNAMIC_BYTES>>>(d_a, d_partial);
  next_block_diff<<<BLOCKS, THREADS>>>(d_partial, d_out);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    printf("launch failed: %s\n", cudaGetErrorString(err));
    return 1;
  }

  cudaMemcpy(h_out, d_out, N * sizeof(float), cudaMemcpyDeviceToHost);
  double checksum = 0.0;
  for (int i = 0; i < N; ++i) checksum += h_out[i] * (double)(i % 7 + 1);
  printf("checksum: %.6f\n", checksum);
  cudaFree(d_a);
  cudaFree(d_partial);
  cudaFree(d_out);
  return 0;
}
