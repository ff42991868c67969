// Ping-pong and per-layer buffers held in arrays of device pointers: each element is its own
// allocation (pair[0], pair[1]; bufs[b] in a loop), the first element of an array tracked.
#include <cstdio>
#define N 4096
#define NB 3
__global__ void fill(float* x, float v, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = v + i; }
__global__ void axpy(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += 2.0f * x[i]; }
int main() {
  float* bufs[NB];
  for (int b = 0; b < NB; ++b) cudaMalloc(&bufs[b], N * sizeof(float));
  float* pair[2];
  cudaMalloc((void**)&pair[0], N * sizeof(float));
  cudaMalloc((void**)&pair[1], N * sizeof(float));
  fill<<<N / 256, 256>>>(pair[0], 1.0f, N);
  fill<<<N / 256, 256>>>(pair[1], 2.0f, N);
  axpy<<<N / 256, 256>>>(pair[0], pair[1], N);
  for (int b = 0; b < NB; ++b) fill<<<N / 256, 256>>>(bufs[b], (float)b, N);
  axpy<<<N / 256, 256>>>(bufs[0], bufs[2], N);
  float h[N], g[N];
  cudaMemcpy(h, pair[1], sizeof h, cudaMemcpyDeviceToHost);
  cudaMemcpy(g, bufs[2], sizeof g, cudaMemcpyDeviceToHost);
  printf("%f %f\n", h[9], g[9]);
  for (int b = 0; b < NB; ++b) cudaFree(bufs[b]);
  cudaFree(pair[0]); cudaFree(pair[1]);
  return 0;
}
