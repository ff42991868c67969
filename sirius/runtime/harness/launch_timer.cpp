// launch_timer.cpp: times the kernel launches of an unchanged CUDA program.
//
// Build and use:
//   nvcc -O2 -std=c++17 -shared -Xcompiler -fPIC -cudart shared launch_timer.cpp
//        -o libsirius_timer.so -ldl
//   nvcc -cudart shared program.cu -o program
//   SIRIUS_TIMING_OUT=timings.json LD_PRELOAD=./libsirius_timer.so ./program
// Settings: SIRIUS_TIMING_OUT (the JSON file; without it everything passes
// through and nothing is written), SIRIUS_TIMING_REPS (20), SIRIUS_TIMING_WARMUP
// (3), SIRIUS_TIMING_MODES ("direct,graph", or one of them).
//
// The program must reach the runtime through libcudart.so (-cudart shared):
// preloaded, this library defines the runtime's entry points first, so the
// program's calls land here and are passed on to the real runtime, found with
// dlsym(RTLD_NEXT). Each successful launch is recorded with a copy of its
// argument bytes. Where the program waits for the device or touches device
// memory outside a kernel, the launches recorded since the previous such point
// (a segment) are replayed before the call proceeds, on a stream of the
// harness: (a) one by one as the program issued them, and (b) captured once as
// a CUDA graph and launched as a whole; each mode runs WARMUP untimed and REPS
// timed passes over the segment, timed with CUDA events. At exit the report
// (timing_core.h) is written.
//
// Why each interception exists:
//   __cudaGetKernel             <<<>>> stubs launch through a cudaKernel_t handle;
//                               the runtime names kernels and describes their
//                               parameters by host function, so remember which.
//   __cudaLaunchKernel(_ptsz)   what <<<>>> compiles to in CUDA 13.
//   cudaLaunchKernel, cudaLaunchCooperativeKernel, cudaLaunchKernelExC (+_ptsz)
//                               launches written out by hand.
//   device, stream and event synchronizations
//                               the host waits here, so the device work since
//                               the previous point is a unit the program's own
//                               timing would see.
//   copies and memsets          device work that is not a launch: a replay
//                               across it would reorder the program's work.
//   frees                       recorded arguments may point into the memory.
//   stream capture, cudaGraphLaunch
//                               launches inside the program's own capture are
//                               not executed, so they are not replayed; graph
//                               launches are device work we do not record.
//   cudaDeviceReset             destroys the harness's stream and events too.
//
// Replays re-run the program's kernels, so a kernel that updates memory in
// place (x += ...) leaves different results: judge correctness in a run
// without the harness. Everything else the program sees is unchanged: the
// harness clears the CUDA errors its own calls cause and does not replay when
// the program has an error it has not read yet.

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "timing_core.h"

// Not declared by the CUDA headers: the entry points of nvcc's launch stubs.
extern "C" cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* host_function);
extern "C" cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args,
                                          size_t shared_bytes, cudaStream_t stream);

namespace {

using namespace sirius_timer;

// ---- settings ---------------------------------------------------------------

struct Settings {
    bool enabled = false;
    std::string out;
    int reps = 20;
    int warmup = 3;
    bool direct = true;
    bool graph = true;
};

int read_count(const char* variable, int fallback, int least) {
    const char* text = std::getenv(variable);
    if (!text || !*text) return fallback;
    char* end = nullptr;
    long value = std::strtol(text, &end, 10);
    if (*end || value < least || value > 1000000) {
        std::fprintf(stderr, "sirius timer: ignoring %s=%s (want an integer >= %d)\n", variable,
                     text, least);
        return fallback;
    }
    return static_cast<int>(value);
}

Settings read_settings() {
    Settings settings;
    const char* out = std::getenv("SIRIUS_TIMING_OUT");
    if (!out || !*out) return settings;
    settings.enabled = true;
    settings.out = out;
    settings.reps = read_count("SIRIUS_TIMING_REPS", 20, 1);
    settings.warmup = read_count("SIRIUS_TIMING_WARMUP", 3, 0);
    if (const char* modes = std::getenv("SIRIUS_TIMING_MODES"); modes && *modes) {
        std::string list = std::string(modes) + ",";
        bool direct = false, graph = false, valid = true;
        for (std::size_t start = 0, comma; (comma = list.find(',', start)) != std::string::npos;
             start = comma + 1) {
            std::string mode = list.substr(start, comma - start);
            if (mode == "direct") direct = true;
            else if (mode == "graph") graph = true;
            else if (!mode.empty()) valid = false;
        }
        if (valid && (direct || graph)) {
            settings.direct = direct;
            settings.graph = graph;
        } else {
            std::fprintf(stderr,
                         "sirius timer: ignoring SIRIUS_TIMING_MODES=%s (want direct,graph)\n",
                         modes);
        }
    }
    return settings;
}

// Never destroyed, like State below.
const Settings& settings() {
    static const Settings* const read = new Settings(read_settings());
    return *read;
}

// ---- calling the real runtime ------------------------------------------------

// Set while this thread runs harness code or a real runtime call made from an
// interceptor: a runtime that calls its own exported functions must not be
// recorded twice, and the harness's replays must not be recorded at all.
thread_local bool inside_harness = false;

class HarnessScope {
  public:
    HarnessScope() : outer_(inside_harness) { inside_harness = true; }
    ~HarnessScope() { inside_harness = outer_; }
    HarnessScope(const HarnessScope&) = delete;
    HarnessScope& operator=(const HarnessScope&) = delete;

