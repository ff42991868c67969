// Launches through CUDA's untyped API and host callbacks: cudaLaunchKernel and
// cudaLaunchCooperativeKernel given `(void*)kernel` (C and C++ casts, a template
// instance, a pointer kept in a variable and in a table) with `void* args[]`,
// and CUDART_CB callbacks run by cudaStreamAddCallback and cudaLaunchHostFunc
// in stream order. Checks its own results: prints "launch api: OK".
#include <cooperative_groups.h>
#include <cstdio>
#include <cuda_runtime.h>

#define N 512
#define THREADS 128

namespace cg = cooperative_groups;

__global__ void scale(float* x, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * s;
}

template <typename T>
__global__ void shift(T* x, T by, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] + by;
}

namespace ops {
__global__ void negate(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = -x[i];
}
}  // namespace ops

// Sums x into *total, then (after a grid barrier) every block reads the total.
__global__ void total_then_share(const float* x, float* total, float* seen, int n) {
  cg::grid_group grid = cg::this_grid();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(total, x[i]);
  grid.sync();
  if (threadIdx.x == 0) seen[blockIdx.x] = *total;
}

struct Progress {
  int callbacks;
  int host_functions;
  cudaError_t status;
};

void CUDART_CB after_kernels(cudaStream_t, cudaError_t status, void* data) {
  Progress* p = static_cast<Progress*>(data);
  p->callbacks += 1;
  p->status = status;
}

void CUDART_CB host_function(void* data) { static_cast<Progress*>(data)->host_functions += 1; }

static const void* const kTable[] = {(const void*)ops::negate};

int main() {
  float h[N];
  for (int i = 0; i < N; ++i) h[i] = (float)(i % 17) - 8.0f;
  float *d_x, *d_total, *d_seen;
  cudaMalloc(&d_x, N * sizeof(float));
  cudaMalloc(&d_total, sizeof(float));
  cudaMalloc(&d_seen, (N / THREADS) * sizeof(float));
  cudaMemset(d_total, 0, sizeof(float));
  cudaMemcpy(d_x, h, sizeof(h), cudaMemcpyHostToDevice);
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  dim3 grid(N / THREADS), block(THREADS);
  int n = N;
  bool ok = true;

  float s = 1.5f;
  void* scale_args[] = {&d_x, &s, &n};
  ok &= cudaLaunchKernel((void*)scale, grid, block, scale_args, 0, stream) == cudaSuccess;

  float by = 2.0f;
  void* shift_args[] = {&d_x, &by, &n};
  ok &= cudaLaunchKernel(reinterpret_cast<const void*>(&shift<float>), grid, block, shift_args, 0,
                         stream) == cudaSuccess;

  void* negate_args[] = {&d_x, &n};
  ok &= cudaLaunchKernel(kTable[0], grid, block, negate_args, 0, stream) == cudaSuccess;

  Progress progress = {0, 0, cudaErrorUnknown};
  cudaStreamAddCallback(stream, after_kernels, &progress, 0);
  cudaLaunchHostFunc(stream, host_function, &progress);

  const void* reduce = (const void*)(total_then_share);
  void* total_args[] = {&d_x, &d_total, &d_seen, &n};
  ok &= cudaLaunchCooperativeKernel(reduce, grid, block, total_args, 0, stream) == cudaSuccess;
  cudaStreamSynchronize(stream);

  float seen[N / THREADS], total = 0.0f;
  cudaMemcpy(h, d_x, sizeof(h), cudaMemcpyDeviceToHost);
  cudaMemcpy(seen, d_seen, sizeof(seen), cudaMemcpyDeviceToHost);
  cudaMemcpy(&total, d_total, sizeof(float), cudaMemcpyDeviceToHost);

  float expect_total = 0.0f;
  for (int i = 0; i < N; ++i) {
    float want = -(((float)(i % 17) - 8.0f) * 1.5f + 2.0f);
    ok &= h[i] == want;
    expect_total += want;
  }
  ok &= total == expect_total;  // small integers and halves: the sum is exact in any order
  for (int b = 0; b < N / THREADS; ++b) ok &= seen[b] == total;
  ok &= progress.callbacks == 1 && progress.host_functions == 1 && progress.status == cudaSuccess;
  printf("launch api: %s (total %.1f)\n", ok ? "OK" : "MISMATCH", total);
  cudaStreamDestroy(stream);
  cudaFree(d_x);
  cudaFree(d_total);
  cudaFree(d_seen);
  return ok ? 0 : 1;
}
