#include <cstdio>
#include <cuda_runtime.h>

// kernels are declared here and defined below, after the host helpers
__global__ void stage_a(const float* x, float* y, int n);
__global__ void stage_b(const float* x, float* z, int n);

#include "pipeline.cuh"
static const int kLine = __LINE__;

__constant__ float c_coef[4] = {0.5f, -1.25f, 2.0f, 0.125f};

__device__ __forceinline__ float poly(float v) {
    return ((c_coef[3] * v + c_coef[2]) * v + c_coef[1]) * v + c_coef[0];
}

__global__ void stage_a(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = poly(x[i]);
}
__global__ void stage_b(const float* x, float* z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = x[i] * c_coef[2];
}

#define LOG(msg) printf("[%s:%d] %s\n", __FILE__, __LINE__, msg)

int main() {
    const int n = 2048;
    static float h[n], hy[n], hz[n];
    for (int i = 0; i < n; ++i) h[i] = (float)(i % 17) * 0.125f;
    float *x, *y, *z;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    cudaMalloc(&z, n * sizeof(float));
    cudaMemcpy(x, h, n * sizeof(float), cudaMemcpyHostToDevice);
    LOG("pipeline");
    run_pipeline(x, y, z, n);
    cudaMemcpy(hy, y, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(hz, z, n * sizeof(float), cudaMemcpyDeviceToHost);
    double s = 0;
    for (int i = 0; i < n; ++i) s += hy[i] + 3.0 * hz[i];
    printf("tag line %d\n", kLine);
    printf("checksum %.4f\n", s);
    cudaFree(x); cudaFree(y); cudaFree(z);
    return 0;
}
