// gen/codegen.cuh -- runs two kernels and writes the C header that goes with the weights
#ifndef GEN_CODEGEN_CUH
#define GEN_CODEGEN_CUH
#include <cstdio>

static const char* kHeaderTemplate = R"TPL(
#include "layout_generated.h"
/* generated, do not edit */
)TPL";

__global__ void fill_k(float* y, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = v + (float)(i & 7);
}
__global__ void iota_k(float* z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = (float)i * 0.5f;
}

static void emit(float* y, float* z, int n) {
    fill_k<<<(n + 255) / 256, 256>>>(y, 3.0f, n);
    iota_k<<<(n + 255) / 256, 256>>>(z, n);
    fputs(kHeaderTemplate, stdout);
}
#endif
