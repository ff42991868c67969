// Launches in sibling host loops: a loop of one kernel followed by a loop of another over
// the same iterations (fused as one loop, then the launches of one iteration fused), and
// the near misses that must stay two loops. The number of steps from the command line:
//   sibling_loops [steps]   (1 <= steps <= 6)
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void produce(float* y, const float* x, int n, int s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[s * n + i] = x[s * n + i] * 2.0f + s;
}

__global__ void consume(float* z, const float* y, int n, int s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[s * n + i] = y[s * n + i] + 1.0f;
}

// reads the slice the producing loop writes one iteration later
__global__ void consume_next(float* z, const float* y, int n, int s, int steps) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && s + 1 < steps) z[s * n + i] = y[(s + 1) * n + i] - 1.0f;
}

int main(int argc, char** argv) {
  int steps = argc > 1 ? atoi(argv[1]) : 6;
  if (steps < 1 || steps > 6) return 2;
  const int slices = 6;
  const int n = 1000;
  size_t count = (size_t)slices * n, bytes = count * sizeof(float);
  float *x, *y, *z, *w, *v;
  cudaMalloc(&x, bytes);
  cudaMalloc(&y, bytes);
  cudaMalloc(&z, bytes);
  cudaMalloc(&w, bytes);
  cudaMalloc(&v, bytes);
  float* h = (float*)malloc(bytes);
  for (size_t i = 0; i < count; ++i) h[i] = (float)(i % 97) * 0.25f;
  cudaMemcpy(x, h, bytes, cudaMemcpyHostToDevice);
  cudaMemset(z, 0, bytes);
  cudaMemset(w, 0, bytes);
  int blocks = (n + 255) / 256;

  // one loop of each kernel, over the same steps: one loop, one launch per step
  for (int s = 0; s < steps; ++s) {
    produce<<<blocks, 256>>>(y, x, n, s);
  }
  for (int t = 0; t < steps; ++t) {
    consume<<<blocks, 256>>>(z, y, n, t);
  }
  cudaMemset(v, 0, bytes);

  // the second loop reads what the first writes in its next iteration: two loops
  for (int s = 0; s < steps; ++s) {
    produce<<<blocks, 256>>>(v, x, n, s);
  }
  for (int s = 0; s < steps; ++s) {
    consume_next<<<blocks, 256>>>(w, v, n, s, steps);
  }
  cudaDeviceSynchronize();

  // one iteration fewer: two loops
  for (int s = 0; s < steps; ++s) {
    produce<<<blocks, 256>>>(y, z, n, s);
  }
  for (int s = 0; s + 1 < steps; ++s) {
    consume<<<blocks, 256>>>(v, y, n, s);
  }

  cudaDeviceSynchronize();

  // three loops in a time loop, the iterators named alike, a constant trip count: one loop of
  // three launches per slice
  for (int rep = 0; rep < 2; ++rep) {
    for (int s = 0; s < slices; ++s) {
      produce<<<blocks, 256>>>(y, x, n, s);
    }
    for (int s = 0; s < slices; ++s) {
      consume<<<blocks, 256>>>(z, y, n, s);
    }
    for (int s = 0; s < slices; ++s) {
      consume<<<blocks, 256>>>(x, z, n, s);
    }
  }

  double sums[4] = {0, 0, 0, 0};
  float* bufs[4] = {y, z, w, v};
  for (int b = 0; b < 4; ++b) {
    cudaMemcpy(h, bufs[b], bytes, cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < count; ++i) sums[b] += h[i];
  }
  printf("y %.3f z %.3f w %.3f v %.3f\n", sums[0], sums[1], sums[2], sums[3]);
  cudaFree(x);
  cudaFree(y);
  cudaFree(z);
  cudaFree(w);
  cudaFree(v);
  free(h);
  return 0;
}
