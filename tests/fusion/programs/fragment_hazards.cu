// What the second blind red team found: kernels whose copy as a fragment would not do what
// they do (a static local, the global index through ::, an index read in a constructor, a
// member initializer or a default argument, a default argument naming the caller, cluster
// dimensions) and a template kernel launched over its __launch_bounds__.
#include <cstdio>
#include <cuda_runtime.h>

#define GLOBAL_ID (::blockIdx.x * ::blockDim.x + ::threadIdx.x)

struct ThreadCtx {
  unsigned id;
  __device__ ThreadCtx() : id(blockIdx.x * blockDim.x + threadIdx.x) {}
};
struct Lane {
  unsigned block = blockIdx.x;
};
__device__ unsigned flat(unsigned b = blockIdx.x, unsigned t = threadIdx.x) { return b * 64 + t; }
__device__ void note(float* log, float v, const char* site = __builtin_FUNCTION()) {
  if (v < 0.0f) log[0] = (float)site[0];
}

__global__ void counted(float* a) { static __device__ int calls; int i = blockIdx.x * blockDim.x + threadIdx.x; if (i == 0) calls++; a[i] += 1.0f; }
__global__ void global_id(float* a) { a[GLOBAL_ID] *= 2.0f; }
__global__ void ctor_id(float* a) { ThreadCtx t; a[t.id] += 3.0f; }
__global__ void member_id(float* a) { Lane l; a[l.block * 64 + threadIdx.x] -= 1.0f; }
__global__ void default_id(float* a) { a[flat()] *= 0.5f; }
__global__ void logs(float* a, float* log) { int i = blockIdx.x * blockDim.x + threadIdx.x; note(log, a[i]); a[i] += 0.25f; }
__global__ void __cluster_dims__(2, 1, 1) clustered(float* a) { a[blockIdx.x * blockDim.x + threadIdx.x] += 2.0f; }
template <int THREADS>
__global__ void __launch_bounds__(THREADS) bounded(float* a) { a[blockIdx.x * blockDim.x + threadIdx.x] -= 2.0f; }
__global__ void plain(float* a) { a[blockIdx.x * blockDim.x + threadIdx.x] += 1.0f; }
__global__ void wide(float* a) { a[blockIdx.x * 128 + threadIdx.x] += 1.0f; }

int main() {
  float *a, *log, h[1024];
  cudaMalloc(&a, sizeof h);
  cudaMalloc(&log, sizeof(float));
  cudaMemset(a, 0, sizeof h);
  counted<<<16, 64>>>(a);
  plain<<<16, 64>>>(a);
  cudaMemcpy(h, a, sizeof h, cudaMemcpyDeviceToHost);
  global_id<<<16, 64>>>(a);
  wide<<<8, 128>>>(a);
  cudaMemcpy(h, a, sizeof h, cudaMemcpyDeviceToHost);
  wide<<<8, 128>>>(a);
  ctor_id<<<16, 64>>>(a);
  cudaMemcpy(h, a, sizeof h, cudaMemcpyDeviceToHost);
  wide<<<8, 128>>>(a);
  member_id<<<16, 64>>>(a);
  cudaMemcpy(h, a, sizeof h, cudaMemcpyDeviceToHost);
  wide<<<8, 128>>>(a);
  default_id<<<16, 64>>>(a);
  cudaMemcpy(h, a, sizeof h, cudaMemcpyDeviceToHost);
  logs<<<16, 64>>>(a, log);
  plain<<<16, 64>>>(a);
  cudaMemcpy(h, a, sizeof h, cudaMemcpyDeviceToHost);
  clustered<<<16, 64>>>(a);
  plain<<<16, 64>>>(a);
  cudaMemcpy(h, a, sizeof h, cudaMemcpyDeviceToHost);
  bounded<32><<<16, 64>>>(a);
  plain<<<16, 64>>>(a);
  cudaMemcpy(h, a, sizeof h, cudaMemcpyDeviceToHost);
  double s = 0;
  for (int i = 0; i < 1024; i++) s += h[i] * (i % 7 + 1);
  printf("%.3f\n", s);
  return 0;
}
