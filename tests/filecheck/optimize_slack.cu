// RUN: sirius optimize %s -o /dev/null
// `produce` -> `total` is a global dependence: two time steps. `scale` is
// independent of both, so isl's schedule places it on step 0 beside
// `produce`, but it cannot share a launch with it (it has a barrier and a
// smaller block). Within its slack it may also run on step 1, where it joins
// `total`: 3 launches become 2.
#include <cuda_runtime.h>

__global__ void produce(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}

__global__ void total(float* z, const float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float acc = 0.0f;
    for (int j = 0; j < n; ++j) acc += y[j];
    z[i] = acc;
  }
}

__global__ void scale(float* w) {
  __shared__ float tile[128];
  tile[threadIdx.x] = w[blockIdx.x * 128 + threadIdx.x];
  __syncthreads();
  w[blockIdx.x * 128 + threadIdx.x] = 0.5f * tile[127 - threadIdx.x];
}

int main() {
  float *x, *y, *z, *w;
  cudaMalloc(&x, 1024 * sizeof(float));
  cudaMalloc(&y, 1024 * sizeof(float));
  cudaMalloc(&z, 1024 * sizeof(float));
  cudaMalloc(&w, 512 * sizeof(float));
  cudaMemset(x, 0, 1024 * sizeof(float));
  cudaMemset(w, 0, 512 * sizeof(float));
  produce<<<4, 256>>>(y, x, 1024);
  total<<<8, 128>>>(z, y, 1024);
  scale<<<4, 128>>>(w);
  cudaDeviceSynchronize();
  return 0;
}

// CHECK:      launches per run: 3 -> 2
// CHECK:      (region 0, step 1): horizontal, 0 barriers inserted: total (line 39) | scale (line 40)
// CHECK:      not fused: produce (line 38), total (line 39): different launch configurations
