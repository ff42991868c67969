// Loops whose grid changes with the step but that cannot run in one persistent kernel
// (--cooperative --persistent), one per -DCASE:
//   1: the grid depends on n from the command line, which the kernel does not know;
//   2: the grid divides by a volatile width, whose value the analysis cannot know;
//   3: the last step's grid has no block (the launch fails as written).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define LEN 2048

__global__ void shift(float* x, int k) {
  int i = k + blockIdx.x * blockDim.x + threadIdx.x;
  if (i + 1 < LEN) x[i] = 0.5f * (x[i] + x[i + 1]);
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : LEN;
  float* x;
  cudaMalloc(&x, sizeof(float) * 2 * LEN);
  cudaMemset(x, 0, sizeof(float) * 2 * LEN);
#if CASE == 1
  for (int k = 0; k < 4; k++) {
    shift<<<(n - k + 255) / 256, 256>>>(x, k);
  }
#elif CASE == 2
  volatile int width = 256;
  for (int k = 0; k < 4; k++) {
    shift<<<(LEN - k + width - 1) / width, 256>>>(x, k);
  }
#else
  for (int k = 0; k < 4; k++) {
    shift<<<(768 - 256 * k) / 256, 256>>>(x, k);
  }
#endif
  float h[8];
  cudaMemcpy(h, x, sizeof(h), cudaMemcpyDeviceToHost);
  printf("%d %f\n", n, h[0]);
  return 0;
}