  private:
    bool outer_;
};

bool recording() { return settings().enabled && !inside_harness; }

// The runtime's own definition of `symbol`, the one this library hides.
template <typename Function>
Function* real_function(const char* symbol) {
    return reinterpret_cast<Function*>(dlsym(RTLD_NEXT, symbol));
}

// The runtime's `symbol`, with the type of the declared function `like`.
#define RUNTIME_FUNCTION(like, symbol) real_function<decltype(like)>(symbol)

template <typename Function, typename... Args>
cudaError_t call_runtime(Function* real, Args... args) {
    // Missing only from a runtime the program cannot have been linked with.
    if (!real) return cudaErrorNotSupported;
    HarnessScope scope;
    return real(args...);
}

// The real entry points the harness itself calls. This library defines them
// too, so a plain call from here would come back to the interceptor.
struct RealRuntime {
    decltype(__cudaLaunchKernel)* launch_handle =
        RUNTIME_FUNCTION(__cudaLaunchKernel, "__cudaLaunchKernel");
    decltype(cudaLaunchKernel)* launch_function =
        RUNTIME_FUNCTION(cudaLaunchKernel, "cudaLaunchKernel");
    decltype(cudaLaunchCooperativeKernel)* launch_cooperative =
        RUNTIME_FUNCTION(cudaLaunchCooperativeKernel, "cudaLaunchCooperativeKernel");
    decltype(cudaLaunchKernelExC)* launch_extended =
        RUNTIME_FUNCTION(cudaLaunchKernelExC, "cudaLaunchKernelExC");
    decltype(cudaDeviceSynchronize)* device_synchronize =
        RUNTIME_FUNCTION(cudaDeviceSynchronize, "cudaDeviceSynchronize");
    decltype(cudaEventSynchronize)* event_synchronize =
        RUNTIME_FUNCTION(cudaEventSynchronize, "cudaEventSynchronize");
    decltype(cudaStreamBeginCapture)* begin_capture =
        RUNTIME_FUNCTION(cudaStreamBeginCapture, "cudaStreamBeginCapture");
    decltype(cudaStreamEndCapture)* end_capture =
        RUNTIME_FUNCTION(cudaStreamEndCapture, "cudaStreamEndCapture");
    decltype(cudaGraphLaunch)* graph_launch = RUNTIME_FUNCTION(cudaGraphLaunch, "cudaGraphLaunch");
};

const RealRuntime& real() {
    static const RealRuntime runtime;
    return runtime;
}

std::string error_name(cudaError_t error) {
    const char* name = cudaGetErrorName(error);
    return name ? name : "cudaError " + std::to_string(static_cast<int>(error));
}

// Leaves the program's "last error" (cudaGetLastError) as the program left it:
// harness calls that fail, by design or not, would otherwise show up there.
// Only possible when no error of the program was pending: the runtime keeps
// one last error, so callers check `program_error` before calls that may fail.
class LastErrorGuard {
  public:
    LastErrorGuard() : program_error(cudaPeekAtLastError()) {}
    ~LastErrorGuard() {
        if (program_error == cudaSuccess) cudaGetLastError();
    }
    LastErrorGuard(const LastErrorGuard&) = delete;
    LastErrorGuard& operator=(const LastErrorGuard&) = delete;

