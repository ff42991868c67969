// A two-layer recurrence with a head and a tail in its step loop, as a model's decoder
// is written: the input projection of step t (head), two copies of one layer's cell
// (each reading the layer below this step and its own state from the step before), and
// an output projection (tail). The body is not copies of one pattern throughout.
#include <cstdio>
#include <cuda_runtime.h>

#define STEPS 6
#define H 64
#define IN 32
#define OUT 16

__global__ void project_input(float* __restrict__ xp, const float* __restrict__ x, const float* __restrict__ w) {
  int j = threadIdx.x;
  float s = 0.f;
  for (int k = 0; k < IN; ++k) s += w[j * IN + k] * x[k];
  xp[j] = s;
}

__global__ void cell(float* __restrict__ h_next, const float* __restrict__ below, const float* __restrict__ h_prev,
                     const float* __restrict__ u) {
  __shared__ float state[H];
  int j = threadIdx.x;
  state[j] = h_prev[j];
  __syncthreads();
  float s = below[j];
  for (int k = 0; k < H; ++k) s += u[j * H + k] * state[k];
  h_next[j] = tanhf(s);
}

__global__ void project_output(float* __restrict__ y, const float* __restrict__ h, const float* __restrict__ v) {
  int o = threadIdx.x;
  float s = 0.f;
  for (int k = 0; k < H; ++k) s += v[o * H + k] * h[k];
  y[o] = s;
}

int main() {
  float *x, *w, *u0, *u1, *v, *xp, *hs0, *hs1, *y;
  cudaMalloc(&x, STEPS * IN * sizeof(float));
  cudaMalloc(&w, H * IN * sizeof(float));
  cudaMalloc(&u0, H * H * sizeof(float));
  cudaMalloc(&u1, H * H * sizeof(float));
  cudaMalloc(&v, OUT * H * sizeof(float));
  cudaMalloc(&xp, STEPS * H * sizeof(float));
  cudaMalloc(&hs0, (STEPS + 1) * H * sizeof(float));
  cudaMalloc(&hs1, (STEPS + 1) * H * sizeof(float));
  cudaMalloc(&y, STEPS * OUT * sizeof(float));
  static float hx[STEPS * IN], hw[H * IN], hu[H * H], hv[OUT * H], zero[(STEPS + 1) * H];
  for (int i = 0; i < STEPS * IN; ++i) hx[i] = (i % 11) * 0.1f - 0.5f;
  for (int i = 0; i < H * IN; ++i) hw[i] = (i % 7) * 0.02f - 0.06f;
  for (int i = 0; i < H * H; ++i) hu[i] = (i % 5) * 0.01f - 0.02f;
  for (int i = 0; i < OUT * H; ++i) hv[i] = (i % 3) * 0.05f - 0.05f;
  cudaMemcpy(x, hx, sizeof hx, cudaMemcpyHostToDevice);
  cudaMemcpy(w, hw, sizeof hw, cudaMemcpyHostToDevice);
  cudaMemcpy(u0, hu, sizeof hu, cudaMemcpyHostToDevice);
  cudaMemcpy(u1, hu, sizeof hu, cudaMemcpyHostToDevice);
  cudaMemcpy(v, hv, sizeof hv, cudaMemcpyHostToDevice);
  cudaMemcpy(hs0, zero, sizeof zero, cudaMemcpyHostToDevice);
  cudaMemcpy(hs1, zero, sizeof zero, cudaMemcpyHostToDevice);
  for (int t = 0; t < STEPS; ++t) {
    project_input<<<1, H>>>(xp + t * H, x + t * IN, w);
    cell<<<1, H>>>(hs0 + (t + 1) * H, xp + t * H, hs0 + t * H, u0);
    cell<<<1, H>>>(hs1 + (t + 1) * H, hs0 + (t + 1) * H, hs1 + t * H, u1);
    project_output<<<1, OUT>>>(y + t * OUT, hs1 + (t + 1) * H, v);
  }
  static float hy[STEPS * OUT];
  cudaMemcpy(hy, y, sizeof hy, cudaMemcpyDeviceToHost);
  for (int i = 0; i < STEPS * OUT; ++i) printf("%d %.6f\n", i, hy[i]);
  return 0;
}
