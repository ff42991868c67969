// A helper inlined at two call sites: its launch expressions run for four launches, and
// rewriting them for the first two would change the other two.
#include <cstdio>
#define N 4096
__global__ void scale(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }
__global__ void shift(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1.0f; }
static inline __attribute__((always_inline)) void forward(float* d, int n) {
  scale<<<n / 256, 256>>>(d, n);
  shift<<<n / 256, 256>>>(d, n);
}
int main() {
  float *d, *e; cudaMalloc(&d, N * sizeof(float)); cudaMalloc(&e, N * sizeof(float));
  float h[N]; for (int i = 0; i < N; ++i) h[i] = (float)i;
  cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
  cudaMemcpy(e, h, sizeof h, cudaMemcpyHostToDevice);
  forward(d, N);
  forward(e, N / 2);
  cudaMemcpy(h, e, sizeof h, cudaMemcpyDeviceToHost);
  printf("%f %f\n", h[5], h[3000]);
  return 0;
}