    const cudaError_t program_error;
};

// ---- recording ---------------------------------------------------------------

// What the runtime tells about a kernel, asked once per kernel.
struct KernelInfo {
    std::string name;
    std::vector<std::size_t> parameter_sizes;
    std::string problem;  // why its parameters are unknown; empty when known
};

// The harness's stream and events on one device.
struct Resources {
    cudaStream_t stream = nullptr;
    cudaEvent_t start = nullptr;
    cudaEvent_t stop = nullptr;
};

// What the interceptors share. Allocated once and never destroyed: the exit
// handler and the library destructor run after the C++ runtime may have
// destroyed static objects.
struct State {
    std::mutex lock;  // guards the rest; held while recording and replaying
    Recorder recorder;
    std::map<cudaKernel_t, const void*> host_function_of_handle;
    std::map<const void*, KernelInfo> kernel_infos;
    std::map<int, Resources> resources_by_device;
    Report report;
    bool device_known = false;
};

State& state() {
    static State* const shared = new State();
    return *shared;
}

std::atomic<int> program_captures{0};  // captures the program has begun and not ended

KernelInfo describe_kernel(const void* host_function, bool may_fail) {
    KernelInfo info;
    const char* name = nullptr;
    if (cudaFuncGetName(&name, host_function) == cudaSuccess && name) info.name = name;
    else info.name = "?";
    if (!may_fail) {
        info.problem = "its parameters were not queried: a CUDA error of the program was pending";
        return info;
    }
    // The runtime answers cudaErrorInvalidValue one past the last parameter;
    // anything else means it cannot describe the kernel.
    for (std::size_t index = 0;; ++index) {
        std::size_t offset = 0, size = 0;
        cudaError_t status = cudaFuncGetParamInfo(host_function, index, &offset, &size);
        if (status == cudaErrorInvalidValue) break;
        if (status != cudaSuccess) {
            info.problem = "cudaFuncGetParamInfo failed with " + error_name(status);
            break;
        }
        if (size == 0 || index >= 4096) {
            info.problem = "cudaFuncGetParamInfo describes parameter " + std::to_string(index) +
                           " with an unusable size";
            break;
        }
        info.parameter_sizes.push_back(size);
    }
    return info;
}

void finish_at_exit();

// Exit handlers run in reverse order of registration. Registered after the
// first successful launch, ours runs before the handlers that unregister the
// program's kernels (registered by its static constructors) and that tear the
// runtime down (registered when it initialized), so launches pending at exit
// can still be replayed.
void register_exit_handler() {
    static std::once_flag registered;
    std::call_once(registered, [] { std::atexit(finish_at_exit); });
}

void record_launch(LaunchEntry entry, const void* kernel, dim3 grid, dim3 block,
                   std::size_t shared_bytes, cudaStream_t stream, bool per_thread_stream,
                   void** args, const cudaLaunchConfig_t* config) {
    if (!recording()) return;
    HarnessScope scope;
    register_exit_handler();
    LastErrorGuard errors;
    State& shared = state();
    std::lock_guard<std::mutex> hold(shared.lock);

    LaunchRecord launch;
    launch.entry = entry;
    launch.kernel = reinterpret_cast<std::uintptr_t>(kernel);
    launch.grid = {grid.x, grid.y, grid.z};
    launch.block = {block.x, block.y, block.z};
    launch.shared_bytes = shared_bytes;
    if (per_thread_stream && stream == nullptr) stream = cudaStreamPerThread;
    launch.stream = reinterpret_cast<std::uintptr_t>(stream);
    cudaGetDevice(&launch.device);

    // A handle the stubs did not announce may still be accepted by the runtime in
    // place of a host function; if not, describe_kernel says so.
    const void* host_function = kernel;
    if (entry == LaunchEntry::KernelHandle) {
        auto handle = static_cast<cudaKernel_t>(const_cast<void*>(kernel));
        auto known = shared.host_function_of_handle.find(handle);
        if (known != shared.host_function_of_handle.end()) host_function = known->second;
    }
    auto cached = shared.kernel_infos.find(host_function);
    KernelInfo info;
    if (cached != shared.kernel_infos.end()) {
        info = cached->second;
    } else {
        info = describe_kernel(host_function, errors.program_error == cudaSuccess);
        if (errors.program_error == cudaSuccess) shared.kernel_infos.emplace(host_function, info);
    }
    launch.name = info.name;
    launch.unreplayable = info.problem;
    if (info.problem.empty() && !info.parameter_sizes.empty() && !args)
        launch.unreplayable = "launched without an argument array";
    if (launch.unreplayable.empty()) {
        for (std::size_t i = 0; i < info.parameter_sizes.size(); ++i) {
            const auto* bytes = static_cast<const unsigned char*>(args[i]);
            launch.arguments.emplace_back(bytes, bytes + info.parameter_sizes[i]);
        }
    }
    if (config && config->numAttrs && config->attrs) {
        const auto* bytes = reinterpret_cast<const unsigned char*>(config->attrs);
        std::size_t size = config->numAttrs * sizeof(cudaLaunchAttribute);
        launch.launch_attributes.assign(bytes, bytes + size);
    }
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (program_captures > 0 || cudaStreamIsCapturing(stream, &capture) != cudaSuccess ||
        capture != cudaStreamCaptureStatusNone)
        launch.unreplayable = "launched while the program was capturing a graph";
    shared.recorder.record(std::move(launch));
}

// ---- replay -------------------------------------------------------------------

DeviceInfo query_device(int device) {
    DeviceInfo info;
    cudaDeviceProp properties;
    std::memset(&properties, 0, sizeof properties);
    if (cudaGetDeviceProperties(&properties, device) == cudaSuccess) info.name = properties.name;
    int major = 0, minor = 0;
    cudaDeviceGetAttribute(&info.sm_count, cudaDevAttrMultiProcessorCount, device);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
    info.compute_capability = std::to_string(major) + "." + std::to_string(minor);
    cudaDriverGetVersion(&info.driver);
    cudaRuntimeGetVersion(&info.runtime);
    return info;
}

// The resources on `device` (the current device), created on first use.
cudaError_t resources_on(int device, Resources*& resources) {
    State& shared = state();
    auto found = shared.resources_by_device.find(device);
    if (found != shared.resources_by_device.end()) {
        resources = &found->second;
        return cudaSuccess;
    }
    Resources created;
    // Non-blocking: the legacy default stream must not serialize with it, and
    // only a stream of our own may be captured without disturbing the program.
    cudaError_t status = cudaStreamCreateWithFlags(&created.stream, cudaStreamNonBlocking);
    if (status == cudaSuccess) status = cudaEventCreate(&created.start);
    if (status == cudaSuccess) status = cudaEventCreate(&created.stop);
    if (status != cudaSuccess) return status;
    resources = &shared.resources_by_device.emplace(device, created).first->second;
    if (!shared.device_known) {
        shared.report.device = query_device(device);
        shared.device_known = true;
    }
    return cudaSuccess;
}

// A recorded launch ready to be issued again: the argument array points into
// the record's copies.
struct PreparedLaunch {
    const LaunchRecord* record;
    std::vector<void*> arguments;
    std::vector<cudaLaunchAttribute> attributes;
};

std::vector<PreparedLaunch> prepare(std::vector<LaunchRecord>& launches) {
    std::vector<PreparedLaunch> prepared;
    prepared.reserve(launches.size());
    for (LaunchRecord& launch : launches) {
        PreparedLaunch ready{&launch, {}, {}};
        for (auto& argument : launch.arguments) ready.arguments.push_back(argument.data());
        ready.arguments.push_back(nullptr);  // never empty: the stubs pass a valid array too
        ready.attributes.resize(launch.launch_attributes.size() / sizeof(cudaLaunchAttribute));
        if (!ready.attributes.empty())
            std::memcpy(ready.attributes.data(), launch.launch_attributes.data(),
                        ready.attributes.size() * sizeof(cudaLaunchAttribute));
        prepared.push_back(std::move(ready));
    }
    return prepared;
}

cudaError_t issue(PreparedLaunch& launch, cudaStream_t stream) {
    const LaunchRecord& record = *launch.record;
    dim3 grid(record.grid.x, record.grid.y, record.grid.z);
    dim3 block(record.block.x, record.block.y, record.block.z);
    void** args = launch.arguments.data();
    const void* kernel = reinterpret_cast<const void*>(record.kernel);
    std::size_t shared_bytes = record.shared_bytes;
    switch (record.entry) {
        case LaunchEntry::KernelHandle: {
            auto handle = static_cast<cudaKernel_t>(const_cast<void*>(kernel));
            return call_runtime(real().launch_handle, handle, grid, block, args, shared_bytes,
                                stream);
        }
        case LaunchEntry::Function:
            return call_runtime(real().launch_function, kernel, grid, block, args, shared_bytes,
                                stream);
        case LaunchEntry::Cooperative:
            return call_runtime(real().launch_cooperative, kernel, grid, block, args, shared_bytes,
                                stream);
        case LaunchEntry::Extended: {
            cudaLaunchConfig_t config{};
            config.gridDim = grid;
            config.blockDim = block;
            config.dynamicSmemBytes = shared_bytes;
            config.stream = stream;
            config.attrs = launch.attributes.empty() ? nullptr : launch.attributes.data();
            config.numAttrs = static_cast<unsigned>(launch.attributes.size());
            return call_runtime(real().launch_extended, &config, kernel, args);
        }
    }
    return cudaErrorInvalidValue;
}

// Issues every launch of the segment on `stream`; the first failure, in words.
std::optional<std::string> issue_all(std::vector<PreparedLaunch>& launches, cudaStream_t stream) {
    for (PreparedLaunch& launch : launches) {
        cudaError_t status = issue(launch, stream);
        if (status != cudaSuccess)
            return "replaying kernel " + launch.record->name + " failed with " + error_name(status);
    }
    return std::nullopt;
}

// Times `run` (which issues one pass on the harness stream) WARMUP + REPS times.
template <typename Run>
std::optional<std::string> time_passes(const Resources& on, Run run, Timing& timing) {
    const Settings& config = settings();
    for (int pass = 0; pass < config.warmup + config.reps; ++pass) {
        cudaEventRecord(on.start, on.stream);
        if (auto failure = run()) return failure;
        cudaEventRecord(on.stop, on.stream);
        cudaError_t status = call_runtime(real().event_synchronize, on.stop);
        float milliseconds = 0.0f;
        if (status == cudaSuccess) status = cudaEventElapsedTime(&milliseconds, on.start, on.stop);
        if (status != cudaSuccess) return "the replay failed with " + error_name(status);
        if (pass >= config.warmup) timing.samples_us.push_back(milliseconds * 1000.0);
    }
    return std::nullopt;
}

std::optional<std::string> time_direct(std::vector<PreparedLaunch>& launches, const Resources& on,
                                       Timing& timing) {
    return time_passes(on, [&] { return issue_all(launches, on.stream); }, timing);
}

std::optional<std::string> time_graph(std::vector<PreparedLaunch>& launches, const Resources& on,
                                      Timing& timing) {
    // Thread-local mode: other threads of the program may go on with calls
    // that a global capture would forbid.
    cudaError_t status =
        call_runtime(real().begin_capture, on.stream, cudaStreamCaptureModeThreadLocal);
    if (status != cudaSuccess) return "cudaStreamBeginCapture failed with " + error_name(status);
    std::optional<std::string> failure = issue_all(launches, on.stream);
    cudaGraph_t graph = nullptr;
    status = call_runtime(real().end_capture, on.stream, &graph);  // always end what was begun
    if (!failure && status != cudaSuccess)
        failure = "cudaStreamEndCapture failed with " + error_name(status);
    cudaGraphExec_t executable = nullptr;
    if (!failure) {
        status = cudaGraphInstantiate(&executable, graph, 0);
        if (status != cudaSuccess)
            failure = "cudaGraphInstantiate failed with " + error_name(status);
    }
    if (!failure) {
        failure = time_passes(on, [&]() -> std::optional<std::string> {
            cudaError_t launched = call_runtime(real().graph_launch, executable, on.stream);
            if (launched != cudaSuccess)
                return "cudaGraphLaunch failed with " + error_name(launched);
            return std::nullopt;
        }, timing);
    }
    if (executable) cudaGraphExecDestroy(executable);
    if (graph) cudaGraphDestroy(graph);
    return failure;
}

// Makes `device` current for the life of the object.
class DeviceScope {
  public:
    explicit DeviceScope(int device) {
        cudaGetDevice(&previous_);
        if (previous_ != device) cudaSetDevice(device);
    }
    ~DeviceScope() {
        int current = previous_;
        cudaGetDevice(&current);
        if (current != previous_) cudaSetDevice(previous_);
    }
    DeviceScope(const DeviceScope&) = delete;
    DeviceScope& operator=(const DeviceScope&) = delete;

