#include <cstdio>
#include <cuda_runtime.h>
#include "saxpy.cuh"

int main() {
    const int n = 2048;
    static float h[n], hy[n], hr[n];
    for (int i = 0; i < n; ++i) h[i] = (float)(i % 23) * 0.2f;
    float *x, *y, *r;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    cudaMalloc(&r, n * sizeof(float));
    cudaMemcpy(x, h, n * sizeof(float), cudaMemcpyHostToDevice);
    saxpy_step(2.0f, x, y, r, n);
    cudaMemcpy(hy, y, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(hr, r, n * sizeof(float), cudaMemcpyDeviceToHost);
    double s = 0;
    for (int i = 0; i < n; ++i) s += hy[i] + 3.0 * hr[i];
    printf("checksum %.4f\n", s);
    cudaFree(x); cudaFree(y); cudaFree(r);
    return 0;
}
