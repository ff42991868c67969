// Warp operations on a block of 80 threads (two full warps and a partial one
// of 16 lanes): shuffles of all kinds and widths, votes, __syncwarp, match,
// warp reductions and a shuffle-based sum of doubles.
#include <cstdio>
#include <cuda_runtime.h>

#define THREADS 80
#define FIELDS 12

__global__ void warp_ops(int* out, double* dsum) {
  int t = threadIdx.x;
  int lane = t % 32;
  unsigned full = __activemask();
  int* o = out + FIELDS * t;
  o[0] = __shfl_sync(full, t * 10, 3);                 // lane 3 of the warp
  o[1] = __shfl_up_sync(full, t, 2);                   // from lane - 2
  o[2] = __shfl_down_sync(full, t, 5);                 // from lane + 5
  o[3] = __shfl_xor_sync(full, t, 1);                  // pairs swap
  o[4] = __shfl_down_sync(full, t, 3, 8);              // within groups of 8
  o[5] = (int)__ballot_sync(full, lane % 3 == 0);
  o[6] = __any_sync(full, t == 40);
  o[7] = __all_sync(full, lane < 31);
  __syncwarp(full);
  o[8] = (int)__match_any_sync(full, lane / 4);
  o[9] = __reduce_add_sync(full, t);
  int v = lane;
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(full, v, off);
  o[10] = v;
  o[11] = (int)full;
  double d = 0.5 * t;
  for (int off = 16; off > 0; off /= 2) d += __shfl_down_sync(full, d, off);
  if (lane == 0) dsum[t / 32] = d;
}

int main() {
  int* d;
  double* dd;
  cudaMalloc(&d, sizeof(int) * FIELDS * THREADS);
  cudaMalloc(&dd, sizeof(double) * 3);
  warp_ops<<<1, THREADS>>>(d, dd);
  int h[FIELDS * THREADS];
  double hs[3];
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  cudaMemcpy(hs, dd, sizeof hs, cudaMemcpyDeviceToHost);
  int bad = 0;
  for (int t = 0; t < THREADS; ++t) {
    int lane = t % 32, base = t - lane;
    int width = t < 64 ? 32 : 16;  // lanes present in this warp
    unsigned full = width == 32 ? 0xffffffffu : 0xffffu;
    const int* o = h + FIELDS * t;
    unsigned ballot = 0;
    int any = 0, all = 1, sum = 0, xsum = 0;
    for (int l = 0; l < width; ++l) {
      if (l % 3 == 0) ballot |= 1u << l;
      any |= (base + l) == 40;
      all &= l < 31;
      sum += base + l;
      xsum += l;
    }
    unsigned match = 0;
    for (int l = 0; l < width; ++l)
      if (l / 4 == lane / 4) match |= 1u << l;
    // A shuffle from a lane that does not exist is undefined: not checked.
    const int skip = -99999;
    int down5 = lane + 5 < 32 ? (lane + 5 < width ? t + 5 : skip) : t;
    int down3w8 = (lane % 8) + 3 < 8 ? t + 3 : t;
    int want[FIELDS] = {(base + 3) * 10, lane >= 2 ? t - 2 : t, down5, t ^ 1, down3w8,
                        (int)ballot, any, all, (int)match, sum, width == 32 ? xsum : skip,
                        (int)full};
    for (int k = 0; k < FIELDS; ++k)
      if (want[k] != skip && o[k] != want[k]) {
        if (bad < 10) printf("thread %d field %d: got %d want %d\n", t, k, o[k], want[k]);
        ++bad;
      }
  }
  for (int w = 0; w < 2; ++w) {
    double want = 0;
    for (int l = 0; l < 32; ++l) want += 0.5 * (32 * w + l);
    if (hs[w] != want) ++bad;
  }
  printf("warp: %s\n", bad ? "MISMATCH" : "OK");
  return bad ? 1 : 0;
}
