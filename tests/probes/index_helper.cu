// Probe: kernels that compute their global index in a __device__ helper
// (gid() reads blockIdx/threadIdx/blockDim itself, not through parameters).
// scale_a runs on 4 blocks over a, square_b on 2 blocks over b: different grids,
// independent, so they could run side by side in different blocks of one launch;
// there gid() must still see each kernel's own block index.
// Correct outcome: results equal the original's (fused correctly or refused with a reason).
#include <cstdio>
#include <cuda_runtime.h>

#define NA 512
#define NB 256
#define THREADS 128

__device__ int gid() { return blockIdx.x * blockDim.x + threadIdx.x; }

__global__ void scale_a(float* a, int n) {
  int i = gid();
  if (i < n) a[i] = a[i] * 2.0f + 1.0f;
}

__global__ void square_b(float* b, int n) {
  int i = gid();
  if (i < n) b[i] = b[i] * b[i];
}

int main() {
  float h_a[NA], h_b[NB];
  for (int i = 0; i < NA; ++i) h_a[i] = (float)((i * 37 + 11) % 101) - 50.0f;
  for (int i = 0; i < NB; ++i) h_b[i] = (float)((i * 13 + 5) % 23) - 11.0f;
  float *d_a, *d_b;
  cudaMalloc(&d_a, NA * sizeof(float));
  cudaMalloc(&d_b, NB * sizeof(float));
  cudaMemcpy(d_a, h_a, NA * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(d_b, h_b, NB * sizeof(float), cudaMemcpyHostToDevice);

  scale_a<<<NA / THREADS, THREADS>>>(d_a, NA);
  square_b<<<NB / THREADS, THREADS>>>(d_b, NB);
  cudaDeviceSynchronize();

  cudaMemcpy(h_a, d_a, NA * sizeof(float), cudaMemcpyDeviceToHost);
  cudaMemcpy(h_b, d_b, NB * sizeof(float), cudaMemcpyDeviceToHost);
  double checksum = 0.0;
  for (int i = 0; i < NA; ++i) checksum += h_a[i];
  for (int i = 0; i < NB; ++i) checksum += 3.0 * h_b[i];
  printf("checksum: %.6f\n", checksum);
  cudaFree(d_a);
  cudaFree(d_b);
  return 0;
}
