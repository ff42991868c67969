// layers.cuh -- relu + square layer; registers itself with the op registry
#pragma once

static int layers_registered = register_op("relu_square");

__global__ void relu_k(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
__global__ void square_k(const float* x, float* z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = x[i] * x[i];
}

static void forward(const float* x, float* y, float* z, int n) {
    relu_k<<<(n + 127) / 128, 128>>>(x, y, n);
    square_k<<<(n + 127) / 128, 128>>>(x, z, n);
}
