// RUN: sirius optimize cuda_inputs/storage_reuse.cu -o /dev/stdout
// The corpus program cuda_inputs/storage_reuse.cu: four TVM-style kernels with
// __restrict__ parameters, fused vertically into one kernel. Storage 0 holds
// T_exp and then T_add, and every intermediate tensor flows from one fragment's
// pointer to another's: those parameters lose the qualifier. The fragments
// promise nothing of their own; x and bias are only read and keep it.
//
// CHECK: static __device__ __forceinline__ void sirius_frag_row_sum_kernel(
// CHECK-NEXT: const dim3 sirius_gdim, float* T_sum, float* x) {
// CHECK: __global__ void __launch_bounds__(256) sirius_fused_0(
// CHECK-SAME: float * s{{[0-9]+}}_T_sum, float *__restrict s{{[0-9]+}}_x,
// CHECK-SAME: float * [[EXP:s[0-9]+_T_exp]], float * s{{[0-9]+}}_T_divide, float *__restrict s{{[0-9]+}}_bias)
// Host constants: T_add is T_exp's storage, defined from it and not restrict.
// CHECK: float * s{{[0-9]+}}_T_add = (float *)((const char*)[[EXP]] + 0);
// CHECK: sirius_fused_0<<<
// CHECK: sirius_fused_0 keeps __restrict__ on 2 of 10 pointer parameters
// CHECK: promise check: 1 fused kernel, no violations
