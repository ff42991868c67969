// TVM-style output (restrict-qualified parameters, storage planned by the
// compiler) where one storage buffer holds two tensors whose lifetimes do not
// overlap: the element-wise `exp_kernel` result `T_exp` lives in storage 0
// until `divide_kernel` has read it; then `scale_bias_kernel` writes its
// result `T_add` into the same bytes. A row reduction feeds the element-wise
// kernels:
//   T_sum[r] = sum_c x[r, c]                     (row_sum_kernel, shared-memory tree)
//   T_exp[r, c] = 0.5 x[r, c]^2 + 1              (exp_kernel)
//   T_divide[r, c] = T_exp[r, c] / (|T_sum[r]| + 1) (divide_kernel)
//   T_add[r, c] = 2 T_divide[r, c] + bias[c]     (scale_bias_kernel)
// Each kernel promised nvcc, alone, that its pointers do not alias. Fused into
// one kernel, `T_exp` (written, then read) and `T_add` (written) point into
// the same bytes, and so do the producer and consumer pointers of `T_sum` and
// `T_divide`: those promises are false and the fused kernel must not keep
// them; `x` and `bias` are only read, and keep theirs.
//
// With -DREUSE_STORAGE=0 every tensor has storage of its own: then `T_add`
// keeps its promise too.
//
// 4 launches, grid ROWS, 256 threads per block (one block per row).
// Size macro (override with -D): ROWS.

#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#ifndef ROWS
#define ROWS 64
#endif
#ifndef REUSE_STORAGE
#define REUSE_STORAGE 1
#endif
#define COLS 256

#define CUDA_CHECK(call)                                                      \
  do {                                                                        \
    cudaError_t err_ = (call);                                                \
    if (err_ != cudaSuccess) {                                                \
      fprintf(stderr, "CUDA error at %s:%d: %s\n", __FILE__, __LINE__,        \
              cudaGetErrorString(err_));                                      \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

extern "C" __global__ void __launch_bounds__(256) row_sum_kernel(float* __restrict__ T_sum, float* __restrict__ x) {
  __shared__ float red_buf[256];
  red_buf[((int)threadIdx.x)] = x[((((int)blockIdx.x) * 256) + ((int)threadIdx.x))];
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (((int)threadIdx.x) < s) {
      red_buf[((int)threadIdx.x)] = (red_buf[((int)threadIdx.x)] + red_buf[(((int)threadIdx.x) + s)]);
    }
    __syncthreads();
  }
  if (((int)threadIdx.x) == 0) {
    T_sum[((int)blockIdx.x)] = red_buf[0];
  }
}

extern "C" __global__ void __launch_bounds__(256) exp_kernel(float* __restrict__ T_exp, float* __restrict__ x) {
  float v = x[((((int)blockIdx.x) * 256) + ((int)threadIdx.x))];
  T_exp[((((int)blockIdx.x) * 256) + ((int)threadIdx.x))] = ((v * v) * 5.000000e-01f) + 1.000000e+00f;
}

extern "C" __global__ void __launch_bounds__(256) divide_kernel(float* __restrict__ T_divide, float* __restrict__ T_exp, float* __restrict__ T_sum) {
  T_divide[((((int)blockIdx.x) * 256) + ((int)threadIdx.x))] =
      (T_exp[((((int)blockIdx.x) * 256) + ((int)threadIdx.x))] / (fabsf(T_sum[((int)blockIdx.x)]) + 1.000000e+00f));
}

extern "C" __global__ void __launch_bounds__(256) scale_bias_kernel(float* __restrict__ T_add, float* __restrict__ T_divide, float* __restrict__ bias) {
  T_add[((((int)blockIdx.x) * 256) + ((int)threadIdx.x))] =
      ((T_divide[((((int)blockIdx.x) * 256) + ((int)threadIdx.x))] * 2.000000e+00f) + bias[((int)threadIdx.x)]);
}

int main() {
  const size_t n = (size_t)ROWS * COLS;
  float* h_x = (float*)malloc(n * sizeof(float));
  float* h_bias = (float*)malloc(COLS * sizeof(float));
  float* h_out = (float*)malloc(n * sizeof(float));
  for (size_t i = 0; i < n; ++i) h_x[i] = (float)((int)((i * 37 + 11) % 97) - 48) / 64.0f;
  for (int c = 0; c < COLS; ++c) h_bias[c] = (float)(c % 13) / 8.0f;

  float *d_x, *d_bias;
  char *d_storage, *d_storage1, *d_storage2;
  CUDA_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_bias, COLS * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_storage, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_storage1, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_storage2, ROWS * sizeof(float)));
#if REUSE_STORAGE
  char* d_storage3 = d_storage;  // T_exp is dead once divide_kernel has read it
#else
  char* d_storage3;
  CUDA_CHECK(cudaMalloc(&d_storage3, n * sizeof(float)));
#endif
  CUDA_CHECK(cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_bias, h_bias, COLS * sizeof(float), cudaMemcpyHostToDevice));

  float* alloc = (float*)(d_storage2 + 0);   // T_sum
  float* alloc1 = (float*)(d_storage + 0);   // T_exp
  float* alloc2 = (float*)(d_storage1 + 0);  // T_divide
  float* alloc3 = (float*)(d_storage3 + 0);  // T_add
  row_sum_kernel<<<dim3(ROWS, 1, 1), dim3(256, 1, 1)>>>(alloc, d_x);
  exp_kernel<<<dim3(ROWS, 1, 1), dim3(256, 1, 1)>>>(alloc1, d_x);
  divide_kernel<<<dim3(ROWS, 1, 1), dim3(256, 1, 1)>>>(alloc2, alloc1, alloc);
  scale_bias_kernel<<<dim3(ROWS, 1, 1), dim3(256, 1, 1)>>>(alloc3, alloc2, d_bias);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaMemcpy(h_out, alloc3, n * sizeof(float), cudaMemcpyDeviceToHost));

  double max_err = 0.0, checksum = 0.0;
  int bad = 0;
  for (int r = 0; r < ROWS; ++r) {
    double sum = 0.0;
    for (int c = 0; c < COLS; ++c) sum += h_x[(size_t)r * COLS + c];
    for (int c = 0; c < COLS; ++c) {
      double v = h_x[(size_t)r * COLS + c];
      double ref = (0.5 * v * v + 1.0) / (fabs(sum) + 1.0) * 2.0 + h_bias[c];
      double got = h_out[(size_t)r * COLS + c];
      double err = fabs(got - ref);
      if (err > max_err) max_err = err;
      if (err > 1e-4 + 1e-4 * fabs(ref)) bad = 1;
      checksum += got;
    }
  }
  printf("max_abs_err: %g\n", max_err);
  printf("checksum: %.6f\n", checksum);
  printf("reference: %s\n", bad ? "MISMATCH" : "OK");
  CUDA_CHECK(cudaFree(d_x));
  CUDA_CHECK(cudaFree(d_bias));
  CUDA_CHECK(cudaFree(d_storage));
  CUDA_CHECK(cudaFree(d_storage1));
  CUDA_CHECK(cudaFree(d_storage2));
#if !REUSE_STORAGE
  CUDA_CHECK(cudaFree(d_storage3));
#endif
  free(h_x);
  free(h_bias);
  free(h_out);
  return bad;
}
