#pragma once
// light-weight instrumentation: every block records which kernel ran it (FNV-1a of the name)
__device__ __forceinline__ unsigned kname_hash(const char *s) {
  unsigned h = 2166136261u;
  while (*s) { h ^= (unsigned char)*s++; h *= 16777619u; }
  return h;
}
#define RECORD_KERNEL(tags) do { if (threadIdx.x == 0) (tags)[blockIdx.x] = kname_hash(__func__); } while (0)
__global__ void scale(float *y, const float *x, float a, int n, unsigned *tags) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
  RECORD_KERNEL(tags);
}
__global__ void addb(float *z, const float *y, float b, int n, unsigned *tags) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = y[i] + b;
  RECORD_KERNEL(tags);
}
static void run_pair(float *z, float *y, const float *x, int n, unsigned *tags) {
  scale<<<(n + 255) / 256, 256>>>(y, x, 2.0f, n, tags);
  addb<<<(n + 255) / 256, 256>>>(z, y, 1.0f, n, tags + 16);
}
