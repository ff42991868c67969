// A stand-in for libcudart.so.13, to test the launch timer without a GPU.
//
// It implements what the timer and fake_program.cpp call, with the real
// types (cuda_runtime_api.h). Kernels do nothing; each launch writes a line to
// the file named by FAKE_CUDART_LOG:
//     <how> <entry> <kernel> <argument bytes in hex>
// how: "launch" (issued), "capture" (recorded into a stream capture) or
// "graph" (run by a graph launch); entry: the API that launched it (handle,
// function, cooperative, extended). A clock advances 2 us per launch and 1 us
// per kernel of a graph launch; events read it.
// Built with a version script that puts every symbol in version
// libcudart.so.13, as the real library does.

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

struct Kernel;

struct CUkern_st {
    Kernel* kernel;
};
struct CUstream_st {
    int id;
};
struct CUevent_st {
    double time_us;
};

struct Kernel {
    const void* function;
    std::string name;
    std::vector<size_t> parameter_sizes;
    bool describable;
    CUkern_st handle;
};

struct Node {
    std::string entry;
    const Kernel* kernel;
    std::string argument_hex;
};

namespace {

std::vector<std::unique_ptr<Kernel>> kernels;
double clock_us = 0.0;
thread_local cudaError_t last_error = cudaSuccess;
cudaStream_t capturing_stream = nullptr;
bool capturing = false;
std::vector<Node> captured;

cudaError_t fail(cudaError_t error) {
    last_error = error;
    return error;
}

Kernel* kernel_of(const void* function) {
    for (auto& kernel : kernels)
        if (kernel->function == function) return kernel.get();
    return nullptr;
}

void log_line(const std::string& how, const Node& node) {
    const char* path = std::getenv("FAKE_CUDART_LOG");
    if (!path) return;
    if (std::FILE* log = std::fopen(path, "a")) {
        std::fprintf(log, "%s %s %s %s\n", how.c_str(), node.entry.c_str(),
                     node.kernel->name.c_str(), node.argument_hex.c_str());
        std::fclose(log);
    }
}

cudaError_t launch(const char* entry, const Kernel* kernel, void** args, cudaStream_t stream) {
    if (!kernel) return fail(cudaErrorInvalidDeviceFunction);
    Node node{entry, kernel, ""};
    for (size_t i = 0; i < kernel->parameter_sizes.size(); ++i) {
        const auto* bytes = static_cast<const unsigned char*>(args[i]);
        for (size_t b = 0; b < kernel->parameter_sizes[i]; ++b) {
            char hex[3];
            std::snprintf(hex, sizeof hex, "%02x", bytes[b]);
            node.argument_hex += hex;
        }
        if (i + 1 < kernel->parameter_sizes.size()) node.argument_hex += ":";
    }
    if (capturing && stream == capturing_stream) {
        captured.push_back(node);
        log_line("capture", node);
    } else {
        clock_us += 2.0;
        log_line("launch", node);
    }
    return cudaSuccess;
}

}  // namespace

struct CUgraph_st {
    std::vector<Node> nodes;
};
struct CUgraphExec_st {
    std::vector<Node> nodes;
};

extern "C" {

// Stands for __cudaRegisterFunction plus the parameter table of the fatbinary.
// `parameters` < 0: the runtime cannot describe the kernel's parameters.
void fakeRegisterKernel(const void* function, const char* name, int parameters,
                        const size_t* sizes) {
    auto kernel = std::make_unique<Kernel>();
    kernel->function = function;
    kernel->name = name;
    kernel->describable = parameters >= 0;
    int count = parameters < 0 ? -parameters : parameters;
    kernel->parameter_sizes.assign(sizes, sizes + count);
    kernel->handle.kernel = kernel.get();
    kernels.push_back(std::move(kernel));
}

cudaError_t __cudaGetKernel(cudaKernel_t* handle, const void* function) {
    Kernel* kernel = kernel_of(function);
    if (!kernel) return fail(cudaErrorInvalidDeviceFunction);
    *handle = &kernel->handle;
    return cudaSuccess;
}

cudaError_t __cudaLaunchKernel(cudaKernel_t handle, dim3, dim3, void** args, size_t,
                               cudaStream_t stream) {
    return launch("handle", handle ? handle->kernel : nullptr, args, stream);
}

cudaError_t cudaLaunchKernel(const void* function, dim3, dim3, void** args, size_t,
                             cudaStream_t stream) {
    return launch("function", kernel_of(function), args, stream);
}

cudaError_t cudaLaunchCooperativeKernel(const void* function, dim3, dim3, void** args, size_t,
                                        cudaStream_t stream) {
    return launch("cooperative", kernel_of(function), args, stream);
}

cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* function,
                                void** args) {
    return launch("extended", kernel_of(function), args, config->stream);
}

