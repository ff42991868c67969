// Sirius CPU backend: the CUDA runtime API over host memory.
//
// Kernels run synchronously at their launch; streams and events only order
// (they are all the same queue). Device allocations are host allocations the
// runtime keeps track of, so that it can check kernel pointer arguments and
// copy directions as a GPU would. Fresh device allocations are filled with
// 0xFF bytes (a NaN for floats) so that reading memory nobody wrote shows.
#pragma once
#pragma GCC system_header

#include <cstddef>
#include <cstring>
#include <type_traits>

#include "types.h"

#define CUDART_VERSION 13000
#define __CUDART_API_VERSION 13000
// The calling convention of host callbacks (cudaStreamAddCallback,
// cudaLaunchHostFunc): __stdcall on Windows, nothing elsewhere, as in CUDA's
// driver_types.h.
#define CUDART_CB

enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorCudartUnloading = 4,
  cudaErrorProfilerDisabled = 5,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidPitchValue = 12,
  cudaErrorInvalidSymbol = 13,
  cudaErrorInvalidHostPointer = 16,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidTexture = 18,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorInvalidDeviceFunction = 98,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchOutOfResources = 701,
  cudaErrorLaunchTimeout = 702,
  cudaErrorLaunchFailure = 719,
  cudaErrorCooperativeLaunchTooLarge = 720,
  cudaErrorNotSupported = 801,
  cudaErrorUnknown = 999
};
typedef enum cudaError cudaError_t;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};

typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02
#define cudaEventInterprocess 0x04
#define cudaHostAllocDefault 0x00
#define cudaHostAllocPortable 0x01
#define cudaHostAllocMapped 0x02
#define cudaHostAllocWriteCombined 0x04
#define cudaHostRegisterDefault 0x00
#define cudaHostRegisterPortable 0x01
#define cudaHostRegisterMapped 0x02
#define cudaMemAttachGlobal 0x01
#define cudaMemAttachHost 0x02
#define cudaDeviceScheduleAuto 0x00
#define cudaDeviceScheduleSpin 0x01
#define cudaDeviceScheduleYield 0x02
#define cudaDeviceScheduleBlockingSync 0x04
#define cudaDeviceMapHost 0x08
#define cudaCpuDeviceId (-1)

enum cudaFuncCache {
  cudaFuncCachePreferNone = 0,
  cudaFuncCachePreferShared = 1,
  cudaFuncCachePreferL1 = 2,
  cudaFuncCachePreferEqual = 3
};
enum cudaSharedMemConfig {
  cudaSharedMemBankSizeDefault = 0,
  cudaSharedMemBankSizeFourByte = 1,
  cudaSharedMemBankSizeEightByte = 2
};
enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
  cudaFuncAttributePreferredSharedMemoryCarveout = 9
};
enum cudaLimit {
  cudaLimitStackSize = 0,
  cudaLimitPrintfFifoSize = 1,
  cudaLimitMallocHeapSize = 2
};
enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1,
  cudaDevAttrMaxBlockDimX = 2,
  cudaDevAttrMaxBlockDimY = 3,
  cudaDevAttrMaxBlockDimZ = 4,
  cudaDevAttrMaxGridDimX = 5,
  cudaDevAttrMaxGridDimY = 6,
  cudaDevAttrMaxGridDimZ = 7,
  cudaDevAttrMaxSharedMemoryPerBlock = 8,
  cudaDevAttrTotalConstantMemory = 9,
  cudaDevAttrWarpSize = 10,
  cudaDevAttrMaxPitch = 11,
  cudaDevAttrMaxRegistersPerBlock = 12,
  cudaDevAttrClockRate = 13,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrConcurrentKernels = 31,
  cudaDevAttrEccEnabled = 32,
  cudaDevAttrMemoryClockRate = 36,
  cudaDevAttrGlobalMemoryBusWidth = 37,
  cudaDevAttrL2CacheSize = 38,
  cudaDevAttrMaxThreadsPerMultiProcessor = 39,
  cudaDevAttrUnifiedAddressing = 41,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81,
  cudaDevAttrMaxRegistersPerMultiprocessor = 82,
  cudaDevAttrManagedMemory = 83,
  cudaDevAttrCooperativeLaunch = 95,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
  cudaDevAttrMaxBlocksPerMultiprocessor = 106
};

