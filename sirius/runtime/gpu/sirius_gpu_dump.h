// Sirius GPU backend: included before a program's first line (nvcc -include)
// by `sirius run/verify --backend gpu`. It wraps the device-to-host copy calls
// so that each copy is also appended to the file named by SIRIUS_DUMP, in the
// format sirius/backend/compare.py reads (the CPU backend writes the same).
// Asynchronous copies are waited for before they are recorded.
#pragma once

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

namespace __sirius_gpu {

template <class T> struct ElemCodeOf { static constexpr int value = 0; };
#define SIRIUS_ELEM(T, code) \
  template <> struct ElemCodeOf<T> { static constexpr int value = code; };
SIRIUS_ELEM(float, 1) SIRIUS_ELEM(float2, 1) SIRIUS_ELEM(float4, 1)
SIRIUS_ELEM(double, 2) SIRIUS_ELEM(double2, 2)
SIRIUS_ELEM(__half, 3) SIRIUS_ELEM(__half2, 3)
SIRIUS_ELEM(signed char, 4) SIRIUS_ELEM(unsigned char, 5)
SIRIUS_ELEM(short, 6) SIRIUS_ELEM(unsigned short, 7)
SIRIUS_ELEM(int, 8) SIRIUS_ELEM(int2, 8) SIRIUS_ELEM(int4, 8)
SIRIUS_ELEM(unsigned int, 9) SIRIUS_ELEM(uint2, 9) SIRIUS_ELEM(uint4, 9)
SIRIUS_ELEM(long, 10) SIRIUS_ELEM(long long, 10)
SIRIUS_ELEM(unsigned long, 11) SIRIUS_ELEM(unsigned long long, 11)
SIRIUS_ELEM(__nv_bfloat16, 12) SIRIUS_ELEM(bool, 13)
#undef SIRIUS_ELEM
template <class T> constexpr int elem_code() {
  return ElemCodeOf<typename std::remove_cv<T>::type>::value;
}

struct Dump {
  FILE* f = nullptr;
  unsigned seq = 0;
  bool opened = false;
  ~Dump() {
    if (f) fclose(f);
  }
};
static inline Dump& dump() {
  static Dump d;
  return d;
}
static inline void put_str(FILE* f, const char* s) {
  unsigned n = s ? (unsigned)strlen(s) : 0u;
  fwrite(&n, 4, 1, f);
  if (n) fwrite(s, 1, n, f);
}
static inline void record(const char* text, const char* file, int line, int code,
                          const char* what, const void* data, size_t bytes) {
  Dump& d = dump();
  if (!d.opened) {
    d.opened = true;
    const char* path = getenv("SIRIUS_DUMP");
    if (path && *path) d.f = fopen(path, "wb");
  }
  if (!d.f) return;
  unsigned head[3] = {d.seq++, (unsigned)code, (unsigned)line};
  fwrite("SRD1", 1, 4, d.f);
  fwrite(head, 4, 3, d.f);
  put_str(d.f, text);
  put_str(d.f, file);
  put_str(d.f, what);
  unsigned long long n = bytes;
  fwrite(&n, 8, 1, d.f);
  if (bytes) fwrite(data, 1, bytes, d.f);
  fflush(d.f);
}
static inline bool device_side(const void* p) {
  cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}
static inline bool to_host(cudaMemcpyKind kind, const void* dst, const void* src) {
  if (kind == cudaMemcpyDeviceToHost) return true;
  return kind == cudaMemcpyDefault && device_side(src) && !device_side(dst);
}

// Managed buffers: recorded when freed or, if never freed, at exit (the
// host reads them without copies).
struct Managed {
  const void* p;
  size_t bytes;
  int code;
  const char* file;
  int line;
};
static inline std::vector<Managed>& managed() {
  static std::vector<Managed>& v = *new std::vector<Managed>();
  return v;
}
static inline void dump_managed(const Managed& m) {
  cudaDeviceSynchronize();
  record("", m.file, m.line, m.code, "cudaMallocManaged", m.p, m.bytes);
}
static inline void track_managed(const void* p, size_t bytes, int code, const char* file,
                                 int line) {
  if (managed().empty()) {
    atexit([] {
      for (const Managed& m : managed()) dump_managed(m);
      managed().clear();
    });
  }
  managed().push_back({p, bytes, code, file, line});
}
static inline void free_managed(const void* p) {
  auto& v = managed();
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i].p == p) {
      dump_managed(v[i]);
      v.erase(v.begin() + (long)i);
      return;
    }
}

}  // namespace __sirius_gpu

