// RUN: sirius analyze %s
// A tiled transpose through shared memory: shared array, two barriers' worth
// of structure, 2-D launch, and both access maps specialized at the launch.
#include <cuda_runtime.h>

#define T 16

__global__ void transpose(const float* in, float* out, int n) {
  __shared__ float tile[T][T + 1];
  int x = blockIdx.x * T + threadIdx.x;
  int y = blockIdx.y * T + threadIdx.y;
  tile[threadIdx.y][threadIdx.x] = in[y * n + x];
  __syncthreads();
  int ox = blockIdx.y * T + threadIdx.x;
  int oy = blockIdx.x * T + threadIdx.y;
  out[oy * n + ox] = tile[threadIdx.x][threadIdx.y];
}

int main() {
  const int n = 64;
  float *in, *out;
  cudaMalloc(&in, n * n * sizeof(float));
  cudaMalloc(&out, n * n * sizeof(float));
  transpose<<<dim3(n / T, n / T), dim3(T, T)>>>(in, out, n);
  cudaDeviceSynchronize();
  return 0;
}

// CHECK:      kernel transpose(const float * in, float * out, int n)
// CHECK-NEXT:   shared tile: 1088 bytes
// CHECK-NEXT:   barriers: 1 (lines 13)
// CHECK:        load   in[{{.*}}]  (line 12)
// CHECK:        store  tile[tx + 17ty]  (line 12)
// CHECK:        load   tile[17tx + ty]  (line 16)
// CHECK:      buffers (2)
// CHECK-NEXT:   in: 16384 bytes (cudaMalloc, line 22)
// CHECK-NEXT:   out: 16384 bytes (cudaMalloc, line 23)
// CHECK:      launches (1 launch statements, 1 launches per run)
// CHECK-NEXT:   [2] line 24: transpose grid [4, 4, 1] block [16, 16, 1] shared 0 stream default
// CHECK-NEXT:     transpose<<<dim3(n / T, n / T), dim3(T, T)>>>(in, out, n)
// CHECK-NEXT:     in -> in
// CHECK-NEXT:     out -> out
// CHECK-NEXT:     n -> = 64
// CHECK-NEXT:     load   { [bx, by, tx, ty] -> in[16bx + 1024by + tx + 64ty] : 0 <= bx < 4 and 0 <= by < 4 and 0 <= tx < 16 and 0 <= ty < 16 }
// CHECK:          store  { [bx, by, tx, ty] -> out[1024bx + 16by + tx + 64ty] : 0 <= bx < 4 and 0 <= by < 4 and 0 <= tx < 16 and 0 <= ty < 16 }
