// A tour of the rest of the CUDA surface a program may use: templates (explicit
// and deduced), default arguments, device functions, __launch_bounds__,
// __restrict__, __ldg, math functions, min/max, vector types, __constant__ and
// __device__ variables with the symbol copies, streams and events,
// cudaMemcpyAsync, cudaMemset, launch errors, device printf, cooperative
// groups and device properties.
#include <cmath>
#include <cstdio>
#include <cooperative_groups.h>
#include <cuda_runtime.h>

namespace cg = cooperative_groups;

__constant__ float coeffs[4];
__device__ int device_counter;

__device__ __forceinline__ float poly(float x) {
  return coeffs[0] + x * (coeffs[1] + x * (coeffs[2] + x * coeffs[3]));
}

template <typename T, int SCALE>
__global__ void __launch_bounds__(128) scale(const T* __restrict__ in, T* __restrict__ out,
                                             int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __ldg(&in[i]) * (T)SCALE;
}

template <typename T>
__global__ void shift(T* data, int n, T by = T(1)) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += by;
}

__global__ void math(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  y[i] = poly(v) + sqrtf(fabsf(v)) + __expf(-v * v) + tanhf(v) + max(v, 0.5f) + min(i, 3) +
         rsqrtf(2.0f + v * v) + powf(2.0f, v) + erff(v);
  atomicAdd(&device_counter, 1);
}

__global__ void vec4(const float4* in, float4* out) {
  int i = threadIdx.x;
  float4 a = in[i];
  out[i] = make_float4(a.w, a.z, a.y, a.x);
}

struct Affine { int n; float k; };

__global__ void affine(float* y, Affine p) {  // launched with a braced argument
  int i = threadIdx.x;
  if (i < p.n) y[i] = p.k * (float)i;
}

__global__ void hello() {
  if (threadIdx.x == 0) printf("hello from block %d\n", blockIdx.x);
}

__global__ void group_sum(const int* in, int* out) {
  cg::thread_block block = cg::this_thread_block();
  __shared__ int partial[4];
  cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
  int v = in[block.thread_rank()];
  for (int off = tile.size() / 2; off > 0; off /= 2) v += tile.shfl_down(v, off);
  if (tile.thread_rank() == 0) partial[tile.meta_group_rank()] = v;
  block.sync();
  if (block.thread_rank() == 0) *out = partial[0] + partial[1] + partial[2] + partial[3];
}

