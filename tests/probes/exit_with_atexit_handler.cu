// Probe: an error check that exits between two launches, in a program whose atexit
// handler copies a device buffer back and prints it.
// scale writes y; the check exits when no argument is given (as the test runs it);
// report_partial, run by exit, prints y; shift writes z (both read x only).
// Correct outcome: scale and shift are NOT fused (the fused launch would stand where shift
// is, after the exit, and the handler would print y unwritten); the reason names atexit.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define N 1024
#define THREADS 256

static float* partial_results;  // what report_partial prints

static void report_partial() {
  static float h_y[N];
  cudaMemcpy(h_y, partial_results, N * sizeof(float), cudaMemcpyDeviceToHost);
  double checksum = 0.0;
  for (int i = 0; i < N; ++i) checksum += h_y[i] * (float)(i % 7 + 1);
  printf("partial checksum: %.4f\n", checksum);
}

__global__ void scale(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i] + 0.5f;
}

__global__ void shift(const float* x, float* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = x[i] - 1.0f;
}

int main(int argc, char** argv) {
  atexit(report_partial);
  static float h_x[N], h_z[N];
  for (int i = 0; i < N; ++i) h_x[i] = (float)((i * 17 + 3) % 23) - 11.0f;
  float *d_x, *d_y, *d_z;
  cudaMalloc(&d_x, N * sizeof(float));
  cudaMalloc(&d_y, N * sizeof(float));
  cudaMalloc(&d_z, N * sizeof(float));
  cudaMemcpy(d_x, h_x, N * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemset(d_y, 0, N * sizeof(float));
  partial_results = d_y;

  int grid = (N + THREADS - 1) / THREADS;
  scale<<<grid, THREADS>>>(d_x, d_y, N);
  if (argc < 2) {
    fprintf(stderr, "usage: %s steps (stopping after the first)\n", argv[0]);
    exit(0);
  }
  shift<<<grid, THREADS>>>(d_x, d_z, N);

  cudaMemcpy(h_z, d_z, N * sizeof(float), cudaMemcpyDeviceToHost);
  double checksum = 0.0;
  for (int i = 0; i < N; ++i) checksum += h_z[i];
  printf("checksum: %.4f\n", checksum);
  return 0;
}
