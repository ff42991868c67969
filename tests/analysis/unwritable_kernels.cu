// Kernels that cannot be written again as fragments without changing what they mean:
// a directive in the body, __COUNTER__ through a macro, a macro #undef'd after the
// kernel (a rebuild's value could not be checked where the launches stand); and ones
// that can (a kernel inside #if, and a function-like macro redefined later: the
// fragment is written right after its kernel).
#include <cuda_runtime.h>

#define SCALE 2.0f
#define UID() ((float)__COUNTER__)
#define SHIFT 0
#define OP(a) ((a) + 1.0f)

__global__ void directive(float* x) {
  x[threadIdx.x] *= SCALE;
#undef SCALE
#define SCALE 5.0f
  x[threadIdx.x] += SCALE;
}

__global__ void counter(float* x) { x[threadIdx.x] = UID(); }

__global__ void shifted(float* x) { x[threadIdx.x] = x[(threadIdx.x + SHIFT) % 32]; }
#undef SHIFT

#if 1
__global__ void conditional(float* x) { x[threadIdx.x] += 1.0f; }
#endif

__global__ void plain(float* x) { x[threadIdx.x] = OP(x[threadIdx.x]); }
#undef OP
#define OP(a) ((a) * 3.0f)

int main() {
  float* x;
  cudaMalloc(&x, 32 * sizeof(float));
  directive<<<1, 32>>>(x);
  counter<<<1, 32>>>(x);
  shifted<<<1, 32>>>(x);
  conditional<<<1, 32>>>(x);
  plain<<<1, 32>>>(x);
  return 0;
}
