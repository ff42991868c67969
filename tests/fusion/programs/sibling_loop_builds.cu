// Sibling host loops whose merge would hold for this build only, or whose renaming would
// write another name than the program's (the blind red team of renamed loop variables):
// each pair stays two loops with its reason; a macro the program defines once, outside
// any condition, is this build's and every build's, and its loops merge.
#include <cstdio>
#include <cuda_runtime.h>

#ifndef SCALE_STEPS
#define SCALE_STEPS 4
#endif
#ifndef ADD_STEPS
#define ADD_STEPS 4
#endif
#ifndef SRC_CHUNK
#define SRC_CHUNK(i) (i)
#endif
#define STEPS 4
#define STEP_KERNEL scale

float gain = 0.75f;

__global__ void scale(float* x, int n, float s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * s + 0.5f;
}
__global__ void scale_v2(float* x, int n, float s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * s - 0.5f;
}
__global__ void addto(float* y, const float* x, int n, float c) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = y[i] * 0.5f + x[i] * c;
}

int main() {
  const int n = 4096, chunk = 1024;
  static float hx[n], hy[n];
  for (int q = 0; q < n; ++q) { hx[q] = (q % 17) * 0.25f; hy[q] = (q % 5) * 1.0f; }
  float *x, *y;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  cudaMemcpy(x, hx, n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(y, hy, n * sizeof(float), cudaMemcpyHostToDevice);

  // trip counts a build sets: with -DADD_STEPS=2 the second loop runs two steps
  for (int i = 0; i < SCALE_STEPS; ++i) {
    scale<<<chunk / 256, 256>>>(x + i * chunk, chunk, 1.0f + i * 0.125f);
  }
  for (int i = 0; i < ADD_STEPS; ++i) {
    addto<<<chunk / 256, 256>>>(y + i * chunk, x + i * chunk, chunk, 0.25f * i + 1.0f);
  }

  cudaDeviceSynchronize();  // (each pair apart from the next)
  // the chunk the second loop reads is a build's: (3 - i) reads what a later step writes
  for (int i = 0; i < STEPS; ++i) {
    scale<<<chunk / 256, 256>>>(x + i * chunk, chunk, 1.5f);
  }
  for (int i = 0; i < STEPS; ++i) {
    addto<<<chunk / 256, 256>>>(y + i * chunk, x + SRC_CHUNK(i) * chunk, chunk, 0.5f);
  }

  cudaDeviceSynchronize();  // (each pair apart from the next)
  // a conditional in the second body
  for (int i = 0; i < STEPS; ++i) {
    scale<<<chunk / 256, 256>>>(x + i * chunk, chunk, 0.75f);
  }
  for (int i = 0; i < STEPS; ++i) {
#if MIRROR
    addto<<<chunk / 256, 256>>>(y + i * chunk, x + (3 - i) * chunk, chunk, 2.0f);
#else
    addto<<<chunk / 256, 256>>>(y + i * chunk, x + i * chunk, chunk, 2.0f);
#endif
  }

  cudaDeviceSynchronize();  // (each pair apart from the next)
  // the second body's gain is the global one: given another name, it would name nothing
  for (int i = 0; i < STEPS; ++i) {
    float gain = 1.0f + i * 0.25f;
    scale<<<chunk / 256, 256>>>(x + i * chunk, chunk, gain);
  }
  for (int i = 0; i < STEPS; ++i) {
    extern float gain;
    addto<<<chunk / 256, 256>>>(y + i * chunk, x + i * chunk, chunk, gain * i);
  }

  cudaDeviceSynchronize();  // (each pair apart from the next)
  // the second body's coef written across a line splice
  for (int i = 0; i < STEPS; ++i) {
    float coef = 1.0f + i * 0.125f;
    scale<<<chunk / 256, 256>>>(x + i * chunk, chunk, coef);
  }
  for (int i = 0; i < STEPS; ++i) {
    float coef = 0.25f * i;
    addto<<<chunk / 256, 256>>>(y + i * chunk, x + i * chunk, chunk, co\
ef);
  }

  cudaDeviceSynchronize();  // (each pair apart from the next)
  // the kernel a macro names is another after the directive between the launches
  for (int i = 0; i < STEPS; ++i) {
    STEP_KERNEL<<<chunk / 256, 256>>>(x + i * chunk, chunk, 1.25f);
#undef STEP_KERNEL
#define STEP_KERNEL scale_v2
    addto<<<chunk / 256, 256>>>(y + i * chunk, x + i * chunk, chunk, 0.5f);
  }

  cudaDeviceSynchronize();  // (each pair apart from the next)
  // STEPS is defined once, outside any condition: one loop
  for (int i = 0; i < STEPS; ++i) {
    scale<<<chunk / 256, 256>>>(x + i * chunk, chunk, 0.5f);
  }
  for (int i = 0; i < STEPS; ++i) {
    addto<<<chunk / 256, 256>>>(y + i * chunk, x + i * chunk, chunk, 1.5f);
  }

  cudaDeviceSynchronize();  // (each pair apart from the next)
  // two loops on one line (the red team's): the analysis tells loops apart by their lines
  for (int i = 0; i < STEPS; ++i) {
    scale<<<chunk / 256, 256>>>(x + i * chunk, chunk, 0.25f);
  }
  for (int i = 0; i < STEPS; ++i) { addto<<<chunk / 256, 256>>>(y + i * chunk, x + i * chunk, chunk, 1.0f); } for (int i = 0; i < STEPS; ++i) { scale<<<chunk / 256, 256>>>(y + i * chunk, chunk, 0.5f); }

  cudaMemcpy(hx, x, n * sizeof(float), cudaMemcpyDeviceToHost);
  cudaMemcpy(hy, y, n * sizeof(float), cudaMemcpyDeviceToHost);
  double s = 0;
  for (int q = 0; q < n; ++q) s += hx[q] * (q % 7) + hy[q];
  printf("checksum %.6f\n", s);
  return 0;
}
