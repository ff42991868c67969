// Driver: launches kernels defined in the included file, then its training step.
#include <cstdio>
#include "kernels.cu"
#define N 8192
int main() {
  float *in, *w, *out;
  cudaMalloc(&in, N * sizeof(float)); cudaMalloc(&w, N * sizeof(float)); cudaMalloc(&out, N * sizeof(float));
  float* h = new float[N];
  for (int i = 0; i < N; ++i) h[i] = (float)(i % 13) - 6.0f;
  cudaMemcpy(in, h, N * sizeof(float), cudaMemcpyHostToDevice);
  for (int i = 0; i < N; ++i) h[i] = 0.01f * (float)(i % 7);
  cudaMemcpy(w, h, N * sizeof(float), cudaMemcpyHostToDevice);
  layer_forward<<<N / BLOCK, BLOCK>>>(in, w, out, N);
  squash<<<N / BLOCK, BLOCK>>>(out, N);
  train_step(out, w, N);
  cudaMemcpy(h, w, N * sizeof(float), cudaMemcpyDeviceToHost);
  printf("%f %f\n", h[3], h[100]);
  cudaMemcpy(h, out, N * sizeof(float), cudaMemcpyDeviceToHost);
  printf("%f %f\n", h[3], h[100]);
  delete[] h;
  return 0;
}
