// Stacked LSTM: CELLS layers unrolled over STEPS time steps, driven by two
// host loops. Every cell (s, c) launches 8 gemv kernels (4 gates on the
// input x, 4 gates on the previous state h) and one elementwise solve kernel.
//
// State layout: hs and cs hold (STEPS + 1) x (CELLS + 1) slots of HIDDEN
// floats; slot (t, j) starts at ((t * (CELLS + 1)) + j) * HIDDEN.
//   hs slot (s + 1, 0)     : input x_s of step s (input of layer 0)
//   hs/cs slot (0, c + 1)  : initial h / c of cell c
//   cell (s, c) reads  x = hs slot (s + 1, c), h = hs slot (s, c + 1),
//                      c_prev = cs slot (s, c + 1)
//               writes h_new = hs slot (s + 1, c + 1), c_new = cs slot (s + 1, c + 1)
// Weights: matrix g of cell c at W + (c * 8 + g) * HIDDEN * HIDDEN
// (g = 0..3: gates i, f, g, o on x; g = 4..7: the same gates on h).
// Gate temporaries: gemv g of cell c writes gates + (c * 8 + g) * HIDDEN.
//
// Size macros (override with -D): HIDDEN, CELLS, STEPS.

#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#ifndef HIDDEN
#define HIDDEN 256
#endif
#ifndef CELLS
#define CELLS 10
#endif
#ifndef STEPS
#define STEPS 100
#endif

#define THREADS 256

#define CUDA_CHECK(call)                                                      \
  do {                                                                        \
    cudaError_t err_ = (call);                                                \
    if (err_ != cudaSuccess) {                                                \
      fprintf(stderr, "CUDA error at %s:%d: %s\n", __FILE__, __LINE__,        \
              cudaGetErrorString(err_));                                      \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

// y = W * x for a square n x n row-major matrix; one thread per output row.
__global__ void gemv(const float* W, const float* x, float* y, int n) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < n) {
    float acc = 0.0f;
    for (int k = 0; k < n; ++k) {
      acc += W[r * n + k] * x[k];
    }
    y[r] = acc;
  }
}

__device__ float sigmoid_dev(float v) { return 1.0f / (1.0f + expf(-v)); }

// LSTM cell update from the 8 gate vectors (g[0..3] on x, g[4..7] on h).
__global__ void solve(const float* g, const float* c_prev, float* c_new, float* h_new, int n) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < n) {
    float ig = sigmoid_dev(g[r] + g[4 * n + r]);
    float fg = sigmoid_dev(g[n + r] + g[5 * n + r]);
    float gg = tanhf(g[2 * n + r] + g[6 * n + r]);
    float og = sigmoid_dev(g[3 * n + r] + g[7 * n + r]);
    float c = fg * c_prev[r] + ig * gg;
    c_new[r] = c;
    h_new[r] = og * tanhf(c);
  }
}

static void fill(float* p, int count, int mul, int add, int mod, float scale) {
  for (int i = 0; i < count; ++i) {
    long long v = ((long long)i * mul + add) % mod;
    p[i] = ((float)v / (float)mod - 0.5f) * scale;
  }
}

static float sigmoid_host(float v) { return 1.0f / (1.0f + expf(-v)); }