  private:
    int previous_ = 0;
};

// Replays a closed segment, filling in its summary.
void replay(ClosedSegment& closed) {
    Segment& summary = closed.summary;
    auto skip = [&](std::string why) { summary.reason = std::move(why); };
    if (auto why = why_not_replayable(closed.launches)) return skip(*why);
    if (program_captures > 0) return skip("the program was capturing a graph");
    int device = closed.launches.front().device;
    for (const LaunchRecord& launch : closed.launches)
        if (launch.device != device) return skip("launches on more than one device");

    LastErrorGuard errors;
    if (errors.program_error != cudaSuccess)
        return skip("the program had not read the CUDA error " + error_name(errors.program_error));
    DeviceScope on_device(device);
    // The program's own work must be done before timing begins.
    cudaError_t status = call_runtime(real().device_synchronize);
    if (status != cudaSuccess)
        return skip("the device reported " + error_name(status) + " before the replay");
    Resources* resources = nullptr;
    status = resources_on(device, resources);
    if (status != cudaSuccess)
        return skip("cannot create the harness's stream: " + error_name(status));

    std::vector<PreparedLaunch> launches = prepare(closed.launches);
    std::vector<std::string> failures;
    if (settings().direct) {
        Timing timing;
        if (auto failure = time_direct(launches, *resources, timing))
            failures.push_back("direct: " + *failure);
        else
            summary.direct = std::move(timing);
    }
    if (settings().graph) {
        Timing timing;
        if (auto failure = time_graph(launches, *resources, timing))
            failures.push_back("graph: " + *failure);
        else
            summary.graph = std::move(timing);
    }
    summary.replayed = failures.empty();
    if (!failures.empty()) {
        std::string reason = failures.front();
        for (std::size_t i = 1; i < failures.size(); ++i) reason += "; " + failures[i];
        summary.reason = reason;
    }
}

// Ends the current segment at the program's call `ended_by`: replays the
// launches recorded since the previous end, before that call proceeds.
void end_segment(const char* ended_by) {
    if (!recording()) return;
    HarnessScope scope;
    State& shared = state();
    std::lock_guard<std::mutex> hold(shared.lock);
    std::optional<ClosedSegment> closed = shared.recorder.close(ended_by);
    if (!closed) return;
    replay(*closed);
    shared.recorder.keep(std::move(closed->summary));
}

// Writes the report once. The device is described only if `may_query_device`:
// not from the library destructor, which may run after the runtime's teardown.
void write_out(bool may_query_device) {
    static std::once_flag written;
    std::call_once(written, [may_query_device] {
        HarnessScope scope;
        State& shared = state();
        std::lock_guard<std::mutex> hold(shared.lock);
        if (!shared.device_known && may_query_device) {
            LastErrorGuard errors;
            int device = 0;
            cudaGetDevice(&device);
            shared.report.device = query_device(device);
        }
        shared.report.reps = settings().reps;
        shared.report.warmup = settings().warmup;
        shared.report.segments = shared.recorder.segments();
        if (!write_report(settings().out, shared.report))
            std::fprintf(stderr, "sirius timer: cannot write %s\n", settings().out.c_str());
    });
}

void finish_at_exit() {
    if (!settings().enabled) return;
    end_segment("exit");
    write_out(true);
}

// A program that launched no kernel registered no exit handler: write then.
__attribute__((destructor)) void finish_at_unload() {
    if (settings().enabled) write_out(false);
}

// The body of an interceptor that ends a segment and then calls the runtime's
// `symbol`, which has the type of `like`; the segment is reported as ended by
// `like` (per-thread-stream variants are reported under the plain name).
#define REPLAY_THEN_CALL(like, symbol, ...)                                    \
    static auto* const real_call = RUNTIME_FUNCTION(like, symbol);             \
    end_segment(#like);                                                        \
    return call_runtime(real_call, __VA_ARGS__)

}  // namespace

// ---- launches -------------------------------------------------------------------

extern "C" cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* host_function) {
    static auto* const real_call = RUNTIME_FUNCTION(__cudaGetKernel, "__cudaGetKernel");
    cudaError_t status = call_runtime(real_call, kernel, host_function);
    if (status == cudaSuccess && kernel && recording()) {
        std::lock_guard<std::mutex> hold(state().lock);
        state().host_function_of_handle[*kernel] = host_function;
    }
    return status;
}

