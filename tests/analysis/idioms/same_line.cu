// Two launches of one kernel written on one line: each statement is matched to its own
// launch expression, in the order they are written.
#include <cstdio>
#define N 4096
__global__ void scale(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }
__global__ void shift(float* x, float v, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += v; }
int main() {
  float* d; cudaMalloc(&d, N * sizeof(float));
  float h[N]; for (int i = 0; i < N; ++i) h[i] = (float)i;
  cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
  scale<<<N / 256, 256>>>(d, N);
  shift<<<N / 256, 256>>>(d, 1.0f, N); shift<<<N / 256, 256>>>(d, 5.0f, N);
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  printf("%f\n", h[5]);
  return 0;
}
