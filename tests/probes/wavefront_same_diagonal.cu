// Probe: a two-deep host loop nest over cells (s, c), LSTM-like, where a cell
// also reads what cell (s - 1, c + 1) wrote: a cell on the SAME anti-diagonal
// s + c. Cell (s, c) reads up = (s - 1, c), left = (s, c - 1), diag = (s - 1, c + 1).
// Running the cells of one anti-diagonal side by side (the LSTM's wavefront)
// would read diag before it is written; a legal wave is e.g. 2s + c.
// Slot (t, j) of state holds H floats at (t * (C + 2) + j) * H; cell (s, c)
// writes slot (s + 1, c + 1); row 0 and columns 0 and C + 1 are inputs.
// Correct outcome: results equal the original's (wavefront refused or legal).
#include <cstdio>
#include <cuda_runtime.h>

#define S 4
#define C 3
#define H 32

__global__ void mix(const float* up, const float* left, float* tmp, int n) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < n) tmp[r] = 0.5f * up[r] + 0.25f * left[r];
}

__global__ void update(const float* tmp, const float* diag, float* out, int n) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < n) out[r] = tmp[r] - 0.125f * diag[r] + 1.0f;
}

int main() {
  const int count = (S + 1) * (C + 2) * H;
  float* h_state = new float[count];
  for (int i = 0; i < count; ++i) h_state[i] = (float)((i * 37 + 11) % 101) - 50.0f;
  float *d_state, *d_tmp;
  cudaMalloc(&d_state, count * sizeof(float));
  cudaMalloc(&d_tmp, C * H * sizeof(float));
  cudaMemcpy(d_state, h_state, count * sizeof(float), cudaMemcpyHostToDevice);

  for (int s = 0; s < S; ++s) {
    for (int c = 0; c < C; ++c) {
      const float* up = d_state + (s * (C + 2) + c + 1) * H;
      const float* left = d_state + ((s + 1) * (C + 2) + c) * H;
      const float* diag = d_state + (s * (C + 2) + c + 2) * H;
      float* out = d_state + ((s + 1) * (C + 2) + c + 1) * H;
      float* tmp = d_tmp + c * H;
      mix<<<1, H>>>(up, left, tmp, H);
      update<<<1, H>>>(tmp, diag, out, H);
    }
  }
  cudaDeviceSynchronize();

  cudaMemcpy(h_state, d_state, count * sizeof(float), cudaMemcpyDeviceToHost);
  double checksum = 0.0;
  for (int i = 0; i < count; ++i) checksum += h_state[i] * (1 + i % 7);
  printf("checksum: %.6f\n", checksum);
  cudaFree(d_state);
  cudaFree(d_tmp);
  delete[] h_state;
  return 0;
}
