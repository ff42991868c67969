// Sirius CPU backend: cooperative groups of a grid, a block and a warp
// (this_grid, thread_block, tiled_partition<N>, coalesced_threads).
// this_grid().sync() needs a launch by cudaLaunchCooperativeKernel (see
// runtime.cpp); multi-grid groups are refused before compilation.
#pragma once
#pragma GCC system_header

#include "sirius_cpu.h"

namespace cooperative_groups {

inline unsigned __sirius_linear_tid() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

class thread_block {
 public:
  void sync(const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
    ::__sirius::block_sync(::__sirius::kBarrier, 1, file, line);
  }
  unsigned thread_rank() const { return __sirius_linear_tid(); }
  unsigned size() const { return blockDim.x * blockDim.y * blockDim.z; }
  unsigned num_threads() const { return size(); }
  dim3 group_index() const { return dim3(blockIdx); }
  dim3 thread_index() const { return dim3(threadIdx); }
  dim3 group_dim() const { return blockDim; }
  dim3 dim_threads() const { return blockDim; }
};

inline thread_block this_thread_block() { return thread_block(); }

class grid_group {
  static unsigned long long block_size() {
    return (unsigned long long)blockDim.x * blockDim.y * blockDim.z;
  }

 public:
  // Valid (able to synchronize) in a kernel launched cooperatively.
  bool is_valid() const { return ::__sirius::cooperative_launch(); }
  void sync(const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
    ::__sirius::grid_sync(file, line);
  }
  static unsigned long long num_blocks() {
    return (unsigned long long)gridDim.x * gridDim.y * gridDim.z;
  }
  static unsigned long long block_rank() {
    unsigned long long plane = (unsigned long long)gridDim.y * blockIdx.z + blockIdx.y;
    return plane * gridDim.x + blockIdx.x;
  }
  static unsigned long long num_threads() { return num_blocks() * block_size(); }
  static unsigned long long size() { return num_threads(); }
  static unsigned long long thread_rank() {
    return block_rank() * block_size() + __sirius_linear_tid();
  }
  static dim3 block_index() { return dim3(blockIdx); }
  static dim3 dim_blocks() { return gridDim; }
  static dim3 group_dim() { return gridDim; }  // in blocks, as CUDA's (legacy) grid_group
  static dim3 dim_threads() {
    return dim3(gridDim.x * blockDim.x, gridDim.y * blockDim.y, gridDim.z * blockDim.z);
  }
};

inline grid_group this_grid() { return grid_group(); }

template <unsigned SiriusTileN> class thread_block_tile {
  static_assert(SiriusTileN >= 1 && SiriusTileN <= 32 && (SiriusTileN & (SiriusTileN - 1)) == 0,
                "tiled_partition<N>: N must be a power of two up to 32");
  static unsigned base() { return (__sirius_linear_tid() % 32) / SiriusTileN * SiriusTileN; }

 public:
  static unsigned lanes_mask() {
    return SiriusTileN == 32 ? 0xffffffffu : (((1u << SiriusTileN) - 1u) << base());
  }
  void sync(const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
    ::__sirius::warp_sync(::__sirius::kSyncWarp, lanes_mask(), nullptr, 0, 0, 32, file, line);
  }
  unsigned thread_rank() const { return __sirius_linear_tid() % SiriusTileN; }
  unsigned size() const { return SiriusTileN; }
  unsigned num_threads() const { return SiriusTileN; }
  unsigned meta_group_rank() const { return __sirius_linear_tid() / SiriusTileN; }
  unsigned meta_group_size() const { return (blockDim.x * blockDim.y * blockDim.z + SiriusTileN - 1) / SiriusTileN; }
  template <class T>
  T shfl(T v, int src, const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
    return __shfl_sync(lanes_mask(), v, src, (int)SiriusTileN, file, line);
  }
  template <class T>
  T shfl_down(T v, unsigned d, const char* file = __builtin_FILE(),
              int line = __builtin_LINE()) const {
    return __shfl_down_sync(lanes_mask(), v, d, (int)SiriusTileN, file, line);
  }
  template <class T>
  T shfl_up(T v, unsigned d, const char* file = __builtin_FILE(),
            int line = __builtin_LINE()) const {
    return __shfl_up_sync(lanes_mask(), v, d, (int)SiriusTileN, file, line);
  }
  template <class T>
  T shfl_xor(T v, unsigned m, const char* file = __builtin_FILE(),
             int line = __builtin_LINE()) const {
    return __shfl_xor_sync(lanes_mask(), v, (int)m, (int)SiriusTileN, file, line);
  }
  int any(int p, const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
    return __any_sync(lanes_mask(), p, file, line);
  }
  int all(int p, const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
    return __all_sync(lanes_mask(), p, file, line);
  }
  unsigned ballot(int p, const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
    return __ballot_sync(lanes_mask(), p, file, line) >> base();
  }
};

template <unsigned SiriusTileN, class SiriusParent> inline thread_block_tile<SiriusTileN> tiled_partition(const SiriusParent&) {
  return thread_block_tile<SiriusTileN>();
}

class coalesced_group {
  unsigned mask_;

 public:
  explicit coalesced_group(unsigned m) : mask_(m) {}
  unsigned size() const { return (unsigned)__builtin_popcount(mask_); }
  unsigned num_threads() const { return size(); }
  unsigned thread_rank() const {
    unsigned lane = __sirius_linear_tid() % 32;
    return (unsigned)__builtin_popcount(mask_ & ((1u << lane) - 1u));
  }
  void sync(const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
    ::__sirius::warp_sync(::__sirius::kSyncWarp, mask_, nullptr, 0, 0, 32, file, line);
  }
};
inline coalesced_group coalesced_threads() { return coalesced_group(__activemask()); }

template <class SiriusGroup> inline void sync(const SiriusGroup& g, const char* file = __builtin_FILE(),
                                    int line = __builtin_LINE()) {
  g.sync(file, line);
}

template <class T> struct plus {
  T operator()(const T& a, const T& b) const { return a + b; }
};
template <class T> struct less {
  T operator()(const T& a, const T& b) const { return a < b ? a : b; }
};
template <class T> struct greater {
  T operator()(const T& a, const T& b) const { return a > b ? a : b; }
};
template <class T> struct bit_and {
  T operator()(const T& a, const T& b) const { return a & b; }
};
template <class T> struct bit_or {
  T operator()(const T& a, const T& b) const { return a | b; }
};
template <class T> struct bit_xor {
  T operator()(const T& a, const T& b) const { return a ^ b; }
};

// Butterfly reduction over a tile (what cooperative_groups/reduce.h provides).
template <unsigned SiriusTileN, class T, class SiriusOp>
inline T reduce(const thread_block_tile<SiriusTileN>& g, T v, SiriusOp op) {
  for (unsigned o = SiriusTileN / 2; o > 0; o /= 2) v = op(v, g.shfl_xor(v, o));
  return v;
}

}  // namespace cooperative_groups
