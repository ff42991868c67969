// Sibling host loops whose bodies declare variables of one name, as hand-written code does
// (each loop computes the grid it launches): the later body's variable is written with a
// new name in the merged loop, where every mention of it in that body is written there and
// names it. Where one is not (a use before the declaration names the variable outside, a
// macro takes it), the loops stay two.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define ON_GRID(g) (g)

__global__ void produce(float* y, const float* x, int n, int s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[s * n + i] = x[s * n + i] * 2.0f + s;
}

__global__ void consume(float* z, const float* y, int n, int s, int scale) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[s * n + i] = y[s * n + i] * scale + 0.5f;
}

static float drain(float* h, const float* z, size_t count) {
  cudaMemcpy(h, z, count * sizeof(float), cudaMemcpyDeviceToHost);
  float total = 0.0f;
  for (size_t i = 0; i < count; ++i) total += h[i];
  return total;
}

int main() {
  const int steps = 5;
  const int n = 384;
  size_t count = (size_t)steps * n, bytes = count * sizeof(float);
  float *x, *y, *z;
  cudaMalloc(&x, bytes);
  cudaMalloc(&y, bytes);
  cudaMalloc(&z, bytes);
  float* h = (float*)malloc(bytes);
  for (size_t i = 0; i < count; ++i) h[i] = (float)(i % 89) * 0.5f;
  cudaMemcpy(x, h, bytes, cudaMemcpyHostToDevice);
  cudaMemset(z, 0, bytes);
  float total = 0.0f;
  int scale = 3;

  // both bodies compute their grid and block, the second a scale of its own: one loop
  for (int s = 0; s < steps; ++s) {
    dim3 block(128);
    dim3 grid((n + block.x - 1) / block.x);
    produce<<<grid, block>>>(y, x, n, s);
  }
  for (int s = 0; s < steps; ++s) {
    dim3 block(128), grid((n + 127) / 128);
    const int scale = s + 1;
    consume<<<grid, block>>>(z, y, n, s, scale);
  }
  total += drain(h, z, count);

  // the first body names the scale outside; the second declares its own: one loop, and the
  // first body's launch still sees 3
  for (int s = 0; s < steps; ++s) {
    consume<<<(n + 127) / 128, 128>>>(y, x, n, s, scale);
  }
  for (int s = 0; s < steps; ++s) {
    int scale = 2 * s;
    consume<<<(n + 127) / 128, 128>>>(z, y, n, s, scale);
  }
  total += drain(h, z, count);

  // the second body's first launch takes the grid outside, its declaration comes after
  dim3 grid(1);
  for (int s = 0; s < steps; ++s) {
    dim3 grid((n + 127) / 128);
    produce<<<grid, 128>>>(y, x, n, s);
  }
  for (int s = 0; s < steps; ++s) {
    consume<<<grid, 128>>>(z, y, n, s, 1);
    dim3 grid((n + 63) / 64);
    consume<<<grid, 64>>>(z, y, n, s, 2);
  }
  total += drain(h, z, count);

  // a macro takes the second body's grid
  for (int s = 0; s < steps; ++s) {
    dim3 grid((n + 127) / 128);
    produce<<<grid, 128>>>(y, x, n, s);
  }
  for (int s = 0; s < steps; ++s) {
    dim3 grid((n + 127) / 128);
    consume<<<ON_GRID(grid), 128>>>(z, y, n, s, 4);
  }
  total += drain(h, z, count);

  printf("total %.3f\n", total);
  cudaFree(x);
  cudaFree(y);
  cudaFree(z);
  free(h);
  return 0;
}
