// Sizes known only when the program runs, as hand-written benchmarks read them: the vector
// length n, the length m of the second pass (n when not given) and the number of
// elimination sweeps come from the command line, so every launch's grid is computed at run
// time and every buffer is allocated at run time.
//   x = 2 * x over n elements, then x = x + 1 over m elements (one grid when m's is n's);
//   y[i] = x[i + 1] - x[i]  (reads a neighbour: a dependence between threads);
//   sweep k of an elimination: rows k+1 .. n-1 of a take -0.5 * a[k], then are scaled.
// 3 + 2 * SWEEPS launches, 1-D grids of 256 and 128 threads per block, bounds-guarded.
//
// Usage: run_time_sizes [n [m [sweeps]]], defaults 4096, n, 8; 16 <= n, sweeps < n.

#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#define CUDA_CHECK(call)                                                      \
  do {                                                                        \
    cudaError_t err_ = (call);                                                \
    if (err_ != cudaSuccess) {                                                \
      fprintf(stderr, "CUDA error at %s:%d: %s\n", __FILE__, __LINE__,        \
              cudaGetErrorString(err_));                                      \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

__global__ void scale(float* x, int n, float s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}

__global__ void offset(float* x, int n, float c) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += c;
}

__global__ void neighbour(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i + 1 < n) y[i] = x[i + 1] - x[i];
}

__global__ void eliminate(float* a, int n, int k) {
  int row = k + 1 + blockIdx.x * blockDim.x + threadIdx.x;
  if (row < n) a[row] -= 0.5f * a[k];
}

__global__ void normalise(float* a, int n, int k) {
  int row = k + 1 + blockIdx.x * blockDim.x + threadIdx.x;
  if (row < n) a[row] *= 0.75f;
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 4096;
  int m = argc > 2 ? atoi(argv[2]) : n;
  int sweeps = argc > 3 ? atoi(argv[3]) : 8;
  if (n < 16 || m < 1 || m > n || sweeps < 0 || sweeps >= n) {
    fprintf(stderr, "usage: %s [n [m [sweeps]]] with 16 <= n, 1 <= m <= n, 0 <= sweeps < n\n", argv[0]);
    return 2;
  }
  const size_t bytes = sizeof(float) * n;
  float* hx = (float*)malloc(bytes);
  float* ha = (float*)malloc(bytes);
  float* ox = (float*)malloc(bytes);
  float* oy = (float*)malloc(bytes);
  float* oa = (float*)malloc(bytes);
  for (int i = 0; i < n; ++i) {
    hx[i] = (float)((i * 37 + 11) % 101) / 101.0f - 0.5f;
    ha[i] = (float)((i * 53 + 7) % 89) / 89.0f - 0.5f;
  }

  float *x, *y, *a;
  CUDA_CHECK(cudaMalloc(&x, bytes));
  CUDA_CHECK(cudaMalloc(&y, bytes));
  CUDA_CHECK(cudaMalloc(&a, bytes));
  CUDA_CHECK(cudaMemcpy(x, hx, bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(a, ha, bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(y, 0, bytes));

  int blocks = (n + 255) / 256;
  scale<<<blocks, 256>>>(x, n, 2.0f);
  offset<<<(m + 255) / 256, 256>>>(x, m, 1.0f);
  neighbour<<<blocks, 256>>>(x, y, n);
  for (int k = 0; k < sweeps; ++k) {
    int rows = n - k - 1;
    eliminate<<<(rows + 127) / 128, 128>>>(a, n, k);
    normalise<<<(rows + 127) / 128, 128>>>(a, n, k);
  }
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());

  CUDA_CHECK(cudaMemcpy(ox, x, bytes, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(oy, y, bytes, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(oa, a, bytes, cudaMemcpyDeviceToHost));

  // the reference, in the order the launches run
  for (int i = 0; i < n; ++i) hx[i] *= 2.0f;
  for (int i = 0; i < m; ++i) hx[i] += 1.0f;
  for (int k = 0; k < sweeps; ++k) {
    for (int row = k + 1; row < n; ++row) ha[row] -= 0.5f * ha[k];
    for (int row = k + 1; row < n; ++row) ha[row] *= 0.75f;
  }
  double checksum = 0.0;
  double maxErr = 0.0;
  int ok = 1;
  for (int i = 0; i < n; ++i) {
    double refY = i + 1 < n ? (double)(hx[i + 1] - hx[i]) : 0.0;
    double errs[3] = {fabs((double)ox[i] - hx[i]), fabs((double)oy[i] - refY), fabs((double)oa[i] - ha[i])};
    double refs[3] = {fabs((double)hx[i]), fabs(refY), fabs((double)ha[i])};
    for (int j = 0; j < 3; ++j) {
      if (errs[j] > maxErr) maxErr = errs[j];
      if (!(errs[j] <= 1e-6 + 1e-5 * refs[j])) ok = 0;
    }
    checksum += (double)ox[i] + oy[i] + oa[i];
  }
  printf("max_abs_err: %.3e\n", maxErr);
  printf("checksum: %.6f\n", checksum);
  printf("reference: %s\n", ok ? "OK" : "MISMATCH");

  CUDA_CHECK(cudaFree(x));
  CUDA_CHECK(cudaFree(y));
  CUDA_CHECK(cudaFree(a));
  free(hx);
  free(ha);
  free(ox);
  free(oy);
  free(oa);
  return ok ? 0 : 1;
}
