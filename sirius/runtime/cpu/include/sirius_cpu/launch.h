// Sirius CPU backend: kernel launches.
//
// The source rewrite turns `kernel<<<grid, block, shmem, stream>>>(args)` into
//   ::__sirius::launch(::__sirius::LaunchConfig(grid, block, shmem, stream),
//                      "kernel", [=](auto... a) { kernel(a...); }, args)
// (with `.max_threads(N)` after the config for a kernel declared with
// __launch_bounds__(N))
// so that overloads, templates with deduced arguments and default arguments
// resolve as in CUDA. The arguments are evaluated once, at the launch, and
// every CUDA thread gets its own copy.
//
// cudaLaunchCooperativeKernel(kernel, grid, block, args[, shmem[, stream]])
// runs every block of the grid at once, each on an OS thread of its own, so
// that this_grid().sync() can wait for all of them (see runtime.cpp).
//
// Both take the kernel as a typed pointer, or as the untyped one CUDA's API
// declares (`(void*)kernel`): the source rewrite turns each cast of a kernel's
// name into kernel_address(kernel, "kernel"), which records by address how to
// unpack an argument array for that kernel's parameter types.
#pragma once
#pragma GCC system_header

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "api.h"
#include "types.h"

namespace __sirius {

struct LaunchConfig {
  dim3 grid, block;
  size_t shmem;
  cudaStream_t stream;
  unsigned bound = 0;  // the kernel's __launch_bounds__ (0: none)
  bool cooperative = false;
  LaunchConfig(dim3 g, dim3 b, size_t s = 0, cudaStream_t st = 0)
      : grid(g), block(b), shmem(s), stream(st) {}
  LaunchConfig& max_threads(unsigned n) {
    bound = n;
    return *this;
  }
};

struct LaunchBase {
  const char* name;
  dim3 grid, block;
  size_t shmem;
  unsigned bound;
  bool cooperative;
  void (*invoke)(LaunchBase*);
};

// Runs every block of the grid; returns once all have finished. A launch that
// fails (bad configuration, a cooperative grid too large) sets the last error
// and returns it.
cudaError_t run_launch(LaunchBase* launch);
// True while the calling OS thread runs a CUDA thread.
bool in_kernel();
void launched_from_device(const char* kernel);
void check_kernel_pointer(const char* kernel, int index, const void* p);
void unsupported(const char* what);
// The kernel as argument `index` of a call's arguments as written (e.g.
// "k<float>"), kept for the whole run; the call's name when it cannot be read.
const char* spelled_kernel(const char* args_text, int index, const char* fallback);
// __launch_bounds__ of a kernel so spelled, if the build registered them (0: unknown).
unsigned launch_bounds_of(const char* kernel);

// Registers a kernel's __launch_bounds__ by name (the source rewrite emits one
// per kernel declared with them), for launches and queries that name the
// kernel without <<<>>>.
struct LaunchBoundsRegistration {
  LaunchBoundsRegistration(const char* kernel, unsigned max_threads);
};

template <class F, class Args> struct Launch : LaunchBase {
  F f;
  Args args;
  template <class... A>
  Launch(const char* n, const LaunchConfig& c, F fn, A&&... a)
      : f(fn), args(std::forward<A>(a)...) {
    name = n;
    grid = c.grid;
    block = c.block;
    shmem = c.shmem;
    bound = c.bound;
    cooperative = c.cooperative;
    invoke = &Launch::call;
  }
  static void call(LaunchBase* base) {
    Launch* self = static_cast<Launch*>(base);
    std::apply(self->f, self->args);
  }
};

template <class T> inline void check_argument(const char* kernel, int index, const T& v) {
  using D = typename std::decay<T>::type;
  if constexpr (std::is_pointer<D>::value &&
                !std::is_function<typename std::remove_pointer<D>::type>::value) {
    check_kernel_pointer(kernel, index, (const void*)v);
  }
}

template <class Tuple, std::size_t... I>
inline void check_arguments(const char* kernel, const Tuple& t, std::index_sequence<I...>) {
  (check_argument(kernel, (int)I + 1, std::get<I>(t)), ...);
}

template <class F, class... A>
inline cudaError_t launch_status(const LaunchConfig& config, const char* name, F f, A&&... a) {
  if (in_kernel()) launched_from_device(name);
  Launch<F, std::tuple<typename std::decay<A>::type...>> l(name, config, f, std::forward<A>(a)...);
  check_arguments(name, l.args, std::index_sequence_for<A...>{});
  return run_launch(&l);
}

// The type of a kernel's parameter I, for a braced argument (kernel<<<g, b>>>(p, {n, 2.0f})).
template <std::size_t I, class... P>
typename std::decay<typename std::tuple_element<I, std::tuple<P...>>::type>::type kernel_parameter(void (*)(P...));

// What <<<>>> becomes: an expression of type void, as in CUDA.
template <class F, class... A>
inline void launch(const LaunchConfig& config, const char* name, F f, A&&... a) {
  launch_status(config, name, f, std::forward<A>(a)...);
}

}  // namespace __sirius

