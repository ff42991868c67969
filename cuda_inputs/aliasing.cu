// Three kernels whose arguments point into ONE allocation d_buf of 3 * N
// floats (N = NUM_ELEMS), through host pointer arithmetic (d_buf + N, d_buf + 2 * N):
//   produce   (d_buf)                      : writes [0, N)
//   transform (d_buf + N, d_buf + 2 * N)   : reads [N, 2N), writes [2N, 3N)
//   combine   (d_buf, d_buf + 2 * N, d_out): reads [0, N) and [2N, 3N)
// produce and transform are independent (disjoint regions of the same
// buffer); combine depends on both. Region [N, 2N) is initialized by a
// cudaMemcpy from the host to offset N of d_buf.
// 3 launches, 1-D grid, 256 threads per block.
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

__global__ void produce(float* dst, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    dst[i] = (float)(i % 13) * 0.25f - 1.0f;
  }
}

__global__ void transform(const float* src, float* dst, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    dst[i] = src[i] * 0.5f + 2.0f;
  }
}

__global__ void combine(const float* a, const float* b, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = a[i] - b[i] * b[i];
  }
}

int main() {
  const size_t bytes = sizeof(float) * NUM_ELEMS;
  float* hin = (float*)malloc(bytes);
  float* hbuf = (float*)malloc(3 * bytes);
  float* hout = (float*)malloc(bytes);
  for (int i = 0; i < NUM_ELEMS; ++i) {
    hin[i] = (float)((i * 37 + 11) % 101) / 101.0f - 0.5f;
  }

  float* d_buf;
  float* d_out;
  CUDA_CHECK(cudaMalloc(&d_buf, 3 * bytes));
  CUDA_CHECK(cudaMalloc(&d_out, bytes));
  CUDA_CHECK(cudaMemcpy(d_buf + NUM_ELEMS, hin, bytes, cudaMemcpyHostToDevice));

  int grid = (NUM_ELEMS + THREADS - 1) / THREADS;
  produce<<<grid, THREADS>>>(d_buf, NUM_ELEMS);
  transform<<<grid, THREADS>>>(d_buf + NUM_ELEMS, d_buf + 2 * NUM_ELEMS, NUM_ELEMS);
  combine<<<grid, THREADS>>>(d_buf, d_buf + 2 * NUM_ELEMS, d_out, NUM_ELEMS);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());

  CUDA_CHECK(cudaMemcpy(hout, d_out, bytes, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(hbuf, d_buf, 3 * bytes, cudaMemcpyDeviceToHost));

  double checksum = 0.0;
  double maxErr = 0.0;
  int ok = 1;
  for (int i = 0; i < NUM_ELEMS; ++i) {
    float a = (float)(i % 13) * 0.25f - 1.0f;
    float b = hin[i] * 0.5f + 2.0f;
    float refOut = a - b * b;
    // the whole buffer: produced region, untouched input region, transformed region
    float refs[4] = {a, hin[i], b, refOut};
    float got[4] = {hbuf[i], hbuf[NUM_ELEMS + i], hbuf[2 * NUM_ELEMS + i], hout[i]};
    for (int k = 0; k < 4; ++k) {
      double err = fabs((double)got[k] - (double)refs[k]);
      if (err > maxErr) maxErr = err;
      if (!(err <= 1e-6 + 1e-5 * fabs((double)refs[k]))) ok = 0;
    }
    checksum += hout[i];
  }
  printf("max_abs_err: %.3e\n", maxErr);
  printf("checksum: %.6f\n", checksum);
  printf("reference: %s\n", ok ? "OK" : "MISMATCH");

  CUDA_CHECK(cudaFree(d_buf));
  CUDA_CHECK(cudaFree(d_out));
  free(hin);
  free(hbuf);
  free(hout);
  return ok ? 0 : 1;
}
