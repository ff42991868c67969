// norm.cuh -- layer norm style helpers (mixed line endings from an old editor)
#pragma once
// (c) 2009 lab code// rewritten 2023
__global__ void center_k(const float* x, float* y, float mean, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] - mean;
}
__global__ void scale_k(const float* x, float* z, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = x[i] * s;
}

static void normalize(const float* x, float* y, float* z, int n) {
    center_k<<<(n + 255) / 256, 256>>>(x, y, 1.5f, n);
    scale_k<<<(n + 255) / 256, 256>>>(x, z, 0.25f, n);
    printf("normalize at line %d\n", __LINE__);
}
