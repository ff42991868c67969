// Probe: a cudaMemcpy device-to-device between two launches that rewrites the
// buffer both read. affine reads x; x is reloaded from the device backup w;
// mul reads the reloaded x and affine's y.
// Correct outcome: affine and mul are NOT fused; the refusal reason mentions
// cudaMemcpy. Results equal the original's.
#include <cstdio>
#include <cuda_runtime.h>

#define N 320
#define THREADS 64

__global__ void affine(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i] + 1.0f;
}

__global__ void mul(const float* x, const float* y, float* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = x[i] * y[i];
}

int main() {
  float h_x[N], h_w[N], h_y[N], h_z[N];
  for (int i = 0; i < N; ++i) {
    h_x[i] = (float)((i * 37 + 11) % 101) - 50.0f;
    h_w[i] = (float)((i * 5 + 3) % 17) - 8.0f;
  }
  float *d_x, *d_w, *d_y, *d_z;
  cudaMalloc(&d_x, N * sizeof(float));
  cudaMalloc(&d_w, N * sizeof(float));
  cudaMalloc(&d_y, N * sizeof(float));
  cudaMalloc(&d_z, N * sizeof(float));
  cudaMemcpy(d_x, h_x, N * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(d_w, h_w, N * sizeof(float), cudaMemcpyHostToDevice);

  int grid = (N + THREADS - 1) / THREADS;
  affine<<<grid, THREADS>>>(d_x, d_y, N);
  cudaMemcpy(d_x, d_w, N * sizeof(float), cudaMemcpyDeviceToDevice);
  mul<<<grid, THREADS>>>(d_x, d_y, d_z, N);
  cudaDeviceSynchronize();

  cudaMemcpy(h_y, d_y, N * sizeof(float), cudaMemcpyDeviceToHost);
  cudaMemcpy(h_z, d_z, N * sizeof(float), cudaMemcpyDeviceToHost);
  double checksum = 0.0;
  for (int i = 0; i < N; ++i) checksum += h_y[i] + h_z[i];
  printf("checksum: %.6f\n", checksum);
  cudaFree(d_x);
  cudaFree(d_w);
  cudaFree(d_y);
  cudaFree(d_z);
  return 0;
}
