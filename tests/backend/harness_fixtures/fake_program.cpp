// A CUDA program as nvcc compiles it, for the fake runtime: kernels are host
// functions, launched through __cudaGetKernel / __cudaLaunchKernel like the
// <<<>>> stubs, or through the launch API by hand. Its calls, in order:
//   cudaMemcpy (no launch before it), 4 launches on 2 streams,
//   cudaDeviceSynchronize, a cooperative and a plain launch, cudaMemcpy,
//   a launch of a kernel the runtime cannot describe, cudaStreamSynchronize,
//   a launch inside its own stream capture, one launch pending at exit.
// After each launch it changes the variables the argument array points to:
// a replay must pass the bytes of the launch, not the variables' new values.

#include <cuda_runtime_api.h>

#include <cstdio>

extern "C" cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* host_function);
extern "C" cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args,
                                          size_t shared_bytes, cudaStream_t stream);
extern "C" void fakeRegisterKernel(const void* function, const char* name, int parameters,
                                   const size_t* sizes);

// The host functions that stand for the kernels.
void fill(int*, int) {}
void axpy(float*, float*, int) {}
void opaque(int*) {}

int main() {
    const size_t fill_sizes[] = {sizeof(int*), sizeof(int)};
    const size_t axpy_sizes[] = {sizeof(float*), sizeof(float*), sizeof(int)};
    const size_t opaque_sizes[] = {sizeof(int*)};
    fakeRegisterKernel((const void*)fill, "fill", 2, fill_sizes);
    fakeRegisterKernel((const void*)axpy, "axpy", 3, axpy_sizes);
    fakeRegisterKernel((const void*)opaque, "opaque", -1, opaque_sizes);

    int host[4] = {1, 2, 3, 4};
    int* a = nullptr;
    float* x = nullptr;
    float* y = nullptr;
    cudaMalloc((void**)&a, sizeof host);
    cudaMalloc((void**)&x, 16);
    cudaMalloc((void**)&y, 16);
    cudaMemcpy(a, host, sizeof host, cudaMemcpyHostToDevice);
    cudaStream_t side = nullptr;
    cudaStreamCreate(&side);

    static cudaKernel_t fill_handle = nullptr;
    static cudaKernel_t axpy_handle = nullptr;
    __cudaGetKernel(&fill_handle, (const void*)fill);
    __cudaGetKernel(&axpy_handle, (const void*)axpy);

    int value = 7;
    int n = 4;
    void* fill_args[] = {&a, &value};
    void* axpy_args[] = {&x, &y, &n};
    __cudaLaunchKernel(fill_handle, dim3(4), dim3(32), fill_args, 0, nullptr);
    __cudaLaunchKernel(axpy_handle, dim3(2), dim3(64), axpy_args, 0, nullptr);
    value = 8;
    n = 5;
    __cudaLaunchKernel(fill_handle, dim3(4), dim3(32), fill_args, 0, side);
    __cudaLaunchKernel(axpy_handle, dim3(2), dim3(64), axpy_args, 0, side);
    value = 99;
    n = 99;
    cudaDeviceSynchronize();

    cudaLaunchCooperativeKernel((const void*)fill, dim3(1), dim3(32), fill_args, 0, nullptr);
    cudaLaunchKernel((const void*)axpy, dim3(1), dim3(32), axpy_args, 0, nullptr);
    value = 0;
    n = 0;
    int result[4] = {0, 0, 0, 0};
    cudaMemcpy(result, a, sizeof result, cudaMemcpyDeviceToHost);

    void* opaque_args[] = {&a};
    cudaLaunchKernel((const void*)opaque, dim3(1), dim3(1), opaque_args, 0, side);
    cudaStreamSynchronize(side);

    std::printf("result %d %d %d %d\n", result[0], result[1], result[2], result[3]);
    std::printf("last error %d\n", (int)cudaGetLastError());

    value = 42;
    cudaGraph_t graph = nullptr;
    cudaStreamBeginCapture(side, cudaStreamCaptureModeGlobal);
    __cudaLaunchKernel(fill_handle, dim3(1), dim3(1), fill_args, 0, side);
    cudaStreamEndCapture(side, &graph);
    cudaGraphDestroy(graph);

    value = 0;
    __cudaLaunchKernel(fill_handle, dim3(1), dim3(1), fill_args, 0, nullptr);
    value = 5;
    return 0;
}
