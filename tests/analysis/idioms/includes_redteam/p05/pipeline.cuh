// pipeline.cuh -- host side of the two-stage pipeline; the kernels live in main.cu
#pragma once

static void run_pipeline(const float* x, float* y, float* z, int n) {
    stage_a<<<(n + 255) / 256, 256>>>(x, y, n);
    stage_b<<<(n + 255) / 256, 256>>>(x, z, n);
}
// ported from the Windows tree: C:\work\cuda\pipeline\
