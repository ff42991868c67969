// BERT Q/K/V projection sub-graph (figure 1 of the SIRIUS paper).
//
// The input X [SEQ x HIDDEN] feeds three independent branches (Q, K, V).
// Each branch runs the same three kernels on its own buffers:
//   gemm_tiled    : Y = X * W          (W is HIDDEN x HIDDEN, 16x16 shared tiles)
//   bias_add      : Y[s][j] += b[j]
//   reshape_heads : out[h][s][d] = Y[s][h * HEAD_DIM + d]
// 9 launches in the order Q gemm, Q bias, Q reshape, K ..., V ....
//
// Size macros (override with -D): SEQ, HIDDEN, HEADS.
// SEQ and HIDDEN must be multiples of 16 (the GEMM has no bounds guards, its
// grid covers the output exactly); HIDDEN must be a multiple of HEADS.

#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#ifndef SEQ
#define SEQ 384
#endif
#ifndef HIDDEN
#define HIDDEN 768
#endif
#ifndef HEADS
#define HEADS 12
#endif

#define HEAD_DIM (HIDDEN / HEADS)
#define TILE 16
#define THREADS 256

static_assert(SEQ % TILE == 0, "SEQ must be a multiple of 16");
static_assert(HIDDEN % TILE == 0, "HIDDEN must be a multiple of 16");
static_assert(HIDDEN % HEADS == 0, "HIDDEN must be a multiple of HEADS");

#define CUDA_CHECK(call)                                                      \
  do {                                                                        \
    cudaError_t err_ = (call);                                                \
    if (err_ != cudaSuccess) {                                                \
      fprintf(stderr, "CUDA error at %s:%d: %s\n", __FILE__, __LINE__,        \
              cudaGetErrorString(err_));                                      \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

// Y[row][col] = sum_j X[row][j] * W[j][col]; X is (rows x k), W is (k x n).
// One 16x16 thread block computes one 16x16 tile of Y.
__global__ void gemm_tiled(const float* X, const float* W, float* Y, int n, int k) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  int tx = threadIdx.x;
  int ty = threadIdx.y;
  int row = blockIdx.y * TILE + ty;
  int col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int t = 0; t < k; t += TILE) {
    As[ty][tx] = X[row * k + t + tx];
    Bs[ty][tx] = W[(t + ty) * n + col];
    __syncthreads();
    for (int j = 0; j < TILE; ++j) {
      acc += As[ty][j] * Bs[j][tx];
    }
    __syncthreads();
  }
  Y[row * n + col] = acc;
}

// Y[i] += b[column of i]; Y is (total / cols) x cols, row-major.
__global__ void bias_add(float* Y, const float* b, int total, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < total) {
    Y[i] += b[i % cols];
  }
}

// out[h][s][d] = Y[s][h * dim + d]; one thread per output element.
__global__ void reshape_heads(const float* Y, float* out, int seq, int heads, int dim) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < heads * seq * dim) {
    int h = i / (seq * dim);
    int s = (i / dim) % seq;
    int d = i % dim;
    out[i] = Y[s * (heads * dim) + h * dim + d];
  }
}

static void fill(float* p, int count, int mul, int add, int mod, float scale) {
  for (int i = 0; i < count; ++i) {
    long long v = ((long long)i * mul + add) % mod;
    p[i] = ((float)v / (float)mod - 0.5f) * scale;
  }
}

// CPU reference of one branch: GEMM (double accumulation), bias, reshape.
static void reference_branch(const float* X, const float* W, const float* b, float* out) {
  double* row = (double*)malloc(sizeof(double) * HIDDEN);
  for (int s = 0; s < SEQ; ++s) {
    for (int col = 0; col < HIDDEN; ++col) row[col] = 0.0;
    for (int j = 0; j < HIDDEN; ++j) {
      double x = X[s * HIDDEN + j];
      const float* w = W + j * HIDDEN;
      for (int col = 0; col < HIDDEN; ++col) row[col] += x * w[col];
    }
    for (int col = 0; col < HIDDEN; ++col) {
      int h = col / HEAD_DIM;
      int d = col % HEAD_DIM;
      out[(h * SEQ + s) * HEAD_DIM + d] = (float)(row[col] + b[col]);
    }
  }
  free(row);
}

