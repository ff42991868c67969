// Probe: a cudaMemcpy2D device-to-device copy between two launches.
// scale writes the matrix X; cudaMemcpy2D copies X into the (padded) matrix Y;
// square (same launch shape as scale, element-wise) reads Y.
// Correct outcome: scale and square are NOT fused (the copy orders them);
// the refusal reason mentions cudaMemcpy2D. Results equal the original's.
#include <cstdio>
#include <cuda_runtime.h>

#define ROWS 8
#define COLS 64
#define PITCH 72  // Y rows are padded to 72 floats
#define THREADS 128

__global__ void scale(const float* in, float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = in[i] * 2.0f + 1.0f;
}

__global__ void square(const float* y, float* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    int r = i / COLS, c = i % COLS;
    float v = y[r * PITCH + c];
    z[i] = v * v;
  }
}

int main() {
  const int n = ROWS * COLS;
  float h_in[ROWS * COLS], h_x[ROWS * COLS], h_z[ROWS * COLS];
  for (int i = 0; i < n; ++i) h_in[i] = (float)((i * 37 + 11) % 101) - 50.0f;

  float *d_in, *d_x, *d_y, *d_z;
  cudaMalloc(&d_in, n * sizeof(float));
  cudaMalloc(&d_x, n * sizeof(float));
  cudaMalloc(&d_y, ROWS * PITCH * sizeof(float));
  cudaMalloc(&d_z, n * sizeof(float));
  cudaMemcpy(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemset(d_y, 0, ROWS * PITCH * sizeof(float));

  int grid = (n + THREADS - 1) / THREADS;
  scale<<<grid, THREADS>>>(d_in, d_x, n);
  cudaMemcpy2D(d_y, PITCH * sizeof(float), d_x, COLS * sizeof(float), COLS * sizeof(float), ROWS,
               cudaMemcpyDeviceToDevice);
  square<<<grid, THREADS>>>(d_y, d_z, n);
  cudaDeviceSynchronize();

  cudaMemcpy(h_x, d_x, n * sizeof(float), cudaMemcpyDeviceToHost);
  cudaMemcpy(h_z, d_z, n * sizeof(float), cudaMemcpyDeviceToHost);
  double checksum = 0.0;
  for (int i = 0; i < n; ++i) checksum += h_x[i] + h_z[i];
  printf("checksum: %.6f\n", checksum);
  cudaFree(d_in);
  cudaFree(d_x);
  cudaFree(d_y);
  cudaFree(d_z);
  return 0;
}
