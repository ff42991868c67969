// Sirius CPU backend runtime: runs CUDA grids on the CPU.
//
// Execution model
// ---------------
// * The blocks of a grid are spread over worker OS threads (the calling thread
//   plus SIRIUS_CPU_THREADS - 1 pool threads; default: one per core), which
//   take block numbers from a shared counter. Blocks on one OS thread run one
//   after another.
// * The CUDA threads of a block are fibers on that OS thread: user-level
//   contexts with their own stacks, switched by a few instructions (no system
//   call). A fiber runs until it finishes or reaches a barrier or warp
//   operation; then the scheduler runs the next ready fiber. So `__shared__`
//   variables are `static thread_local` storage: one instance per OS thread,
//   used by one block at a time.
// * A block has 16 named barriers (PTX bar.sync id[, count]); barrier 0 is
//   __syncthreads()'s. __syncthreads() and __barrier_sync(id) release when
//   every live (not finished) thread of the block waits at that barrier;
//   __barrier_sync_count(id, n) when n threads wait at it (threads that
//   finished do not count). Threads at different barriers wait independently.
//   Threads waiting at different call sites of one barrier make it
//   divergent: reported with the kernel and the sites, exit 2. If no thread
//   can run (barriers that cannot complete, warp operations missing lanes),
//   that is a deadlock: reported the same way, with where each thread waits.
// * A warp operation (__shfl*_sync, __ballot_sync, __any/__all_sync,
//   __syncwarp, __match*, __reduce*) completes when every live lane of its
//   mask has arrived at one; the results of all lanes are computed at once.
// * A cooperative launch (cudaLaunchCooperativeKernel) runs every block at
//   once, each on an OS thread of its own from a pool kept across launches.
//   this_grid().sync() is a block barrier at its call site (every thread of
//   the block must reach it); then the block's OS thread waits until every
//   block of the grid has arrived. A block that finishes while others wait
//   at a grid barrier is reported (the barrier would never release), as is
//   this_grid().sync() in a kernel not launched cooperatively.
//
// Making missing barriers show
// ----------------------------
// Between two barriers the threads of a block run one at a time, in
// increasing thread order in even-numbered blocks and decreasing order in odd
// ones. So a thread that reads, without a barrier in between, what another
// thread of its block writes sees the value before that write in one of the
// two orders. Before that write the location holds a poison pattern: dynamic
// shared memory is filled at the start of every block and each static
// __shared__ variable at its first use in a block, with the 32-bit word
// 0x7F7F7F7F (float +3.4e38, a huge int) in even blocks and 0xFF7F7F7F (float
// -3.4e38, a negative int) in odd blocks; so sums, maxima and minima over
// poison all come out visibly wrong. Device allocations start as 0xFF bytes
// (float NaN).
//
// Environment: SIRIUS_CPU_THREADS (worker threads), SIRIUS_CPU_STACK_KB (stack
// of each CUDA thread, default 512), SIRIUS_CPU_COOP_BLOCKS (most blocks of a
// cooperative grid, default 64), SIRIUS_LAUNCH_LOG (file receiving the name of every
// kernel launched), SIRIUS_DUMP (file receiving every
// device-to-host copy, read by `sirius verify`), SIRIUS_ERROR_FILE (file
// receiving the message of a fatal error).

#include "sirius_cpu.h"
#undef printf

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#if !defined(__x86_64__) || defined(SIRIUS_USE_UCONTEXT)
#include <ucontext.h>
#define SIRIUS_UCONTEXT 1
#endif

__thread uint3 threadIdx;
__thread uint3 blockIdx;
__thread dim3 blockDim;
__thread dim3 gridDim;

