// Loops whose grid changes with the step but that cannot run in one persistent kernel
// (--cooperative --persistent), one per -DCASE:
//   1: the grid depends on n from the command line, which the kernel does not know;
//   2: the grid divides by a volatile width, whose value the analysis cannot know;
//   3: the last step's grid has no block (the launch fails as written);
//   4: two launches fused in one lane whose grids differ at some steps (one grid per lane);
//   5: a step whose grid has more blocks than the kernel can count (2^32 + 32768);
//   6: a grid from a helper that counts its calls (the check run would count them again);
//   7: not a near miss: the grid written by a macro that builds a dim3 (one launch).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define LEN 2048

__global__ void shift(float* x, int k) {
  int i = k + blockIdx.x * blockDim.x + threadIdx.x;
  if (i + 1 < LEN) x[i] = 0.5f * (x[i] + x[i + 1]);
}

__global__ void bump(int* o, int k, int v) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 64) o[k * 64 + i] += v;
}

__global__ void mark(float* x, int k) {
  if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) x[k] = 1.0f;
}

static int grids_asked = 0;
static int blocks_for(int n) {
  ++grids_asked;
  return (n + 255) / 256;
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
#elif CASE == 3
  for (int k = 0; k < 4; k++) {
    shift<<<(768 - 256 * k) / 256, 256>>>(x, k);
  }
#elif CASE == 4
  int* o;
  cudaMalloc(&o, sizeof(int) * 8 * 64);
  cudaMemset(o, 0, sizeof(int) * 8 * 64);
  for (int k = 0; k < 8; k++) {
    bump<<<k / 2 + 1, 16>>>(o, k, 1);
    bump<<<4, 16>>>(o, k, 2);
  }
  cudaMemcpy(x, o, sizeof(int) * 8 * 64, cudaMemcpyDeviceToDevice);
#elif CASE == 5
  for (int k = 0; k < 2; k++) {
    mark<<<dim3(1 + 131072 * k, 32768), 32>>>(x, k);
  }
#elif CASE == 6
  for (int k = 0; k < 4; k++) {
    shift<<<blocks_for(LEN - k), 256>>>(x, k);
  }
#else
#define SHIFT_GRID(k) dim3((LEN - (k) + 255) / 256)
  for (int k = 0; k < 4; k++) {
    shift<<<SHIFT_GRID(k), 256>>>(x, k);
  }
  printf("grids asked %d times\n", grids_asked);
#endif
  float h[8];
  cudaMemcpy(h, x, sizeof(h), cudaMemcpyDeviceToHost);
  printf("%d %f\n", n, h[0]);
  return 0;
}
