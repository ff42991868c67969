// inc/ops.cuh -- ops library; uses the autotuned parameters when the tuner has run
#pragma once
#if __has_include("ops_tuned.h")
#include "ops_tuned.h"
#else
#define OPS_GAIN 1.0f     // untuned defaults
#define OPS_TUNED 0
#endif

__global__ void gain_k(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * OPS_GAIN;
}
__global__ void clip_k(const float* x, float* z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = fminf(x[i], 2.0f);
}

static void ops_forward(const float* x, float* y, float* z, int n) {
    gain_k<<<(n + 255) / 256, 256>>>(x, y, n);
    clip_k<<<(n + 255) / 256, 256>>>(x, z, n);
}
