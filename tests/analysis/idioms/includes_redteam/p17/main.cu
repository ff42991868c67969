#include <cstdio>
#include <cuda_runtime.h>

__global__ void expmix_k(const float* x, float* z, int n);

#include "act.cuh"

// fast single-precision variant for this app's own kernel
__device__ __forceinline__ float soft_exp(float v) { return 1.0f + v + 0.5f * v * v; }

__global__ void expmix_k(const float* x, float* z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = soft_exp(x[i] * 0.5f);
}

int main() {
    const int n = 2048;
    static float h[n], hy[n], hz[n];
    for (int i = 0; i < n; ++i) h[i] = (float)((i * 7) % 41) * 0.05f - 1.0f;
    float *x, *y, *z;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    cudaMalloc(&z, n * sizeof(float));
    cudaMemcpy(x, h, n * sizeof(float), cudaMemcpyHostToDevice);
    activations(x, y, z, n);
    cudaMemcpy(hy, y, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(hz, z, n * sizeof(float), cudaMemcpyDeviceToHost);
    double s = 0;
    for (int i = 0; i < n; ++i) s += hy[i] * (1 + i % 7) + 3.0 * hz[i];
    printf("checksum %.6f\n", s);
    cudaFree(x); cudaFree(y); cudaFree(z);
    return 0;
}
