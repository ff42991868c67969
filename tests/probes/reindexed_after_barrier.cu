// Probe: a re-indexed fragment after a barrier that orders something else. tile writes
// through a shared tile (one block of 32 threads, a barrier of its own), twice: t from x,
// then h from t; spread is a mapping kernel of another shape (2 blocks of 16) whose every
// thread reads all of h, and it writes x back (so the schedule keeps it in the lane):
// re-indexed onto tile's 32 threads, it reads what other threads of the block wrote, so
// a barrier must stand between the second tile and spread. The
// barrier between the two tiles (their shared array reused) orders another pair; it
// does not keep this one, and redundant barrier elimination must not take this one away
// (it once did: the barrier before spread was recorded as ordering the first tile).
// Correct outcome: results equal the original's; if tile and spread are fused into one
// lane, the group has at least one barrier inserted.
#include <cstdio>
#include <cuda_runtime.h>

#define H 32

__global__ void tile(float* out, const float* in) {
  __shared__ float s[H];
  s[threadIdx.x] = in[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = s[threadIdx.x] - 0.5f * s[(threadIdx.x + 1) % H];
}

__global__ void spread(float* out, const float* w, const float* h) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.0f;
  for (int j = 0; j < H; ++j) acc += w[i * H + j] * h[j];
  out[i] = acc;
}

int main() {
  float *x, *t, *h, *w, *y;
  cudaMalloc(&x, sizeof(float) * H);
  cudaMalloc(&t, sizeof(float) * H);
  cudaMalloc(&h, sizeof(float) * H);
  cudaMalloc(&w, sizeof(float) * H * H);
  cudaMalloc(&y, sizeof(float) * H);
  float host[H * H];
  for (int i = 0; i < H * H; ++i) host[i] = (float)((i * 29) % 83) / (83.0f * H);
  cudaMemcpy(w, host, sizeof(float) * H * H, cudaMemcpyHostToDevice);
  for (int i = 0; i < H; ++i) host[i] = (float)((i * 37) % 101) / 101.0f;
  cudaMemcpy(x, host, sizeof(float) * H, cudaMemcpyHostToDevice);
  tile<<<1, H>>>(t, x);
  tile<<<1, H>>>(h, t);
  spread<<<2, H / 2>>>(x, w, h);
  cudaMemcpy(host, x, sizeof(float) * H, cudaMemcpyDeviceToHost);
  double check = 0;
  for (int i = 0; i < H; ++i) check += host[i] * (1 + i % 3);
  printf("checksum %.6f\n", check);
  return 0;
}
