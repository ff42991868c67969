// Sibling host loops whose iterators have other integer types, as real code mixes int,
// unsigned and size_t counters: one loop where every value is one both types hold and the
// iterations are known exactly; two loops, each with its reason, where not.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void produce(float* y, const float* x, int n, int s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[s * n + i] = x[s * n + i] * 2.0f + s;
}

// ``before`` is computed in the iterator's own type: s - 1 at s = 0 is -1 or 4294967295
__global__ void consume(float* z, const float* y, int n, int s, long before) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[s * n + i] = y[s * n + i] + (before < 0 ? 1.0f : 0.5f) + (float)(before % 7);
}

int main(int argc, char** argv) {
  const int steps = 6;
  const int n = 512;
  int runtime_steps = argc > 1 ? atoi(argv[1]) : steps;
  if (runtime_steps < 0 || runtime_steps > steps) runtime_steps = steps;
  size_t count = (size_t)steps * n, bytes = count * sizeof(float);
  float *x, *y, *z;
  cudaMalloc(&x, bytes);
  cudaMalloc(&y, bytes);
  cudaMalloc(&z, bytes);
  float* h = (float*)malloc(bytes);
  for (size_t i = 0; i < count; ++i) h[i] = (float)(i % 97) * 0.25f;
  cudaMemcpy(x, h, bytes, cudaMemcpyHostToDevice);
  cudaMemset(z, 0, bytes);
  int blocks = (n + 127) / 128;
  float total = 0.0f;

  // int and unsigned from 0 to 5: one loop (j - 1 stays unsigned: 4294967295 at j = 0)
  for (int i = 0; i < steps; ++i) {
    produce<<<blocks, 128>>>(y, x, n, i);
  }
  for (unsigned j = 0; j < steps; ++j) {
    consume<<<blocks, 128>>>(z, y, n, j, j - 1);
  }
  cudaMemcpy(h, z, bytes, cudaMemcpyDeviceToHost);
  for (size_t i = 0; i < count; ++i) total += h[i];
  cudaMemset(z, 0, bytes);

  // one name, two types: merged, the second body would compute i - 1 as an int
  for (int i = 0; i < steps; ++i) {
    produce<<<blocks, 128>>>(y, x, n, i);
  }
  for (unsigned i = 0; i < steps; ++i) {
    consume<<<blocks, 128>>>(z, y, n, i, i - 1);
  }
  cudaMemcpy(h, z, bytes, cudaMemcpyDeviceToHost);
  for (size_t i = 0; i < count; ++i) total += h[i];
  cudaMemset(z, 0, bytes);

  // a trip count from argv: the iterations are not known exactly
  for (int i = 0; i < runtime_steps; ++i) {
    produce<<<blocks, 128>>>(y, x, n, i);
  }
  for (size_t j = 0; j < (size_t)runtime_steps; ++j) {
    consume<<<blocks, 128>>>(z, y, n, (int)j, (long)j - 1);
  }
  cudaMemcpy(h, z, bytes, cudaMemcpyDeviceToHost);
  for (size_t i = 0; i < count; ++i) total += h[i];

  cudaMemset(z, 0, bytes);

  // an unsigned char from 250 by 3 wraps past 255 (250, 253, 0, 3, ...) and goes on where
  // the int stops at 256: the blind red team's, merged (and wrong) before the loop analysis
  // read narrow iterators as wrapping
  for (int i = 250; i < 255; i += 3) {
    produce<<<blocks, 128>>>(y, x, n, i % steps);
  }
  for (unsigned char c = 250; c < 255; c += 3) {
    consume<<<blocks, 128>>>(z, y, n, c % steps, c);
  }
  cudaMemcpy(h, z, bytes, cudaMemcpyDeviceToHost);
  for (size_t i = 0; i < count; ++i) total += h[i];

  printf("total %.3f\n", total);
  cudaFree(x);
  cudaFree(y);
  cudaFree(z);
  free(h);
  return 0;
}
