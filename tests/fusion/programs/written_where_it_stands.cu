// A fragment is its kernel's body written again: it must mean there what it meant in the
// kernel. offset uses a helper macro OP that is redefined for scale and #undef'd after it,
// calls quant(i) where only quant(float) is declared (quant(int), an exact match, comes
// after it), and both record the line of a failed check (__LINE__). offset -> scale is
// thread-level (one fused kernel); mirror reads other blocks (global: with --cooperative
// one cooperative launch, whose #include goes on top of the file).
#include <cstdio>
#include <cuda_runtime.h>

#define N 1024
#define T 256
#define RECORD(cond, err) do { if (!(cond)) atomicMax((err), __LINE__); } while (0)

__device__ float quant(float v) { return v * 0.5f; }

#define OP(a, b) ((a) + (b))
__global__ void offset(const float* x, float* y, int* err) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  RECORD(x[i] < 40.0f, err);
  y[i] = OP(x[i], quant(i));
}
#undef OP

__device__ float quant(int v) { return (float)(v % 7); }

#define OP(a, b) ((a) * (b))
__global__ void scale(const float* y, float* z, int* err) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  RECORD(y[i] < 500.0f, err + 1);
  z[i] = OP(y[i], 0.25f);
}
#undef OP

__global__ void mirror(const float* z, float* w) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  w[i] = z[N - 1 - i] + z[i];
}

int main() {
  float h[N];
  for (int i = 0; i < N; ++i) h[i] = (float)((i * 29) % 83);
  float *x, *y, *z, *w;
  int* err;
  cudaMalloc(&x, N * sizeof(float));
  cudaMalloc(&y, N * sizeof(float));
  cudaMalloc(&z, N * sizeof(float));
  cudaMalloc(&w, N * sizeof(float));
  cudaMalloc(&err, 2 * sizeof(int));
  cudaMemset(err, 0, 2 * sizeof(int));
  cudaMemcpy(x, h, N * sizeof(float), cudaMemcpyHostToDevice);
  offset<<<N / T, T>>>(x, y, err);
  scale<<<N / T, T>>>(y, z, err);
  mirror<<<N / T, T>>>(z, w);
  int lines[2];
  cudaMemcpy(lines, err, 2 * sizeof(int), cudaMemcpyDeviceToHost);
  cudaMemcpy(h, w, N * sizeof(float), cudaMemcpyDeviceToHost);
  double s = 0;
  for (int i = 0; i < N; ++i) s += h[i] * (i % 5 + 1);
  printf("failed checks at lines %d and %d, checksum %.4f\n", lines[0], lines[1], s);
  return 0;
}
