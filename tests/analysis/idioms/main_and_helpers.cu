// main launches kernels itself and calls helpers that launch too (kept out of line, as
// application code is): main -> step -> compute_forces, integrate, in a loop; normalize,
// called twice. Each call is modelled where it is made, in program order among main's own
// launches: the pairs of main and of integrate fuse; normalize's launch expressions run
// for both its calls, and stay as written.
#include <cstdio>
#define N 4096
#define BLOCK 256
__global__ void fill(float* x, float base, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = base + (float)(i % 17);
}
__global__ void forces(const float* pos, float* force, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) force[i] = -0.5f * pos[i];
}
__global__ void kick(const float* force, float* vel, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) vel[i] += 0.01f * force[i];
}
__global__ void drift(const float* vel, float* pos, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) pos[i] += 0.01f * vel[i];
}
__global__ void damp(float* v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] *= 0.99f;
}
__global__ void scale(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 0.5f;
}
__global__ void shift(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}
__attribute__((noinline)) static void compute_forces(const float* pos, float* force, int n) {
  forces<<<n / BLOCK, BLOCK>>>(pos, force, n);
}
__attribute__((noinline)) static void integrate(const float* force, float* vel, float* pos, int n) {
  kick<<<n / BLOCK, BLOCK>>>(force, vel, n);
  drift<<<n / BLOCK, BLOCK>>>(vel, pos, n);
}
__attribute__((noinline)) static void step(float* pos, float* vel, float* force, int n) {
  compute_forces(pos, force, n);
  integrate(force, vel, pos, n);
}
__attribute__((noinline)) static void normalize(float* x, int n) {
  scale<<<n / BLOCK, BLOCK>>>(x, n);
  shift<<<n / BLOCK, BLOCK>>>(x, n);
}
int main() {
  float *pos, *vel, *force;
  cudaMalloc(&pos, N * sizeof(float)); cudaMalloc(&vel, N * sizeof(float)); cudaMalloc(&force, N * sizeof(float));
  fill<<<N / BLOCK, BLOCK>>>(pos, -8.0f, N);
  fill<<<N / BLOCK, BLOCK>>>(vel, 0.0f, N);
  for (int t = 0; t < 3; ++t) {
    step(pos, vel, force, N);
    damp<<<N / BLOCK, BLOCK>>>(vel, N);
    damp<<<N / BLOCK, BLOCK>>>(force, N);
  }
  normalize(vel, N);
  normalize(pos, N);
  damp<<<N / BLOCK, BLOCK>>>(pos, N);
  float* h = new float[N];
  cudaMemcpy(h, pos, N * sizeof(float), cudaMemcpyDeviceToHost);
  printf("%f %f\n", h[1], h[200]);
  cudaMemcpy(h, vel, N * sizeof(float), cudaMemcpyDeviceToHost);
  printf("%f %f\n", h[1], h[200]);
  delete[] h;
  return 0;
}