int main() {
  const int xCount = SEQ * HIDDEN;
  const int wCount = HIDDEN * HIDDEN;
  const size_t xBytes = sizeof(float) * xCount;
  const size_t wBytes = sizeof(float) * wCount;
  const size_t bBytes = sizeof(float) * HIDDEN;

  float* hX = (float*)malloc(xBytes);
  float* hWq = (float*)malloc(wBytes);
  float* hWk = (float*)malloc(wBytes);
  float* hWv = (float*)malloc(wBytes);
  float* hbq = (float*)malloc(bBytes);
  float* hbk = (float*)malloc(bBytes);
  float* hbv = (float*)malloc(bBytes);
  fill(hX, xCount, 37, 11, 101, 1.0f);
  fill(hWq, wCount, 13, 7, 97, 0.1f);
  fill(hWk, wCount, 17, 3, 89, 0.1f);
  fill(hWv, wCount, 19, 5, 83, 0.1f);
  fill(hbq, HIDDEN, 7, 1, 31, 1.0f);
  fill(hbk, HIDDEN, 5, 2, 29, 1.0f);
  fill(hbv, HIDDEN, 3, 4, 23, 1.0f);

  float *dX, *dWq, *dWk, *dWv, *dbq, *dbk, *dbv;
  float *dYq, *dYk, *dYv, *dOq, *dOk, *dOv;
  CUDA_CHECK(cudaMalloc(&dX, xBytes));
  CUDA_CHECK(cudaMalloc(&dWq, wBytes));
  CUDA_CHECK(cudaMalloc(&dWk, wBytes));
  CUDA_CHECK(cudaMalloc(&dWv, wBytes));
  CUDA_CHECK(cudaMalloc(&dbq, bBytes));
  CUDA_CHECK(cudaMalloc(&dbk, bBytes));
  CUDA_CHECK(cudaMalloc(&dbv, bBytes));
  CUDA_CHECK(cudaMalloc(&dYq, xBytes));
  CUDA_CHECK(cudaMalloc(&dYk, xBytes));
  CUDA_CHECK(cudaMalloc(&dYv, xBytes));
  CUDA_CHECK(cudaMalloc(&dOq, xBytes));
  CUDA_CHECK(cudaMalloc(&dOk, xBytes));
  CUDA_CHECK(cudaMalloc(&dOv, xBytes));

  CUDA_CHECK(cudaMemcpy(dX, hX, xBytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dWq, hWq, wBytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dWk, hWk, wBytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dWv, hWv, wBytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dbq, hbq, bBytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dbk, hbk, bBytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dbv, hbv, bBytes, cudaMemcpyHostToDevice));

  dim3 gemmGrid(HIDDEN / TILE, SEQ / TILE);
  dim3 gemmBlock(TILE, TILE);
  int ewGrid = (xCount + THREADS - 1) / THREADS;

  // Q branch
  gemm_tiled<<<gemmGrid, gemmBlock>>>(dX, dWq, dYq, HIDDEN, HIDDEN);
  bias_add<<<ewGrid, THREADS>>>(dYq, dbq, xCount, HIDDEN);
  reshape_heads<<<ewGrid, THREADS>>>(dYq, dOq, SEQ, HEADS, HEAD_DIM);
  // K branch
  gemm_tiled<<<gemmGrid, gemmBlock>>>(dX, dWk, dYk, HIDDEN, HIDDEN);
  bias_add<<<ewGrid, THREADS>>>(dYk, dbk, xCount, HIDDEN);
  reshape_heads<<<ewGrid, THREADS>>>(dYk, dOk, SEQ, HEADS, HEAD_DIM);
  // V branch
  gemm_tiled<<<gemmGrid, gemmBlock>>>(dX, dWv, dYv, HIDDEN, HIDDEN);
  bias_add<<<ewGrid, THREADS>>>(dYv, dbv, xCount, HIDDEN);
  reshape_heads<<<ewGrid, THREADS>>>(dYv, dOv, SEQ, HEADS, HEAD_DIM);

  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());

  float* hO = (float*)malloc(3 * xBytes);
  CUDA_CHECK(cudaMemcpy(hO, dOq, xBytes, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(hO + xCount, dOk, xBytes, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(hO + 2 * xCount, dOv, xBytes, cudaMemcpyDeviceToHost));

  float* ref = (float*)malloc(3 * xBytes);
  reference_branch(hX, hWq, hbq, ref);
  reference_branch(hX, hWk, hbk, ref + xCount);
  reference_branch(hX, hWv, hbv, ref + 2 * xCount);

  double checksum = 0.0;
  double maxErr = 0.0;
  int ok = 1;
  for (int i = 0; i < 3 * xCount; ++i) {
    double err = fabs((double)hO[i] - (double)ref[i]);
    if (err > maxErr) maxErr = err;
    if (!(err <= 1e-4 + 1e-3 * fabs((double)ref[i]))) ok = 0;
    checksum += hO[i];
  }
  printf("max_abs_err: %.3e\n", maxErr);
  printf("checksum: %.6f\n", checksum);
  printf("reference: %s\n", ok ? "OK" : "MISMATCH");

  CUDA_CHECK(cudaFree(dX));
  CUDA_CHECK(cudaFree(dWq));
  CUDA_CHECK(cudaFree(dWk));
  CUDA_CHECK(cudaFree(dWv));
  CUDA_CHECK(cudaFree(dbq));
  CUDA_CHECK(cudaFree(dbk));
  CUDA_CHECK(cudaFree(dbv));
  CUDA_CHECK(cudaFree(dYq));
  CUDA_CHECK(cudaFree(dYk));
  CUDA_CHECK(cudaFree(dYv));
  CUDA_CHECK(cudaFree(dOq));
  CUDA_CHECK(cudaFree(dOk));
  CUDA_CHECK(cudaFree(dOv));
  free(hX);
  free(hWq);
  free(hWk);
  free(hWv);
  free(hbq);
  free(hbk);
  free(hbv);
  free(hO);
  free(ref);
  return ok ? 0 : 1;
}
