// An element of an array of device pointers stored through a run-time index (p[k] = q) may
// be the first one: p[0] is unknown from then on, never taken for the allocation made first.
#include <cstdio>
#include <cstdlib>
#define N 4096
__global__ void shift_read(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i + 1 < n) y[i] = x[i + 1] * 2.0f; }
__global__ void bump(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1.0f; }
int main(int argc, char** argv) {
  float* p[2];
  cudaMalloc((void**)&p[0], N * sizeof(float));
  cudaMalloc((void**)&p[1], N * sizeof(float));
  float* q; cudaMalloc(&q, N * sizeof(float));
  float* out; cudaMalloc(&out, N * sizeof(float));
  float h[N]; for (int i = 0; i < N; ++i) h[i] = (float)i;
  cudaMemcpy(q, h, sizeof h, cudaMemcpyHostToDevice);
  cudaMemcpy(p[0], h, sizeof h, cudaMemcpyHostToDevice);
  int k = argc - 1;
  p[k] = q;   /* with no arguments, p[0] is q from here on */
  bump<<<N / 256, 256>>>(q, N);
  shift_read<<<N / 256, 256>>>(p[0], out, N);
  cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
  printf("%f %f\n", h[0], h[255]);
  return 0;
}