cudaError_t cudaFuncGetName(const char** name, const void* function) {
    Kernel* kernel = kernel_of(function);
    if (!kernel) return fail(cudaErrorInvalidDeviceFunction);
    *name = kernel->name.c_str();
    return cudaSuccess;
}

cudaError_t cudaFuncGetParamInfo(const void* function, size_t index, size_t* offset, size_t* size) {
    Kernel* kernel = kernel_of(function);
    if (!kernel) return fail(cudaErrorInvalidDeviceFunction);
    if (!kernel->describable) return fail(cudaErrorNotSupported);
    if (index >= kernel->parameter_sizes.size()) return fail(cudaErrorInvalidValue);
    *offset = 0;
    for (size_t i = 0; i < index; ++i) *offset += kernel->parameter_sizes[i];
    *size = kernel->parameter_sizes[index];
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
    cudaError_t error = last_error;
    last_error = cudaSuccess;
    return error;
}

cudaError_t cudaPeekAtLastError(void) { return last_error; }

const char* cudaGetErrorName(cudaError_t error) {
    switch (error) {
        case cudaSuccess: return "cudaSuccess";
        case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
        case cudaErrorInvalidDeviceFunction: return "cudaErrorInvalidDeviceFunction";
        case cudaErrorNotSupported: return "cudaErrorNotSupported";
        default: return "cudaErrorUnknown";
    }
}

cudaError_t cudaMalloc(void** pointer, size_t size) {
    *pointer = std::malloc(size);
    return cudaSuccess;
}

cudaError_t cudaFree(void* pointer) {
    std::free(pointer);
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind) {
    std::memcpy(dst, src, count);
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
    static int next_id = 1;
    *stream = new CUstream_st{next_id++};
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int) {
    return cudaStreamCreate(stream);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
    delete stream;
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
    *event = new CUevent_st{0.0};
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
    delete event;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t) {
    event->time_us = clock_us;
    return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float* milliseconds, cudaEvent_t start, cudaEvent_t stop) {
    *milliseconds = static_cast<float>((stop->time_us - start->time_us) / 1000.0);
    return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode) {
    if (capturing) return fail(cudaErrorInvalidValue);
    capturing = true;
    capturing_stream = stream;
    captured.clear();
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
    if (!capturing || stream != capturing_stream) return fail(cudaErrorInvalidValue);
    capturing = false;
    *graph = new CUgraph_st{captured};
    captured.clear();
    return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
    *status = capturing && stream == capturing_stream ? cudaStreamCaptureStatusActive
                                                      : cudaStreamCaptureStatusNone;
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* executable, cudaGraph_t graph,
                                 unsigned long long) {
    *executable = new CUgraphExec_st{graph->nodes};
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t executable, cudaStream_t) {
    for (const Node& node : executable->nodes) {
        clock_us += 1.0;
        log_line("graph", node);
    }
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t executable) {
    delete executable;
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
    delete graph;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
    *device = 0;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
    return device == 0 ? cudaSuccess : fail(cudaErrorInvalidValue);
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* properties, int) {
    std::memset(properties, 0, sizeof *properties);
    std::strcpy(properties->name, "Fake \"GPU\" \\ 1");
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attribute, int) {
    switch (attribute) {
        case cudaDevAttrMultiProcessorCount: *value = 132; break;
        case cudaDevAttrComputeCapabilityMajor: *value = 9; break;
        case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
        default: return fail(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* version) {
    *version = 13000;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* version) {
    *version = 13000;
    return cudaSuccess;
}

}  // extern "C"
