// A producer/consumer pair with a global dependence: every consumer thread
// reads the whole of the producer's output, so the pair must not be fused
// (there is no grid-wide barrier).
//   affine : y[i] = 3 * x[i] + 1
//   mix    : z[i] = sum_j y[j] * w(i, j),  w(i, j) = ((3i + 5j) mod 17) / 17 - 0.5
// 2 launches, 1-D grid, 256 threads per block.
//
// Size macro (override with -D): NUM_ELEMS.

#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#ifndef NUM_ELEMS
#define NUM_ELEMS 4096
#endif

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

__global__ void affine(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = 3.0f * x[i] + 1.0f;
  }
}

__global__ void mix(const float* y, float* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float acc = 0.0f;
    for (int j = 0; j < n; ++j) {
      float w = (float)((i * 3 + j * 5) % 17) / 17.0f - 0.5f;
      acc += y[j] * w;
    }
    z[i] = acc;
  }
}

int main() {
  const size_t bytes = sizeof(float) * NUM_ELEMS;
  float* hx = (float*)malloc(bytes);
  float* hz = (float*)malloc(bytes);
  float* hy = (float*)malloc(bytes);
  for (int i = 0; i < NUM_ELEMS; ++i) {
    hx[i] = (float)((i * 37 + 11) % 101) / 101.0f - 0.5f;
  }

  float *dx, *dy, *dz;
  CUDA_CHECK(cudaMalloc(&dx, bytes));
  CUDA_CHECK(cudaMalloc(&dy, bytes));
  CUDA_CHECK(cudaMalloc(&dz, bytes));
  CUDA_CHECK(cudaMemcpy(dx, hx, bytes, cudaMemcpyHostToDevice));

  int grid = (NUM_ELEMS + THREADS - 1) / THREADS;
  affine<<<grid, THREADS>>>(dx, dy, NUM_ELEMS);
  mix<<<grid, THREADS>>>(dy, dz, NUM_ELEMS);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());

  CUDA_CHECK(cudaMemcpy(hz, dz, bytes, cudaMemcpyDeviceToHost));

  for (int i = 0; i < NUM_ELEMS; ++i) hy[i] = 3.0f * hx[i] + 1.0f;
  double checksum = 0.0;
  double maxErr = 0.0;
  int ok = 1;
  for (int i = 0; i < NUM_ELEMS; ++i) {
    double ref = 0.0;
    for (int j = 0; j < NUM_ELEMS; ++j) {
      float w = (float)((i * 3 + j * 5) % 17) / 17.0f - 0.5f;
      ref += (double)hy[j] * (double)w;
    }
    double err = fabs((double)hz[i] - ref);
    if (err > maxErr) maxErr = err;
    if (!(err <= 1e-3 * (1.0 + fabs(ref)))) ok = 0;
    checksum += hz[i];
  }
  printf("max_abs_err: %.3e\n", maxErr);
  printf("checksum: %.6f\n", checksum);
  printf("reference: %s\n", ok ? "OK" : "MISMATCH");

  CUDA_CHECK(cudaFree(dx));
  CUDA_CHECK(cudaFree(dy));
  CUDA_CHECK(cudaFree(dz));
  free(hx);
  free(hy);
  free(hz);
  return ok ? 0 : 1;
}
