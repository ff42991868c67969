// RUN: sirius optimize %s --cooperative -o -
// A stacked recurrence as a DNN compiler emits it: the step loop's body is three copies
// (layers) of the same two launches, the layers unrolled, the pointers into h advancing by
// one stride per layer, the first layer reading the input x instead, and the temporary t
// in two storages used in turns (as TVM's memory plan reuses them). With --cooperative the
// body is read as a loop over layers: t becomes each layer's private scratch, and every
// anti-diagonal step + layer = w of the cells is one cooperative launch, the two launches
// of a cell its phases. 5 steps x 3 layers: waves 0..6. After the last wave, t0 and t1
// get what the last step left in them: t1 from layer 1's scratch, t0 from layer 2's.
//
// CHECK: #include <cooperative_groups.h>
// CHECK: static __device__ __align__(256) char sirius_cells_0_scratch[768];
// CHECK-LABEL: {{^}}__global__ void __launch_bounds__(64) sirius_cells_0(const int sirius_w, const int sirius_lo, const int sirius_hi,
// CHECK: // phase 0: gate (2 blocks per cell)
// CHECK-NEXT: for (unsigned sirius_vb = blockIdx.x; sirius_vb < sirius_cells * 2u; sirius_vb += gridDim.x) {
// CHECK-NEXT: const int sirius_layer = sirius_lo + (int)(sirius_vb / 2u);
// CHECK-NEXT: const int sirius_step = sirius_w - sirius_layer;
// CHECK: float * s{{[0-9]+}}_t = (float *)(sirius_scratch + sirius_layer * 256 + 0);
// CHECK-NEXT: const float * s{{[0-9]+}}_w = (const float *)(sirius_base_w + ((16384) * sirius_layer));
// CHECK-NEXT: const float * s{{[0-9]+}}_below = (const float *)(sirius_layer == 0 ? sirius_base_x + ((256) * sirius_step) : sirius_base_h + ((256) * sirius_layer + (768) * sirius_step + (512)));
// CHECK: cooperative_groups::this_grid().sync();
// CHECK-NEXT: // phase 1: update (1 blocks per cell)
// CHECK: if (sirius_w == 6) {
// CHECK-NEXT: cooperative_groups::this_grid().sync();
// CHECK: sirius_base_t1[0 + sirius_i] = sirius_scratch[256 + sirius_i];
// CHECK-NEXT: sirius_base_t0[0 + sirius_i] = sirius_scratch[512 + sirius_i];
// CHECK-LABEL: sirius: waves of cells: the loop body is 3 copies (layers) of 2 launches
// CHECK: sirius: the loop once without launching, to check the values the waves assume
// CHECK: sirius_cells_ok = sirius_cells_ok && sirius_holds({{[0-9]+}}, (sirius_checked == 30LL));
// CHECK: if (sirius_cells_ok && sirius_coop && sirius_grid > 0) {
// CHECK-NEXT: for (int sirius_w = 0; sirius_w <= 6; sirius_w += 1) {
// CHECK-NEXT: int sirius_lo = sirius_max(0, sirius_w - 4);
// CHECK-NEXT: int sirius_hi = sirius_min(2, sirius_w);
// CHECK: cudaLaunchCooperativeKernel(sirius_cells_0, dim3(sirius_grid), dim3(64), sirius_args, 0, 0);
// CHECK: sirius_waves_ran = true;
// CHECK: if (sirius_waves_ran) { sirius_took(2); }
// CHECK-NEXT: else { /* sirius: not the values optimized for, or no cooperative launches: the loop as written */
// CHECK-NEXT: if (sirius_cells_ok) sirius_took(4); else sirius_fell_back(5, {{[0-9]+}});
// CHECK-NEXT: {{^}}#line 75{{$}}
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define H 64
#define STEPS 5
#define LAYERS 3

// t[i] = sum_j w[i][j] * (below[j] + prev[j]): every block reads all of below and prev
__global__ void gate(float* t, const float* w, const float* below, const float* prev) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.0f;
  for (int j = 0; j < H; ++j) acc += w[i * H + j] * (below[j] + prev[j]);
  t[i] = acc;
}

// out[i] = 0.5 * t[i] + 0.25 * t[H - 1 - i]: reads the other block's half of t
__global__ void update(float* out, const float* t) {
  int i = threadIdx.x;
  out[i] = 0.5f * t[i] + 0.25f * t[H - 1 - i];
}

int main() {
  float *x, *w, *h, *t0, *t1;
  cudaMalloc(&x, sizeof(float) * STEPS * H);
  cudaMalloc(&w, sizeof(float) * LAYERS * H * H);
  cudaMalloc(&h, sizeof(float) * (STEPS + 1) * LAYERS * H);
  cudaMalloc(&t0, sizeof(float) * H);
  cudaMalloc(&t1, sizeof(float) * H);
  float* hx = (float*)malloc(sizeof(float) * LAYERS * H * H);
  for (int i = 0; i < STEPS * H; ++i) hx[i] = (float)((i * 37) % 101) / 101.0f;
  cudaMemcpy(x, hx, sizeof(float) * STEPS * H, cudaMemcpyHostToDevice);
  for (int i = 0; i < LAYERS * H * H; ++i) hx[i] = (float)((i * 53) % 97) / (97.0f * H);
  cudaMemcpy(w, hx, sizeof(float) * LAYERS * H * H, cudaMemcpyHostToDevice);
  cudaMemset(h, 0, sizeof(float) * (STEPS + 1) * LAYERS * H);
  for (int step = 0; step < STEPS; ++step) {
    float* in = x + step * H;
    float* h_prev = h + step * LAYERS * H;
    float* h_next = h + (step + 1) * LAYERS * H;
    gate<<<2, 32>>>(t0, w, in, h_prev);
    update<<<1, H>>>(h_next, t0);
    gate<<<2, 32>>>(t1, w + H * H, h_next, h_prev + H);
    update<<<1, H>>>(h_next + H, t1);
    gate<<<2, 32>>>(t0, w + 2 * H * H, h_next + H, h_prev + 2 * H);
    update<<<1, H>>>(h_next + 2 * H, t0);
  }
  float* out = (float*)malloc(sizeof(float) * (STEPS + 1) * LAYERS * H);
  cudaMemcpy(out, h, sizeof(float) * (STEPS + 1) * LAYERS * H, cudaMemcpyDeviceToHost);
  float last[H];
  cudaMemcpy(last, t0, sizeof(float) * H, cudaMemcpyDeviceToHost);
  double check = 0;
  for (int i = 0; i < (STEPS + 1) * LAYERS * H; ++i) check += out[i] * (1 + i % 7);
  for (int i = 0; i < H; ++i) check += last[i];
  printf("checksum %.6f\n", check);
  return 0;
}