int main() {
  const int slots = (STEPS + 1) * (CELLS + 1);
  const int stateCount = slots * HIDDEN;
  const int HH = HIDDEN * HIDDEN;
  const int wCount = CELLS * 8 * HH;
  const int gateCount = CELLS * 8 * HIDDEN;

  // Host state: inputs in slots (s + 1, 0), initial states in slots (0, c + 1),
  // everything else zero (overwritten by the cells).
  float* hHs = (float*)calloc(stateCount, sizeof(float));
  float* hCs = (float*)calloc(stateCount, sizeof(float));
  float* hW = (float*)malloc(sizeof(float) * wCount);
  for (int s = 0; s < STEPS; ++s) {
    fill(hHs + ((s + 1) * (CELLS + 1)) * HIDDEN, HIDDEN, 37 + s, 11, 101, 2.0f);
  }
  for (int c = 0; c < CELLS; ++c) {
    fill(hHs + (c + 1) * HIDDEN, HIDDEN, 13 + c, 5, 53, 1.0f);
    fill(hCs + (c + 1) * HIDDEN, HIDDEN, 17 + c, 3, 61, 1.0f);
  }
  fill(hW, wCount, 29, 5, 113, 0.2f);

  float *d_hs, *d_cs, *d_W, *d_gates;
  CUDA_CHECK(cudaMalloc(&d_hs, sizeof(float) * stateCount));
  CUDA_CHECK(cudaMalloc(&d_cs, sizeof(float) * stateCount));
  CUDA_CHECK(cudaMalloc(&d_W, sizeof(float) * wCount));
  CUDA_CHECK(cudaMalloc(&d_gates, sizeof(float) * gateCount));
  CUDA_CHECK(cudaMemcpy(d_hs, hHs, sizeof(float) * stateCount, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_cs, hCs, sizeof(float) * stateCount, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_W, hW, sizeof(float) * wCount, cudaMemcpyHostToDevice));

  int grid = (HIDDEN + THREADS - 1) / THREADS;
  for (int s = 0; s < STEPS; ++s) {
    for (int c = 0; c < CELLS; ++c) {
      const float* x = d_hs + ((s + 1) * (CELLS + 1) + c) * HIDDEN;
      const float* h = d_hs + (s * (CELLS + 1) + c + 1) * HIDDEN;
      const float* c_prev = d_cs + (s * (CELLS + 1) + c + 1) * HIDDEN;
      float* h_new = d_hs + ((s + 1) * (CELLS + 1) + c + 1) * HIDDEN;
      float* c_new = d_cs + ((s + 1) * (CELLS + 1) + c + 1) * HIDDEN;
      const float* Wc = d_W + c * 8 * HH;
      float* g = d_gates + c * 8 * HIDDEN;
      gemv<<<grid, THREADS>>>(Wc + 0 * HH, x, g + 0 * HIDDEN, HIDDEN);
      gemv<<<grid, THREADS>>>(Wc + 1 * HH, x, g + 1 * HIDDEN, HIDDEN);
      gemv<<<grid, THREADS>>>(Wc + 2 * HH, x, g + 2 * HIDDEN, HIDDEN);
      gemv<<<grid, THREADS>>>(Wc + 3 * HH, x, g + 3 * HIDDEN, HIDDEN);
      gemv<<<grid, THREADS>>>(Wc + 4 * HH, h, g + 4 * HIDDEN, HIDDEN);
      gemv<<<grid, THREADS>>>(Wc + 5 * HH, h, g + 5 * HIDDEN, HIDDEN);
      gemv<<<grid, THREADS>>>(Wc + 6 * HH, h, g + 6 * HIDDEN, HIDDEN);
      gemv<<<grid, THREADS>>>(Wc + 7 * HH, h, g + 7 * HIDDEN, HIDDEN);
      solve<<<grid, THREADS>>>(g, c_prev, c_new, h_new, HIDDEN);
    }
  }
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());

  float* outHs = (float*)malloc(sizeof(float) * stateCount);
  float* outCs = (float*)malloc(sizeof(float) * stateCount);
  CUDA_CHECK(cudaMemcpy(outHs, d_hs, sizeof(float) * stateCount, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(outCs, d_cs, sizeof(float) * stateCount, cudaMemcpyDeviceToHost));

  // CPU reference, same slot layout, same order of cells.
  float* gates = (float*)malloc(sizeof(float) * 8 * HIDDEN);
  for (int s = 0; s < STEPS; ++s) {
    for (int c = 0; c < CELLS; ++c) {
      const float* x = hHs + ((s + 1) * (CELLS + 1) + c) * HIDDEN;
      const float* h = hHs + (s * (CELLS + 1) + c + 1) * HIDDEN;
      const float* c_prev = hCs + (s * (CELLS + 1) + c + 1) * HIDDEN;
      float* h_new = hHs + ((s + 1) * (CELLS + 1) + c + 1) * HIDDEN;
      float* c_new = hCs + ((s + 1) * (CELLS + 1) + c + 1) * HIDDEN;
      for (int gi = 0; gi < 8; ++gi) {
        const float* Wg = hW + (c * 8 + gi) * HH;
        const float* v = gi < 4 ? x : h;
        for (int r = 0; r < HIDDEN; ++r) {
          double acc = 0.0;
          for (int k = 0; k < HIDDEN; ++k) acc += (double)Wg[r * HIDDEN + k] * v[k];
          gates[gi * HIDDEN + r] = (float)acc;
        }
      }
      for (int r = 0; r < HIDDEN; ++r) {
        float ig = sigmoid_host(gates[r] + gates[4 * HIDDEN + r]);
        float fg = sigmoid_host(gates[HIDDEN + r] + gates[5 * HIDDEN + r]);
        float gg = tanhf(gates[2 * HIDDEN + r] + gates[6 * HIDDEN + r]);
        float og = sigmoid_host(gates[3 * HIDDEN + r] + gates[7 * HIDDEN + r]);
        float cv = fg * c_prev[r] + ig * gg;
        c_new[r] = cv;
        h_new[r] = og * tanhf(cv);
      }
    }
  }

  double checksum = 0.0;
  double maxErr = 0.0;
  int ok = 1;
  for (int i = 0; i < stateCount; ++i) {
    double eh = fabs((double)outHs[i] - (double)hHs[i]);
    double ec = fabs((double)outCs[i] - (double)hCs[i]);
    if (eh > maxErr) maxErr = eh;
    if (ec > maxErr) maxErr = ec;
    if (!(eh <= 1e-3 + 1e-3 * fabs((double)hHs[i]))) ok = 0;
    if (!(ec <= 1e-3 + 1e-3 * fabs((double)hCs[i]))) ok = 0;
    checksum += outHs[i];
  }
  printf("max_abs_err: %.3e\n", maxErr);
  printf("checksum: %.6f\n", checksum);
  printf("reference: %s\n", ok ? "OK" : "MISMATCH");

  CUDA_CHECK(cudaFree(d_hs));
  CUDA_CHECK(cudaFree(d_cs));
  CUDA_CHECK(cudaFree(d_W));
  CUDA_CHECK(cudaFree(d_gates));
  free(hHs);
  free(hCs);
  free(hW);
  free(outHs);
  free(outCs);
  free(gates);
  return ok ? 0 : 1;
}
