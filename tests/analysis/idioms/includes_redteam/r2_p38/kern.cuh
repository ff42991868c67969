#pragma once
__global__ void scale(float *y, const float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}
__global__ void addb(float *z, const float *y, float b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = y[i] + b;
}
static void run_pair(float *z, float *y, const float *x, int n) {
  scale<<<(n + 255) / 256, 256>>>(y, x, 2.0f, n);
#if WITH_BIAS
  addb<<<(n + 255) / 256, 256>>>(z, y, 1.0f, n);
#else
  cudaMemcpy(z, y, n * sizeof(float), cudaMemcpyDeviceToDevice);
#endif
}
