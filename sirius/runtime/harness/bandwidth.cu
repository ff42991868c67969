// Measured DRAM bandwidth, the denominator of `sirius bench`'s roofline floor.
//
// One device-to-device copy kernel over two buffers far larger than the L2
// cache, timed with CUDA events; the median of the repetitions is printed as
//   bandwidth_GBps=<read + write bytes per second / 1e9> bytes=<per buffer> reps=<n>
// A copy reads and writes every byte once, so both directions count: that is
// what a memory-bound kernel moves too, and what its compulsory bytes count.
//
// Usage: bandwidth [MiB per buffer (default 1024)] [repetitions (default 30)]
// Exit status 0, or 1 with a message on a CUDA error.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define BW_CHECK(call)                                                              \
  do {                                                                              \
    cudaError_t err_ = (call);                                                      \
    if (err_ != cudaSuccess) {                                                      \
      std::fprintf(stderr, "bandwidth: %s: %s\n", #call, cudaGetErrorString(err_)); \
      return 1;                                                                     \
    }                                                                               \
  } while (0)

// 16-byte loads and stores, grid-stride: the widest plain accesses, so the
// kernel is limited by DRAM and not by instruction issue.
__global__ void copy_kernel(const float4* __restrict__ src, float4* __restrict__ dst, size_t n) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) dst[i] = src[i];
}

int main(int argc, char** argv) {
  size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1024;
  int reps = argc > 2 ? std::atoi(argv[2]) : 30;
  if (mib == 0 || reps <= 0) {
    std::fprintf(stderr, "usage: bandwidth [MiB per buffer] [repetitions]\n");
    return 1;
  }
  size_t bytes = mib << 20;
  size_t n = bytes / sizeof(float4);
  float4 *src = nullptr, *dst = nullptr;
  BW_CHECK(cudaMalloc(&src, bytes));
  BW_CHECK(cudaMalloc(&dst, bytes));
  BW_CHECK(cudaMemset(src, 1, bytes));
  BW_CHECK(cudaMemset(dst, 0, bytes));

  int device = 0, sms = 0;
  BW_CHECK(cudaGetDevice(&device));
  BW_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int threads = 512;
  const int blocks = sms * 8;  // enough resident warps to keep every memory channel busy

  cudaEvent_t start, stop;
  BW_CHECK(cudaEventCreate(&start));
  BW_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < 3; ++i) copy_kernel<<<blocks, threads>>>(src, dst, n);  // warm-up: clocks, TLBs
  BW_CHECK(cudaGetLastError());
  BW_CHECK(cudaDeviceSynchronize());

  std::vector<float> ms(reps);
  for (int r = 0; r < reps; ++r) {
    BW_CHECK(cudaEventRecord(start));
    copy_kernel<<<blocks, threads>>>(src, dst, n);
    BW_CHECK(cudaEventRecord(stop));
    BW_CHECK(cudaEventSynchronize(stop));
    BW_CHECK(cudaEventElapsedTime(&ms[r], start, stop));
  }
  std::sort(ms.begin(), ms.end());
  double median_ms = reps % 2 ? ms[reps / 2] : 0.5 * (ms[reps / 2 - 1] + ms[reps / 2]);
  double gbps = 2.0 * (double)bytes / (median_ms * 1e-3) / 1e9;
  std::printf("bandwidth_GBps=%.1f bytes=%zu reps=%d\n", gbps, bytes, reps);
  BW_CHECK(cudaFree(src));
  BW_CHECK(cudaFree(dst));
  return 0;
}