struct cudaDeviceProp {
  char name[256];
  char uuid[16];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int regsPerBlock;
  int warpSize;
  size_t memPitch;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int clockRate;
  size_t totalConstMem;
  int major;
  int minor;
  size_t textureAlignment;
  size_t texturePitchAlignment;
  int deviceOverlap;
  int multiProcessorCount;
  int kernelExecTimeoutEnabled;
  int integrated;
  int canMapHostMemory;
  int computeMode;
  int concurrentKernels;
  int ECCEnabled;
  int pciBusID;
  int pciDeviceID;
  int pciDomainID;
  int tccDriver;
  int asyncEngineCount;
  int unifiedAddressing;
  int memoryClockRate;
  int memoryBusWidth;
  int l2CacheSize;
  int persistingL2CacheMaxSize;
  int maxThreadsPerMultiProcessor;
  int streamPrioritiesSupported;
  int globalL1CacheSupported;
  int localL1CacheSupported;
  size_t sharedMemPerMultiprocessor;
  int regsPerMultiprocessor;
  int managedMemory;
  int isMultiGpuBoard;
  int multiGpuBoardGroupID;
  int singleToDoublePrecisionPerfRatio;
  int pageableMemoryAccess;
  int concurrentManagedAccess;
  int computePreemptionSupported;
  int canUseHostPointerForRegisteredMem;
  int cooperativeLaunch;
  int cooperativeMultiDeviceLaunch;
  size_t sharedMemPerBlockOptin;
  int pageableMemoryAccessUsesHostPageTables;
  int directManagedMemAccessFromHost;
  int maxBlocksPerMultiProcessor;
  int accessPolicyMaxWindowSize;
  size_t reservedSharedMemPerBlock;
};

struct cudaFuncAttributes {
  size_t sharedSizeBytes;
  size_t constSizeBytes;
  size_t localSizeBytes;
  int maxThreadsPerBlock;
  int numRegs;
  int ptxVersion;
  int binaryVersion;
  int cacheModeCA;
  int maxDynamicSharedSizeBytes;
  int preferredShmemCarveout;
};

enum cudaMemoryType {
  cudaMemoryTypeUnregistered = 0,
  cudaMemoryTypeHost = 1,
  cudaMemoryTypeDevice = 2,
  cudaMemoryTypeManaged = 3
};
struct cudaPointerAttributes {
  enum cudaMemoryType type;
  int device;
  void* devicePointer;
  void* hostPointer;
};
typedef void (*cudaHostFn_t)(void* user_data);

struct cudaPitchedPtr {
  void* ptr;
  size_t pitch;
  size_t xsize;
  size_t ysize;
};

// --- functions implemented by the runtime -----------------------------------

cudaError_t cudaMalloc(void** ptr, size_t bytes);
cudaError_t cudaMallocManaged(void** ptr, size_t bytes, unsigned int flags = cudaMemAttachGlobal);
cudaError_t cudaMallocHost(void** ptr, size_t bytes);
cudaError_t cudaHostAlloc(void** ptr, size_t bytes, unsigned int flags);
cudaError_t cudaMallocPitch(void** ptr, size_t* pitch, size_t width, size_t height);
cudaError_t cudaMallocAsync(void** ptr, size_t bytes, cudaStream_t stream);
cudaError_t cudaFree(void* ptr);
cudaError_t cudaFreeHost(void* ptr);
cudaError_t cudaFreeAsync(void* ptr, cudaStream_t stream);
cudaError_t cudaHostRegister(void* ptr, size_t bytes, unsigned int flags);
cudaError_t cudaHostUnregister(void* ptr);
cudaError_t cudaHostGetDevicePointer(void** dev, void* host, unsigned int flags);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = 0);
cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                         size_t height, cudaMemcpyKind kind);
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                              size_t width, size_t height, cudaMemcpyKind kind,
                              cudaStream_t stream = 0);
cudaError_t cudaMemset(void* ptr, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void* ptr, int value, size_t bytes, cudaStream_t stream = 0);
cudaError_t cudaMemset2D(void* ptr, size_t pitch, int value, size_t width, size_t height);
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes);
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* ptr);
cudaError_t cudaMemPrefetchAsync(const void* ptr, size_t bytes, int device, cudaStream_t stream = 0);

cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaDeviceReset(void);
cudaError_t cudaThreadSynchronize(void);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaSetDeviceFlags(unsigned int flags);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device);
cudaError_t cudaDeviceSetCacheConfig(cudaFuncCache config);
cudaError_t cudaDeviceSetSharedMemConfig(cudaSharedMemConfig config);
cudaError_t cudaDeviceSetLimit(cudaLimit limit, size_t value);
cudaError_t cudaDeviceGetLimit(size_t* value, cudaLimit limit);
cudaError_t cudaDriverGetVersion(int* version);
cudaError_t cudaRuntimeGetVersion(int* version);
cudaError_t cudaProfilerStart(void);
cudaError_t cudaProfilerStop(void);

cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags);
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned int flags, int priority);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamQuery(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags = 0);
cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest);
// Host functions and callbacks run at once: the stream has finished all
// earlier work by the time they are enqueued.
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* user_data);
typedef void (*cudaStreamCallback_t)(cudaStream_t stream, cudaError_t status, void* user_data);
cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback,
                                  void* user_data, unsigned int flags);

cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);

cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char* cudaGetErrorString(cudaError_t error);
const char* cudaGetErrorName(cudaError_t error);

namespace __sirius {
// Copy bookkeeping shared by the cudaMemcpy family; records device-to-host
// copies in the dump that `sirius verify` reads.
cudaError_t memcpy_impl(const char* args_text, const char* file, int line, int elem_code,
                        void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                        const char* what);
cudaError_t memcpy2d_impl(const char* args_text, const char* file, int line, int elem_code,
                          void* dst, size_t dpitch, const void* src, size_t spitch,
                          size_t width, size_t height, cudaMemcpyKind kind, const char* what);
cudaError_t symbol_range(const void* symbol, size_t size);
void track_managed(const void* p, size_t bytes, int elem_code, const char* file, int line);
// A __managed__ variable (see ManagedVariable below) as managed memory.
void track_managed_variable(const void* p, size_t bytes, int elem_code, const char* name,
                            const char* file, int line);
void set_error(cudaError_t error);
void unsupported(const char* what);
// cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes), with
// the call's arguments as written
cudaError_t opt_in_dynamic_shared(const char* args_text, int bytes);
// Blocks of `block_size` threads with `shmem` bytes of dynamic shared memory
// that one SM holds at once; the kernel is argument `kernel_arg` of the call's
// arguments as written (its __launch_bounds__, if the build registered them).
int max_active_blocks(const char* args_text, int kernel_arg, int block_size, size_t shmem);

// Element type of a copied buffer, for comparisons (see sirius/backend/compare.py).
enum ElemCode {
  kBytes = 0, kF32 = 1, kF64 = 2, kF16 = 3, kI8 = 4, kU8 = 5, kI16 = 6, kU16 = 7,
  kI32 = 8, kU32 = 9, kI64 = 10, kU64 = 11, kBF16 = 12, kBool = 13
};
template <class T> struct ElemCodeOf { static constexpr int value = kBytes; };
#define SIRIUS_ELEM(T, code) \
  template <> struct ElemCodeOf<T> { static constexpr int value = code; };
SIRIUS_ELEM(float, kF32) SIRIUS_ELEM(float1, kF32) SIRIUS_ELEM(float2, kF32)
SIRIUS_ELEM(float3, kF32) SIRIUS_ELEM(float4, kF32)
SIRIUS_ELEM(double, kF64) SIRIUS_ELEM(double1, kF64) SIRIUS_ELEM(double2, kF64)
SIRIUS_ELEM(double3, kF64) SIRIUS_ELEM(double4, kF64)
SIRIUS_ELEM(_Float16, kF16)
SIRIUS_ELEM(__bf16, kBF16)
SIRIUS_ELEM(signed char, kI8) SIRIUS_ELEM(unsigned char, kU8)
SIRIUS_ELEM(short, kI16) SIRIUS_ELEM(unsigned short, kU16)
SIRIUS_ELEM(int, kI32) SIRIUS_ELEM(int1, kI32) SIRIUS_ELEM(int2, kI32)
SIRIUS_ELEM(int3, kI32) SIRIUS_ELEM(int4, kI32)
SIRIUS_ELEM(unsigned int, kU32) SIRIUS_ELEM(uint1, kU32) SIRIUS_ELEM(uint2, kU32)
SIRIUS_ELEM(uint3, kU32) SIRIUS_ELEM(uint4, kU32)
SIRIUS_ELEM(long, kI64) SIRIUS_ELEM(long long, kI64)
SIRIUS_ELEM(unsigned long, kU64) SIRIUS_ELEM(unsigned long long, kU64)
SIRIUS_ELEM(bool, kBool)
#undef SIRIUS_ELEM
template <class T> constexpr int elem_code() {
  return ElemCodeOf<typename std::remove_cv<T>::type>::value;
}

// The source rewrite registers each definition of a __managed__ variable (a
// plain global here, shared by kernels and host) with one of these: kernels may
// then be given its address, as on a GPU, and since the host reads it without
// copies its bytes go to the copy dump at exit, as a cudaMallocManaged buffer's
// do, for `sirius verify` to compare.
struct ManagedVariable {
  template <class T>
  ManagedVariable(T& variable, const char* name, const char* file = __builtin_FILE(),
                  int line = __builtin_LINE()) {
    track_managed_variable((const void*)&variable, sizeof(T),
                           elem_code<typename std::remove_all_extents<T>::type>(), name, file,
                           line);
  }
};
}  // namespace __sirius