int main() {
  int bad = 0;
  const int n = 300;
  float hx[n], hy[n];
  for (int i = 0; i < n; ++i) hx[i] = (float)(i % 23) * 0.1f - 1.0f;
  float *dx, *dy;
  cudaMalloc(&dx, sizeof hx);
  cudaMalloc(&dy, sizeof hy);
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaMemcpyAsync(dx, hx, sizeof hx, cudaMemcpyHostToDevice, stream);

  // templates, explicit and deduced, default argument
  cudaEventRecord(start, stream);
  scale<float, 3><<<(n + 127) / 128, 128, 0, stream>>>(dx, dy, n);
  shift<<<(n + 127) / 128, 128, 0, stream>>>(dy, n);
  shift<<<(n + 127) / 128, 128, 0, stream>>>(dy, n, 2.0f);
  cudaEventRecord(stop, stream);
  cudaEventSynchronize(stop);
  float ms = -1.0f;
  if (cudaEventElapsedTime(&ms, start, stop) != cudaSuccess || ms < 0.0f) ++bad;
  cudaMemcpyAsync(hy, dy, sizeof hy, cudaMemcpyDeviceToHost, stream);
  cudaStreamSynchronize(stream);
  for (int i = 0; i < n; ++i)
    if (hy[i] != hx[i] * 3.0f + 1.0f + 2.0f) ++bad;
  printf("templates: %s\n", bad ? "MISMATCH" : "OK");

  // __constant__, __device__ symbols, math
  float hc[4] = {1.0f, 0.5f, 0.25f, 0.125f};
  cudaMemcpyToSymbol(coeffs, hc, sizeof hc);
  int zero = 0;
  cudaMemcpyToSymbol(device_counter, &zero, sizeof zero);
  math<<<(n + 63) / 64, 64>>>(dx, dy, n);
  cudaMemcpy(hy, dy, sizeof hy, cudaMemcpyDeviceToHost);
  int counter = 0;
  cudaMemcpyFromSymbol(&counter, device_counter, sizeof counter);
  int math_bad = counter != n;
  for (int i = 0; i < n; ++i) {
    float v = hx[i];
    float want = (1.0f + v * (0.5f + v * (0.25f + v * 0.125f))) + sqrtf(fabsf(v)) +
                 expf(-v * v) + tanhf(v) + (v > 0.5f ? v : 0.5f) + (i < 3 ? i : 3) +
                 1.0f / sqrtf(2.0f + v * v) + powf(2.0f, v) + erff(v);
    if (fabsf(hy[i] - want) > 1e-4f * (1.0f + fabsf(want))) ++math_bad;
  }
  printf("math: %s\n", math_bad ? "MISMATCH" : "OK");
  bad += math_bad;

  // vector types
  float4 h4[32], r4[32];
  for (int i = 0; i < 32; ++i) h4[i] = make_float4(i, i + 0.25f, i + 0.5f, i + 0.75f);
  float4 *d4, *o4;
  cudaMalloc(&d4, sizeof h4);
  cudaMalloc(&o4, sizeof r4);
  cudaMemcpy(d4, h4, sizeof h4, cudaMemcpyHostToDevice);
  vec4<<<1, 32>>>(d4, o4);
  cudaMemcpy(r4, o4, sizeof r4, cudaMemcpyDeviceToHost);
  int vec_bad = 0;
  for (int i = 0; i < 32; ++i)
    vec_bad += r4[i].x != h4[i].w || r4[i].y != h4[i].z || r4[i].w != h4[i].x;
  printf("vector types: %s\n", vec_bad ? "MISMATCH" : "OK");
  bad += vec_bad;

  // a braced argument takes the kernel's parameter type
  float* dy4 = (float*)o4;
  affine<<<1, 32>>>(dy4, {20, 1.5f});
  float ya[32];
  cudaMemcpy(ya, dy4, sizeof ya, cudaMemcpyDeviceToHost);
  int braced_bad = ya[19] != 1.5f * 19 || ya[20] != r4[5].x;
  printf("braced arguments: %s\n", braced_bad ? "MISMATCH" : "OK");
  bad += braced_bad;

  // cudaMemset, launch errors, device printf in block order
  cudaMemset(dy, 0, sizeof hy);
  cudaMemcpy(hy, dy, sizeof hy, cudaMemcpyDeviceToHost);
  for (int i = 0; i < n; ++i) bad += hy[i] != 0.0f;
  hello<<<1, 2048>>>();
  cudaError_t e = cudaGetLastError();
  printf("launch error: %s\n", cudaGetErrorString(e));
  if (e != cudaErrorInvalidConfiguration || cudaGetLastError() != cudaSuccess) ++bad;
  hello<<<4, 32>>>();
  cudaDeviceSynchronize();

  // cooperative groups
  int hin[128], sum = 0, want = 0;
  for (int i = 0; i < 128; ++i) hin[i] = i * i % 7, want += hin[i];
  int *din, *dsum;
  cudaMalloc(&din, sizeof hin);
  cudaMalloc(&dsum, sizeof(int));
  cudaMemcpy(din, hin, sizeof hin, cudaMemcpyHostToDevice);
  group_sum<<<1, 128>>>(din, dsum);
  cudaMemcpy(&sum, dsum, sizeof sum, cudaMemcpyDeviceToHost);
  printf("cooperative groups: %s\n", sum == want ? "OK" : "MISMATCH");
  bad += sum != want;

  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  if (prop.warpSize != 32 || prop.maxThreadsPerBlock != 1024) ++bad;

  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaStreamDestroy(stream);
  printf("features: %s\n", bad ? "MISMATCH" : "OK");
  return bad ? 1 : 0;
}
