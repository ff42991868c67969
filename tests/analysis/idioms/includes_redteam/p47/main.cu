#include <cstdio>
#include <cuda_runtime.h>
#include "trace.cuh"

int main() {
    const int n = 2048;
    static float h[n], hy[n], hz[n];
    int htrace[2];
    for (int i = 0; i < n; ++i) h[i] = (float)(i % 13) * 0.5f;
    float *x, *y, *z;
    int* trace;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    cudaMalloc(&z, n * sizeof(float));
    cudaMalloc(&trace, 2 * sizeof(int));
    cudaMemcpy(x, h, n * sizeof(float), cudaMemcpyHostToDevice);
    traced_step(x, y, z, trace, n);
    cudaMemcpy(hy, y, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(hz, z, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(htrace, trace, 2 * sizeof(int), cudaMemcpyDeviceToHost);
    double s = 0;
    for (int i = 0; i < n; ++i) s += hy[i] + 3.0 * hz[i];
    printf("trace sites %d %d\n", htrace[0], htrace[1]);
    printf("checksum %.3f\n", s);
    cudaFree(x); cudaFree(y); cudaFree(z); cudaFree(trace);
    return 0;
}