// --- templates and convenience overloads (as in CUDA's cuda_runtime.h) ------

template <class T> inline cudaError_t cudaMalloc(T** ptr, size_t bytes) {
  return cudaMalloc((void**)ptr, bytes);
}
// Managed memory is read by the host without copies; so that `sirius verify`
// sees it, each managed buffer is recorded in the copy dump when it is freed
// or, if never freed, when the program exits.
template <class T>
inline cudaError_t cudaMallocManaged(T** ptr, size_t bytes, unsigned int flags = cudaMemAttachGlobal,
                                     const char* file = __builtin_FILE(),
                                     int line = __builtin_LINE()) {
  cudaError_t e = cudaMallocManaged((void**)ptr, bytes, flags);
  if (e == cudaSuccess) __sirius::track_managed(*ptr, bytes, __sirius::elem_code<T>(), file, line);
  return e;
}
template <class T> inline cudaError_t cudaMallocHost(T** ptr, size_t bytes) {
  return cudaMallocHost((void**)ptr, bytes);
}
inline cudaError_t cudaMallocHost(void** ptr, size_t bytes, unsigned int flags) {
  return cudaHostAlloc(ptr, bytes, flags);
}
template <class T> inline cudaError_t cudaHostAlloc(T** ptr, size_t bytes, unsigned int flags) {
  return cudaHostAlloc((void**)ptr, bytes, flags);
}
template <class T> inline cudaError_t cudaMallocPitch(T** ptr, size_t* pitch, size_t w, size_t h) {
  return cudaMallocPitch((void**)ptr, pitch, w, h);
}
template <class T> inline cudaError_t cudaMallocAsync(T** ptr, size_t bytes, cudaStream_t s) {
  return cudaMallocAsync((void**)ptr, bytes, s);
}

template <class S>
inline cudaError_t cudaGetSymbolAddress(void** dev, const S& symbol) {
  *dev = (void*)&symbol;
  return __sirius::symbol_range(&symbol, sizeof(S));
}
template <class S> inline cudaError_t cudaGetSymbolSize(size_t* size, const S&) {
  *size = sizeof(S);
  return cudaSuccess;
}

