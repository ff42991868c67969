// Every thread records its built-in index variables; the host checks them for
// 1-D, 2-D and 3-D grids and blocks.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void record(int* out) {
  int block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  int thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  int g = block * (blockDim.x * blockDim.y * blockDim.z) + thread;
  int* o = out + 12 * g;
  o[0] = threadIdx.x; o[1] = threadIdx.y; o[2] = threadIdx.z;
  o[3] = blockIdx.x;  o[4] = blockIdx.y;  o[5] = blockIdx.z;
  o[6] = blockDim.x;  o[7] = blockDim.y;  o[8] = blockDim.z;
  o[9] = gridDim.x;   o[10] = gridDim.y;  o[11] = gridDim.z;
}

static int check(dim3 grid, dim3 block) {
  int threads = block.x * block.y * block.z;
  int n = grid.x * grid.y * grid.z * threads;
  int* d;
  cudaMalloc(&d, sizeof(int) * 12 * n);
  record<<<grid, block>>>(d);
  int* h = (int*)malloc(sizeof(int) * 12 * n);
  cudaMemcpy(h, d, sizeof(int) * 12 * n, cudaMemcpyDeviceToHost);
  int errors = 0;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx)
        for (unsigned tz = 0; tz < block.z; ++tz)
          for (unsigned ty = 0; ty < block.y; ++ty)
            for (unsigned tx = 0; tx < block.x; ++tx) {
              int b = bx + grid.x * (by + grid.y * bz);
              int t = tx + block.x * (ty + block.y * tz);
              const int* o = h + 12 * (b * threads + t);
              unsigned want[12] = {tx, ty, tz, bx, by, bz, block.x, block.y, block.z,
                                   grid.x, grid.y, grid.z};
              for (int k = 0; k < 12; ++k)
                if ((unsigned)o[k] != want[k]) ++errors;
            }
  cudaFree(d);
  free(h);
  return errors;
}

int main() {
  int errors = check(dim3(7), dim3(96)) + check(dim3(3, 5), dim3(8, 6)) +
               check(dim3(2, 3, 4), dim3(4, 3, 5)) + check(dim3(1, 1, 3), dim3(1, 2, 64));
  if (errors) {
    printf("indices: %d errors\n", errors);
    return 1;
  }
  printf("indices: OK\n");
  return 0;
}