namespace __sirius {

__thread unsigned long long block_serial;
__thread unsigned char* dynamic_shared_base;

static const size_t kMaxDynamicShared = 232448;  // sm_90 opt-in limit
static const size_t kDynamicSharedBuffer = 256 * 1024;

// ------------------------------------------------------------------ errors

static std::atomic<int> g_fatal{0};
static void flush_dump();

[[noreturn]] static void die(const char* msg) {
  if (g_fatal.exchange(1)) {
    for (;;) pause();  // another thread is reporting
  }
  fflush(stdout);
  fprintf(stderr, "error: %s\n", msg);
  fflush(stderr);
  if (const char* path = getenv("SIRIUS_ERROR_FILE")) {
    if (FILE* f = fopen(path, "w")) {
      fputs(msg, f);
      fputc('\n', f);
      fclose(f);
    }
  }
  flush_dump();
  _exit(2);
}

[[noreturn]] __attribute__((format(printf, 1, 2))) static void fatal(const char* fmt, ...) {
  char msg[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  die(msg);
}

void unsupported(const char* what) { fatal("%s is unsupported by the CPU backend", what); }

// ------------------------------------------------------------------ settings

static int setting(const char* name, int fallback, int lo, int hi) {
  const char* v = getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long n = strtol(v, &end, 10);
  if (*end || n < lo || n > hi) fatal("%s=%s: expected an integer in [%d, %d]", name, v, lo, hi);
  return (int)n;
}

static size_t stack_size() {
  static size_t size = (size_t)setting("SIRIUS_CPU_STACK_KB", 512, 16, 1 << 20) * 1024;
  return size;
}

// Every block of a cooperative grid is an OS thread, and every CUDA thread of
// it a fiber with a stack of its own (two memory mappings with its guard
// page): the grid is capped both in blocks and in threads, so that its stacks
// stay well inside the kernel's limit of 65530 mappings per process.
static int cooperative_block_limit() {
  static int n = setting("SIRIUS_CPU_COOP_BLOCKS", 64, 1, 1024);
  return n;
}
static const unsigned long long kCooperativeThreadLimit = 16384;

static int worker_count() {
  static int n = [] {
    unsigned hw = std::thread::hardware_concurrency();
    return setting("SIRIUS_CPU_THREADS", hw ? (int)hw : 1, 1, 1024);
  }();
  return n;
}

// ------------------------------------------------------------------ contexts

#ifdef SIRIUS_UCONTEXT
struct Context {
  ucontext_t uc;
};
static void fiber_main();
static void ctx_init(Context* c, char* stack, size_t size) {
  getcontext(&c->uc);
  c->uc.uc_stack.ss_sp = stack;
  c->uc.uc_stack.ss_size = size;
  c->uc.uc_link = nullptr;
  makecontext(&c->uc, fiber_main, 0);
}
static inline void ctx_switch(Context* from, Context* to) { swapcontext(&from->uc, &to->uc); }
#else
// Saves the callee-saved registers on the current stack, stores the stack
// pointer in *save, switches to new_sp and restores the registers saved there.
extern "C" void __sirius_ctx_switch(void** save, void* new_sp);
asm(R"(
    .text
    .globl __sirius_ctx_switch
    .type __sirius_ctx_switch,@function
    .p2align 4
__sirius_ctx_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size __sirius_ctx_switch, .-__sirius_ctx_switch
)");
struct Context {
  void* sp;
};
static void fiber_main();
static void ctx_init(Context* c, char* stack, size_t size) {
  // Stacks lie a multiple of the page size apart; shifting each top by a
  // different number of cache lines keeps the fibers' frames from all mapping
  // to the same cache sets.
  uintptr_t color = (((uintptr_t)stack >> 12) * 64) & 4095;
  uintptr_t top = ((uintptr_t)stack + size - color) & ~(uintptr_t)15;
  uint64_t* p = (uint64_t*)top;
  *--p = 0;                        // return address of fiber_main: none
  *--p = (uint64_t)&fiber_main;    // where the first switch "returns"
  for (int i = 0; i < 6; ++i) *--p = 0;  // rbp rbx r12 r13 r14 r15
  c->sp = p;
}
static inline void ctx_switch(Context* from, Context* to) { __sirius_ctx_switch(&from->sp, to->sp); }
#endif

// ------------------------------------------------------------------ workers

enum FiberState { kNew, kReady, kRunning, kWaitBarrier, kWaitWarp, kDone };

struct Fiber {
  Context ctx;
  char* stack;
  uint3 tid;
  int state;
  unsigned lane, warp;
  const char* file;
  int line;
  int op, arg, width, size, pred;
  int barrier, expected;  // at a barrier: its id and the threads it needs (0: all live)
  unsigned mask;
  alignas(16) unsigned char val[16];
};

struct Warp {
  unsigned live, arrived;
};

// One named barrier of a block, gathering the arrivals of its current
// instance: how many wait, the sum of their predicates, the threads it needs
// (0: every live thread) and the site of its first arrival.
static const int kNamedBarriers = 16;
struct Barrier {
  int waiting = 0, pred_sum = 0, expected = 0, line = 0;
  const char* file = nullptr;
  bool divergent = false;  // arrivals at another site (or with another count) than the first
  bool grid = false;       // this instance is this_grid().sync()'s block barrier
};

struct Worker {
  Context sched;
  Fiber* cur = nullptr;
  LaunchBase* launch = nullptr;
  std::vector<Fiber> fibers;
  std::vector<Warp> warps;
  std::vector<int> queue;
  size_t qhead = 0, qtail = 0;
  int nthreads = 0, live = 0;
  Barrier bars[kNamedBarriers];
  unsigned waiting_for_all = 0;     // bit per barrier gathering every live thread
  bool grid_wait_pending = false;   // released from a grid barrier: now wait for the grid
  std::vector<int> order;  // live threads in the order the block runs them
  bool order_dirty = false;
  bool descending = false;
  unsigned poison = 0;
  unsigned long long block = 0, serial = 0;
  unsigned long long shared_serial = 0;  // the block static_shared counts
  size_t static_shared = 0;              // bytes of static shared memory the block touched
  std::vector<char*> free_stacks;
  unsigned char* dyn = nullptr;
  std::string out;  // printf output of the running block
};

static __thread Worker* tw;

struct StackRange {
  uintptr_t guard_lo, lo, hi;
};
static std::mutex g_stack_mutex;
// The runtime's state is built on first use and never destroyed: a program's static
// initializers may call the runtime before this file's run, its atexit handlers after.
static std::vector<StackRange>& stack_ranges() {  // for telling stack overflows apart
  static auto& ranges = *new std::vector<StackRange>();
  return ranges;
}

static void install_altstack() {
  size_t size = 64 * 1024;
  void* mem = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return;
  stack_t ss;
  ss.ss_sp = mem;
  ss.ss_size = size;
  ss.ss_flags = 0;
  sigaltstack(&ss, nullptr);
}

static Worker* worker() {
  if (!tw) {
    tw = new Worker();
    void* dyn = nullptr;
    if (posix_memalign(&dyn, 128, kDynamicSharedBuffer)) fatal("out of memory");
    tw->dyn = (unsigned char*)dyn;
    dynamic_shared_base = tw->dyn;
    install_altstack();
  }
  return tw;
}

static char* get_stack(Worker& w) {
  if (!w.free_stacks.empty()) {
    char* s = w.free_stacks.back();
    w.free_stacks.pop_back();
    return s;
  }
  size_t guard = (size_t)sysconf(_SC_PAGESIZE);
  size_t size = stack_size();
  char* mem = (char*)mmap(nullptr, size + guard, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mem == MAP_FAILED) fatal("cannot allocate the stack of a CUDA thread (%zu KiB)", size / 1024);
  mprotect(mem, guard, PROT_NONE);
  {
    std::lock_guard<std::mutex> lock(g_stack_mutex);
    stack_ranges().push_back({(uintptr_t)mem, (uintptr_t)mem + guard, (uintptr_t)mem + guard + size});
  }
  return mem + guard;
}

bool in_kernel() { return tw && tw->cur; }

// ------------------------------------------------------------------ shared memory

static std::vector<std::pair<void* (*)(), size_t>>& file_scope_shared() {
  static std::vector<std::pair<void* (*)(), size_t>> v;
  return v;
}

SharedRegistration::SharedRegistration(void* (*address)(), size_t bytes) {
  file_scope_shared().push_back({address, bytes});
}

static void fill_poison(void* p, size_t bytes, unsigned word) {
  unsigned char* b = (unsigned char*)p;
  size_t words = bytes / 4;
  for (size_t i = 0; i < words; ++i) std::memcpy(b + 4 * i, &word, 4);
  for (size_t i = words * 4; i < bytes; ++i) b[i] = (unsigned char)(word >> (8 * (i % 4)));
}

// ------------------------------------------------------------------ shared memory limits

// A launch gets 48 KB of shared memory per block (static plus dynamic) unless
// the program raised the kernel's dynamic limit with cudaFuncSetAttribute;
// beyond that a GPU rejects the launch. Kernels are known here by the name
// their launches spell (or that name without namespaces and template
// arguments, when the opt-in spelled it otherwise); an opt-in whose kernel
// cannot be read by name, or a launch whose kernel has none (cudaLaunchKernel
// is given a pointer), makes the limit unknown (no error is then reported).
static const size_t kDefaultShared = 48 * 1024;
static std::mutex g_opt_in_lock;
static std::map<std::string, size_t>& opted_in_shared() {
  static auto& opted_in = *new std::map<std::string, size_t>();
  return opted_in;
}
static bool g_opt_in_unattributed = false;

static std::string kernel_spelling(const std::string& text) {
  std::string out;
  for (char c : text)
    if (!isspace((unsigned char)c) && c != '&') out += c;
  return out;
}

static std::string kernel_base_name(const std::string& spelled);

cudaError_t opt_in_dynamic_shared(const char* args_text, int bytes) {
  std::string args = args_text, first;
  int depth = 0;
  for (char c : args) {
    if (c == '<' || c == '(') depth++;
    if (c == '>' || c == ')') depth--;
    if (c == ',' && depth == 0) break;
    first += c;
  }
  std::string name = kernel_spelling(first);
  if (bytes < 0 || (size_t)bytes > kMaxDynamicShared) {
    set_error(cudaErrorInvalidValue);
    return cudaErrorInvalidValue;
  }
  std::lock_guard<std::mutex> lock(g_opt_in_lock);
  bool plain = !name.empty() && name.find_first_of("()*") == std::string::npos;
  if (plain) opted_in_shared()[name] = (size_t)bytes;
  else g_opt_in_unattributed = true;
  return cudaSuccess;
}

// Whether the program opted in for the kernel of launch L (then `allowed` is the
// dynamic size it allowed); `known` is false where the limit cannot be told (see
// above). Called with g_opt_in_lock held.
static bool opted_in_shared(const LaunchBase* L, size_t* allowed, bool* known) {
  std::string name = kernel_spelling(L->name);
  *known = !g_opt_in_unattributed && std::strcmp(L->name, "cudaLaunchKernel") != 0 &&
           std::strcmp(L->name, "cudaLaunchCooperativeKernel") != 0;
  auto it = opted_in_shared().find(name);
  if (it == opted_in_shared().end()) {
    std::string base = kernel_base_name(name);
    it = std::find_if(opted_in_shared().begin(), opted_in_shared().end(),
                      [&](const auto& e) {
                        return !base.empty() && kernel_base_name(e.first) == base;
                      });
  }
  if (it == opted_in_shared().end()) return false;
  *allowed = it->second;
  return true;
}

// A block of launch L holding `static_bytes` of static shared memory (what it
// has touched so far; `before_blocks`: none yet, the launch is about to run) and
// the launch's dynamic size must fit in what a GPU grants it; else, as a GPU
// rejects the launch, the run stops with the kernel and the sizes. (A GPU
// returns cudaErrorInvalidValue; a program may swallow that, as a cooperative
// launch's fallback does, and `sirius verify` would never hear of it.)
static void check_shared_limit(const LaunchBase* L, size_t static_bytes, bool before_blocks) {
  size_t total = static_bytes + L->shmem;
  if (total <= kDefaultShared) return;
  size_t allowed = kDefaultShared - std::min(static_bytes, kDefaultShared);
  bool known, opted;
  {
    std::lock_guard<std::mutex> lock(g_opt_in_lock);
    opted = opted_in_shared(L, &allowed, &known);
  }
  if (!opted && !known) return;
  if (L->shmem <= allowed && static_bytes + allowed <= kMaxDynamicShared) return;
  char limit[200];
  if (opted)
    snprintf(limit, sizeof limit, "the program opted in to %zu bytes of dynamic shared memory for it",
             allowed);
  else
    snprintf(limit, sizeof limit,
             "48 KB in all without cudaFuncSetAttribute(%s, "
             "cudaFuncAttributeMaxDynamicSharedMemorySize, ...)",
             L->name);
  char need[160];
  if (before_blocks)
    snprintf(need, sizeof need, "%zu bytes of dynamic shared memory", L->shmem);
  else
    snprintf(need, sizeof need, "%zu bytes of shared memory (%zu static + %zu dynamic)", total,
             static_bytes, L->shmem);
  fatal("kernel '%s' needs %s per block: a GPU rejects this %slaunch (cudaErrorInvalidValue): %s, "
        "at most %zu with it",
        L->name, need, L->cooperative ? "cooperative " : "", limit, kMaxDynamicShared);
}

// Called when a block first touches a static __shared__ variable: the block's
// static shared memory so far, with the launch's dynamic size, must fit.
static void count_static_shared(Worker* w, size_t bytes) {
  if (w->shared_serial != w->serial) {
    w->shared_serial = w->serial;
    w->static_shared = 0;
  }
  w->static_shared += bytes;
  check_shared_limit(w->launch, w->static_shared, false);
}

void poison_shared(const volatile void* p, size_t bytes) {
  Worker* w = tw;
  fill_poison((void*)p, bytes, w ? w->poison : 0x7F7F7F7Fu);
  if (w && w->launch) count_static_shared(w, bytes);
}

// ------------------------------------------------------------------ scheduling

static void push(Worker& w, int i) {
  w.queue[w.qtail] = i;
  if (++w.qtail == w.queue.size()) w.qtail = 0;
}

static bool pop(Worker& w, int* i) {
  if (w.qhead == w.qtail) return false;
  *i = w.queue[w.qhead];
  if (++w.qhead == w.queue.size()) w.qhead = 0;
  return true;
}

static std::string site(const char* file, int line) {
  return std::string(file ? file : "?") + ":" + std::to_string(line);
}

static std::string block_text(const Worker& w) {
  char buf[96];
  snprintf(buf, sizeof buf, "block (%u,%u,%u)", blockIdx.x, blockIdx.y, blockIdx.z);
  return buf;
}

// Threads per waiting site, in first-seen order: "64 threads at a.cu:12, ...".
// With `barrier` >= 0, only the threads waiting at that barrier; with
// `counts`, each site also names the thread count its threads asked for.
static std::string waiting_summary(Worker& w, int state, int barrier = -1, bool counts = false) {
  std::vector<std::pair<std::string, int>> sites;
  for (int i = 0; i < w.nthreads; ++i) {
    const Fiber& f = w.fibers[i];
    if (f.state != state || (barrier >= 0 && f.barrier != barrier)) continue;
    std::string s = site(f.file, f.line);
    if (counts) s += f.expected ? " (count " + std::to_string(f.expected) + ")" : " (all threads)";
    auto it = std::find_if(sites.begin(), sites.end(), [&](auto& p) { return p.first == s; });
    if (it == sites.end())
      sites.push_back({s, 1});
    else
      it->second++;
  }
  std::string r;
  for (auto& p : sites) {
    if (!r.empty()) r += ", ";
    r += std::to_string(p.second) + (p.second == 1 ? " thread at " : " threads at ") + p.first;
  }
  return r;
}

// A barrier as the program spells it.
static std::string barrier_name(int id, int expected) {
  if (expected)
    return "__barrier_sync_count(" + std::to_string(id) + ", " + std::to_string(expected) + ")";
  return id == 0 ? "__syncthreads()" : "__barrier_sync(" + std::to_string(id) + ")";
}

// Whether the threads waiting at barrier `id` asked for different counts.
static bool mixed_counts(const Worker& w, int id) {
  for (int i = 0; i < w.nthreads; ++i) {
    const Fiber& f = w.fibers[i];
    if (f.state == kWaitBarrier && f.barrier == id && f.expected != w.bars[id].expected)
      return true;
  }
  return false;
}

static void grid_barrier_reached(Worker& w, const Barrier& b);

// Barrier `id` has all the threads it waits for: check they wait at the same
// site and let them go, in the block's order.
static void release_barrier(Worker& w, int id) {
  Barrier& b = w.bars[id];
  if (b.divergent) {
    bool mixed = mixed_counts(w, id);
    const char* how = mixed              ? "wait at it with different thread counts"
                      : id || b.expected ? "wait at different call sites of it"
                                         : "wait at different barriers";
    fatal("divergent %s in kernel '%s' (%s): the threads of the block %s: %s",
          barrier_name(id, b.expected).c_str(), w.launch->name, block_text(w).c_str(), how,
          waiting_summary(w, kWaitBarrier, id, mixed).c_str());
  }
  if (b.grid) grid_barrier_reached(w, b);
  if (w.order_dirty) {
    // drop finished threads from the block's order
    size_t k = 0;
    for (int i : w.order)
      if (w.fibers[i].state != kDone) w.order[k++] = i;
    w.order.resize(k);
    w.order_dirty = false;
  }
  int count = b.pred_sum, waiting = b.waiting;
  for (int i : w.order) {
    Fiber& f = w.fibers[i];
    if (f.state != kWaitBarrier || f.barrier != id) continue;  // at another barrier, or running
    switch (f.op) {
      case kBarrierCount: f.pred = count; break;
      case kBarrierAnd: f.pred = count == waiting; break;
      case kBarrierOr: f.pred = count != 0; break;
      default: f.pred = 1;
    }
    f.state = kReady;
    push(w, i);
  }
  b = Barrier();
  w.waiting_for_all &= ~(1u << id);
}

static void start_fiber(Worker& w, Fiber& f) {
  f.stack = get_stack(w);
  ctx_init(&f.ctx, f.stack, stack_size());
}

// Suspends the running fiber `f` (already marked as waiting) and runs the next
// ready one directly, or returns to the scheduler when none is ready.
static void suspend(Worker& w, Fiber* f) {
  int next;
  if (pop(w, &next)) {
    Fiber* g = &w.fibers[next];
    if (g == f) {  // released by its own arrival and first in line
      f->state = kRunning;
      return;
    }
    if (g->state == kNew) start_fiber(w, *g);
    g->state = kRunning;
    w.cur = g;
    threadIdx = g->tid;
    ctx_switch(&f->ctx, &g->ctx);
  } else {
    ctx_switch(&f->ctx, &w.sched);
  }
}

// The running thread arrives at barrier `id`, which completes once
// `expected` threads wait at it (0: every live thread of the block); returns
// its predicate result.
static int arrive(Worker& w, int id, int expected, int op, int pred, const char* file, int line) {
  Fiber* f = w.cur;
  f->state = kWaitBarrier;
  f->op = op;
  f->pred = pred;
  f->file = file;
  f->line = line;
  f->barrier = id;
  f->expected = expected;
  Barrier& b = w.bars[id];
  bool grid = op == kGridBarrier;
  if (b.waiting == 0) {
    b.file = file;
    b.line = line;
    b.grid = grid;
    b.expected = expected;
    if (!expected) w.waiting_for_all |= 1u << id;
  } else if (line != b.line || grid != b.grid || expected != b.expected ||
             (file != b.file && strcmp(file, b.file) != 0)) {
    b.divergent = true;
  }
  b.pred_sum += pred;
  if (++b.waiting == (b.expected ? b.expected : w.live)) release_barrier(w, id);
  suspend(w, f);
  return f->pred;
}

int block_sync(int op, int pred, const char* file, int line) {
  Worker* w = tw;
  if (!w || !w->cur) return pred;  // outside a kernel: nothing to wait for
  return arrive(*w, 0, 0, op, pred, file, line);
}

void named_barrier_sync(unsigned id, unsigned count, bool counted, const char* file, int line) {
  Worker* w = tw;
  if (!w || !w->cur) return;
  const char* why = nullptr;
  char buf[128];
  if (id >= (unsigned)kNamedBarriers) {
    why = "a block has barriers 0 to 15";
  } else if (counted && count == 0) {
    why = "the thread count is 0";
  } else if (counted && count % 32) {
    why = "the thread count must be a multiple of the warp size (32)";
  } else if (counted && count > (unsigned)w->nthreads) {
    snprintf(buf, sizeof buf, "the block has only %d threads", w->nthreads);
    why = buf;
  }
  if (why) {
    std::string call = counted ? "__barrier_sync_count(" + std::to_string(id) + ", " +
                                     std::to_string(count) + ")"
                               : "__barrier_sync(" + std::to_string(id) + ")";
    fatal("%s at %s in kernel '%s' (%s, thread (%u,%u,%u)): %s", call.c_str(),
          site(file, line).c_str(), w->launch->name, block_text(*w).c_str(), threadIdx.x,
          threadIdx.y, threadIdx.z, why);
  }
  arrive(*w, (int)id, counted ? (int)count : 0, kBarrier, 1, file, line);
}

static int shfl_source(const Fiber& f, unsigned lane) {
  int width = f.width;
  if (width <= 0 || width > 32 || (width & (width - 1))) width = 32;
  unsigned base = lane & ~(unsigned)(width - 1);
  int src = (int)lane;
  switch (f.op) {
    case kShflIdx: src = (int)base + (f.arg & (width - 1)); break;
    case kShflUp: src = ((int)(lane - base) < f.arg) ? (int)lane : (int)lane - f.arg; break;
    case kShflDown:
      src = ((int)(lane - base) + f.arg >= width) ? (int)lane : (int)lane + f.arg;
      break;
    case kShflXor: {
      unsigned s = lane ^ (unsigned)f.arg;
      src = (s >= base + (unsigned)width) ? (int)lane : (int)s;
      break;
    }
  }
  return src;
}

// Completes the warp operation of the lanes in `mask` if all its live lanes
// have arrived. Returns whether it did.
static bool try_complete_warp(Worker& w, unsigned warp_index, unsigned mask) {
  Warp& wp = w.warps[warp_index];
  unsigned group = mask & wp.live;
  if (group & ~wp.arrived) return false;
  Fiber* lanes = &w.fibers[warp_index * 32];
  unsigned char vals[32][16];
  unsigned preds = 0;
  for (unsigned l = 0; l < 32; ++l) {
    if (!(group >> l & 1)) continue;
    std::memcpy(vals[l], lanes[l].val, 16);
    unsigned p;
    std::memcpy(&p, lanes[l].val, 4);
    if (p) preds |= 1u << l;
  }
  for (unsigned l = 0; l < 32; ++l) {
    if (!(group >> l & 1)) continue;
    Fiber& f = lanes[l];
    switch (f.op) {
      case kShflIdx:
      case kShflUp:
      case kShflDown:
      case kShflXor: {
        int src = shfl_source(f, l);
        if (src >= 0 && src < 32 && (group >> src & 1)) std::memcpy(f.val, vals[src], 16);
        break;
      }
      case kBallot: {
        std::memcpy(f.val, &preds, 4);
        break;
      }
      case kAny: {
        unsigned r = preds != 0;
        std::memcpy(f.val, &r, 4);
        break;
      }
      case kAll: {
        unsigned r = preds == group;
        std::memcpy(f.val, &r, 4);
        break;
      }
      case kMatchAny:
      case kMatchAll: {
        unsigned same = 0;
        for (unsigned j = 0; j < 32; ++j)
          if ((group >> j & 1) && std::memcmp(vals[j], vals[l], (size_t)f.size) == 0)
            same |= 1u << j;
        unsigned r = same;
        if (f.op == kMatchAll) {
          f.pred = same == group;
          r = f.pred ? group : 0u;
        }
        std::memcpy(f.val, &r, 4);
        break;
      }
      case kReduceAdd:
      case kReduceMin:
      case kReduceMax:
      case kReduceMinU:
      case kReduceMaxU:
      case kReduceAnd:
      case kReduceOr:
      case kReduceXor: {
        unsigned acc = 0;
        bool first = true;
        for (unsigned j = 0; j < 32; ++j) {
          if (!(group >> j & 1)) continue;
          unsigned v;
          std::memcpy(&v, vals[j], 4);
          if (first) {
            acc = v;
            first = false;
            continue;
          }
          switch (f.op) {
            case kReduceAdd: acc += v; break;
            case kReduceMin: acc = (unsigned)std::min((int)acc, (int)v); break;
            case kReduceMax: acc = (unsigned)std::max((int)acc, (int)v); break;
            case kReduceMinU: acc = std::min(acc, v); break;
            case kReduceMaxU: acc = std::max(acc, v); break;
            case kReduceAnd: acc &= v; break;
            case kReduceOr: acc |= v; break;
            case kReduceXor: acc ^= v; break;
          }
        }
        std::memcpy(f.val, &acc, 4);
        break;
      }
      default:
        break;  // __syncwarp
    }
  }
  wp.arrived &= ~group;
  for (unsigned k = 0; k < 32; ++k) {
    unsigned l = w.descending ? 31 - k : k;
    if (!(group >> l & 1)) continue;
    lanes[l].state = kReady;
    push(w, (int)(warp_index * 32 + l));
  }
  return true;
}

int warp_sync(int op, unsigned mask, void* data, int size, int arg, int width, const char* file,
              int line) {
  Worker* w = tw;
  if (!w || !w->cur) {
    // Outside a kernel there is one "lane": votes see only its predicate.
    if (op == kBallot && data) {
      unsigned* p = (unsigned*)data;
      *p = *p ? 1u : 0u;
    }
    return 1;
  }
  Fiber* f = w->cur;
  unsigned bit = 1u << f->lane;
  f->state = kWaitWarp;
  f->op = op;
  f->mask = mask | bit;
  f->arg = arg;
  f->width = width;
  f->size = size;
  f->pred = 0;
  f->file = file;
  f->line = line;
  std::memset(f->val, 0, 16);
  if (size) std::memcpy(f->val, data, (size_t)size);
  w->warps[f->warp].arrived |= bit;
  try_complete_warp(*w, f->warp, f->mask);
  suspend(*w, f);
  if (size) std::memcpy(data, f->val, (size_t)size);
  return f->pred;
}

unsigned active_mask() {
  Worker* w = tw;
  if (!w || !w->cur) return 1u;
  return w->warps[w->cur->warp].live;
}

// A thread has returned from the kernel: it no longer counts for barriers and
// warp operations (CUDA's rule for exited threads).
static void thread_finished(Worker& w, Fiber& f) {
  f.state = kDone;
  --w.live;
  w.order_dirty = true;
  Warp& wp = w.warps[f.warp];
  wp.live &= ~(1u << f.lane);
  // Barriers waiting for every live thread may now have them all.
  for (unsigned m = w.waiting_for_all; m; m &= m - 1) {
    int id = __builtin_ctz(m);
    if (w.bars[id].waiting == w.live) release_barrier(w, id);
  }
  // Lanes waiting for this one in a warp operation may now be complete.
  bool progress = true;
  while (progress && wp.arrived) {
    progress = false;
    for (unsigned l = 0; l < 32 && !progress; ++l)
      if (wp.arrived >> l & 1)
        progress = try_complete_warp(w, f.warp, w.fibers[f.warp * 32 + l].mask);
  }
}

// Entry of every fiber stack. When its thread finishes and the next thread in
// line has not started yet, that thread runs on the same stack, in the same
// frame: a block without barriers runs all its threads here, one after the
// other, without a single context switch.
static void fiber_main() {
  Worker* w = tw;
  for (;;) {
    Fiber* f = w->cur;
    w->launch->invoke(w->launch);
    char* stack = f->stack;
    f->stack = nullptr;
    thread_finished(*w, *f);
    int next;
    Fiber* g = pop(*w, &next) ? &w->fibers[next] : nullptr;
    if (g && g->state == kNew) {
      g->stack = stack;
      g->state = kRunning;
      w->cur = g;
      threadIdx = g->tid;
      continue;
    }
    // This stack is done with; nothing runs on it once we switch away.
    w->free_stacks.push_back(stack);
    if (!g) {
      ctx_switch(&f->ctx, &w->sched);
    } else {
      g->state = kRunning;
      w->cur = g;
      threadIdx = g->tid;
      ctx_switch(&f->ctx, &g->ctx);
    }
    __builtin_unreachable();
  }
}

// No thread of the block can run and some have not finished: where each
// waits, barrier by barrier, and what it waits for.
static std::string deadlock_text(Worker& w) {
  std::string parts;
  auto add = [&](const std::string& part) { parts += (parts.empty() ? "" : "; ") + part; };
  for (int id = 0; id < kNamedBarriers; ++id) {
    const Barrier& b = w.bars[id];
    if (!b.waiting) continue;
    std::string needs = b.expected ? std::to_string(b.expected) + " threads"
                                   : "all " + std::to_string(w.live) + " live threads";
    add(barrier_name(id, b.expected) + " waits for " + needs + ", " + std::to_string(b.waiting) +
        (b.waiting == 1 ? " is" : " are") + " there (" +
        waiting_summary(w, kWaitBarrier, id, mixed_counts(w, id)) + ")");
  }
  std::string warp = waiting_summary(w, kWaitWarp);
  if (!warp.empty())
    add("lanes wait at a warp operation (" + warp + ") for lanes of its mask that never reach one");
  int finished = w.nthreads - w.live;
  if (finished)
    add(std::to_string(finished) + (finished == 1 ? " thread has" : " threads have") + " finished");
  return "deadlock in kernel '" + std::string(w.launch->name) + "' (" + block_text(w) +
         "): no thread can continue: " + parts;
}

static void run_block(Worker& w, LaunchBase& L, unsigned long long b) {
  unsigned long long gx = L.grid.x, gy = L.grid.y;
  blockIdx.x = (unsigned)(b % gx);
  blockIdx.y = (unsigned)((b / gx) % gy);
  blockIdx.z = (unsigned)(b / (gx * gy));
  blockDim = L.block;
  gridDim = L.grid;
  w.launch = &L;
  w.block = b;
  block_serial = ++w.serial;
  w.descending = (b & 1) != 0;
  w.poison = (b & 1) ? 0xFF7F7F7Fu : 0x7F7F7F7Fu;
  dynamic_shared_base = w.dyn;
  if (L.shmem) fill_poison(w.dyn, L.shmem, w.poison);
  for (auto& reg : file_scope_shared()) fill_poison(reg.first(), reg.second, w.poison);

  int n = (int)(L.block.x * L.block.y * L.block.z);
  w.nthreads = n;
  if ((int)w.fibers.size() < n) w.fibers.resize((size_t)n);
  int nwarps = (n + 31) / 32;
  if ((int)w.warps.size() < nwarps) w.warps.resize((size_t)nwarps);
  if (w.queue.size() < (size_t)n + 1) w.queue.resize((size_t)n + 1);
  w.qhead = w.qtail = 0;
  uint3 tid = {0, 0, 0};
  for (int i = 0; i < n; ++i) {
    Fiber& f = w.fibers[i];
    f.stack = nullptr;
    f.state = kNew;
    f.tid = tid;
    f.lane = (unsigned)i & 31u;
    f.warp = (unsigned)i >> 5;
    f.file = nullptr;
    f.line = 0;
    f.barrier = 0;
    f.expected = 0;
    if (++tid.x == L.block.x) {
      tid.x = 0;
      if (++tid.y == L.block.y) tid.y = 0, ++tid.z;
    }
  }
  for (int k = 0; k < nwarps; ++k) {
    int lanes = std::min(32, n - 32 * k);
    w.warps[k].live = lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1u);
    w.warps[k].arrived = 0;
  }
  w.order.resize((size_t)n);
  for (int k = 0; k < n; ++k) {
    w.order[k] = w.descending ? n - 1 - k : k;
    push(w, w.order[k]);
  }
  w.order_dirty = false;
  w.live = n;
  for (Barrier& b : w.bars) b = Barrier();
  w.waiting_for_all = 0;
  w.grid_wait_pending = false;

  // Fibers hand over to each other directly; control comes back here only
  // when none is ready (all finished, or a deadlock).
  int i;
  while (pop(w, &i)) {
    Fiber& f = w.fibers[i];
    if (f.state == kNew) start_fiber(w, f);
    f.state = kRunning;
    w.cur = &f;
    threadIdx = f.tid;
    ctx_switch(&w.sched, &f.ctx);
    w.cur = nullptr;
  }
  if (w.live > 0) die(deadlock_text(w).c_str());
}

// ------------------------------------------------------------------ grids

struct Pool {
  std::mutex m;
  std::condition_variable start, done;
  std::vector<std::thread> threads;
  LaunchBase* job = nullptr;
  unsigned long long nblocks = 0, generation = 0;
  std::atomic<unsigned long long> next{0};
  int active = 0;
  std::mutex out_mutex;
  std::vector<std::pair<unsigned long long, std::string>> outputs;
};
static Pool& worker_pool() {
  static Pool& pool = *new Pool();  // never destroyed: pool threads outlive main()
  return pool;
}

// printf output of block b, written in block order when the launch ends.
static void keep_output(Worker& w, unsigned long long b) {
  if (w.out.empty()) return;
  std::lock_guard<std::mutex> lock(worker_pool().out_mutex);
  worker_pool().outputs.push_back({b, std::move(w.out)});
  w.out.clear();
}

static void write_outputs() {
  if (worker_pool().outputs.empty()) return;
  std::sort(worker_pool().outputs.begin(), worker_pool().outputs.end(),
            [](auto& a, auto& b) { return a.first < b.first; });
  for (auto& o : worker_pool().outputs) fwrite(o.second.data(), 1, o.second.size(), stdout);
  worker_pool().outputs.clear();
}

static void run_blocks(LaunchBase* L) {
  Worker* w = worker();
  unsigned long long b;
  while ((b = worker_pool().next.fetch_add(1)) < worker_pool().nblocks) {
    run_block(*w, *L, b);
    keep_output(*w, b);
  }
}

static void pool_thread() {
  worker();
  std::unique_lock<std::mutex> lock(worker_pool().m);
  unsigned long long seen = 0;
  for (;;) {
    worker_pool().start.wait(lock, [&] { return worker_pool().generation != seen; });
    seen = worker_pool().generation;
    LaunchBase* L = worker_pool().job;
    lock.unlock();
    run_blocks(L);
    lock.lock();
    if (--worker_pool().active == 0) worker_pool().done.notify_one();
  }
}

static cudaError_t launch_failed(LaunchBase* L, cudaError_t e, const char* why) {
  set_error(e);
  fprintf(stderr, "warning: launch of kernel '%s' failed: %s\n", L->name, why);
  return e;
}

void launched_from_device(const char* kernel) {
  fatal("dynamic parallelism (kernel '%s' launched from device code) is unsupported by the CPU "
        "backend",
        kernel);
}

// SIRIUS_LAUNCH_LOG names a file that receives the name of every kernel launched, a
// line each (which path of a program ran: the fused launches or their fallback).
static void log_launch(const char* name) {
  static std::mutex m;
  static FILE* log = nullptr;
  static bool opened = false;
  std::lock_guard<std::mutex> lock(m);
  if (!opened) {
    opened = true;
    if (const char* path = getenv("SIRIUS_LAUNCH_LOG")) log = fopen(path, "w");
  }
  if (log) {
    fprintf(log, "%s\n", name);
    fflush(log);
  }
}

// A GPU rejects these launches before running any block.
static cudaError_t check_launch(LaunchBase* L) {
  dim3 g = L->grid, b = L->block;
  unsigned long long threads = (unsigned long long)b.x * b.y * b.z;
  if (b.x == 0 || b.y == 0 || b.z == 0 || b.x > 1024 || b.y > 1024 || b.z > 64 || threads > 1024)
    return launch_failed(L, cudaErrorInvalidConfiguration,
                         "invalid block dimensions (at most 1024 threads, 1024 x 1024 x 64)");
  if (L->bound && threads > L->bound) {
    char why[160];
    snprintf(why, sizeof why,
             "too many resources requested for launch (a block of %llu threads, the kernel's "
             "__launch_bounds__ allows %u)",
             threads, L->bound);
    return launch_failed(L, cudaErrorLaunchOutOfResources, why);
  }
  if (g.x == 0 || g.y == 0 || g.z == 0 || g.x > 2147483647u || g.y > 65535 || g.z > 65535)
    return launch_failed(L, cudaErrorInvalidConfiguration, "invalid grid dimensions");
  if (L->shmem > kMaxDynamicShared)
    return launch_failed(L, cudaErrorInvalidValue,
                         "more dynamic shared memory than a block can have (232448 bytes)");
  return cudaSuccess;
}

static cudaError_t run_cooperative(LaunchBase* L);

cudaError_t run_launch(LaunchBase* L) {
  if (!L->cooperative) log_launch(L->name);  // a cooperative one once it is sure to run
  if (cudaError_t e = check_launch(L)) return e;
  check_shared_limit(L, 0, true);
  if (L->cooperative) return run_cooperative(L);
  dim3 g = L->grid;
  unsigned long long nblocks = (unsigned long long)g.x * g.y * g.z;
  worker_pool().job = L;
  worker_pool().nblocks = nblocks;
  worker_pool().next.store(0);
  int helpers = (int)std::min<unsigned long long>((unsigned long long)worker_count() - 1, nblocks - 1);
  if (helpers <= 0) {
    run_blocks(L);
  } else {
    {
      std::lock_guard<std::mutex> lock(worker_pool().m);
      while ((int)worker_pool().threads.size() < worker_count() - 1)
        worker_pool().threads.emplace_back(pool_thread), worker_pool().threads.back().detach();
      worker_pool().active = (int)worker_pool().threads.size();
      worker_pool().generation++;
    }
    worker_pool().start.notify_all();
    run_blocks(L);
    std::unique_lock<std::mutex> lock(worker_pool().m);
    worker_pool().done.wait(lock, [] { return worker_pool().active == 0; });
  }
  write_outputs();
  return cudaSuccess;
}

// ------------------------------------------------------------------ occupancy

static const int kMultiprocessors = 132;

// Blocks one SM of an sm_90 GPU holds at once: 64 warps and 32 blocks, 228 KB
// of shared memory with 1 KB reserved per block; none when the block breaks
// the kernel's __launch_bounds__. Static shared memory is not known before a
// block runs and is not counted.
static int blocks_per_sm(unsigned long long threads, unsigned bound, size_t shmem) {
  if (threads == 0 || threads > 1024 || (bound && threads > bound) || shmem > kMaxDynamicShared)
    return 0;
  unsigned long long warps = (threads + 31) / 32;
  unsigned long long blocks = std::min<unsigned long long>(32, 64 / warps);
  return (int)std::min<unsigned long long>(blocks, 233472 / (shmem + 1024));
}

// Argument `index` of a call's arguments as written, without blanks and '&'.
static std::string spelled_argument(const char* args_text, int index) {
  std::string part;
  int depth = 0, k = 0;
  for (const char* c = args_text; *c; ++c) {
    if (*c == '<' || *c == '(' || *c == '[' || *c == '{') depth++;
    if (*c == '>' || *c == ')' || *c == ']' || *c == '}') depth--;
    if (*c == ',' && depth == 0) {
      if (k++ == index) break;
      part.clear();
      continue;
    }
    part += *c;
  }
  return k >= index ? kernel_spelling(part) : std::string();
}

// "ns::k<float, 4>" -> "k"; empty when the spelling is not a name (a cast, a
// pointer expression).
static std::string kernel_base_name(const std::string& spelled) {
  std::string head = spelled.substr(0, spelled.find('<'));
  if (head.empty() || head.find_first_of("()*") != std::string::npos) return "";
  size_t colon = head.rfind("::");
  return colon == std::string::npos ? head : head.substr(colon + 2);
}

static std::mutex g_bounds_lock;
static std::map<std::string, unsigned>& registered_bounds() {
  static std::map<std::string, unsigned>& bounds = *new std::map<std::string, unsigned>();
  return bounds;
}

LaunchBoundsRegistration::LaunchBoundsRegistration(const char* kernel, unsigned max_threads) {
  std::lock_guard<std::mutex> lock(g_bounds_lock);
  registered_bounds()[kernel] = max_threads;
}

unsigned launch_bounds_of(const char* kernel) {
  std::string name = kernel_base_name(kernel_spelling(kernel));
  std::lock_guard<std::mutex> lock(g_bounds_lock);
  auto it = registered_bounds().find(name);
  return it == registered_bounds().end() ? 0 : it->second;
}

const char* spelled_kernel(const char* args_text, int index, const char* fallback) {
  static std::mutex m;
  static std::set<std::string>& names = *new std::set<std::string>();  // outlives every launch
  std::string name = spelled_argument(args_text, index);
  if (name.empty()) return fallback;
  std::lock_guard<std::mutex> lock(m);
  return names.insert(name).first->c_str();
}

int max_active_blocks(const char* args_text, int kernel_arg, int block_size, size_t shmem) {
  std::string kernel = spelled_argument(args_text, kernel_arg);
  return blocks_per_sm((unsigned long long)block_size, launch_bounds_of(kernel.c_str()), shmem);
}

// Kernels the program casts to an untyped pointer (see kernel_address in
// launch.h), by address. A cast may run during static initialization (a table
// of kernels), hence the map built on first use.
static std::mutex g_untyped_lock;
static std::map<const void*, UntypedKernel>& untyped_kernels() {
  static std::map<const void*, UntypedKernel>& kernels = *new std::map<const void*, UntypedKernel>();
  return kernels;
}

void register_untyped_kernel(const void* address, const char* name, UntypedLaunch launch) {
  std::lock_guard<std::mutex> lock(g_untyped_lock);
  untyped_kernels()[address] = UntypedKernel{name, launch};
}

bool find_untyped_kernel(const void* address, UntypedKernel* kernel) {
  std::lock_guard<std::mutex> lock(g_untyped_lock);
  auto it = untyped_kernels().find(address);
  if (it == untyped_kernels().end()) return false;
  *kernel = it->second;
  return true;
}

// ------------------------------------------------------------------ cooperative grids

// The cooperative launch in progress: its pool of block threads (kept across
// launches, each with its own Worker) and its grid barrier.
struct CooperativeGrid {
  std::mutex m;
  std::condition_variable start, done, barrier;
  unsigned long long threads = 0;  // pool threads started; thread i runs block i
  LaunchBase* job = nullptr;
  unsigned long long nblocks = 0, serial = 0, running = 0;
  // The grid barrier: blocks waiting at it, blocks finished, the lowest of
  // each (for deterministic messages) and the site the lowest waits at.
  unsigned long long arrived = 0, finished = 0, generation = 0;
  unsigned long long lowest_finished = 0, lowest_waiting = 0;
  const char* site_file = nullptr;
  int site_line = 0;
  // Fiber stacks of the pool's workers, shared: however the blocks of
  // successive launches fall on threads, the stacks never outnumber the
  // threads of the largest grid.
  std::vector<char*> idle_stacks;
};
static CooperativeGrid& cooperative_grid() {
  static CooperativeGrid& grid = *new CooperativeGrid();  // pool threads outlive main()
  return grid;
}

static std::string block_at(const LaunchBase& L, unsigned long long b) {
  char buf[96];
  unsigned long long gx = L.grid.x, gy = L.grid.y;
  snprintf(buf, sizeof buf, "block (%llu,%llu,%llu)", b % gx, (b / gx) % gy, b / (gx * gy));
  return buf;
}

// A block barrier at a this_grid().sync() has released: every thread of the
// block must be there (CUDA's contract; the GPU's implementation has thread 0
// of each block arrive for it), then the block waits for the grid.
static void grid_barrier_reached(Worker& w, const Barrier& b) {
  if (w.live < w.nthreads) {
    int exited = 0;
    while (w.fibers[exited].state != kDone) ++exited;
    const Fiber& f = w.fibers[exited];
    fatal("not all threads of %s reach the grid barrier at %s in kernel '%s': thread "
          "(%u,%u,%u) finished; every thread of a cooperative grid must reach each "
          "this_grid().sync()",
          block_text(w).c_str(), site(b.file, b.line).c_str(), w.launch->name, f.tid.x,
          f.tid.y, f.tid.z);
  }
  w.grid_wait_pending = true;
}

// With cooperative_grid().m held: once every block has either arrived at the grid
// barrier or finished, and some finished, the barrier can never release.
static void check_grid_barrier(const LaunchBase& L) {
  CooperativeGrid& g = cooperative_grid();
  if (g.arrived == 0 || g.finished == 0 || g.arrived + g.finished < g.nblocks) return;
  std::string more = g.finished == 1 ? "" : " (and " + std::to_string(g.finished - 1) + " more)";
  fatal("not all blocks reach the grid barrier at %s in kernel '%s': %s finished%s while %llu "
        "%s there; every block of a cooperative grid must reach each this_grid().sync()",
        site(g.site_file, g.site_line).c_str(), L.name, block_at(L, g.lowest_finished).c_str(),
        more.c_str(), g.arrived, g.arrived == 1 ? "block waits" : "blocks wait");
}

static void wait_for_grid(Worker& w, const char* file, int line) {
  CooperativeGrid& g = cooperative_grid();
  std::unique_lock<std::mutex> lock(g.m);
  if (g.arrived == 0 || w.block < g.lowest_waiting) {
    g.lowest_waiting = w.block;
    g.site_file = file;
    g.site_line = line;
  }
  if (++g.arrived == g.nblocks) {
    g.arrived = 0;
    g.generation++;
    g.barrier.notify_all();
    return;
  }
  check_grid_barrier(*w.launch);
  unsigned long long generation = g.generation;
  g.barrier.wait(lock, [&] { return g.generation != generation; });
}

void grid_sync(const char* file, int line) {
  Worker* w = tw;
  if (!w || !w->cur) return;  // outside a kernel: nothing to wait for
  if (!w->launch->cooperative)
    fatal("this_grid().sync() at %s in kernel '%s', which was not launched with "
          "cudaLaunchCooperativeKernel: a grid barrier needs a cooperative launch (on a GPU "
          "the grid group is invalid)",
          site(file, line).c_str(), w->launch->name);
  block_sync(kGridBarrier, 1, file, line);
  // The first thread of the block to leave the block barrier waits for the
  // grid; the others cannot run meanwhile (they share its OS thread).
  if (w->grid_wait_pending) {
    w->grid_wait_pending = false;
    wait_for_grid(*w, file, line);
  }
}

bool cooperative_launch() {
  Worker* w = tw;
  return w && w->cur && w->launch->cooperative;
}

static void cooperative_thread(unsigned long long index) {
  Worker* w = worker();
  CooperativeGrid& g = cooperative_grid();
  std::unique_lock<std::mutex> lock(g.m);
  unsigned long long seen = 0;
  for (;;) {
    g.start.wait(lock, [&] { return g.serial != seen && index < g.nblocks; });
    seen = g.serial;
    LaunchBase* L = g.job;
    size_t take = std::min<size_t>(g.idle_stacks.size(), L->block.x * L->block.y * L->block.z);
    w->free_stacks.assign(g.idle_stacks.end() - (std::ptrdiff_t)take, g.idle_stacks.end());
    g.idle_stacks.resize(g.idle_stacks.size() - take);
    lock.unlock();
    run_block(*w, *L, index);
    keep_output(*w, index);
    lock.lock();
    g.idle_stacks.insert(g.idle_stacks.end(), w->free_stacks.begin(), w->free_stacks.end());
    w->free_stacks.clear();
    if (g.finished++ == 0 || index < g.lowest_finished) g.lowest_finished = index;
    check_grid_barrier(*L);
    if (--g.running == 0) g.done.notify_one();
  }
}

static cudaError_t run_cooperative(LaunchBase* L) {
  dim3 gd = L->grid, bd = L->block;
  unsigned long long nblocks = (unsigned long long)gd.x * gd.y * gd.z;
  unsigned long long threads = (unsigned long long)bd.x * bd.y * bd.z;
  unsigned long long per_sm = (unsigned long long)blocks_per_sm(threads, L->bound, L->shmem);
  unsigned long long limit = std::min({per_sm * kMultiprocessors,
                                       (unsigned long long)cooperative_block_limit(),
                                       kCooperativeThreadLimit / threads});
  if (nblocks > limit) {
    char why[512];
    snprintf(why, sizeof why,
             "too many blocks in cooperative launch: %llu blocks of %llu threads, at most %llu "
             "can be resident at once (%llu per SM x %d SMs; the CPU backend runs at most %d "
             "blocks (SIRIUS_CPU_COOP_BLOCKS) and %llu threads of a cooperative grid)",
             nblocks, threads, limit, per_sm, kMultiprocessors, cooperative_block_limit(),
             kCooperativeThreadLimit);
    return launch_failed(L, cudaErrorCooperativeLaunchTooLarge, why);
  }
  log_launch(L->name);
  CooperativeGrid& g = cooperative_grid();
  {
    std::lock_guard<std::mutex> lock(g.m);
    while (g.threads < nblocks) std::thread(cooperative_thread, g.threads++).detach();
    g.job = L;
    g.nblocks = nblocks;
    g.running = nblocks;
    g.arrived = g.finished = 0;
    g.serial++;
  }
  g.start.notify_all();
  {
    std::unique_lock<std::mutex> lock(g.m);
    g.done.wait(lock, [&] { return g.running == 0; });
  }
  write_outputs();
  return cudaSuccess;
}

// ------------------------------------------------------------------ misc device

void trap(const char* what, const char* file, int line) {
  Worker* w = tw;
  if (w && w->cur)
    fatal("kernel '%s' (%s, thread (%u,%u,%u)) executed %s at %s", w->launch->name,
          block_text(*w).c_str(), threadIdx.x, threadIdx.y, threadIdx.z, what,
          site(file, line).c_str());
  fatal("%s at %s", what, site(file, line).c_str());
}

unsigned long long clock_ticks() {
  return (unsigned long long)std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// ------------------------------------------------------------------ crashes

static void on_crash(int sig, siginfo_t* info, void*) {
  Worker* w = tw;
  if (w && w->cur && w->launch) {
    uintptr_t addr = (uintptr_t)info->si_addr;
    bool overflow = false;
    for (const StackRange& s : stack_ranges())
      if (addr >= s.guard_lo && addr < s.lo) overflow = true;
    char msg[1024];
    if (overflow)
      snprintf(msg, sizeof msg,
               "stack overflow in kernel '%s' (block (%u,%u,%u), thread (%u,%u,%u)); each CUDA "
               "thread has %zu KiB of stack, set SIRIUS_CPU_STACK_KB for more",
               w->launch->name, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y,
               threadIdx.z, stack_size() / 1024);
    else if (sig == SIGFPE)
      snprintf(msg, sizeof msg,
               "arithmetic fault (SIGFPE, e.g. an integer division by zero) in kernel '%s' "
               "(block (%u,%u,%u), thread (%u,%u,%u))",
               w->launch->name, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y,
               threadIdx.z);
    else
      snprintf(msg, sizeof msg,
               "invalid memory access (%s at address %p) in kernel '%s' (block (%u,%u,%u), "
               "thread (%u,%u,%u))",
               sig == SIGSEGV ? "SIGSEGV" : "SIGBUS", info->si_addr, w->launch->name, blockIdx.x,
               blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);
    die(msg);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

// ------------------------------------------------------------------ memory

enum RangeKind { kDevice, kManaged, kPinned, kSymbol, kRegistered };
struct Range {
  size_t size;
  int kind;
};
static std::mutex g_mem_mutex;
static std::map<uintptr_t, Range>& allocations() {  // by start address
  static auto& ranges = *new std::map<uintptr_t, Range>();
  return ranges;
}
static std::atomic<int> g_last_error{cudaSuccess};

void set_error(cudaError_t e) {
  if (e != cudaSuccess) g_last_error.store(e);
}

static cudaError_t ret(cudaError_t e) {
  set_error(e);
  return e;
}

// __managed__ variables register during static initialization, perhaps before
// allocations() is constructed (see track_managed_variable): their ranges wait here
// until the first lookup adopts them.
static std::vector<std::pair<const void*, size_t>>& pending_variables() {
  static std::vector<std::pair<const void*, size_t>>& v =
      *new std::vector<std::pair<const void*, size_t>>();
  return v;
}

// The range holding [p, p + bytes), if any.
static bool find_range(const void* p, size_t bytes, uintptr_t* base, Range* r) {
  std::lock_guard<std::mutex> lock(g_mem_mutex);
  for (const auto& v : pending_variables()) allocations()[(uintptr_t)v.first] = Range{v.second, kManaged};
  pending_variables().clear();
  uintptr_t a = (uintptr_t)p;
  auto it = allocations().upper_bound(a);
  if (it == allocations().begin()) return false;
  --it;
  if (a < it->first || a + bytes > it->first + it->second.size) return false;
  if (base) *base = it->first;
  if (r) *r = it->second;
  return true;
}

static void add_range(void* p, size_t bytes, int kind) {
  std::lock_guard<std::mutex> lock(g_mem_mutex);
  allocations()[(uintptr_t)p] = Range{bytes, kind};
}

cudaError_t symbol_range(const void* symbol, size_t size) {
  uintptr_t base;
  if (!find_range(symbol, size, &base, nullptr)) add_range((void*)symbol, size, kSymbol);
  return cudaSuccess;
}

void check_kernel_pointer(const char* kernel, int index, const void* p) {
  if (!p) return;
  if (find_range(p, 0, nullptr, nullptr)) return;
  fatal("kernel '%s': argument %d (%p) is not device memory (it does not point into memory from "
        "cudaMalloc, cudaMallocManaged or cudaMallocHost); on a GPU the kernel would fault",
        kernel, index, p);
}

static cudaError_t allocate(void** ptr, size_t bytes, int kind) {
  if (!ptr) return ret(cudaErrorInvalidValue);
  *ptr = nullptr;
  if (bytes == 0) return cudaSuccess;
  void* p = nullptr;
  if (posix_memalign(&p, 256, bytes)) return ret(cudaErrorMemoryAllocation);
  if (kind == kDevice || kind == kManaged) std::memset(p, 0xFF, bytes);
  add_range(p, bytes, kind);
  *ptr = p;
  return cudaSuccess;
}

static cudaError_t release(void* p, bool host) {
  if (!p) return cudaSuccess;
  {
    std::lock_guard<std::mutex> lock(g_mem_mutex);
    auto it = allocations().find((uintptr_t)p);
    if (it == allocations().end() || (it->second.kind == kPinned) != host)
      return ret(cudaErrorInvalidValue);
    allocations().erase(it);
  }
  free(p);
  return cudaSuccess;
}

// ------------------------------------------------------------------ copies and the dump

static std::mutex g_dump_mutex;
static FILE* g_dump = nullptr;
static bool g_dump_opened = false;
static unsigned g_dump_seq = 0;

static void flush_dump() {
  if (g_dump) fflush(g_dump);
}

static void put_u32(FILE* f, unsigned v) { fwrite(&v, 4, 1, f); }
static void put_str(FILE* f, const char* s) {
  unsigned n = s ? (unsigned)strlen(s) : 0u;
  put_u32(f, n);
  if (n) fwrite(s, 1, n, f);
}

static void dump_copy(const char* text, const char* file, int line, int code, const char* what,
                      const void* data, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_dump_mutex);
  if (!g_dump_opened) {
    g_dump_opened = true;
    const char* path = getenv("SIRIUS_DUMP");
    if (path && *path) {
      g_dump = fopen(path, "wb");  // flushed after every record, closed by exit
      if (!g_dump) fatal("cannot write the copy dump %s", path);
    }
  }
  if (!g_dump) return;
  fwrite("SRD1", 1, 4, g_dump);
  put_u32(g_dump, g_dump_seq++);
  put_u32(g_dump, (unsigned)code);
  put_u32(g_dump, (unsigned)line);
  put_str(g_dump, text);
  put_str(g_dump, file);
  put_str(g_dump, what);
  unsigned long long n = bytes;
  fwrite(&n, 8, 1, g_dump);
  if (bytes) fwrite(data, 1, bytes, g_dump);
  fflush(g_dump);
}

// Managed buffers (see track_managed in api.h), dumped at cudaFree or exit;
// __managed__ variables (track_managed_variable) at exit.
struct Managed {
  const void* p;
  size_t bytes;
  int code;
  const char* file;
  int line;
  const char* variable;  // the __managed__ variable's name; null for cudaMallocManaged memory
};
static std::vector<Managed>& managed_buffers() {
  static std::vector<Managed>& v = *new std::vector<Managed>();
  return v;
}

static void dump_managed(const Managed& m) {
  if (m.variable)
    dump_copy(m.variable, m.file, m.line, m.code, "__managed__", m.p, m.bytes);
  else
    dump_copy("", m.file, m.line, m.code, "cudaMallocManaged", m.p, m.bytes);
}

static void track(const Managed& m) {
  std::lock_guard<std::mutex> lock(g_mem_mutex);
  if (managed_buffers().empty()) {
    atexit([] {
      std::vector<Managed> live;
      {
        std::lock_guard<std::mutex> lock(g_mem_mutex);
        live.swap(managed_buffers());
      }
      for (const Managed& m : live) dump_managed(m);
    });
  }
  managed_buffers().push_back(m);
}

void track_managed(const void* p, size_t bytes, int code, const char* file, int line) {
  if (p) track({p, bytes, code, file, line, nullptr});
}

void track_managed_variable(const void* p, size_t bytes, int code, const char* name,
                            const char* file, int line) {
  track({p, bytes, code, file, line, name});
  std::lock_guard<std::mutex> lock(g_mem_mutex);
  pending_variables().push_back({p, bytes});
}

static void free_managed(const void* p) {
  Managed found{};
  {
    std::lock_guard<std::mutex> lock(g_mem_mutex);
    auto& v = managed_buffers();
    auto it = std::find_if(v.begin(), v.end(), [p](const Managed& m) { return m.p == p; });
    if (it == v.end()) return;
    found = *it;
    v.erase(it);
  }
  dump_managed(found);
}

static bool is_device(const void* p, size_t bytes) {
  Range r;
  return find_range(p, bytes, nullptr, &r) && r.kind != kPinned;
}

// Resolves cudaMemcpyDefault and checks that the device side(s) of a copy lie
// in device memory, as the GPU runtime does.
static cudaError_t check_copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind* kind) {
  if (*kind == cudaMemcpyDefault) {
    bool sd = is_device(src, bytes), dd = is_device(dst, bytes);
    *kind = sd ? (dd ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
               : (dd ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost);
  }
  bool src_dev = *kind == cudaMemcpyDeviceToHost || *kind == cudaMemcpyDeviceToDevice;
  bool dst_dev = *kind == cudaMemcpyHostToDevice || *kind == cudaMemcpyDeviceToDevice;
  if (*kind < cudaMemcpyHostToHost || *kind > cudaMemcpyDeviceToDevice)
    return ret(cudaErrorInvalidMemcpyDirection);
  if (src_dev && !find_range(src, bytes, nullptr, nullptr)) return ret(cudaErrorInvalidValue);
  if (dst_dev && !find_range(dst, bytes, nullptr, nullptr)) return ret(cudaErrorInvalidValue);
  return cudaSuccess;
}

cudaError_t memcpy_impl(const char* text, const char* file, int line, int code, void* dst,
                        const void* src, size_t bytes, cudaMemcpyKind kind, const char* what) {
  if (bytes == 0) return cudaSuccess;
  if (!dst || !src) return ret(cudaErrorInvalidValue);
  cudaError_t e = check_copy(dst, src, bytes, &kind);
  if (e != cudaSuccess) return e;
  std::memmove(dst, src, bytes);
  if (kind == cudaMemcpyDeviceToHost) dump_copy(text, file, line, code, what, dst, bytes);
  return cudaSuccess;
}

cudaError_t memcpy2d_impl(const char* text, const char* file, int line, int code, void* dst,
                          size_t dpitch, const void* src, size_t spitch, size_t width,
                          size_t height, cudaMemcpyKind kind, const char* what) {
  if (width > dpitch || width > spitch) return ret(cudaErrorInvalidPitchValue);
  if (height == 0 || width == 0) return cudaSuccess;
  if (!dst || !src) return ret(cudaErrorInvalidValue);
  size_t dspan = dpitch * (height - 1) + width, sspan = spitch * (height - 1) + width;
  if (kind == cudaMemcpyDefault) {
    bool sd = is_device(src, sspan), dd = is_device(dst, dspan);
    kind = sd ? (dd ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
              : (dd ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost);
  }
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDeviceToDevice)
    return ret(cudaErrorInvalidMemcpyDirection);
  bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  if (src_dev && !find_range(src, sspan, nullptr, nullptr)) return ret(cudaErrorInvalidValue);
  if (dst_dev && !find_range(dst, dspan, nullptr, nullptr)) return ret(cudaErrorInvalidValue);
  std::string packed;
  for (size_t r = 0; r < height; ++r) {
    std::memmove((char*)dst + r * dpitch, (const char*)src + r * spitch, width);
    if (kind == cudaMemcpyDeviceToHost) packed.append((const char*)dst + r * dpitch, width);
  }
  if (kind == cudaMemcpyDeviceToHost)
    dump_copy(text, file, line, code, what, packed.data(), packed.size());
  return cudaSuccess;
}

// ------------------------------------------------------------------ start-up

static struct Init {
  Init() {
    stack_ranges().reserve(1 << 16);  // the crash handler reads it: avoid moving it
    worker();
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_crash;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, nullptr);
    sigaction(SIGBUS, &sa, nullptr);
    sigaction(SIGFPE, &sa, nullptr);
  }
} g_init;

}  // namespace __sirius

using namespace __sirius;

// ------------------------------------------------------------------ bfloat16
// The conversions clang calls for __bf16 arithmetic, which the system's
// compiler runtime may lack. Round to nearest even; NaN stays NaN.

static unsigned short float_to_bf16_bits(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

extern "C" __bf16 __truncsfbf2(float f) {
  unsigned short b = float_to_bf16_bits(f);
  __bf16 r;
  std::memcpy(&r, &b, 2);
  return r;
}

extern "C" __bf16 __truncdfbf2(double d) {
  // double -> float rounding to odd, then float -> bfloat16 to nearest even:
  // no double rounding.
  float f = (float)d;
  if ((double)f != d && d == d && std::isfinite(f)) {
    unsigned u;
    std::memcpy(&u, &f, 4);
    if (!(u & 1u)) {
      bool toward_larger_magnitude = std::fabs((double)f) < std::fabs(d);
      u = toward_larger_magnitude ? u + 1u : u - 1u;
      std::memcpy(&f, &u, 4);
    }
  }
  return __truncsfbf2(f);
}

// ------------------------------------------------------------------ printf

int __sirius_printf(const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  int n;
  Worker* w = tw;
  if (w && w->cur) {
    char small[512];
    va_list ap2;
    va_copy(ap2, ap);
    n = vsnprintf(small, sizeof small, format, ap);
    if (n >= 0 && (size_t)n < sizeof small) {
      w->out.append(small, (size_t)n);
    } else if (n >= 0) {
      std::string big((size_t)n + 1, '\0');
      vsnprintf(&big[0], big.size(), format, ap2);
      w->out.append(big.data(), (size_t)n);
    }
    va_end(ap2);
  } else {
    n = vprintf(format, ap);
  }
  va_end(ap);
  return n;
}

// ------------------------------------------------------------------ runtime API

cudaError_t cudaMalloc(void** ptr, size_t bytes) { return allocate(ptr, bytes, kDevice); }
cudaError_t cudaMallocManaged(void** ptr, size_t bytes, unsigned int) {
  return allocate(ptr, bytes, kManaged);
}
cudaError_t cudaMallocHost(void** ptr, size_t bytes) { return allocate(ptr, bytes, kPinned); }
cudaError_t cudaHostAlloc(void** ptr, size_t bytes, unsigned int) {
  return allocate(ptr, bytes, kPinned);
}
cudaError_t cudaMallocPitch(void** ptr, size_t* pitch, size_t width, size_t height) {
  if (!pitch) return ret(cudaErrorInvalidValue);
  *pitch = (width + 511) & ~(size_t)511;
  return allocate(ptr, *pitch * height, kDevice);
}
cudaError_t cudaMallocAsync(void** ptr, size_t bytes, cudaStream_t) {
  return allocate(ptr, bytes, kDevice);
}
cudaError_t cudaFree(void* ptr) {
  free_managed(ptr);
  return release(ptr, false);
}
cudaError_t cudaFreeHost(void* ptr) { return release(ptr, true); }
cudaError_t cudaFreeAsync(void* ptr, cudaStream_t) { return release(ptr, false); }
cudaError_t cudaHostRegister(void* ptr, size_t bytes, unsigned int) {
  if (!ptr || !bytes) return ret(cudaErrorInvalidValue);
  add_range(ptr, bytes, kRegistered);
  return cudaSuccess;
}
cudaError_t cudaHostUnregister(void* ptr) {
  std::lock_guard<std::mutex> lock(g_mem_mutex);
  auto it = allocations().find((uintptr_t)ptr);
  if (it == allocations().end() || it->second.kind != kRegistered) return ret(cudaErrorInvalidValue);
  allocations().erase(it);
  return cudaSuccess;
}
cudaError_t cudaHostGetDevicePointer(void** dev, void* host, unsigned int) {
  if (!dev || !find_range(host, 0, nullptr, nullptr)) return ret(cudaErrorInvalidValue);
  *dev = host;
  return cudaSuccess;
}

// The plain functions (reached when a program takes their address; calls go
// through the macros in api.h).
#undef cudaMemcpy
#undef cudaMemcpyAsync
#undef cudaMemcpy2D
#undef cudaMemcpy2DAsync
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  return memcpy_impl("", "", 0, 0, dst, src, bytes, kind, "cudaMemcpy");
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t) {
  return memcpy_impl("", "", 0, 0, dst, src, bytes, kind, "cudaMemcpyAsync");
}
cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                         size_t height, cudaMemcpyKind kind) {
  return memcpy2d_impl("", "", 0, 0, dst, dpitch, src, spitch, width, height, kind,
                       "cudaMemcpy2D");
}
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                              size_t width, size_t height, cudaMemcpyKind kind, cudaStream_t) {
  return memcpy2d_impl("", "", 0, 0, dst, dpitch, src, spitch, width, height, kind,
                       "cudaMemcpy2DAsync");
}
cudaError_t cudaMemset(void* ptr, int value, size_t bytes) {
  if (bytes == 0) return cudaSuccess;
  if (!find_range(ptr, bytes, nullptr, nullptr)) return ret(cudaErrorInvalidValue);
  std::memset(ptr, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* ptr, int value, size_t bytes, cudaStream_t) {
  return cudaMemset(ptr, value, bytes);
}
cudaError_t cudaMemset2D(void* ptr, size_t pitch, int value, size_t width, size_t height) {
  for (size_t r = 0; r < height; ++r) {
    cudaError_t e = cudaMemset((char*)ptr + r * pitch, value, width);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  size_t total = (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
  size_t avail = (size_t)sysconf(_SC_AVPHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
  if (free_bytes) *free_bytes = avail;
  if (total_bytes) *total_bytes = total;
  return cudaSuccess;
}
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* a, const void* ptr) {
  if (!a) return ret(cudaErrorInvalidValue);
  Range r;
  uintptr_t base;
  a->device = 0;
  a->devicePointer = nullptr;
  a->hostPointer = nullptr;
  a->type = cudaMemoryTypeUnregistered;
  if (find_range(ptr, 0, &base, &r)) {
    a->type = r.kind == kManaged ? cudaMemoryTypeManaged
              : (r.kind == kPinned || r.kind == kRegistered) ? cudaMemoryTypeHost
                                                              : cudaMemoryTypeDevice;
    a->devicePointer = (void*)ptr;
    if (a->type != cudaMemoryTypeDevice) a->hostPointer = (void*)ptr;
  } else {
    a->hostPointer = (void*)ptr;
  }
  return cudaSuccess;
}
cudaError_t cudaMemPrefetchAsync(const void*, size_t, int, cudaStream_t) { return cudaSuccess; }

cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
cudaError_t cudaThreadSynchronize(void) { return cudaSuccess; }
cudaError_t cudaDeviceReset(void) { return cudaSuccess; }
cudaError_t cudaSetDevice(int device) {
  return device == 0 ? cudaSuccess : ret(cudaErrorInvalidDevice);
}
cudaError_t cudaGetDevice(int* device) {
  if (device) *device = 0;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceCount(int* count) {
  if (count) *count = 1;
  return cudaSuccess;
}
cudaError_t cudaSetDeviceFlags(unsigned int) { return cudaSuccess; }

static void fill_properties(cudaDeviceProp* p) {
  std::memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "Sirius CPU backend (sm_90 semantics)");
  p->totalGlobalMem = (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
  p->sharedMemPerBlock = 48 * 1024;
  p->regsPerBlock = 65536;
  p->warpSize = 32;
  p->memPitch = 2147483647;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = 1024;
  p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647;
  p->maxGridSize[1] = 65535;
  p->maxGridSize[2] = 65535;
  p->clockRate = 1980000;
  p->totalConstMem = 65536;
  p->major = 9;
  p->minor = 0;
  p->textureAlignment = 512;
  p->texturePitchAlignment = 32;
  p->deviceOverlap = 1;
  p->multiProcessorCount = kMultiprocessors;
  p->canMapHostMemory = 1;
  p->concurrentKernels = 1;
  p->asyncEngineCount = 3;
  p->unifiedAddressing = 1;
  p->memoryClockRate = 2619000;
  p->memoryBusWidth = 5120;
  p->l2CacheSize = 50 * 1024 * 1024;
  p->maxThreadsPerMultiProcessor = 2048;
  p->globalL1CacheSupported = 1;
  p->localL1CacheSupported = 1;
  p->sharedMemPerMultiprocessor = 233472;
  p->regsPerMultiprocessor = 65536;
  p->managedMemory = 1;
  p->concurrentManagedAccess = 1;
  p->sharedMemPerBlockOptin = 232448;
  p->maxBlocksPerMultiProcessor = 32;
  p->reservedSharedMemPerBlock = 1024;
  p->cooperativeLaunch = 1;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (!prop || device != 0) return ret(cudaErrorInvalidDevice);
  fill_properties(prop);
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (!value || device != 0) return ret(cudaErrorInvalidValue);
  cudaDeviceProp p;
  fill_properties(&p);
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: *value = p.maxThreadsDim[0]; break;
    case cudaDevAttrMaxBlockDimY: *value = p.maxThreadsDim[1]; break;
    case cudaDevAttrMaxBlockDimZ: *value = p.maxThreadsDim[2]; break;
    case cudaDevAttrMaxGridDimX: *value = p.maxGridSize[0]; break;
    case cudaDevAttrMaxGridDimY: *value = p.maxGridSize[1]; break;
    case cudaDevAttrMaxGridDimZ: *value = p.maxGridSize[2]; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = (int)p.sharedMemPerBlock; break;
    case cudaDevAttrTotalConstantMemory: *value = (int)p.totalConstMem; break;
    case cudaDevAttrWarpSize: *value = 32; break;
    case cudaDevAttrMaxPitch: *value = (int)p.memPitch; break;
    case cudaDevAttrMaxRegistersPerBlock: *value = p.regsPerBlock; break;
    case cudaDevAttrClockRate: *value = p.clockRate; break;
    case cudaDevAttrMultiProcessorCount: *value = p.multiProcessorCount; break;
    case cudaDevAttrConcurrentKernels: *value = 1; break;
    case cudaDevAttrEccEnabled: *value = 0; break;
    case cudaDevAttrMemoryClockRate: *value = p.memoryClockRate; break;
    case cudaDevAttrGlobalMemoryBusWidth: *value = p.memoryBusWidth; break;
    case cudaDevAttrL2CacheSize: *value = p.l2CacheSize; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *value = p.maxThreadsPerMultiProcessor; break;
    case cudaDevAttrUnifiedAddressing: *value = 1; break;
    case cudaDevAttrComputeCapabilityMajor: *value = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: *value = p.minor; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *value = (int)p.sharedMemPerMultiprocessor; break;
    case cudaDevAttrMaxRegistersPerMultiprocessor: *value = p.regsPerMultiprocessor; break;
    case cudaDevAttrManagedMemory: *value = 1; break;
    case cudaDevAttrCooperativeLaunch: *value = p.cooperativeLaunch; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = (int)p.sharedMemPerBlockOptin; break;
    case cudaDevAttrMaxBlocksPerMultiprocessor: *value = p.maxBlocksPerMultiProcessor; break;
    default: *value = 0; return ret(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}
cudaError_t cudaDeviceSetCacheConfig(cudaFuncCache) { return cudaSuccess; }
cudaError_t cudaDeviceSetSharedMemConfig(cudaSharedMemConfig) { return cudaSuccess; }
cudaError_t cudaDeviceSetLimit(cudaLimit, size_t) { return cudaSuccess; }
cudaError_t cudaDeviceGetLimit(size_t* value, cudaLimit limit) {
  if (!value) return ret(cudaErrorInvalidValue);
  *value = limit == cudaLimitStackSize ? stack_size() : (size_t)8 << 20;
  return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int* v) {
  if (v) *v = 13000;
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* v) {
  if (v) *v = 13000;
  return cudaSuccess;
}
cudaError_t cudaProfilerStart(void) { return cudaSuccess; }
cudaError_t cudaProfilerStop(void) { return cudaSuccess; }

struct CUstream_st {
  int unused;
};
struct CUevent_st {
  double ms;
  bool recorded;
};

cudaError_t cudaStreamCreate(cudaStream_t* s) {
  if (!s) return ret(cudaErrorInvalidValue);
  *s = new CUstream_st();
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int) { return cudaStreamCreate(s); }
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned int, int) {
  return cudaStreamCreate(s);
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  if (s && s != cudaStreamLegacy && s != cudaStreamPerThread) delete s;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamQuery(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned int) { return cudaSuccess; }
cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return cudaSuccess;
}

cudaError_t cudaLaunchHostFunc(cudaStream_t, cudaHostFn_t fn, void* user_data) {
  if (!fn) return ret(cudaErrorInvalidValue);
  fn(user_data);
  return cudaSuccess;
}
cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback,
                                  void* user_data, unsigned int) {
  if (!callback) return ret(cudaErrorInvalidValue);
  callback(stream, cudaSuccess, user_data);
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* e) {
  if (!e) return ret(cudaErrorInvalidValue);
  *e = new CUevent_st{0.0, false};
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int) { return cudaEventCreate(e); }
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) {
  if (!e) return ret(cudaErrorInvalidResourceHandle);
  e->ms = (double)clock_ticks() / 1e6;
  e->recorded = true;
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  return e ? cudaSuccess : ret(cudaErrorInvalidResourceHandle);
}
cudaError_t cudaEventQuery(cudaEvent_t e) {
  return e ? cudaSuccess : ret(cudaErrorInvalidResourceHandle);
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!ms || !start || !end) return ret(cudaErrorInvalidValue);
  if (!start->recorded || !end->recorded) return ret(cudaErrorInvalidResourceHandle);
  *ms = (float)(end->ms - start->ms);
  return cudaSuccess;
}

cudaError_t cudaGetLastError(void) { return (cudaError_t)g_last_error.exchange(cudaSuccess); }
cudaError_t cudaPeekAtLastError(void) { return (cudaError_t)g_last_error.load(); }

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
#define SIRIUS_NAME(x) case x: return #x;
    SIRIUS_NAME(cudaSuccess)
    SIRIUS_NAME(cudaErrorInvalidValue)
    SIRIUS_NAME(cudaErrorMemoryAllocation)
    SIRIUS_NAME(cudaErrorInitializationError)
    SIRIUS_NAME(cudaErrorCudartUnloading)
    SIRIUS_NAME(cudaErrorProfilerDisabled)
    SIRIUS_NAME(cudaErrorInvalidConfiguration)
    SIRIUS_NAME(cudaErrorInvalidPitchValue)
    SIRIUS_NAME(cudaErrorInvalidSymbol)
    SIRIUS_NAME(cudaErrorInvalidHostPointer)
    SIRIUS_NAME(cudaErrorInvalidDevicePointer)
    SIRIUS_NAME(cudaErrorInvalidTexture)
    SIRIUS_NAME(cudaErrorInvalidMemcpyDirection)
    SIRIUS_NAME(cudaErrorInvalidDeviceFunction)
    SIRIUS_NAME(cudaErrorNoDevice)
    SIRIUS_NAME(cudaErrorInvalidDevice)
    SIRIUS_NAME(cudaErrorInvalidResourceHandle)
    SIRIUS_NAME(cudaErrorNotReady)
    SIRIUS_NAME(cudaErrorIllegalAddress)
    SIRIUS_NAME(cudaErrorLaunchOutOfResources)
    SIRIUS_NAME(cudaErrorLaunchTimeout)
    SIRIUS_NAME(cudaErrorLaunchFailure)
    SIRIUS_NAME(cudaErrorCooperativeLaunchTooLarge)
    SIRIUS_NAME(cudaErrorNotSupported)
    SIRIUS_NAME(cudaErrorUnknown)
#undef SIRIUS_NAME
  }
  return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidPitchValue: return "invalid pitch argument";
    case cudaErrorInvalidSymbol: return "invalid device symbol";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    case cudaErrorNotSupported: return "operation not supported";
    case cudaErrorCooperativeLaunchTooLarge: return "too many blocks in cooperative launch";
    default: return cudaGetErrorName(e);
  }
}
