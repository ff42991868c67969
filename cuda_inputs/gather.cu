// An elementwise producer followed by an indirect gather:
//   triple : y[i] = 3 * x[i]
//   gather : out[i] = y[idx[i]]
// idx is an int buffer filled on the host with the permutation
// idx[i] = (i * 7919 + 13) mod NUM_ELEMS (7919 is prime, so this is a permutation
// whenever NUM_ELEMS is not a multiple of 7919). The consumer's read index is not an
// affine function of the thread, so the dependence must be treated as global.
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

__global__ void triple(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = x[i] * 3.0f;
  }
}

__global__ void gather(const float* y, const int* idx, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = y[idx[i]];
  }
}

int main() {
  const size_t bytes = sizeof(float) * NUM_ELEMS;
  const size_t idxBytes = sizeof(int) * NUM_ELEMS;
  float* hx = (float*)malloc(bytes);
  float* hout = (float*)malloc(bytes);
  int* hidx = (int*)malloc(idxBytes);
  for (int i = 0; i < NUM_ELEMS; ++i) {
    hx[i] = (float)((i * 37 + 11) % 101) / 101.0f - 0.5f;
    hidx[i] = (int)(((long long)i * 7919 + 13) % NUM_ELEMS);
  }

  float *dx, *dy, *dout;
  int* didx;
  CUDA_CHECK(cudaMalloc(&dx, bytes));
  CUDA_CHECK(cudaMalloc(&dy, bytes));
  CUDA_CHECK(cudaMalloc(&dout, bytes));
  CUDA_CHECK(cudaMalloc(&didx, idxBytes));
  CUDA_CHECK(cudaMemcpy(dx, hx, bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(didx, hidx, idxBytes, cudaMemcpyHostToDevice));

  int grid = (NUM_ELEMS + THREADS - 1) / THREADS;
  triple<<<grid, THREADS>>>(dx, dy, NUM_ELEMS);
  gather<<<grid, THREADS>>>(dy, didx, dout, NUM_ELEMS);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());

  CUDA_CHECK(cudaMemcpy(hout, dout, bytes, cudaMemcpyDeviceToHost));

  double checksum = 0.0;
  double maxErr = 0.0;
  int ok = 1;
  for (int i = 0; i < NUM_ELEMS; ++i) {
    float ref = hx[hidx[i]] * 3.0f;
    double err = fabs((double)hout[i] - (double)ref);
    if (err > maxErr) maxErr = err;
    if (!(err <= 1e-6 + 1e-5 * fabs((double)ref))) ok = 0;
    checksum += hout[i];
  }
  printf("max_abs_err: %.3e\n", maxErr);
  printf("checksum: %.6f\n", checksum);
  printf("reference: %s\n", ok ? "OK" : "MISMATCH");

  CUDA_CHECK(cudaFree(dx));
  CUDA_CHECK(cudaFree(dy));
  CUDA_CHECK(cudaFree(dout));
  CUDA_CHECK(cudaFree(didx));
  free(hx);
  free(hout);
  free(hidx);
  return ok ? 0 : 1;
}
