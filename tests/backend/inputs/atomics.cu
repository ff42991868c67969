// Atomics from many blocks at once (the CPU backend runs blocks on several OS
// threads): add/sub/min/max/exch/CAS/inc/and/or/xor on int, unsigned,
// unsigned long long, float and double, on global and shared memory.
#include <cstdio>
#include <cuda_runtime.h>

#define BLOCKS 64
#define THREADS 128

struct Counters {
  int add_i, sub_i, max_i, min_i, cas_i;
  unsigned add_u, inc_u, and_u, or_u, xor_u;
  unsigned long long add_ull, exch_ull;
  float add_f;
  double add_d;
  int shared_ok;
};

__global__ void hammer(Counters* c) {
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  __shared__ int local;
  if (threadIdx.x == 0) local = 0;
  __syncthreads();
  atomicAdd(&local, 2);
  atomicAdd(&c->add_i, 3);
  atomicSub(&c->sub_i, 1);
  atomicMax(&c->max_i, (g * 7919) % 10007);
  atomicMin(&c->min_i, (g * 7919) % 10007 - 5000);
  int old = c->cas_i, assumed;
  do {
    assumed = old;
    old = atomicCAS(&c->cas_i, assumed, assumed + 1);
  } while (assumed != old);
  atomicAdd(&c->add_u, 2u);
  atomicInc(&c->inc_u, 999u);
  atomicAnd(&c->and_u, ~(1u << (g % 32)));
  atomicOr(&c->or_u, 1u << (g % 32));
  atomicXor(&c->xor_u, 1u << (g % 7));
  atomicAdd(&c->add_ull, 1000000000ull);
  atomicExch(&c->exch_ull, 42ull);
  atomicAdd(&c->add_f, 0.5f);
  atomicAdd(&c->add_d, 0.25);
  __syncthreads();
  if (threadIdx.x == 0 && local == 2 * THREADS) atomicAdd(&c->shared_ok, 1);
}

int main() {
  Counters h = {};
  h.min_i = 1 << 30;
  h.and_u = 0xffffffffu;
  Counters* d;
  cudaMalloc(&d, sizeof h);
  cudaMemcpy(d, &h, sizeof h, cudaMemcpyHostToDevice);
  hammer<<<BLOCKS, THREADS>>>(d);
  cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);
  const int n = BLOCKS * THREADS;
  int max_i = -1, min_i = 1 << 30;
  for (int g = 0; g < n; ++g) {
    int v = (g * 7919) % 10007;
    max_i = v > max_i ? v : max_i;
    min_i = v - 5000 < min_i ? v - 5000 : min_i;
  }
  unsigned xor_u = 0;
  for (int g = 0; g < n; ++g) xor_u ^= 1u << (g % 7);
  bool ok = h.add_i == 3 * n && h.sub_i == -n && h.max_i == max_i && h.min_i == min_i &&
            h.cas_i == n && h.add_u == 2u * n && h.inc_u == (unsigned)(n % 1000) &&
            h.and_u == 0u && h.or_u == 0xffffffffu && h.xor_u == xor_u &&
            h.add_ull == 1000000000ull * n && h.exch_ull == 42ull && h.add_f == 0.5f * n &&
            h.add_d == 0.25 * n && h.shared_ok == BLOCKS;
  printf("atomics: %s\n", ok ? "OK" : "MISMATCH");
  if (!ok)
    printf("%d %d %d %d %d %u %u %u %u %u %llu %llu %f %f %d\n", h.add_i, h.sub_i, h.max_i,
           h.min_i, h.cas_i, h.add_u, h.inc_u, h.and_u, h.or_u, h.xor_u, h.add_ull, h.exch_ull,
           h.add_f, h.add_d, h.shared_ok);
  return ok ? 0 : 1;
}
