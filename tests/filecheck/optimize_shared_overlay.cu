// RUN: sirius optimize cuda_inputs/softmax.cu -o /dev/stdout
// softmax's two block reductions each declare `__shared__ float sdata[THREADS]`.
// In the fused kernel a barrier stands between them, so the shared-overlay pass
// gives both the same bytes of one pool: each fragment takes the pool as a
// parameter and declares its array as a reference into it; the fused kernel
// holds 1024 bytes instead of 2048.
//
// CHECK-LABEL: {{^}}// fragment of kernel row_max
// CHECK: const dim3 sirius_gdim, unsigned char* const sirius_pool, const float* x, float* mx, int cols) {
// CHECK: {{^}}  float (&sdata)[256] = *reinterpret_cast<float (*)[256]>(sirius_pool + 0);
// CHECK-LABEL: {{^}}// fragment of kernel exp_sub
// CHECK-NOT: sirius_pool
// CHECK-LABEL: {{^}}// fragment of kernel row_sum
// CHECK: {{^}}  float (&sdata)[256] = *reinterpret_cast<float (*)[256]>(sirius_pool + 0);
// CHECK-LABEL: {{^}}__global__ void __launch_bounds__(256) sirius_fused_0(
// CHECK: {{^}}  __shared__ __align__(128) unsigned char sirius_pool[1024];
// CHECK-NEXT: sirius_frag_row_max(blockIdx, threadIdx, dim3(256, 1, 1), dim3(128, 1, 1), sirius_pool + 0,
// CHECK-NEXT: __syncthreads();
// CHECK-NEXT: sirius_frag_exp_sub(blockIdx, threadIdx, dim3(256, 1, 1), dim3(128, 1, 1), s{{[0-9]+}}_x,
// CHECK-NEXT: sirius_frag_row_sum(blockIdx, threadIdx, dim3(256, 1, 1), dim3(128, 1, 1), sirius_pool + 0,
