// A particle step split over helpers, as application code does: main -> run_step ->
// compute_forces / integrate. The leaves keep their own definitions (not inlined): each
// call of one is modelled where it is made, and the two launches of integrate fuse there.
#include <cstdio>
#define N 4096
#define BLOCK 256
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
void compute_forces(const float* pos, float* force, int n) {
  forces<<<n / BLOCK, BLOCK>>>(pos, force, n);
}
void integrate(const float* force, float* vel, float* pos, int n) {
  kick<<<n / BLOCK, BLOCK>>>(force, vel, n);
  drift<<<n / BLOCK, BLOCK>>>(vel, pos, n);
}
static void run_step(float* pos, float* vel, float* force, int n) {
  compute_forces(pos, force, n);
  integrate(force, vel, pos, n);
}
int main() {
  float *pos, *vel, *force;
  cudaMalloc(&pos, N * sizeof(float)); cudaMalloc(&vel, N * sizeof(float)); cudaMalloc(&force, N * sizeof(float));
  float* h = new float[N];
  for (int i = 0; i < N; ++i) h[i] = (float)(i % 31) - 15.0f;
  cudaMemcpy(pos, h, N * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemset(vel, 0, N * sizeof(float));
  for (int t = 0; t < 4; ++t) run_step(pos, vel, force, N);
  cudaMemcpy(h, pos, N * sizeof(float), cudaMemcpyDeviceToHost);
  printf("%f %f\n", h[1], h[200]);
  delete[] h;
  return 0;
}
