// trace.cuh -- kernels that stamp their source line into a trace buffer
#pragma once
#define TRACE_SITE __LINE__

__global__ void scale_traced_k(const float* x, float* y, int* trace, int n, int site) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
    if (i == 0) trace[0] = site;
}
__global__ void shift_traced_k(const float* x, float* z, int* trace, int n, int site) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = x[i] + 1.0f;
    if (i == 0) trace[1] = site;
}

static void traced_step(const float* x, float* y, float* z, int* trace, int n) {
    scale_traced_k<<<(n + 255) / 256, 256>>>(x, y, trace,
                                             n,
                                             TRACE_SITE);
    shift_traced_k<<<(n + 255) / 256, 256>>>(x, z, trace, n, TRACE_SITE);
}
