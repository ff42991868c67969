// Independent launches whose grids the host computes at run time, from sizes on the
// command line, as hand-written benchmarks write them: each may run side by side with the
// others in one launch, the fused kernel passed each grid and adding up their blocks.
//   scale:  x[i] *= 2 over n elements, blocks of 256;
//   bias:   z[i] += 1 over m elements, blocks of 128 (a smaller block beside 256);
//   fill:   a w x h image, 2-D blocks of 16 x 16 in a 2-D grid;
//   clear:  a constant grid of 4 blocks beside them;
//   then two near misses: a block from the command line, and two launches into one buffer.
//
// Usage: run_time_side_by_side [n [m [w [h]]]], defaults 3000, 700, 37, 21.

#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void scale(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}

__global__ void bias(float* z, int m) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m) z[i] += 1.0f;
}

__global__ void fill(float* img, int w, int h) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (col < w && row < h) img[row * w + col] = (float)(row * 3 + col);
}

__global__ void clear(float* c) {
  c[blockIdx.x * blockDim.x + threadIdx.x] = 0.0f;
}

__global__ void square(float* v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] = v[i] * v[i];
}

__global__ void negate(float* v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] = -v[i];
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 3000;
  int m = argc > 2 ? atoi(argv[2]) : 700;
  int w = argc > 3 ? atoi(argv[3]) : 37;
  int h = argc > 4 ? atoi(argv[4]) : 21;
  int threads = argc > 5 ? atoi(argv[5]) : 64;
  if (n < 1 || m < 0 || w < 1 || h < 1 || threads < 1 || threads > 1024) {
    fprintf(stderr, "usage: %s [n [m [w [h [threads]]]]] with n, w, h >= 1, m >= 0\n", argv[0]);
    return 2;
  }
  float *x, *z, *img, *c, *v;
  cudaMalloc(&x, sizeof(float) * n);
  cudaMalloc(&z, sizeof(float) * (m + 1));
  cudaMalloc(&img, sizeof(float) * w * h);
  cudaMalloc(&c, sizeof(float) * 1024);
  cudaMalloc(&v, sizeof(float) * 2 * n);
  float* hx = (float*)malloc(sizeof(float) * 2 * n);
  for (int i = 0; i < 2 * n; ++i) hx[i] = (float)(i % 13) - 6.0f;
  cudaMemcpy(x, hx, sizeof(float) * n, cudaMemcpyHostToDevice);
  cudaMemcpy(v, hx, sizeof(float) * 2 * n, cudaMemcpyHostToDevice);
  cudaMemset(z, 0, sizeof(float) * (m + 1));
  cudaMemset(c, 1, sizeof(float) * 1024);

  scale<<<(n + 255) / 256, 256>>>(x, n);
  bias<<<(m + 127) / 128, 128>>>(z, m);
  dim3 tile(16, 16);
  dim3 tiles((w + 15) / 16, (h + 15) / 16);
  fill<<<tiles, tile>>>(img, w, h);
  clear<<<4, 256>>>(c);
  cudaError_t launched = cudaGetLastError();

  // near misses: a block the command line gives; two halves of one buffer (the second's
  // start depends on n, which no analysis of one grid can place)
  square<<<(n + threads - 1) / threads, threads>>>(x, n);
  negate<<<(n + 255) / 256, 256>>>(v, n);
  negate<<<(n + 255) / 256, 256>>>(v + n, n);
  cudaDeviceSynchronize();

  float* out = (float*)malloc(sizeof(float) * (3 * n + m + 1 + w * h + 1024));
  cudaMemcpy(out, x, sizeof(float) * n, cudaMemcpyDeviceToHost);
  cudaMemcpy(out + n, v, sizeof(float) * 2 * n, cudaMemcpyDeviceToHost);
  cudaMemcpy(out + 3 * n, z, sizeof(float) * (m + 1), cudaMemcpyDeviceToHost);
  cudaMemcpy(out + 3 * n + m + 1, img, sizeof(float) * w * h, cudaMemcpyDeviceToHost);
  cudaMemcpy(out + 3 * n + m + 1 + w * h, c, sizeof(float) * 1024, cudaMemcpyDeviceToHost);
  double checksum = 0.0;
  for (int i = 0; i < 3 * n + m + 1 + w * h + 1024; ++i) checksum += out[i] * (double)((i % 7) + 1);
  printf("launch status: %s\n", cudaGetErrorString(launched));
  printf("checksum: %.3f\n", checksum);
  return 0;
}
