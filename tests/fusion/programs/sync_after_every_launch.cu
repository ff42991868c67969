// Every launch is followed by an error check and a synchronization, and a host timer
// runs around them: none of these observes device work (the host reads results only
// through the cudaMemcpy at the end), so the three launches fuse as if they were not there.
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("error %s\n", cudaGetErrorString(e)); return 1; } } while (0)

__global__ void scale(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
__global__ void shift(const float* y, float* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = y[i] + 1.0f;
}
__global__ void square(const float* z, float* w, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) w[i] = z[i] * z[i];
}

int main() {
  const int n = 1 << 14;
  float *x, *y, *z, *w;
  CHECK(cudaMalloc(&x, n * sizeof(float)));
  CHECK(cudaMalloc(&y, n * sizeof(float)));
  CHECK(cudaMalloc(&z, n * sizeof(float)));
  CHECK(cudaMalloc(&w, n * sizeof(float)));
  static float h[1 << 14];
  for (int i = 0; i < n; ++i) h[i] = (float)(i % 13) - 6.0f;
  CHECK(cudaMemcpy(x, h, n * sizeof(float), cudaMemcpyHostToDevice));
  auto t0 = std::chrono::steady_clock::now();
  scale<<<n / 256, 256>>>(x, y, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  shift<<<n / 256, 256>>>(y, z, n);
  CHECK(cudaPeekAtLastError());
  CHECK(cudaStreamSynchronize(0));
  square<<<n / 256, 256>>>(z, w, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  auto t1 = std::chrono::steady_clock::now();
  CHECK(cudaMemcpy(h, w, n * sizeof(float), cudaMemcpyDeviceToHost));
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += h[i] * (i % 7);
  printf("checksum %.3f\n", sum);
  printf("time: %.6f s\n", std::chrono::duration<double>(t1 - t0).count());
  return 0;
}
