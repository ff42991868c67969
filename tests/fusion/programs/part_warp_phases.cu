// A GRU output head as TVM writes it: a tiled matmul over 128-thread blocks, then a
// 16-thread warp reduction per output (a dot product over 16 lanes), then an activation.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define N_IN 16
#define N_OUT 29
#define ROWS 256

extern "C" __global__ void __launch_bounds__(128) gates_kernel(float* __restrict__ h, const float* __restrict__ x) {
  __shared__ float tile[128];
  int i = blockIdx.x * 128 + threadIdx.x;
  tile[threadIdx.x] = x[i];
  __syncthreads();
  float s = tile[threadIdx.x] + tile[(threadIdx.x + 1) & 127];
  h[i] = tanhf(s);
}

extern "C" __global__ void __launch_bounds__(16) head_kernel(float* __restrict__ out, const float* __restrict__ h,
                                                             const float* __restrict__ bias, const float* __restrict__ w) {
  float acc[1];
  float red_buf0[1];
  unsigned mask[1];
  float t0[1];
  acc[0] = 0.f;
  acc[0] = acc[0] + h[threadIdx.y] * w[threadIdx.y * N_OUT + blockIdx.x];
  red_buf0[0] = acc[0];
  mask[0] = __activemask();
  t0[0] = __shfl_down_sync(mask[0], red_buf0[0], 8, 32);
  red_buf0[0] = red_buf0[0] + t0[0];
  t0[0] = __shfl_down_sync(mask[0], red_buf0[0], 4, 32);
  red_buf0[0] = red_buf0[0] + t0[0];
  t0[0] = __shfl_down_sync(mask[0], red_buf0[0], 2, 32);
  red_buf0[0] = red_buf0[0] + t0[0];
  t0[0] = __shfl_down_sync(mask[0], red_buf0[0], 1, 32);
  red_buf0[0] = red_buf0[0] + t0[0];
  red_buf0[0] = __shfl_sync(mask[0], red_buf0[0], 0, 32);
  if (threadIdx.y == 0) {
    out[blockIdx.x] = red_buf0[0] + bias[blockIdx.x];
  }
}

extern "C" __global__ void __launch_bounds__(128) softmax_like_kernel(float* __restrict__ y, const float* __restrict__ out) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i < N_OUT) y[i] = out[i] * out[(i + 1) % N_OUT];
}

int main() {
  float *x, *h, *bias, *w, *out, *y;
  cudaMalloc(&x, ROWS * sizeof(float));
  cudaMalloc(&h, ROWS * sizeof(float));
  cudaMalloc(&bias, N_OUT * sizeof(float));
  cudaMalloc(&w, N_IN * N_OUT * sizeof(float));
  cudaMalloc(&out, N_OUT * sizeof(float));
  cudaMalloc(&y, N_OUT * sizeof(float));
  float hx[ROWS], hw[N_IN * N_OUT], hb[N_OUT];
  for (int i = 0; i < ROWS; ++i) hx[i] = (i % 13) * 0.1f - 0.5f;
  for (int i = 0; i < N_IN * N_OUT; ++i) hw[i] = (i % 7) * 0.25f - 0.75f;
  for (int i = 0; i < N_OUT; ++i) hb[i] = i * 0.01f;
  cudaMemcpy(x, hx, sizeof hx, cudaMemcpyHostToDevice);
  cudaMemcpy(w, hw, sizeof hw, cudaMemcpyHostToDevice);
  cudaMemcpy(bias, hb, sizeof hb, cudaMemcpyHostToDevice);
  gates_kernel<<<dim3(ROWS / 128), dim3(128)>>>(h, x);
  head_kernel<<<dim3(N_OUT), dim3(1, 16)>>>(out, h, bias, w);
  softmax_like_kernel<<<dim3(1), dim3(128)>>>(y, out);
  float hy[N_OUT];
  cudaMemcpy(hy, y, sizeof hy, cudaMemcpyDeviceToHost);
  for (int i = 0; i < N_OUT; ++i) printf("%d %.6f\n", i, hy[i]);
  return 0;
}
