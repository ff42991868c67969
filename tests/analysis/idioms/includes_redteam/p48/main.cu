#include <cstdio>
#include <cuda_runtime.h>
#include "half.cuh"


int main() {
    const int n = 3000;
    static float h[n], hy[n], hz[n];
    float* zero = new float[n]();
    for (int i = 0; i < n; ++i) h[i] = (float)((i * 11) % 37) * 0.1f - 1.5f;
    float *x, *y, *z;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    cudaMalloc(&z, n * sizeof(float));
    cudaMemcpy(x, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(y, zero, n * sizeof(float), cudaMemcpyHostToDevice);
    step(x, y, z, n);
    cudaMemcpy(hy, y, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(hz, z, n * sizeof(float), cudaMemcpyDeviceToHost);
    double s = 0;
    for (int i = 0; i < n; ++i) s += hy[i] + 3.0 * hz[i];
    printf("checksum %.4f\n", s);
    cudaFree(x); cudaFree(y); cudaFree(z);
    return 0;
}
