// Probe: two overloads of one kernel name with different bodies,
// op(float*, int, int) and op(float*, float, int), launched one after another
// on different buffers with the same shape (independent).
// Correct outcome: results equal the original's; if the launches are fused, the
// optimized program carries two different fragment functions, one per overload body.
#include <cstdio>
#include <cuda_runtime.h>

#define N 384
#define THREADS 128

__global__ void op(float* a, int k, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = a[i] * (float)k + 1.0f;
}

__global__ void op(float* a, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = a[i] * s - 2.0f;
}

int main() {
  float h_a[N], h_b[N];
  for (int i = 0; i < N; ++i) {
    h_a[i] = (float)((i * 37 + 11) % 101) - 50.0f;
    h_b[i] = (float)((i * 17 + 3) % 61) - 30.0f;
  }
  float *d_a, *d_b;
  cudaMalloc(&d_a, N * sizeof(float));
  cudaMalloc(&d_b, N * sizeof(float));
  cudaMemcpy(d_a, h_a, N * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(d_b, h_b, N * sizeof(float), cudaMemcpyHostToDevice);

  int grid = (N + THREADS - 1) / THREADS;
  op<<<grid, THREADS>>>(d_a, 3, N);
  op<<<grid, THREADS>>>(d_b, 0.5f, N);
  cudaDeviceSynchronize();

  cudaMemcpy(h_a, d_a, N * sizeof(float), cudaMemcpyDeviceToHost);
  cudaMemcpy(h_b, d_b, N * sizeof(float), cudaMemcpyDeviceToHost);
  double checksum = 0.0;
  for (int i = 0; i < N; ++i) checksum += h_a[i] + 3.0 * h_b[i];
  printf("checksum: %.6f\n", checksum);
  cudaFree(d_a);
  cudaFree(d_b);
  return 0;
}
