// The runtime called before main (a static object's constructor allocates) and after it
// (a static object's destructor copies back and launches): CUDA allows both.
#include <cstdio>
#include <cuda_runtime.h>

#define N 256

__global__ void fill(float* y, float scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = scale * (float)i;
}

struct DeviceBuffer {
  float* data = nullptr;
  DeviceBuffer() { cudaMalloc(&data, N * sizeof(float)); }
  ~DeviceBuffer() {
    fill<<<1, N>>>(data, 2.0f, N);
    static float h[N];
    cudaMemcpy(h, data, sizeof h, cudaMemcpyDeviceToHost);
    printf("after main: %s\n", h[N - 1] == 2.0f * (N - 1) ? "OK" : "MISMATCH");
    cudaFree(data);
  }
};

static DeviceBuffer buffer;  // constructed before main, destroyed after it

int main() {
  fill<<<1, N>>>(buffer.data, 0.5f, N);
  static float h[N];
  cudaMemcpy(h, buffer.data, sizeof h, cudaMemcpyDeviceToHost);
  bool ok = true;
  for (int i = 0; i < N; ++i) ok = ok && h[i] == 0.5f * (float)i;
  printf("in main: %s\n", ok ? "OK" : "MISMATCH");
  return ok ? 0 : 1;
}
