// Tiled matrix multiply C = A * B (N x N) with 16 x 16 shared-memory tiles.
// -DDROP_LOAD_BARRIER removes the barrier between loading a tile and using
// it; -DDROP_REUSE_BARRIER removes the one before the tile is overwritten.
// Either mistake must give a wrong C on the CPU backend.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define N 128
#define TILE 16

__global__ void matmul(const float* A, const float* B, float* C) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int t = 0; t < N; t += TILE) {
    As[ty][tx] = A[row * N + t + tx];
    Bs[ty][tx] = B[(t + ty) * N + col];
#ifndef DROP_LOAD_BARRIER
    __syncthreads();
#endif
    for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
#ifndef DROP_REUSE_BARRIER
    __syncthreads();
#endif
  }
  C[row * N + col] = acc;
}

int main() {
  size_t bytes = sizeof(float) * N * N;
  float* A = (float*)malloc(bytes);
  float* B = (float*)malloc(bytes);
  float* C = (float*)malloc(bytes);
  for (int i = 0; i < N * N; ++i) {
    A[i] = (float)((i * 7) % 11) - 5.0f;
    B[i] = (float)((i * 5) % 13) - 6.0f;
  }
  float *dA, *dB, *dC;
  cudaMalloc(&dA, bytes);
  cudaMalloc(&dB, bytes);
  cudaMalloc(&dC, bytes);
  cudaMemcpy(dA, A, bytes, cudaMemcpyHostToDevice);
  cudaMemcpy(dB, B, bytes, cudaMemcpyHostToDevice);
  matmul<<<dim3(N / TILE, N / TILE), dim3(TILE, TILE)>>>(dA, dB, dC);
  cudaMemcpy(C, dC, bytes, cudaMemcpyDeviceToHost);
  int bad = 0;
  for (int r = 0; r < N; ++r)
    for (int c = 0; c < N; ++c) {
      float want = 0.0f;  // small integers: exact in float, any order
      for (int k = 0; k < N; ++k) want += A[r * N + k] * B[k * N + c];
      if (C[r * N + c] != want) ++bad;
    }
  printf("tiled: %s (%d wrong elements)\n", bad ? "MISMATCH" : "OK", bad);
  return bad ? 1 : 0;
}
