#include <cstdio>
#include <cuda_runtime.h>
#include "codegen.cuh"

int main() {
    const int n = 1500;
    static float hy[n], hz[n];
    float *y, *z;
    cudaMalloc(&y, n * sizeof(float));
    cudaMalloc(&z, n * sizeof(float));
    emit(y, z, n);
    cudaMemcpy(hy, y, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(hz, z, n * sizeof(float), cudaMemcpyDeviceToHost);
    double s = 0;
    for (int i = 0; i < n; ++i) s += hy[i] + 3.0 * hz[i];
    printf("checksum %.4f\n", s);
    cudaFree(y); cudaFree(z);
    return 0;
}
