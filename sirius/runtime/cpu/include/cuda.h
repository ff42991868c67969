// Sirius CPU backend: the few driver-API names programs use beside the
// runtime API (types and the version macro); driver calls are not provided.
#pragma once
#pragma GCC system_header
#include "sirius_cpu.h"

#define CUDA_VERSION 13000
typedef int CUresult;
#define CUDA_SUCCESS 0
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st* CUcontext;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef cudaStream_t CUstream;
typedef cudaEvent_t CUevent;