// cudaLaunchKernel with a typed kernel pointer: the argument array is unpacked
// by the kernel's parameter types.
template <class... P, std::size_t... I>
inline cudaError_t __sirius_launch_unpacked(const ::__sirius::LaunchConfig& config,
                                            const char* name, void (*kernel)(P...), void** args,
                                            std::index_sequence<I...>) {
  return ::__sirius::launch_status(
      config, name, [kernel](auto... a) { kernel(a...); },
      *static_cast<typename std::decay<P>::type*>(args[I])...);
}
template <class... P>
inline cudaError_t cudaLaunchKernel(void (*kernel)(P...), dim3 grid, dim3 block, void** args,
                                    size_t shmem = 0, cudaStream_t stream = 0) {
  __sirius_launch_unpacked(::__sirius::LaunchConfig(grid, block, shmem, stream),
                           "cudaLaunchKernel", kernel, args, std::index_sequence_for<P...>{});
  return cudaPeekAtLastError();
}

namespace __sirius {

// Launches the kernel at `address` (of the parameter types it was recorded with).
using UntypedLaunch = cudaError_t (*)(LaunchConfig& config, const char* name, const void* address,
                                      void** args);
struct UntypedKernel {
  const char* name;
  UntypedLaunch launch;
};
void register_untyped_kernel(const void* address, const char* name, UntypedLaunch launch);
bool find_untyped_kernel(const void* address, UntypedKernel* kernel);

template <class... P>
cudaError_t launch_untyped(LaunchConfig& config, const char* name, const void* address,
                           void** args) {
  auto kernel = reinterpret_cast<void (*)(P...)>(const_cast<void*>(address));
  return __sirius_launch_unpacked(config, name, kernel, args, std::index_sequence_for<P...>{});
}

// What the source rewrite makes of `(void*)kernel`: the same address, recorded.
template <class... P> inline void* kernel_address(void (*kernel)(P...), const char* name) {
  register_untyped_kernel(reinterpret_cast<const void*>(kernel), name, &launch_untyped<P...>);
  return reinterpret_cast<void*>(kernel);
}
// A kernel's name that means something else where it is cast (a local variable
// shadowing it): the cast as written.
template <class T> inline void* kernel_address(T value, const char*) { return (void*)value; }

// A launch through an untyped pointer: the kernel a cast recorded at that address,
// with its name (for messages, the launch log, shared-memory opt-ins) and its
// __launch_bounds__.
inline cudaError_t launch_through_pointer(bool cooperative, const void* address, LaunchConfig config,
                                          void** args) {
  UntypedKernel kernel;
  if (!find_untyped_kernel(address, &kernel)) {
    unsupported(cooperative
                    ? "cudaLaunchCooperativeKernel with an untyped (void*) kernel pointer that no "
                      "cast of a kernel's name ((void*)kernel) in the program gave; pass the kernel "
                      "itself"
                    : "cudaLaunchKernel with an untyped (void*) kernel pointer that no cast of a "
                      "kernel's name ((void*)kernel) in the program gave; launch it with <<<...>>> "
                      "or pass the kernel itself");
    return cudaErrorNotSupported;
  }
  config.max_threads(launch_bounds_of(kernel.name));
  config.cooperative = cooperative;
  return kernel.launch(config, kernel.name, address, args);
}

}  // namespace __sirius

inline cudaError_t cudaLaunchKernel(const void* kernel, dim3 grid, dim3 block, void** args,
                                    size_t shmem = 0, cudaStream_t stream = 0) {
  return ::__sirius::launch_through_pointer(
      false, kernel, ::__sirius::LaunchConfig(grid, block, shmem, stream), args);
}

// cudaLaunchCooperativeKernel: the kernel's spelling comes along (as for
// cudaFuncSetAttribute) for its name in messages and the launch log, and for
// its __launch_bounds__. Returns the launch's own error:
// cudaErrorCooperativeLaunchTooLarge when the blocks cannot all be resident.
template <class... P>
inline cudaError_t __sirius_launch_cooperative(const char* spelled, void (*kernel)(P...),
                                               dim3 grid, dim3 block, void** args,
                                               size_t shmem = 0, cudaStream_t stream = 0) {
  const char* name = ::__sirius::spelled_kernel(spelled, 0, "cudaLaunchCooperativeKernel");
  ::__sirius::LaunchConfig config(grid, block, shmem, stream);
  config.max_threads(::__sirius::launch_bounds_of(name));
  config.cooperative = true;
  return __sirius_launch_unpacked(config, name, kernel, args, std::index_sequence_for<P...>{});
}
inline cudaError_t __sirius_launch_cooperative(const char*, const void* kernel, dim3 grid,
                                               dim3 block, void** args, size_t shmem = 0,
                                               cudaStream_t stream = 0) {
  return ::__sirius::launch_through_pointer(
      true, kernel, ::__sirius::LaunchConfig(grid, block, shmem, stream), args);
}
#define cudaLaunchCooperativeKernel(...) __sirius_launch_cooperative(#__VA_ARGS__, __VA_ARGS__)
