// Jacobi relaxation on a 1-D rod, in the style of a stencil benchmark: two temperature
// buffers held in an array (each element its own allocation), used at constant indices,
// then swapped by index after every sweep (buf[src]: either one, so unknown).
#include <cstdio>
#include <cstdlib>
#define N 8192
#define BLOCK 256
#define SWEEPS 4

__global__ void init_rod(float* t, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) t[i] = (i == n / 2) ? 100.0f : 0.0f;
}

__global__ void relax(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= 0 || i >= n - 1) { if (i < n) out[i] = in[i]; return; }
  out[i] = 0.25f * in[i - 1] + 0.5f * in[i] + 0.25f * in[i + 1];
}

__global__ void scale(float* t, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) t[i] *= s;
}

int main() {
  float* buf[2] = {nullptr, nullptr};
  cudaMalloc((void**)&buf[0], N * sizeof(float));
  cudaMalloc((void**)&buf[1], N * sizeof(float));
  dim3 grid(N / BLOCK), block(BLOCK);
  init_rod<<<grid, block>>>(buf[0], N);
  init_rod<<<grid, block>>>(buf[1], N);
  scale<<<grid, block>>>(buf[0], 2.0f, N);
  relax<<<grid, block>>>(buf[0], buf[1], N);
  relax<<<grid, block>>>(buf[1], buf[0], N);
  int src = 0;
  for (int s = 0; s < SWEEPS; ++s) {
    relax<<<grid, block>>>(buf[src], buf[1 - src], N);
    scale<<<grid, block>>>(buf[1 - src], 1.0f, N);
    src = 1 - src;
  }
  float* h = (float*)malloc(N * sizeof(float));
  cudaMemcpy(h, buf[src], N * sizeof(float), cudaMemcpyDeviceToHost);
  printf("%f %f %f\n", h[N / 2 - 3], h[N / 2], h[N / 2 + 1]);
  free(h);
  cudaFree(buf[0]);
  cudaFree(buf[1]);
  return 0;
}
