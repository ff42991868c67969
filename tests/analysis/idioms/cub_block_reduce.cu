// A block sum with CUB (cub::BlockReduce), as reduction benchmarks write it.
#include <cstdio>
#include <cub/cub.cuh>
#define N 4096
__global__ void block_sum(const float* x, float* out, int n) {
  typedef cub::BlockReduce<float, 256> Reduce;
  __shared__ typename Reduce::TempStorage tmp;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? x[i] : 0.0f;
  float s = Reduce(tmp).Sum(v);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}
__global__ void scale(float* out, int m) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < m) out[i] *= 0.5f; }
int main() {
  float *x, *o; cudaMalloc(&x, N * sizeof(float)); cudaMalloc(&o, 16 * sizeof(float));
  float h[N]; for (int i = 0; i < N; ++i) h[i] = 1.0f;
  cudaMemcpy(x, h, sizeof h, cudaMemcpyHostToDevice);
  block_sum<<<16, 256>>>(x, o, N);
  scale<<<1, 16>>>(o, 16);
  cudaMemcpy(h, o, 16 * sizeof(float), cudaMemcpyDeviceToHost);
  printf("%f\n", h[0]);
  return 0;
}
