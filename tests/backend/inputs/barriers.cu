// Barrier situations, chosen with -DCASE=n:
//   1 divergent: half of the block waits at one __syncthreads, half at another
//   2 early exit: threads past the data return before the block's barrier
//     (legal: the barrier waits only for threads that have not exited)
//   3 deadlock: lanes of a warp wait in a shuffle for lanes stuck at a barrier
//   4 __syncthreads_count / _and / _or
#include <cstdio>
#include <cuda_runtime.h>

#ifndef CASE
#define CASE 1
#endif

__global__ void divergent(int* out) {
  int t = threadIdx.x;
  if (t < 64) {
    out[t] = 1;
    __syncthreads();
  } else {
    out[t] = 2;
    __syncthreads();
  }
}

__global__ void early_exit(const int* in, int* out, int n) {
  __shared__ int s[128];
  int t = threadIdx.x;
  if (t >= n) return;
  s[t] = in[t] * 3;
  __syncthreads();
  out[t] = s[(t + 1) % n];
}

__global__ void stuck(int* out) {
  int t = threadIdx.x;
  int v = t;
  if (t % 32 < 16) {
    v = __shfl_sync(0xffffffff, v, 31);
  } else {
    __syncthreads();
  }
  out[t] = v;
}

__global__ void counting(int* out) {
  int t = threadIdx.x;
  int c = __syncthreads_count(t % 3 == 0);
  int a = __syncthreads_and(t < 1000);
  int o = __syncthreads_or(t == 77);
  int z = __syncthreads_and(t != 5);
  if (t == 0) {
    out[0] = c;
    out[1] = a;
    out[2] = o;
    out[3] = z;
  }
}

int main() {
  int* d;
  cudaMalloc(&d, sizeof(int) * 256);
#if CASE == 1
  divergent<<<2, 128>>>(d);
  cudaDeviceSynchronize();
  printf("divergent: finished\n");
#elif CASE == 2
  int h[128];
  for (int i = 0; i < 128; ++i) h[i] = i;
  int* din;
  cudaMalloc(&din, sizeof h);
  cudaMemcpy(din, h, sizeof h, cudaMemcpyHostToDevice);
  early_exit<<<1, 128>>>(din, d, 100);
  cudaMemcpy(h, d, sizeof(int) * 100, cudaMemcpyDeviceToHost);
  int bad = 0;
  for (int i = 0; i < 100; ++i) bad += h[i] != ((i + 1) % 100) * 3;
  printf("early exit: %s\n", bad ? "MISMATCH" : "OK");
  return bad ? 1 : 0;
#elif CASE == 3
  stuck<<<1, 64>>>(d);
  cudaDeviceSynchronize();
  printf("deadlock: finished\n");
#else
  counting<<<1, 200>>>(d);
  int h[4];
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  bool ok = h[0] == 67 && h[1] == 1 && h[2] == 1 && h[3] == 0;
  printf("counting: %s (%d %d %d %d)\n", ok ? "OK" : "MISMATCH", h[0], h[1], h[2], h[3]);
  return ok ? 0 : 1;
#endif
  return 0;
}
