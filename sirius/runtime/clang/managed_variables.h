// Force-included (clang -include) into every clang-22 compile of the analysis
// (device IR, host IR, libclang index); never part of a program Sirius emits.
//
// clang accepts the `managed` attribute only in HIP: in CUDA mode CUDA's
// host_defines.h spells __managed__ as __attribute__((managed)), clang ignores
// it, and a `__managed__ float acc[N];` becomes a plain host variable, so the
// device pass rejects every kernel that uses it ("reference to __host__
// variable"). nvcc makes such a variable one allocation that kernels and the
// host both address. Here it becomes a __device__ variable (a device global
// the kernel models see as a buffer of its own), and the annotation marks it
// as managed in both IRs (@llvm.global.annotations) so that the analysis
// models what the host reads and writes of it and treats every
// synchronization as a point where the host may observe it
// (analysis/managed_variables.py). The annotation also keeps the host's loads
// and stores of the variable: without it clang folds them to undef, since the
// host side of a __device__ variable is an internal shadow nobody writes.
// `__device__ __managed__` (the spelling CUDA's guide uses) gives the same.
#pragma once
#undef __managed__
#define __managed__ __device__ __attribute__((annotate("sirius.managed")))
