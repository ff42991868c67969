// A 3-D box filter written as one 2-D launch per slice (a common way to port a 2-D
// kernel to volumes): the slices are independent, the loop issues one launch each.
#include <cstdio>
#include <cuda_runtime.h>

#define NX 64
#define NY 32
#define NZ 12

__global__ void blur_slice(float* __restrict__ out, const float* __restrict__ in, float weight) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y;
  int l = x > 0 ? x - 1 : x, r = x < NX - 1 ? x + 1 : x;
  out[y * NX + x] = weight * (in[y * NX + l] + in[y * NX + x] + in[y * NX + r]);
}

int main() {
  float *in, *out;
  cudaMalloc(&in, NX * NY * NZ * sizeof(float));
  cudaMalloc(&out, NX * NY * NZ * sizeof(float));
  static float h[NX * NY * NZ];
  for (int i = 0; i < NX * NY * NZ; ++i) h[i] = (i % 29) * 0.5f;
  cudaMemcpy(in, h, sizeof h, cudaMemcpyHostToDevice);
  for (int z = 0; z < NZ; ++z) {
    const float* src = in + z * NX * NY;
    float* dst = out + z * NX * NY;
    blur_slice<<<dim3(NX / 32, NY), dim3(32)>>>(dst, src, 1.0f / 3.0f);
  }
  cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
  double s = 0;
  for (int i = 0; i < NX * NY * NZ; ++i) s += h[i] * (1 + i % 5);
  printf("%.4f\n", s);
  return 0;
}