extern "C" cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args,
                                          size_t shared_bytes, cudaStream_t stream) {
    static auto* const real_call = RUNTIME_FUNCTION(__cudaLaunchKernel, "__cudaLaunchKernel");
    cudaError_t status = call_runtime(real_call, kernel, grid, block, args, shared_bytes, stream);
    if (status == cudaSuccess)
        record_launch(LaunchEntry::KernelHandle, kernel, grid, block, shared_bytes, stream, false,
                      args, nullptr);
    return status;
}

extern "C" cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block,
                                               void** args, size_t shared_bytes,
                                               cudaStream_t stream) {
    static auto* const real_call = RUNTIME_FUNCTION(__cudaLaunchKernel, "__cudaLaunchKernel_ptsz");
    cudaError_t status = call_runtime(real_call, kernel, grid, block, args, shared_bytes, stream);
    if (status == cudaSuccess)
        record_launch(LaunchEntry::KernelHandle, kernel, grid, block, shared_bytes, stream, true,
                      args, nullptr);
    return status;
}

namespace {

using LaunchFunction = decltype(cudaLaunchKernel);
using LaunchExtendedFunction = decltype(cudaLaunchKernelExC);

cudaError_t launch_and_record(LaunchFunction* real_call, LaunchEntry entry, bool per_thread_stream,
                              const void* function, dim3 grid, dim3 block, void** args,
                              size_t shared_bytes, cudaStream_t stream) {
    cudaError_t status = call_runtime(real_call, function, grid, block, args, shared_bytes, stream);
    if (status == cudaSuccess)
        record_launch(entry, function, grid, block, shared_bytes, stream, per_thread_stream, args,
                      nullptr);
    return status;
}

cudaError_t launch_extended_and_record(LaunchExtendedFunction* real_call, bool per_thread_stream,
                                       const cudaLaunchConfig_t* config, const void* function,
                                       void** args) {
    cudaError_t status = call_runtime(real_call, config, function, args);
    if (status == cudaSuccess && config)
        record_launch(LaunchEntry::Extended, function, config->gridDim, config->blockDim,
                      config->dynamicSmemBytes, config->stream, per_thread_stream, args, config);
    return status;
}

}  // namespace

