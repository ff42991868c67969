// The kernels of a small backprop-style layer, in a .cu file the driver includes (as
// benchmark suites lay them out), with a host function that launches two of them.
#ifndef LAYER_KERNELS_CU
#define LAYER_KERNELS_CU
#define BLOCK 256
__global__ void layer_forward(const float* in, const float* w, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * w[i];
}
__global__ void squash(float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = out[i] / (1.0f + fabsf(out[i]));
}
__global__ void adjust_weights(const float* delta, float* w, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) w[i] += 0.3f * delta[i];
}
__global__ void decay(float* w, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) w[i] *= 0.99f;
}
static void train_step(float* delta, float* w, int n) {
  adjust_weights<<<n / BLOCK, BLOCK>>>(delta, w, n);
  decay<<<n / BLOCK, BLOCK>>>(w, n);
}
#endif
