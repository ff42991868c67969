// The same helper also run by an atexit handler: its launches stay as written.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#define N 1024
#define T 256
__global__ void inc(float* d, int n) { int i = blockIdx.x*blockDim.x+threadIdx.x; if (i < n) d[i] = d[i] + 1.0f; }
__global__ void dbl(float* d, int n) { int i = blockIdx.x*blockDim.x+threadIdx.x; if (i < n) d[i] = d[i] * 2.0f; }
__global__ void sq(float* d, int n) { int i = blockIdx.x*blockDim.x+threadIdx.x; if (i < n) d[i] = d[i] * d[i] - 3.0f; }
__global__ void addto(float* d, const float* s, int n) { int i = blockIdx.x*blockDim.x+threadIdx.x; if (i < n) d[i] = d[i] + s[i]; }
static void init(float* h, int n, int seed) { for (int i = 0; i < n; ++i) h[i] = (float)((i * 37 + seed) % 101) / 50.0f - 1.0f; }
static double sum(const float* h, int n) { double s = 0; for (int i = 0; i < n; ++i) s += h[i] * (i % 7 + 1); return s; }
static void step(float* d, const float* view, int n) {
  inc<<<(n + T - 1) / T, T>>>(d, n);
  cudaDeviceSynchronize();
  printf("after inc: %f\n", view[5]);
  dbl<<<(n + T - 1) / T, T>>>(d, n);
}
static float* g_m; static float* g_md;
static void at_end() { step(g_md, g_m, N); cudaDeviceSynchronize(); printf("m: %f\n", sum(g_m, N)); }
int main() {
  float h[N]; init(h, N, 3);
  float* d; cudaMalloc(&d, N * sizeof(float));
  cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
  cudaHostAlloc((void**)&g_m, N * sizeof(float), cudaHostAllocMapped);
  cudaHostGetDevicePointer((void**)&g_md, g_m, 0);
  for (int i = 0; i < N; ++i) g_m[i] = h[i];
  atexit(at_end);
  step(d, h, N);
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  printf("%f\n", sum(h, N));
  return 0;
}
