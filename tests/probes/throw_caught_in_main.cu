// Probe: a check that throws between two launches, caught in main, whose handler copies
// a device buffer back and prints it.
// run: blend writes y; require(stages > 1, ...) throws when no argument is given (as the
// test runs it); main's catch prints y; square writes z (both read x only).
// Correct outcome: blend and square are NOT fused (the fused launch would stand where
// square is, after the throw, and the catch would print y unwritten); the reason names the try.
#include <cstdio>
#include <stdexcept>
#include <cuda_runtime.h>

#define N 768
#define THREADS 128

static float* partial_results;  // what main's catch prints

__global__ void blend(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 0.25f * x[i] + 3.0f;
}

__global__ void square(const float* x, float* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = x[i] * x[i];
}

static void require(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(what);
}

static double checksum_of(const float* d, int n) {
  static float h[N];
  cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost);
  double s = 0.0;
  for (int i = 0; i < n; ++i) s += h[i] * (float)(i % 5 + 1);
  return s;
}

__attribute__((noinline)) static void run(int stages) {
  static float h_x[N];
  for (int i = 0; i < N; ++i) h_x[i] = (float)((i * 29 + 5) % 31) - 15.0f;
  float *d_x, *d_y, *d_z;
  cudaMalloc(&d_x, N * sizeof(float));
  cudaMalloc(&d_y, N * sizeof(float));
  cudaMalloc(&d_z, N * sizeof(float));
  cudaMemcpy(d_x, h_x, N * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemset(d_y, 0, N * sizeof(float));
  partial_results = d_y;
  int grid = (N + THREADS - 1) / THREADS;
  blend<<<grid, THREADS>>>(d_x, d_y, N);
  require(stages > 1, "no further stage requested");
  square<<<grid, THREADS>>>(d_x, d_z, N);
  printf("checksum: %.4f\n", checksum_of(d_z, N));
}

int main(int argc, char** argv) {
  (void)argv;
  try {
    run(argc);
  } catch (const std::exception& e) {
    printf("stopped (%s); partial checksum: %.4f\n", e.what(), checksum_of(partial_results, N));
  }
  return 0;
}
