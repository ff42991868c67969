// A kernel whose out-of-range threads return early and whose in-range
// threads then reach a __syncthreads(), followed by an elementwise consumer:
//   shift_add : y[i] = x[i] + (t > 0 ? x[i - 1] : 0)  through shared memory,
//               t = threadIdx.x (the neighbour is taken inside the block only)
//   double_it : z[i] = 2 * y[i]
// n is NOT a multiple of the block size, so the last block of shift_add has
// threads that exit before the barrier. In the original program that is
// harmless (exited threads do not hold back the barrier); a fused kernel in
// which these threads do not exit must keep them away from a barrier they
// would otherwise mismatch. Thread t reads s[t - 1] only for t > 0, written
// by thread t - 1 whose global index is i - 1 < n, so every read shared
// value was written.
// 2 launches, 1-D grid, 256 threads per block (fixed: the shared array size).
//
// Size macro (override with -D): NUM_ELEMS (default 1000).

#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#ifndef NUM_ELEMS
#define NUM_ELEMS 1000
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

__global__ void shift_add(const float* x, float* y, int n) {
  __shared__ float s[THREADS];
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  s[t] = x[i];
  __syncthreads();
  y[i] = s[t] + (t > 0 ? s[t - 1] : 0.0f);
}

__global__ void double_it(const float* y, float* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    z[i] = y[i] * 2.0f;
  }
}

int main() {
  const size_t bytes = sizeof(float) * NUM_ELEMS;
  float* hx = (float*)malloc(bytes);
  float* hz = (float*)malloc(bytes);
  for (int i = 0; i < NUM_ELEMS; ++i) {
    hx[i] = (float)((i * 37 + 11) % 101) / 101.0f - 0.5f;
  }

  float *dx, *dy, *dz;
  CUDA_CHECK(cudaMalloc(&dx, bytes));
  CUDA_CHECK(cudaMalloc(&dy, bytes));
  CUDA_CHECK(cudaMalloc(&dz, bytes));
  CUDA_CHECK(cudaMemcpy(dx, hx, bytes, cudaMemcpyHostToDevice));

  int grid = (NUM_ELEMS + THREADS - 1) / THREADS;
  shift_add<<<grid, THREADS>>>(dx, dy, NUM_ELEMS);
  double_it<<<grid, THREADS>>>(dy, dz, NUM_ELEMS);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());

  CUDA_CHECK(cudaMemcpy(hz, dz, bytes, cudaMemcpyDeviceToHost));

  double checksum = 0.0;
  double maxErr = 0.0;
  int ok = 1;
  for (int i = 0; i < NUM_ELEMS; ++i) {
    float left = (i % THREADS) > 0 ? hx[i - 1] : 0.0f;
    float ref = (hx[i] + left) * 2.0f;
    double err = fabs((double)hz[i] - (double)ref);
    if (err > maxErr) maxErr = err;
    if (!(err <= 1e-6 + 1e-5 * fabs((double)ref))) ok = 0;
    checksum += hz[i];
  }
  printf("max_abs_err: %.3e\n", maxErr);
  printf("checksum: %.6f\n", checksum);
  printf("reference: %s\n", ok ? "OK" : "MISMATCH");

  CUDA_CHECK(cudaFree(dx));
  CUDA_CHECK(cudaFree(dy));
  CUDA_CHECK(cudaFree(dz));
  free(hx);
  free(hz);
  return ok ? 0 : 1;
}
