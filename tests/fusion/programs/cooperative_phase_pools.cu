// Three launches with global dependences between them: with --cooperative, one kernel of
// three phases, grid barriers between. Each phase reduces through a static shared array of
// its own (1 KB, 2 KB, 512 B): the phases hold one pool of the largest.
#include <cstdio>
#include <cuda_runtime.h>

#define N 8192
#define THREADS 256

__global__ void block_sums(const float* x, float* partial) {
  __shared__ float buf[THREADS];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  buf[threadIdx.x] = x[i];
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = buf[0];
}

__global__ void total(const float* partial, float* sum, int blocks) {
  __shared__ float acc[2 * THREADS];
  acc[threadIdx.x] = threadIdx.x < blocks ? partial[threadIdx.x] : 0.0f;
  acc[THREADS + threadIdx.x] = 0.0f;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) acc[threadIdx.x] += acc[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) sum[0] = acc[0] + acc[THREADS];
}

__global__ void scaled(const float* x, const float* sum, float* y) {
  __shared__ float inv[THREADS / 2];
  if (threadIdx.x < THREADS / 2) inv[threadIdx.x] = 1.0f / sum[0];
  __syncthreads();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = x[i] * inv[threadIdx.x / 2];
}

int main() {
  float h[N];
  for (int i = 0; i < N; ++i) h[i] = (float)(i % 17) + 0.25f;
  float *x, *partial, *sum, *y;
  cudaMalloc(&x, N * sizeof(float));
  cudaMalloc(&partial, (N / THREADS) * sizeof(float));
  cudaMalloc(&sum, sizeof(float));
  cudaMalloc(&y, N * sizeof(float));
  cudaMemcpy(x, h, sizeof h, cudaMemcpyHostToDevice);
  block_sums<<<N / THREADS, THREADS>>>(x, partial);
  total<<<1, THREADS>>>(partial, sum, N / THREADS);
  scaled<<<N / THREADS, THREADS>>>(x, sum, y);
  cudaMemcpy(h, y, sizeof h, cudaMemcpyDeviceToHost);
  double check = 0;
  for (int i = 0; i < N; ++i) check += h[i];
  printf("%.6f\n", check);
  cudaFree(x); cudaFree(partial); cudaFree(sum); cudaFree(y);
  return 0;
}
