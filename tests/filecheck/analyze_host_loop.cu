// RUN: sirius analyze %s
// A launch inside two host loops is one statement with a domain; its pointer
// argument moves with the loop iterators.
#include <cuda_runtime.h>

__global__ void axpy(float* y, const float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}

int main() {
  float *buf, *x;
  cudaMalloc(&buf, 8 * 4 * 256 * sizeof(float));
  cudaMalloc(&x, 256 * sizeof(float));
  for (int s = 0; s < 8; ++s)
    for (int c = 0; c < 4; ++c)
      axpy<<<2, 128>>>(buf + (s * 4 + c) * 256, x, 0.5f, 256);
  cudaDeviceSynchronize();
  return 0;
}

// CHECK:      host loops around device statements
// CHECK-NEXT:   [[S:h[0-9]+]] (line 15): 0 <= [[S]] and [[S]] <= 7, 8 iterations
// CHECK-NEXT:   [[C:h[0-9]+]] (line 16): 0 <= [[C]] and [[C]] <= 3, 4 iterations
// CHECK:      launches (1 launch statements, 32 launches per run)
// CHECK-NEXT:   [2] line 17: axpy grid [2, 1, 1] block [128, 1, 1] shared 0 stream default for 0 <= [[S]] and [[S]] <= 7 and 0 <= [[C]] and [[C]] <= 3
// CHECK:          y -> buf + 4096[[S]] + 1024[[C]] bytes
// CHECK-NEXT:     x -> x
// CHECK-NEXT:     a -> = 0.5
// CHECK-NEXT:     n -> = 256
// CHECK:          store  [[[S]], [[C]]] -> { [bx, tx] -> buf[128bx + 1024[[S]] + 256[[C]] + tx] : 0 <= bx < 2 and 0 <= tx < 128 and 128bx + tx <= 255 }
