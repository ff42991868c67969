// main.cu -- driver// (header block pasted from a classic-Mac tool: lone CR line ends)#include <cstdio>
#include <cuda_runtime.h>
#include "kernels.cuh"

int main() {
    const int n = 2048;
    static float h[n], hy[n], hz[n];
    for (int i = 0; i < n; ++i) h[i] = (float)(i % 13) * 0.5f;
    float *x, *y, *z;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    cudaMalloc(&z, n * sizeof(float));
    cudaMemcpy(x, h, n * sizeof(float), cudaMemcpyHostToDevice);
    forward(x, y, z, n);
    cudaMemcpy(hy, y, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(hz, z, n * sizeof(float), cudaMemcpyDeviceToHost);
    double s = 0;
    for (int i = 0; i < n; ++i) s += hy[i] + 3.0 * hz[i];
    printf("main line %d\n", __LINE__); printf("checksum %.3f\n", s);
    cudaFree(x); cudaFree(y); cudaFree(z);
    return 0;
}
