#pragma once
// where-was-I capture (what std::source_location::current() uses under the hood)
#if defined(__clang__) || (defined(__GNUC__) && !defined(__NVCC__) && __GNUC__ >= 9)
#define SITE_COLUMN __builtin_COLUMN()
#else
#define SITE_COLUMN 0   /* nvcc front end: no column builtin */
#endif
static inline int here(int l = __builtin_LINE(), int c = SITE_COLUMN) { return l * 1000 + c; }
__global__ void scale(float *y, const float *x, float a, int n, int *tag, int where) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
  if (i == 0) tag[0] = where;
}
__global__ void addb(float *z, const float *y, float b, int n, int *tag, int where) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = y[i] + b;
  if (i == 0) tag[1] = where;
}
static void run_pair(float *z, float *y, const float *x, int n, int *tag) {
  scale<<<(n + 255) / 256, 256>>>(y, x, 2.0f, n, tag, here());
  addb<<<(n + 255) / 256, 256>>>(z, y, 1.0f, n, tag, here());
}
