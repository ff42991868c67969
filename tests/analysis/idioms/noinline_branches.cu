// Device functions clang does not inline, with branches and a switch (block operands).
#include <cstdio>
#define N 4096
__device__ __noinline__ void update(float* x, int i, int n) { if (i < n) { if (x[i] > 10.0f) x[i] -= 10.0f; else x[i] += 1.0f; } }
__device__ __noinline__ int pick(int i, int n) { switch (i & 3) { case 0: return i; case 1: return n - 1 - i; default: return (i * 7) % n; } }
__global__ void a(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; update(x, i, n); }
__global__ void b(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) { float s = 0; for (int k = 0; k < 4; ++k) s += x[pick(i + k, n) % n]; y[i] = s; } }
int main() {
  float *d, *e; cudaMalloc(&d, N * sizeof(float)); cudaMalloc(&e, N * sizeof(float));
  float h[N]; for (int i = 0; i < N; ++i) h[i] = (float)(i % 37);
  cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
  a<<<N / 256, 256>>>(d, N);
  b<<<N / 256, 256>>>(d, e, N);
  a<<<N / 256, 256>>>(e, N);
  cudaMemcpy(h, e, sizeof h, cudaMemcpyDeviceToHost);
  printf("%f %f\n", h[3], h[90]);
  return 0;
}
