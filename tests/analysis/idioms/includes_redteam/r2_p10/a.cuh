#pragma once
#include "b.cuh"
#define CHECK(x) check_((x), __LINE__)
static void check_(cudaError_t e, int line) { printf("  cuda call at a.cuh:%d -> %s\n", line, cudaGetErrorName(e)); }
static void upload(float *d, const float *h, int n) {
  CHECK(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
}
static void run_pair(float *z, float *y, const float *x, int n) {
  scale<<<(n + 255) / 256, 256>>>(y, x, 2.0f, n);
  addb<<<(n + 255) / 256, 256>>>(z, y, 1.0f, n);
}