extern "C" cudaError_t cudaLaunchKernel(const void* function, dim3 grid, dim3 block, void** args,
                                        size_t shared_bytes, cudaStream_t stream) {
    static auto* const real_call = real_function<LaunchFunction>("cudaLaunchKernel");
    return launch_and_record(real_call, LaunchEntry::Function, false, function, grid, block,
                             args, shared_bytes, stream);
}

extern "C" cudaError_t cudaLaunchKernel_ptsz(const void* function, dim3 grid, dim3 block,
                                             void** args, size_t shared_bytes,
                                             cudaStream_t stream) {
    static auto* const real_call = real_function<LaunchFunction>("cudaLaunchKernel_ptsz");
    return launch_and_record(real_call, LaunchEntry::Function, true, function, grid, block,
                             args, shared_bytes, stream);
}

extern "C" cudaError_t cudaLaunchCooperativeKernel(const void* function, dim3 grid, dim3 block,
                                                   void** args, size_t shared_bytes,
                                                   cudaStream_t stream) {
    static auto* const real_call = real_function<LaunchFunction>("cudaLaunchCooperativeKernel");
    return launch_and_record(real_call, LaunchEntry::Cooperative, false, function,
                             grid, block, args, shared_bytes, stream);
}

extern "C" cudaError_t cudaLaunchCooperativeKernel_ptsz(const void* function, dim3 grid, dim3 block,
                                                        void** args, size_t shared_bytes,
                                                        cudaStream_t stream) {
    static auto* const real_call =
        real_function<LaunchFunction>("cudaLaunchCooperativeKernel_ptsz");
    return launch_and_record(real_call, LaunchEntry::Cooperative, true, function,
                             grid, block, args, shared_bytes, stream);
}

extern "C" cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* function,
                                           void** args) {
    static auto* const real_call = real_function<LaunchExtendedFunction>("cudaLaunchKernelExC");
    return launch_extended_and_record(real_call, false, config, function, args);
}

extern "C" cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config,
                                                const void* function, void** args) {
    static auto* const real_call =
        real_function<LaunchExtendedFunction>("cudaLaunchKernelExC_ptsz");
    return launch_extended_and_record(real_call, true, config, function, args);
}

// ---- synchronizations ----------------------------------------------------------------

extern "C" cudaError_t cudaDeviceSynchronize(void) {
    static auto* const real_call = RUNTIME_FUNCTION(cudaDeviceSynchronize, "cudaDeviceSynchronize");
    end_segment("cudaDeviceSynchronize");
    return call_runtime(real_call);
}

extern "C" cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
    REPLAY_THEN_CALL(cudaStreamSynchronize, "cudaStreamSynchronize", stream);
}

extern "C" cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) {
    REPLAY_THEN_CALL(cudaStreamSynchronize, "cudaStreamSynchronize_ptsz", stream);
}

extern "C" cudaError_t cudaEventSynchronize(cudaEvent_t event) {
    REPLAY_THEN_CALL(cudaEventSynchronize, "cudaEventSynchronize", event);
}

// ---- copies and memsets ----------------------------------------------------------------

extern "C" cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
    REPLAY_THEN_CALL(cudaMemcpy, "cudaMemcpy", dst, src, count, kind);
}

extern "C" cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t count,
                                       cudaMemcpyKind kind) {
    REPLAY_THEN_CALL(cudaMemcpy, "cudaMemcpy_ptds", dst, src, count, kind);
}

extern "C" cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count,
                                       cudaMemcpyKind kind, cudaStream_t stream) {
    REPLAY_THEN_CALL(cudaMemcpyAsync, "cudaMemcpyAsync", dst, src, count, kind, stream);
}

extern "C" cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t count,
                                            cudaMemcpyKind kind, cudaStream_t stream) {
    REPLAY_THEN_CALL(cudaMemcpyAsync, "cudaMemcpyAsync_ptsz", dst, src, count, kind, stream);
}

extern "C" cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch,
                                    size_t width, size_t height, cudaMemcpyKind kind) {
    REPLAY_THEN_CALL(cudaMemcpy2D, "cudaMemcpy2D", dst, dpitch, src, spitch, width, height, kind);
}

extern "C" cudaError_t cudaMemcpy2D_ptds(void* dst, size_t dpitch, const void* src, size_t spitch,
                                         size_t width, size_t height, cudaMemcpyKind kind) {
    REPLAY_THEN_CALL(cudaMemcpy2D, "cudaMemcpy2D_ptds", dst, dpitch, src, spitch, width, height,
                     kind);
}

extern "C" cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                                         size_t width, size_t height, cudaMemcpyKind kind,
                                         cudaStream_t stream) {
    REPLAY_THEN_CALL(cudaMemcpy2DAsync, "cudaMemcpy2DAsync", dst, dpitch, src, spitch, width,
                     height, kind, stream);
}

