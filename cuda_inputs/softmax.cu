// Row softmax of X [ROWS x COLS] in four kernels, one block of 256 threads
// per row (block-level dependences: each block reads what the same block of
// the previous kernel wrote for its row):
//   row_max   : m[r] = max_j X[r][j]          (shared-memory tree reduction)
//   exp_sub   : E[r][j] = exp(X[r][j] - m[r])
//   row_sum   : s[r] = sum_j E[r][j]          (shared-memory tree reduction)
//   normalize : Y[r][j] = E[r][j] / s[r]
// Every kernel walks its row with a stride of blockDim.x, so COLS may be any
// positive value. THREADS must stay a power of two (tree reduction).
//
// Size macros (override with -D): ROWS, COLS.

#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#ifndef ROWS
#define ROWS 128
#endif
#ifndef COLS
#define COLS 512
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

__global__ void row_max(const float* x, float* mx, int cols) {
  __shared__ float sdata[THREADS];
  int row = blockIdx.x;
  int t = threadIdx.x;
  float m = -INFINITY;
  for (int j = t; j < cols; j += blockDim.x) {
    m = fmaxf(m, x[row * cols + j]);
  }
  sdata[t] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) {
      sdata[t] = fmaxf(sdata[t], sdata[t + s]);
    }
    __syncthreads();
  }
  if (t == 0) {
    mx[row] = sdata[0];
  }
}

__global__ void exp_sub(const float* x, const float* mx, float* e, int cols) {
  int row = blockIdx.x;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) {
    e[row * cols + j] = expf(x[row * cols + j] - mx[row]);
  }
}

__global__ void row_sum(const float* e, float* sum, int cols) {
  __shared__ float sdata[THREADS];
  int row = blockIdx.x;
  int t = threadIdx.x;
  float acc = 0.0f;
  for (int j = t; j < cols; j += blockDim.x) {
    acc += e[row * cols + j];
  }
  sdata[t] = acc;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) {
      sdata[t] += sdata[t + s];
    }
    __syncthreads();
  }
  if (t == 0) {
    sum[row] = sdata[0];
  }
}

__global__ void normalize(const float* e, const float* sum, float* y, int cols) {
  int row = blockIdx.x;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) {
    y[row * cols + j] = e[row * cols + j] / sum[row];
  }
}

int main() {
  const int count = ROWS * COLS;
  const size_t bytes = sizeof(float) * count;
  float* hx = (float*)malloc(bytes);
  float* hy = (float*)malloc(bytes);
  for (int i = 0; i < count; ++i) {
    hx[i] = ((float)((i * 37 + 11) % 101) / 101.0f - 0.5f) * 8.0f;
  }

  float *dx, *dmax, *de, *dsum, *dy;
  CUDA_CHECK(cudaMalloc(&dx, bytes));
  CUDA_CHECK(cudaMalloc(&dmax, sizeof(float) * ROWS));
  CUDA_CHECK(cudaMalloc(&de, bytes));
  CUDA_CHECK(cudaMalloc(&dsum, sizeof(float) * ROWS));
  CUDA_CHECK(cudaMalloc(&dy, bytes));
  CUDA_CHECK(cudaMemcpy(dx, hx, bytes, cudaMemcpyHostToDevice));

  row_max<<<ROWS, THREADS>>>(dx, dmax, COLS);
  exp_sub<<<ROWS, THREADS>>>(dx, dmax, de, COLS);
  row_sum<<<ROWS, THREADS>>>(de, dsum, COLS);
  normalize<<<ROWS, THREADS>>>(de, dsum, dy, COLS);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());

  CUDA_CHECK(cudaMemcpy(hy, dy, bytes, cudaMemcpyDeviceToHost));

  double checksum = 0.0;
  double maxErr = 0.0;
  int ok = 1;
  for (int r = 0; r < ROWS; ++r) {
    const float* xr = hx + r * COLS;
    double m = xr[0];
    for (int j = 1; j < COLS; ++j) m = xr[j] > m ? xr[j] : m;
    double s = 0.0;
    for (int j = 0; j < COLS; ++j) s += exp(xr[j] - m);
    for (int j = 0; j < COLS; ++j) {
      double ref = exp(xr[j] - m) / s;
      double err = fabs((double)hy[r * COLS + j] - ref);
      if (err > maxErr) maxErr = err;
      if (!(err <= 1e-6 + 1e-4 * ref)) ok = 0;
      checksum += hy[r * COLS + j];
    }
  }
  printf("max_abs_err: %.3e\n", maxErr);
  printf("checksum: %.6f\n", checksum);
  printf("reference: %s\n", ok ? "OK" : "MISMATCH");

  CUDA_CHECK(cudaFree(dx));
  CUDA_CHECK(cudaFree(dmax));
  CUDA_CHECK(cudaFree(de));
  CUDA_CHECK(cudaFree(dsum));
  CUDA_CHECK(cudaFree(dy));
  free(hx);
  free(hy);
  return ok ? 0 : 1;
}
