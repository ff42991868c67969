// A chain of four elementwise kernels on NUM_ELEMS floats (thread-level dependences):
//   a = 2 * x;  b = a + y;  c = max(b, 0);  d = c * c + 1
// 4 launches, 1-D grid, 256 threads per block, bounds-guarded.
//
// Size macro (override with -D): NUM_ELEMS.

#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#ifndef NUM_ELEMS
#define NUM_ELEMS (1 << 16)
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

__global__ void scale2(const float* x, float* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    a[i] = 2.0f * x[i];
  }
}

__global__ void add(const float* a, const float* y, float* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    b[i] = a[i] + y[i];
  }
}

__global__ void relu(const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    c[i] = fmaxf(b[i], 0.0f);
  }
}

__global__ void square_plus_one(const float* c, float* d, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    d[i] = c[i] * c[i] + 1.0f;
  }
}

int main() {
  const size_t bytes = sizeof(float) * NUM_ELEMS;
  float* hx = (float*)malloc(bytes);
  float* hy = (float*)malloc(bytes);
  float* hd = (float*)malloc(bytes);
  for (int i = 0; i < NUM_ELEMS; ++i) {
    hx[i] = (float)((i * 37 + 11) % 101) / 101.0f - 0.5f;
    hy[i] = (float)((i * 53 + 7) % 89) / 89.0f - 0.5f;
  }

  float *dx, *dy, *da, *db, *dc, *dd;
  CUDA_CHECK(cudaMalloc(&dx, bytes));
  CUDA_CHECK(cudaMalloc(&dy, bytes));
  CUDA_CHECK(cudaMalloc(&da, bytes));
  CUDA_CHECK(cudaMalloc(&db, bytes));
  CUDA_CHECK(cudaMalloc(&dc, bytes));
  CUDA_CHECK(cudaMalloc(&dd, bytes));
  CUDA_CHECK(cudaMemcpy(dx, hx, bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dy, hy, bytes, cudaMemcpyHostToDevice));

  int grid = (NUM_ELEMS + THREADS - 1) / THREADS;
  scale2<<<grid, THREADS>>>(dx, da, NUM_ELEMS);
  add<<<grid, THREADS>>>(da, dy, db, NUM_ELEMS);
  relu<<<grid, THREADS>>>(db, dc, NUM_ELEMS);
  square_plus_one<<<grid, THREADS>>>(dc, dd, NUM_ELEMS);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());

  CUDA_CHECK(cudaMemcpy(hd, dd, bytes, cudaMemcpyDeviceToHost));

  double checksum = 0.0;
  double maxErr = 0.0;
  int ok = 1;
  for (int i = 0; i < NUM_ELEMS; ++i) {
    float a = 2.0f * hx[i];
    float b = a + hy[i];
    float c = b > 0.0f ? b : 0.0f;
    float ref = c * c + 1.0f;
    double err = fabs((double)hd[i] - (double)ref);
    if (err > maxErr) maxErr = err;
    if (!(err <= 1e-6 + 1e-5 * fabs((double)ref))) ok = 0;
    checksum += hd[i];
  }
  printf("max_abs_err: %.3e\n", maxErr);
  printf("checksum: %.6f\n", checksum);
  printf("reference: %s\n", ok ? "OK" : "MISMATCH");

  CUDA_CHECK(cudaFree(dx));
  CUDA_CHECK(cudaFree(dy));
  CUDA_CHECK(cudaFree(da));
  CUDA_CHECK(cudaFree(db));
  CUDA_CHECK(cudaFree(dc));
  CUDA_CHECK(cudaFree(dd));
  free(hx);
  free(hy);
  free(hd);
  return ok ? 0 : 1;
}
