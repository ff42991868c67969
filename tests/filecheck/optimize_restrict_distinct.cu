// RUN: sirius optimize cuda_inputs/storage_reuse.cu -DREUSE_STORAGE=0 -o /dev/stdout
// The same program with a storage of its own for every tensor: T_add is written
// by one fragment only and no other pointer reaches its bytes, so it keeps its
// __restrict__ (as do x and bias); the tensors flowing between fragments lose it.
// Host constants pass a pointer equal to another once: the kernel defines the
// second from the first, never restrict (it is based on the first).
//
// CHECK: __global__ void __launch_bounds__(256) sirius_fused_0(
// CHECK-SAME: float * s{{[0-9]+}}_T_sum, float *__restrict [[X:s[0-9]+_x]],
// CHECK-SAME: float * s{{[0-9]+}}_T_exp, float * s{{[0-9]+}}_T_divide,
// CHECK-SAME: float *__restrict s{{[0-9]+}}_T_add, float *__restrict s{{[0-9]+}}_bias)
// CHECK-NEXT: float * s{{[0-9]+}}_x = (float *)((const char*)[[X]] + 0);
// CHECK: sirius_fused_0 keeps __restrict__ on 3 of 10 pointer parameters
// CHECK: promise check: 1 fused kernel, no violations
