// Sibling host loops over the same iterations that must stay two loops, each for its own
// reason, as real code writes them.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

typedef long slot_t;

__global__ void produce(float* y, const float* x, int n, int s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[s * n + i] = x[s * n + i] * 2.0f + s;
}

// accumulates over the steps: the order of its iterations matters
__global__ void accumulate(float* acc, const float* y, int n, int s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) acc[i] = acc[i] * 0.5f + y[s * n + i];
}

__global__ void consume(float* z, const float* y, int n, int s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[s * n + i] = y[s * n + i] + 1.0f;
}

int main() {
  const int steps = 5;
  const int n = 512;
  size_t count = (size_t)steps * n, bytes = count * sizeof(float);
  float *x, *y, *z, *acc;
  cudaMalloc(&x, bytes);
  cudaMalloc(&y, bytes);
  cudaMalloc(&z, bytes);
  cudaMalloc(&acc, bytes);
  float* h = (float*)malloc(bytes);
  for (size_t i = 0; i < count; ++i) h[i] = (float)(i % 89) * 0.5f;
  cudaMemcpy(x, h, bytes, cudaMemcpyHostToDevice);
  cudaMemset(z, 0, bytes);
  cudaMemset(acc, 0, bytes);
  int blocks = (n + 127) / 128;
  float total = 0.0f;

  // the second loop runs its steps backwards, and its steps accumulate
  for (int s = 0; s < steps; ++s) {
    produce<<<blocks, 128>>>(y, x, n, s);
  }
  for (int s = steps - 1; s >= 0; --s) {
    accumulate<<<blocks, 128>>>(acc, y, n, s);
  }
  cudaMemset(z, 0, bytes);

  // the second body names the variable the first loop's iterator hides
  int slot = 0;
  for (int slot = 0; slot < steps; ++slot) {
    produce<<<blocks, 128>>>(y, x, n, slot);
  }
  for (int t = 0; t < steps; ++t) {
    consume<<<blocks, 128>>>(z, y, n, t + slot);
  }
  cudaMemset(z, 0, bytes);

  // both bodies declare the grid they launch: the second is given a new name in one loop
  for (int s = 0; s < steps; ++s) {
    dim3 grid(blocks);
    produce<<<grid, 128>>>(y, x, n, s);
  }
  for (int s = 0; s < steps; ++s) {
    dim3 grid(blocks);
    consume<<<grid, 128>>>(z, y, n, s);
  }
  cudaMemset(z, 0, bytes);

  // the first body counts on the host too
  for (int s = 0; s < steps; ++s) {
    produce<<<blocks, 128>>>(y, x, n, s);
    total += 1.0f;
  }
  for (int s = 0; s < steps; ++s) {
    consume<<<blocks, 128>>>(z, y, n, s);
  }
  cudaMemset(z, 0, bytes);

  // bodies without braces
  for (int s = 0; s < steps; ++s)
    produce<<<blocks, 128>>>(y, x, n, s);
  for (int s = 0; s < steps; ++s)
    consume<<<blocks, 128>>>(z, y, n, s);

  cudaMemset(z, 0, bytes);

  // red and black: one step, two starts
  for (int c = 0; c < steps; c += 2) {
    produce<<<blocks, 128>>>(y, x, n, c);
  }
  for (int c = 1; c < steps; c += 2) {
    consume<<<blocks, 128>>>(z, y, n, c);
  }
  cudaMemset(z, 0, bytes);

  // as many iterations, other values: the second iterator wraps
  for (int s = 0; s < 4; ++s) {
    produce<<<blocks, 128>>>(y, x, n, s);
  }
  for (unsigned char s = 254; s != 2; ++s) {
    consume<<<blocks, 128>>>(z, y, n, s % steps);
  }
  cudaMemset(z, 0, bytes);

  // a type the first body declares would be the one the second body names
  for (int s = 0; s < steps; ++s) {
    typedef int slot_t;
    produce<<<blocks, 128>>>(y, x, n, (slot_t)s);
  }
  for (int s = 0; s < steps; ++s) {
    consume<<<blocks, 128>>>(z, y, n, (slot_t)s);
  }
  cudaMemset(z, 0, bytes);

  // the second body declares the name of the first body's kernel: given a new name in one loop
  for (int s = 0; s < steps; ++s) {
    produce<<<blocks, 128>>>(y, x, n, s);
  }
  for (int s = 0; s < steps; ++s) {
    const int produce = s;
    consume<<<blocks, 128>>>(z, y, n, produce);
  }

#ifdef TRACE_STEPS
  printf("between the loops\n");
#endif
  for (int s = 0; s < steps; ++s) {
    produce<<<blocks, 128>>>(y, x, n, s);
  }
  cudaMemset(z, 0, bytes);

  // three loops, the last two iterators named alike: the third would declare its iterator again
  for (int i = 0; i < steps; ++i) {
    produce<<<blocks, 128>>>(y, x, n, i);
  }
  for (int j = 0; j < steps; ++j) {
    consume<<<blocks, 128>>>(z, y, n, j);
  }
  for (int j = 0; j < steps; ++j) {
    consume<<<blocks, 128>>>(acc, z, n, j);
  }

  double sums[3] = {0, 0, 0};
  float* bufs[3] = {y, z, acc};
  for (int b = 0; b < 3; ++b) {
    cudaMemcpy(h, bufs[b], bytes, cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < count; ++i) sums[b] += h[i];
  }
  printf("y %.3f z %.3f acc %.3f total %.1f\n", sums[0], sums[1], sums[2], total);
  cudaFree(x);
  cudaFree(y);
  cudaFree(z);
  cudaFree(acc);
  free(h);
  return 0;
}