extern "C" cudaError_t cudaMemcpy2DAsync_ptsz(void* dst, size_t dpitch, const void* src,
                                              size_t spitch, size_t width, size_t height,
                                              cudaMemcpyKind kind, cudaStream_t stream) {
    REPLAY_THEN_CALL(cudaMemcpy2DAsync, "cudaMemcpy2DAsync_ptsz", dst, dpitch, src, spitch, width,
                     height, kind, stream);
}

extern "C" cudaError_t cudaMemcpy3D(const cudaMemcpy3DParms* parameters) {
    REPLAY_THEN_CALL(cudaMemcpy3D, "cudaMemcpy3D", parameters);
}

extern "C" cudaError_t cudaMemcpy3D_ptds(const cudaMemcpy3DParms* parameters) {
    REPLAY_THEN_CALL(cudaMemcpy3D, "cudaMemcpy3D_ptds", parameters);
}

extern "C" cudaError_t cudaMemcpy3DAsync(const cudaMemcpy3DParms* parameters, cudaStream_t stream) {
    REPLAY_THEN_CALL(cudaMemcpy3DAsync, "cudaMemcpy3DAsync", parameters, stream);
}

extern "C" cudaError_t cudaMemcpy3DAsync_ptsz(const cudaMemcpy3DParms* parameters,
                                              cudaStream_t stream) {
    REPLAY_THEN_CALL(cudaMemcpy3DAsync, "cudaMemcpy3DAsync_ptsz", parameters, stream);
}

extern "C" cudaError_t cudaMemcpyPeer(void* dst, int dst_device, const void* src, int src_device,
                                      size_t count) {
    REPLAY_THEN_CALL(cudaMemcpyPeer, "cudaMemcpyPeer", dst, dst_device, src, src_device, count);
}

extern "C" cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src,
                                           int src_device, size_t count, cudaStream_t stream) {
    REPLAY_THEN_CALL(cudaMemcpyPeerAsync, "cudaMemcpyPeerAsync", dst, dst_device, src, src_device,
                     count, stream);
}

extern "C" cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count,
                                          size_t offset, cudaMemcpyKind kind) {
    REPLAY_THEN_CALL(cudaMemcpyToSymbol, "cudaMemcpyToSymbol", symbol, src, count, offset, kind);
}

extern "C" cudaError_t cudaMemcpyToSymbol_ptds(const void* symbol, const void* src, size_t count,
                                               size_t offset, cudaMemcpyKind kind) {
    REPLAY_THEN_CALL(cudaMemcpyToSymbol, "cudaMemcpyToSymbol_ptds", symbol, src, count, offset,
                     kind);
}

extern "C" cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count,
                                            size_t offset, cudaMemcpyKind kind) {
    REPLAY_THEN_CALL(cudaMemcpyFromSymbol, "cudaMemcpyFromSymbol", dst, symbol, count, offset,
                     kind);
}

extern "C" cudaError_t cudaMemcpyFromSymbol_ptds(void* dst, const void* symbol, size_t count,
                                                 size_t offset, cudaMemcpyKind kind) {
    REPLAY_THEN_CALL(cudaMemcpyFromSymbol, "cudaMemcpyFromSymbol_ptds", dst, symbol, count, offset,
                     kind);
}

extern "C" cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count,
                                               size_t offset, cudaMemcpyKind kind,
                                               cudaStream_t stream) {
    REPLAY_THEN_CALL(cudaMemcpyToSymbolAsync, "cudaMemcpyToSymbolAsync", symbol, src, count, offset,
                     kind, stream);
}

extern "C" cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void* symbol, const void* src,
                                                    size_t count, size_t offset,
                                                    cudaMemcpyKind kind, cudaStream_t stream) {
    REPLAY_THEN_CALL(cudaMemcpyToSymbolAsync, "cudaMemcpyToSymbolAsync_ptsz", symbol, src, count,
                     offset, kind, stream);
}

extern "C" cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count,
                                                 size_t offset, cudaMemcpyKind kind,
                                                 cudaStream_t stream) {
    REPLAY_THEN_CALL(cudaMemcpyFromSymbolAsync, "cudaMemcpyFromSymbolAsync", dst, symbol, count,
                     offset, kind, stream);
}

extern "C" cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void* dst, const void* symbol, size_t count,
                                                      size_t offset, cudaMemcpyKind kind,
                                                      cudaStream_t stream) {
    REPLAY_THEN_CALL(cudaMemcpyFromSymbolAsync, "cudaMemcpyFromSymbolAsync_ptsz", dst, symbol,
                     count, offset, kind, stream);
}

extern "C" cudaError_t cudaMemset(void* pointer, int value, size_t count) {
    REPLAY_THEN_CALL(cudaMemset, "cudaMemset", pointer, value, count);
}

extern "C" cudaError_t cudaMemset_ptds(void* pointer, int value, size_t count) {
    REPLAY_THEN_CALL(cudaMemset, "cudaMemset_ptds", pointer, value, count);
}

extern "C" cudaError_t cudaMemsetAsync(void* pointer, int value, size_t count,
                                       cudaStream_t stream) {
    REPLAY_THEN_CALL(cudaMemsetAsync, "cudaMemsetAsync", pointer, value, count, stream);
}

extern "C" cudaError_t cudaMemsetAsync_ptsz(void* pointer, int value, size_t count,
                                            cudaStream_t stream) {
    REPLAY_THEN_CALL(cudaMemsetAsync, "cudaMemsetAsync_ptsz", pointer, value, count, stream);
}

extern "C" cudaError_t cudaMemset2D(void* pointer, size_t pitch, int value, size_t width,
                                    size_t height) {
    REPLAY_THEN_CALL(cudaMemset2D, "cudaMemset2D", pointer, pitch, value, width, height);
}