template <class T>
static inline cudaError_t __sirius_cudaMemcpy(const char* text, const char* file, int line, T* dst,
                                              const void* src, size_t bytes, cudaMemcpyKind kind) {
  cudaError_t e = cudaMemcpy((void*)dst, src, bytes, kind);
  if (e == cudaSuccess && __sirius_gpu::to_host(kind, dst, src))
    __sirius_gpu::record(text, file, line, __sirius_gpu::elem_code<T>(), "cudaMemcpy", dst, bytes);
  return e;
}
template <class T>
static inline cudaError_t __sirius_cudaMemcpyAsync(const char* text, const char* file, int line,
                                                   T* dst, const void* src, size_t bytes,
                                                   cudaMemcpyKind kind, cudaStream_t s = 0) {
  cudaError_t e = cudaMemcpyAsync((void*)dst, src, bytes, kind, s);
  if (e == cudaSuccess && __sirius_gpu::to_host(kind, dst, src)) {
    e = cudaStreamSynchronize(s);
    __sirius_gpu::record(text, file, line, __sirius_gpu::elem_code<T>(), "cudaMemcpyAsync", dst,
                         bytes);
  }
  return e;
}
template <class T, class S>
static inline cudaError_t __sirius_cudaMemcpyFromSymbol(const char* text, const char* file,
                                                        int line, T* dst, const S& symbol,
                                                        size_t bytes, size_t offset = 0,
                                                        cudaMemcpyKind kind = cudaMemcpyDeviceToHost) {
  cudaError_t e = cudaMemcpyFromSymbol((void*)dst, symbol, bytes, offset, kind);
  if (e == cudaSuccess && kind != cudaMemcpyDeviceToDevice)
    __sirius_gpu::record(text, file, line, __sirius_gpu::elem_code<T>(), "cudaMemcpyFromSymbol",
                         dst, bytes);
  return e;
}

template <class T>
static inline cudaError_t __sirius_cudaMallocManaged(const char* file, int line, T** ptr,
                                                     size_t bytes,
                                                     unsigned flags = cudaMemAttachGlobal) {
  cudaError_t e = cudaMallocManaged((void**)ptr, bytes, flags);
  if (e == cudaSuccess && *ptr)
    __sirius_gpu::track_managed(*ptr, bytes, __sirius_gpu::elem_code<T>(), file, line);
  return e;
}
static inline cudaError_t __sirius_cudaFree(void* p) {
  __sirius_gpu::free_managed(p);
  return cudaFree(p);
}

#define cudaMemcpy(...) __sirius_cudaMemcpy(#__VA_ARGS__, __FILE__, __LINE__, __VA_ARGS__)
#define cudaMemcpyAsync(...) \
  __sirius_cudaMemcpyAsync(#__VA_ARGS__, __FILE__, __LINE__, __VA_ARGS__)
#define cudaMemcpyFromSymbol(...) \
  __sirius_cudaMemcpyFromSymbol(#__VA_ARGS__, __FILE__, __LINE__, __VA_ARGS__)
#define cudaMallocManaged(...) __sirius_cudaMallocManaged(__FILE__, __LINE__, __VA_ARGS__)
#define cudaFree(p) __sirius_cudaFree(p)
