// half.cuh -- optionally processes only the first half of the buffer
#pragma once

__global__ void scale_k(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
__global__ void shift_k(const float* x, float* z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = x[i] + 1.0f;
}

static void step(const float* x, float* y, float* z, int n) {
    scale_k<<<(n + 255) / 256, 256>>>(x, y,
#ifdef HALF_ONLY
        n / 2
#else
        n
#endif
    );
    shift_k<<<(n + 255) / 256, 256>>>(x, z, n);
}
