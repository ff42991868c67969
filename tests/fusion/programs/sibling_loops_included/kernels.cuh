#pragma once
__global__ void produce(float* y, const float* x, int n, int s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[s * n + i] = x[s * n + i] * 2.0f + s;
}
__global__ void consume(float* z, const float* y, int n, int s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[s * n + i] = y[s * n + i] + 1.0f;
}
inline void run_both(float* y, float* z, const float* x, int n, int steps) {
  for (int s = 0; s < steps; ++s) produce<<<(n + 255) / 256, 256>>>(y, x, n, s);
  consume<<<(n + 255) / 256, 256>>>(z, y, n, 0);
  consume<<<(n + 255) / 256, 256>>>(z, y, n, 1);
}
