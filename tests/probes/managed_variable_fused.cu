// Probe: __managed__ variables (clang-22 ignores the attribute in CUDA mode; the
// analysis must still accept the program). The host fills acc directly, two
// element-wise kernels update it in turn with no synchronization between them,
// and after cudaDeviceSynchronize the host reads acc and the scalar hits
// without a copy. The last block to count itself in hits leaves its id in last.
// Correct outcome: analysed and optimized (exit 0); square and shift are fused
// (thread-level, nothing between them); results equal the original's: the
// printed checksum and both variables, which verify compares from the managed
// dump at exit.
#include <cstdio>
#include <cuda_runtime.h>

#define N 512
#define THREADS 128

__managed__ float acc[N];
__device__ __managed__ int hits;  // the spelling CUDA's programming guide uses

__global__ void square(int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) acc[i] = acc[i] * acc[i] - 1.0f;
}

__global__ void shift(float by, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) acc[i] = acc[i] + by;
  if (i < n && threadIdx.x == 0) atomicAdd(&hits, 1);
}

int main() {
  for (int i = 0; i < N; ++i) acc[i] = (float)((i * 37 + 11) % 101) / 25.0f - 2.0f;
  hits = 0;
  int grid = (N + THREADS - 1) / THREADS;
  square<<<grid, THREADS>>>(N);
  shift<<<grid, THREADS>>>(0.5f, N);
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  double checksum = 0.0;
  for (int i = 0; i < N; ++i) checksum += acc[i] * (i % 7 + 1);
  printf("checksum: %.6f hits: %d\n", checksum, hits);
  return 0;
}
