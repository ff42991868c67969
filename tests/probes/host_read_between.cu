// Probe: a host read (cudaMemcpy device-to-host) of a kernel's output between
// two launches. affine writes y; the host copies y back; refine updates y in
// place (element-wise). The host copy must see affine's y and not refine's.
// Correct outcome: affine and refine are NOT fused; the refusal reason mentions
// cudaMemcpy. Results (both copies of y) equal the original's.
#include <cstdio>
#include <cuda_runtime.h>

#define N 384
#define THREADS 128

#define CUDA_CHECK(call)                                                 \
  do {                                                                   \
    cudaError_t err_ = (call);                                           \
    if (err_ != cudaSuccess) {                                           \
      fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(err_));     \
      return 1;                                                          \
    }                                                                    \
  } while (0)

__global__ void affine(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i] + 1.0f;
}

__global__ void refine(float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = y[i] * y[i] - 3.0f;
}

int main() {
  float h_x[N], h_mid[N], h_y[N];
  for (int i = 0; i < N; ++i) h_x[i] = (float)((i * 37 + 11) % 101) - 50.0f;
  float *d_x, *d_y;
  CUDA_CHECK(cudaMalloc(&d_x, N * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_y, N * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(d_x, h_x, N * sizeof(float), cudaMemcpyHostToDevice));

  int grid = (N + THREADS - 1) / THREADS;
  affine<<<grid, THREADS>>>(d_x, d_y, N);
  CUDA_CHECK(cudaMemcpy(h_mid, d_y, N * sizeof(float), cudaMemcpyDeviceToHost));
  refine<<<grid, THREADS>>>(d_y, N);
  CUDA_CHECK(cudaDeviceSynchronize());

  CUDA_CHECK(cudaMemcpy(h_y, d_y, N * sizeof(float), cudaMemcpyDeviceToHost));
  double checksum = 0.0;
  for (int i = 0; i < N; ++i) checksum += h_mid[i] + h_y[i];
  printf("checksum: %.6f\n", checksum);
  cudaFree(d_x);
  cudaFree(d_y);
  return 0;
}