extern "C" cudaError_t cudaMemset2D_ptds(void* pointer, size_t pitch, int value, size_t width,
                                         size_t height) {
    REPLAY_THEN_CALL(cudaMemset2D, "cudaMemset2D_ptds", pointer, pitch, value, width, height);
}

extern "C" cudaError_t cudaMemset2DAsync(void* pointer, size_t pitch, int value, size_t width,
                                         size_t height, cudaStream_t stream) {
    REPLAY_THEN_CALL(cudaMemset2DAsync, "cudaMemset2DAsync", pointer, pitch, value, width, height,
                     stream);
}

extern "C" cudaError_t cudaMemset2DAsync_ptsz(void* pointer, size_t pitch, int value, size_t width,
                                              size_t height, cudaStream_t stream) {
    REPLAY_THEN_CALL(cudaMemset2DAsync, "cudaMemset2DAsync_ptsz", pointer, pitch, value, width,
                     height, stream);
}

// ---- frees -------------------------------------------------------------------------------

extern "C" cudaError_t cudaFree(void* pointer) {
    REPLAY_THEN_CALL(cudaFree, "cudaFree", pointer);
}

extern "C" cudaError_t cudaFreeHost(void* pointer) {
    REPLAY_THEN_CALL(cudaFreeHost, "cudaFreeHost", pointer);
}

extern "C" cudaError_t cudaFreeAsync(void* pointer, cudaStream_t stream) {
    REPLAY_THEN_CALL(cudaFreeAsync, "cudaFreeAsync", pointer, stream);
}

extern "C" cudaError_t cudaFreeAsync_ptsz(void* pointer, cudaStream_t stream) {
    REPLAY_THEN_CALL(cudaFreeAsync, "cudaFreeAsync_ptsz", pointer, stream);
}

// ---- the program's own graphs ----------------------------------------------------------

namespace {

cudaError_t count_capture(cudaError_t status) {
    if (status == cudaSuccess) ++program_captures;
    return status;
}

cudaError_t uncount_capture(cudaError_t status) {
    int open = program_captures.load();
    while (open > 0 && !program_captures.compare_exchange_weak(open, open - 1)) {
    }
    return status;
}

}  // namespace

extern "C" cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
    static auto* const real_call =
        RUNTIME_FUNCTION(cudaStreamBeginCapture, "cudaStreamBeginCapture");
    end_segment("cudaStreamBeginCapture");
    return count_capture(call_runtime(real_call, stream, mode));
}

extern "C" cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream,
                                                   cudaStreamCaptureMode mode) {
    static auto* const real_call =
        RUNTIME_FUNCTION(cudaStreamBeginCapture, "cudaStreamBeginCapture_ptsz");
    end_segment("cudaStreamBeginCapture");
    return count_capture(call_runtime(real_call, stream, mode));
}

extern "C" cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph,
                                                     const cudaGraphNode_t* dependencies,
                                                     const cudaGraphEdgeData* edges, size_t count,
                                                     cudaStreamCaptureMode mode) {
    static auto* const real_call =
        RUNTIME_FUNCTION(cudaStreamBeginCaptureToGraph, "cudaStreamBeginCaptureToGraph");
    end_segment("cudaStreamBeginCaptureToGraph");
    return count_capture(call_runtime(real_call, stream, graph, dependencies, edges, count, mode));
}

extern "C" cudaError_t cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t stream, cudaGraph_t graph,
                                                          const cudaGraphNode_t* dependencies,
                                                          const cudaGraphEdgeData* edges,
                                                          size_t count,
                                                          cudaStreamCaptureMode mode) {
    static auto* const real_call =
        RUNTIME_FUNCTION(cudaStreamBeginCaptureToGraph, "cudaStreamBeginCaptureToGraph_ptsz");
    end_segment("cudaStreamBeginCaptureToGraph");
    return count_capture(call_runtime(real_call, stream, graph, dependencies, edges, count, mode));
}

// The segment ending here holds the captured launches: it is reported, not replayed.
extern "C" cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
    static auto* const real_call = RUNTIME_FUNCTION(cudaStreamEndCapture, "cudaStreamEndCapture");
    end_segment("cudaStreamEndCapture");
    return uncount_capture(call_runtime(real_call, stream, graph));
}

extern "C" cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t* graph) {
    static auto* const real_call =
        RUNTIME_FUNCTION(cudaStreamEndCapture, "cudaStreamEndCapture_ptsz");
    end_segment("cudaStreamEndCapture");
    return uncount_capture(call_runtime(real_call, stream, graph));
}

extern "C" cudaError_t cudaGraphLaunch(cudaGraphExec_t graph, cudaStream_t stream) {
    REPLAY_THEN_CALL(cudaGraphLaunch, "cudaGraphLaunch", graph, stream);
}

extern "C" cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graph, cudaStream_t stream) {
    REPLAY_THEN_CALL(cudaGraphLaunch, "cudaGraphLaunch_ptsz", graph, stream);
}

// ---- reset -----------------------------------------------------------------------------

extern "C" cudaError_t cudaDeviceReset(void) {
    static auto* const real_call = RUNTIME_FUNCTION(cudaDeviceReset, "cudaDeviceReset");
    end_segment("cudaDeviceReset");
    cudaError_t status = call_runtime(real_call);
    if (settings().enabled) {
        // The reset destroyed the harness's stream and events on this device.
        std::lock_guard<std::mutex> hold(state().lock);
        int device = 0;
        HarnessScope scope;
        cudaGetDevice(&device);
        state().resources_by_device.erase(device);
    }
    return status;
}
