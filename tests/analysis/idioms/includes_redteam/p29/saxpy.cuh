// saxpy.cuh -- saxpy + residual kernels; compile this file alone to run its self-test
#pragma once
#include <cstdio>

__global__ void saxpy_k(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + 1.0f;
}
__global__ void resid_k(const float* x, float* r, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) r[i] = x[i] - 0.5f;
}

static void saxpy_step(float a, const float* x, float* y, float* r, int n) {
#if __INCLUDE_LEVEL__ == 0
    printf("saxpy.cuh self-test build\n");   // nvcc -x cu saxpy.cuh
#else
    static int calls = 0;
    if (calls++ == 0) printf("saxpy.cuh used as a library (include level %d)\n", __INCLUDE_LEVEL__);
#endif
    saxpy_k<<<(n + 255) / 256, 256>>>(a, x, y, n);
    resid_k<<<(n + 255) / 256, 256>>>(x, r, n);
}
