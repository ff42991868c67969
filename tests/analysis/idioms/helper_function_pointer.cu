// A helper the analysis models as the entry, also run through a function pointer with mapped
// memory: the host reads between its launches there. Its launches stay as written.
#include <cstdio>
#include <cuda_runtime.h>
__global__ void inc(float* d) { d[blockIdx.x * 256 + threadIdx.x] += 1.0f; }
__global__ void dbl(float* d) { d[blockIdx.x * 256 + threadIdx.x] *= 2.0f; }
static void step(float* d, const float* view) {
  inc<<<4, 256>>>(d);
  cudaDeviceSynchronize();
  printf("after inc: %f\n", view[5]);
  dbl<<<4, 256>>>(d);
}
void (*volatile g_step)(float*, const float*) = step;
int main() {
  static float h[1024];
  float* d; cudaMalloc(&d, sizeof h);
  cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
  step(d, h);                                   // the call the analysis binds
  float *m, *md;
  cudaHostAlloc((void**)&m, sizeof h, cudaHostAllocMapped);
  cudaHostGetDevicePointer((void**)&md, m, 0);
  m[5] = 0.0f;
  g_step(md, m);                                // same helper, mapped memory
  return 0;
}
