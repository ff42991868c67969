// Probe: a synchronization between two launches that use a __managed__ variable.
// count writes the histogram bins; after cudaDeviceSynchronize the host reads
// bins[0] directly (no copy) and keeps it; normalize then rescales bins in
// place. The host must see count's bins, not normalize's: a synchronization is
// where the host may observe managed memory, and its load of bins is a host
// read of the variable's device buffer.
// Correct outcome: analysed and optimized (exit 0); count and normalize are NOT
// fused; the refusal names the synchronization and the host read of the
// __managed__ variable. Results (printed, and bins from the managed dump) equal
// the original's.
#include <cstdio>
#include <cuda_runtime.h>

#define N 1024
#define BINS 16
#define THREADS 128

__managed__ unsigned int bins[BINS];
__managed__ float scaled[BINS];

__global__ void count(const int* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&bins[x[i] % BINS], 1u);
}

__global__ void normalize(int n) {
  int b = threadIdx.x;
  if (b < BINS) scaled[b] = (float)bins[b] / (float)n;
}

int main() {
  int h_x[N];
  for (int i = 0; i < N; ++i) h_x[i] = (i * 37 + 11) % 101;
  int* d_x;
  cudaMalloc(&d_x, N * sizeof(int));
  cudaMemcpy(d_x, h_x, sizeof(h_x), cudaMemcpyHostToDevice);
  for (int b = 0; b < BINS; ++b) bins[b] = 0;

  count<<<(N + THREADS - 1) / THREADS, THREADS>>>(d_x, N);
  cudaDeviceSynchronize();
  unsigned int first = bins[0];
  normalize<<<1, BINS>>>(N);
  cudaDeviceSynchronize();

  printf("first bin: %u, scaled[3]: %.6f\n", first, scaled[3]);
  cudaFree(d_x);
  return 0;
}
