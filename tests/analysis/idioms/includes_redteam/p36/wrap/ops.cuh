// wrap/ops.cuh -- site wrapper around the vendor's ops.cuh: sets the gain, adds the helper
#pragma once
#define OPS_GAIN 2.5f
#include_next <ops.cuh>

static void ops_forward(const float* x, float* y, float* z, int n) {
    gain_k<<<(n + 255) / 256, 256>>>(x, y, n);
    shift_k<<<(n + 255) / 256, 256>>>(x, z, n);
}
