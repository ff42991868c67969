// Two independent kernels that both read one matrix A [ROWS x COLS] and write
// different outputs (no dependence between the launches, different code):
//   affine2d : B = A * 2 + 1   (2-D grid, 16 x 16 blocks)
//   square   : C = A * A       (1-D grid, 256 threads, flat index)
// 2 launches.
//
// Size macros (override with -D): ROWS, COLS. Any positive values (bounds-guarded).

#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#ifndef ROWS
#define ROWS 512
#endif
#ifndef COLS
#define COLS 512
#endif

#define TILE 16
#define THREADS 256

#define CUDA_CHECK(call)                                                      \
  do {                                                                        \
    cudaError_t err_ = (call);                                                \
    if (err_ != cudaSuccess) {                                                \
      fprintf(stderr, "CUDA error at %s:%d: %s\n", __FILE__, __LINE__,        \
              cudaGetErrorString(err_));                                      \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

__global__ void affine2d(const float* A, float* B, int m, int n) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < m && col < n) {
    B[row * n + col] = A[row * n + col] * 2.0f + 1.0f;
  }
}

__global__ void square(const float* A, float* C, int total) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < total) {
    C[i] = A[i] * A[i];
  }
}

int main() {
  const int count = ROWS * COLS;
  const size_t bytes = sizeof(float) * count;
  float* hA = (float*)malloc(bytes);
  float* hB = (float*)malloc(bytes);
  float* hC = (float*)malloc(bytes);
  for (int i = 0; i < count; ++i) {
    hA[i] = (float)((i * 37 + 11) % 101) / 101.0f - 0.5f;
  }

  float *dA, *dB, *dC;
  CUDA_CHECK(cudaMalloc(&dA, bytes));
  CUDA_CHECK(cudaMalloc(&dB, bytes));
  CUDA_CHECK(cudaMalloc(&dC, bytes));
  CUDA_CHECK(cudaMemcpy(dA, hA, bytes, cudaMemcpyHostToDevice));

  dim3 grid2d((COLS + TILE - 1) / TILE, (ROWS + TILE - 1) / TILE);
  dim3 block2d(TILE, TILE);
  int grid1d = (count + THREADS - 1) / THREADS;
  affine2d<<<grid2d, block2d>>>(dA, dB, ROWS, COLS);
  square<<<grid1d, THREADS>>>(dA, dC, count);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());

  CUDA_CHECK(cudaMemcpy(hB, dB, bytes, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(hC, dC, bytes, cudaMemcpyDeviceToHost));

  double checksum = 0.0;
  double maxErr = 0.0;
  int ok = 1;
  for (int i = 0; i < count; ++i) {
    float refB = hA[i] * 2.0f + 1.0f;
    float refC = hA[i] * hA[i];
    double eb = fabs((double)hB[i] - (double)refB);
    double ec = fabs((double)hC[i] - (double)refC);
    if (eb > maxErr) maxErr = eb;
    if (ec > maxErr) maxErr = ec;
    if (!(eb <= 1e-6 + 1e-5 * fabs((double)refB))) ok = 0;
    if (!(ec <= 1e-6 + 1e-5 * fabs((double)refC))) ok = 0;
    checksum += hB[i];
    checksum += hC[i];
  }
  printf("max_abs_err: %.3e\n", maxErr);
  printf("checksum: %.6f\n", checksum);
  printf("reference: %s\n", ok ? "OK" : "MISMATCH");

  CUDA_CHECK(cudaFree(dA));
  CUDA_CHECK(cudaFree(dB));
  CUDA_CHECK(cudaFree(dC));
  free(hA);
  free(hB);
  free(hC);
  return ok ? 0 : 1;
}
