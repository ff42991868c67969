// A macro used only inside a kernel body decides which elements consume reads: with
// SHIFT 0 each thread reads what its own thread of produce wrote (fusable with no
// barrier); rebuilt with -DSHIFT=300 it reads other blocks' elements, which the fused
// kernel would read before they are written. The optimized program compares SHIFT's
// expansion with the one it was optimized for and runs the original launches otherwise.
#include <cstdio>
#include <cuda_runtime.h>

#ifndef SHIFT
#define SHIFT 0
#endif
#define N 1024

__global__ void produce(float* a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  a[i] = i * 0.5f;
}

__global__ void consume(const float* a, float* b) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  b[i] = a[(i + SHIFT) % N] + 1.0f;
}

int main() {
  float *a, *b;
  cudaMalloc(&a, N * sizeof(float));
  cudaMalloc(&b, N * sizeof(float));
  produce<<<N / 256, 256>>>(a);
  consume<<<N / 256, 256>>>(a, b);
  float h[N];
  cudaMemcpy(h, b, N * sizeof(float), cudaMemcpyDeviceToHost);
  double s = 0;
  for (int i = 0; i < N; ++i) s += h[i] * (i % 7 + 1);
  printf("checksum %f\n", s);
  return 0;
}