// The kernel's spelling comes along (see the macro below): the runtime knows
// kernels by the name their launches spell, and checks a launch's shared
// memory against the 48 KB default or the limit the program opted in to.
template <class F>
inline cudaError_t __sirius_func_set_attribute(const char* spelled, F*, cudaFuncAttribute attr,
                                               int value) {
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize)
    return ::__sirius::opt_in_dynamic_shared(spelled, value);
  return cudaSuccess;
}
#define cudaFuncSetAttribute(...) __sirius_func_set_attribute(#__VA_ARGS__, __VA_ARGS__)
template <class F> inline cudaError_t cudaFuncSetCacheConfig(F*, cudaFuncCache) {
  return cudaSuccess;
}
template <class F> inline cudaError_t cudaFuncSetSharedMemConfig(F*, cudaSharedMemConfig) {
  return cudaSuccess;
}
template <class F> inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, F*) {
  std::memset(attr, 0, sizeof(*attr));
  attr->maxThreadsPerBlock = 1024;
  attr->maxDynamicSharedSizeBytes = 48 * 1024;
  attr->binaryVersion = 90;
  attr->ptxVersion = 90;
  return cudaSuccess;
}
// The kernel's spelling comes along, as for cudaFuncSetAttribute, so that its
// __launch_bounds__ are known; cudaLaunchCooperativeKernel accepts a grid of
// at most this many blocks per SM times the SM count (and the CPU's own limit).
template <class F>
inline cudaError_t __sirius_occupancy(const char* spelled, int* blocks, F*, int block_size,
                                      size_t shmem = 0, unsigned int = 0) {
  if (!blocks || block_size <= 0) {
    ::__sirius::set_error(cudaErrorInvalidValue);
    return cudaErrorInvalidValue;
  }
  *blocks = ::__sirius::max_active_blocks(spelled, 1, block_size, shmem);
  return cudaSuccess;
}
#define cudaOccupancyMaxActiveBlocksPerMultiprocessor(...) \
  __sirius_occupancy(#__VA_ARGS__, __VA_ARGS__)
#define cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(...) \
  __sirius_occupancy(#__VA_ARGS__, __VA_ARGS__)
template <class F>
inline cudaError_t cudaOccupancyMaxPotentialBlockSize(int* min_grid, int* block, F*, size_t = 0,
                                                      int limit = 0) {
  int b = (limit > 0 && limit < 1024) ? limit : 1024;
  *block = b;
  *min_grid = 132 * (2048 / b);
  return cudaSuccess;
}

// --- copies that `sirius verify` sees ----------------------------------------
// The call site (file, line, argument text) is recorded with each
// device-to-host copy; the element type comes from the destination pointer.

template <class T>
inline cudaError_t __sirius_cudaMemcpy(const char* text, const char* file, int line, T* dst,
                                       const void* src, size_t bytes, cudaMemcpyKind kind) {
  return __sirius::memcpy_impl(text, file, line, __sirius::elem_code<T>(), (void*)dst, src, bytes,
                               kind, "cudaMemcpy");
}
template <class T>
inline cudaError_t __sirius_cudaMemcpyAsync(const char* text, const char* file, int line, T* dst,
                                            const void* src, size_t bytes, cudaMemcpyKind kind,
                                            cudaStream_t = 0) {
  return __sirius::memcpy_impl(text, file, line, __sirius::elem_code<T>(), (void*)dst, src, bytes,
                               kind, "cudaMemcpyAsync");
}
template <class T>
inline cudaError_t __sirius_cudaMemcpy2D(const char* text, const char* file, int line, T* dst,
                                         size_t dpitch, const void* src, size_t spitch,
                                         size_t width, size_t height, cudaMemcpyKind kind,
                                         cudaStream_t = 0) {
  return __sirius::memcpy2d_impl(text, file, line, __sirius::elem_code<T>(), (void*)dst, dpitch,
                                 src, spitch, width, height, kind, "cudaMemcpy2D");
}
template <class T, class S>
inline cudaError_t __sirius_cudaMemcpyFromSymbol(const char* text, const char* file, int line,
                                                 T* dst, const S& symbol, size_t bytes,
                                                 size_t offset = 0,
                                                 cudaMemcpyKind kind = cudaMemcpyDeviceToHost,
                                                 cudaStream_t = 0) {
  if (offset + bytes > sizeof(S)) return cudaErrorInvalidValue;
  __sirius::symbol_range(&symbol, sizeof(S));
  return __sirius::memcpy_impl(text, file, line, __sirius::elem_code<T>(), (void*)dst,
                               (const char*)&symbol + offset, bytes,
                               kind == cudaMemcpyDefault ? cudaMemcpyDeviceToHost : kind,
                               "cudaMemcpyFromSymbol");
}
template <class S>
inline cudaError_t __sirius_cudaMemcpyToSymbol(const S& symbol, const void* src, size_t bytes,
                                               size_t offset = 0,
                                               cudaMemcpyKind kind = cudaMemcpyHostToDevice,
                                               cudaStream_t = 0) {
  if (offset + bytes > sizeof(S)) return cudaErrorInvalidValue;
  __sirius::symbol_range(&symbol, sizeof(S));
  return __sirius::memcpy_impl("", "", 0, 0, (void*)((char*)&symbol + offset), src, bytes,
                               kind == cudaMemcpyDefault ? cudaMemcpyHostToDevice : kind,
                               "cudaMemcpyToSymbol");
}

#define cudaMemcpy(...) __sirius_cudaMemcpy(#__VA_ARGS__, __FILE__, __LINE__, __VA_ARGS__)
#define cudaMemcpyAsync(...) \
  __sirius_cudaMemcpyAsync(#__VA_ARGS__, __FILE__, __LINE__, __VA_ARGS__)
#define cudaMemcpy2D(...) __sirius_cudaMemcpy2D(#__VA_ARGS__, __FILE__, __LINE__, __VA_ARGS__)
#define cudaMemcpy2DAsync(...) \
  __sirius_cudaMemcpy2D(#__VA_ARGS__, __FILE__, __LINE__, __VA_ARGS__)
#define cudaMemcpyFromSymbol(...) \
  __sirius_cudaMemcpyFromSymbol(#__VA_ARGS__, __FILE__, __LINE__, __VA_ARGS__)
#define cudaMemcpyFromSymbolAsync(...) \
  __sirius_cudaMemcpyFromSymbol(#__VA_ARGS__, __FILE__, __LINE__, __VA_ARGS__)
#define cudaMemcpyToSymbol(...) __sirius_cudaMemcpyToSymbol(__VA_ARGS__)
#define cudaMemcpyToSymbolAsync(...) __sirius_cudaMemcpyToSymbol(__VA_ARGS__)
