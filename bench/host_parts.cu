// host/parts/*: what the runtime calls inside one ggemm_execute cost on their own, so the host
// time of host/execute/* can be read as a sum (src/execute.cpp makes these calls):
//
//   host/parts/get_device                cudaGetDevice (the wrong-device check when the current
//                                        context is not of the plan's device)
//   host/parts/context_device            cuCtxGetCurrent and cuCtxGetDevice (the same check when
//                                        one is: src/execute.cpp, current_device)
//   host/parts/pointer_attributes        cudaPointerGetAttributes on device memory (residency)
//   host/parts/driver_pointer_attributes cuPointerGetAttributes: memory type, device, managed and
//                                        the mapping's bounds in one call (what ggemm asks,
//                                        src/pointer_oracle.cpp)
//   host/parts/encode_tensor_map         cuTensorMapEncodeTiled of a 2-D bf16 map (the A map)
//   host/parts/launch/4B                 cudaLaunchKernelEx of an empty kernel, one int parameter
//   host/parts/launch/400B               the same with ggemm's parameters: two tensor maps and
//                                        KernelArgs (kernels/common/params.h)
//   host/parts/launch_plain/400B         cudaLaunchKernel (no attributes) of that kernel
//   host/parts/launch_driver/400B        cuLaunchKernelEx of that kernel, its CUfunction looked
//                                        up once (cudaGetFuncBySymbol)
//   host/parts/launch_driver_busy/400B   the same into a stream the GPU is still busy with (as
//                                        host/execute/* launches behind the GEMMs it queued)
//   host/parts/launch_driver_smem/400B   cuLaunchKernelEx of an empty kernel shaped like the
//                                        128 x 256 GEMM: 384 threads capped at 168 registers,
//                                        222208 B of dynamic shared memory (its opt-in raised once)
//   host/parts/launch_driver_smem_busy/400B  the same into a busy stream
//   host/parts/launch_driver_80us/400B   the same kernel made to run 80 us (one thread waits on
//                                        the global timer), so that launches queue behind pending
//                                        work of their own kind, as host/execute/*'s GEMMs do
//   host/parts/launch_kernel_handle_80us/400B  the same launched by its context-free CUkernel
//                                        (cudaGetKernel), the handle ggemm launches with
#include "bench/host_parts.h"

#include "bench/device_fill.h"

#include "kernels/common/params.h"  // sizeof(KernelArgs) only

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <exception>
#include <stdexcept>
#include <string>

namespace ggemm_bench {
namespace {

constexpr int kIterations = 4096;
constexpr int kDrainEvery = 64;  // launches queued before the stream is drained (untimed)
// With a busy stream: GPU work queued (untimed) ahead of each kDrainEvery launches, longer than
// the launches take on the host.
constexpr uint32_t kBusyNanoseconds = 1000000;

void check(cudaError_t error, const char* what) {
    if (error != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(error));
}

template <class T>
T driver_entry(const char* name, int version) {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult query{};
    check(cudaGetDriverEntryPointByVersion(name, &function, version, cudaEnableDefault, &query), name);
    if (query != cudaDriverEntryPointSuccess || function == nullptr) throw std::runtime_error(name);
    return reinterpret_cast<T>(function);
}

// A device allocation the pointer questions ask about, made once.
void* device_buffer() {
    static void* buffer = [] {
        void* p = nullptr;
        check(cudaMalloc(&p, 1 << 20), "cudaMalloc");
        return p;
    }();
    return buffer;
}

// The parameters of ggemm's kernels: two tensor maps and KernelArgs, by value.
struct KernelArgsBytes {
    alignas(8) unsigned char bytes[sizeof(ggemm::KernelArgs)];
};

// The dynamic shared memory of the 128 x 256 SM90 kernel (src/variants_sm90_wide.cu, its plan's
// description), above the 48 KB default: the launch carries an opt-in size.
constexpr int kGemmSmemBytes = 222208;

__global__ void empty_small(int) {}
__global__ void __launch_bounds__(384, 1)
    empty_gemm_shaped(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap, const KernelArgsBytes) {}

// About as long as host/execute/*'s GEMM on its 256 rows.
constexpr uint64_t kGemmShapedNanoseconds = 80000;

__device__ __forceinline__ uint64_t global_nanoseconds() {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void __launch_bounds__(384, 1)
    busy_gemm_shaped(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap, const KernelArgsBytes) {
    if (threadIdx.x != 0) return;
    const uint64_t start = global_nanoseconds();
    while (global_nanoseconds() - start < kGemmShapedNanoseconds) {
    }
}
__global__ void empty_large(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap,
                            const KernelArgsBytes) {}

void get_device(benchmark::State& state) {
    // With a context current, as on every call after a thread's first (without one the runtime
    // took about 1 us per call on an H200 machine).
    check(cudaFree(nullptr), "cudaFree(0)");
    int device = -1;
    for (auto _ : state) {
        cudaGetDevice(&device);
        benchmark::DoNotOptimize(device);
    }
}

void context_device(benchmark::State& state) {
    auto get_current = driver_entry<PFN_cuCtxGetCurrent_v4000>("cuCtxGetCurrent", 4000);
    auto get_device = driver_entry<PFN_cuCtxGetDevice_v2000>("cuCtxGetDevice", 2000);
    check(cudaFree(nullptr), "cudaFree(0)");  // a context is current from here on
    CUcontext context = nullptr;
    CUdevice device = -1;
    CUresult result = CUDA_SUCCESS;
    for (auto _ : state) {
        result = get_current(&context);
        if (result == CUDA_SUCCESS) result = get_device(&device);
        benchmark::DoNotOptimize(device);
    }
    if (result != CUDA_SUCCESS || context == nullptr) state.SkipWithError("cuCtxGetCurrent / cuCtxGetDevice");
}

void pointer_attributes(benchmark::State& state) {
    void* p = device_buffer();
    cudaPointerAttributes attributes{};
    for (auto _ : state) {
        cudaPointerGetAttributes(&attributes, p);
        benchmark::DoNotOptimize(attributes);
    }
    if (attributes.type != cudaMemoryTypeDevice) state.SkipWithError("not device memory");
}

void driver_pointer_attributes(benchmark::State& state) {
    void* p = device_buffer();
    auto get = driver_entry<PFN_cuPointerGetAttributes_v7000>("cuPointerGetAttributes", 7000);
    CUpointer_attribute which[5] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                    CU_POINTER_ATTRIBUTE_IS_MANAGED, CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR,
                                    CU_POINTER_ATTRIBUTE_MAPPING_SIZE};
    unsigned int type = 0;
    int ordinal = -1;
    unsigned int managed = 0;
    unsigned long long mapping_base = 0;
    unsigned long long mapping_size = 0;
    void* data[5] = {&type, &ordinal, &managed, &mapping_base, &mapping_size};
    CUresult result = CUDA_SUCCESS;
    for (auto _ : state) {
        result = get(5, which, data, reinterpret_cast<CUdeviceptr>(p));
        benchmark::DoNotOptimize(type);
    }
    if (result != CUDA_SUCCESS || type != CU_MEMORYTYPE_DEVICE) state.SkipWithError("cuPointerGetAttributes");
}

void encode_tensor_map(benchmark::State& state) {
    auto encode = driver_entry<PFN_cuTensorMapEncodeTiled_v12000>("cuTensorMapEncodeTiled", 12000);
    CUtensorMap map;
    cuuint64_t dims[2] = {7168, 32768};
    cuuint64_t strides[1] = {7168 * 2};
    cuuint32_t box[2] = {64, 128};
    cuuint32_t element_strides[2] = {1, 1};
    CUresult result = CUDA_SUCCESS;
    for (auto _ : state) {
        result = encode(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, device_buffer(), dims, strides, box,
                        element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
        benchmark::DoNotOptimize(map);
    }
    if (result != CUDA_SUCCESS) state.SkipWithError("cuTensorMapEncodeTiled");
}

// Times `launch(stream)` (true on success) on a stream of its own; every kDrainEvery launches
// the stream drains with the timing paused, so the launch queue never fills.
template <class Launch>
void time_launches(benchmark::State& state, Launch&& launch, bool busy = false) {
    cudaStream_t stream = nullptr;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    bool ok = true;
    int queued = 0;
    if (busy) ok &= gpu_busy_wait(kBusyNanoseconds, stream) == cudaSuccess;
    for (auto _ : state) {
        ok &= launch(stream);
        if (++queued == kDrainEvery) {
            state.PauseTiming();
            cudaStreamSynchronize(stream);
            if (busy) ok &= gpu_busy_wait(kBusyNanoseconds, stream) == cudaSuccess;
            state.ResumeTiming();
            queued = 0;
        }
    }
    if (cudaStreamSynchronize(stream) != cudaSuccess || !ok) state.SkipWithError("launch failed");
    cudaStreamDestroy(stream);
}

template <bool kLarge>
void launch(benchmark::State& state) {
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(132);
    config.blockDim = dim3(384);
    CUtensorMap map{};
    KernelArgsBytes args{};
    time_launches(state, [&](cudaStream_t stream) {
        config.stream = stream;
        return (kLarge ? cudaLaunchKernelEx(&config, empty_large, map, map, args)
                       : cudaLaunchKernelEx(&config, empty_small, 0)) == cudaSuccess;
    });
}

void launch_plain(benchmark::State& state) {
    CUtensorMap map{};
    KernelArgsBytes args{};
    void* params[] = {&map, &map, &args};
    time_launches(state, [&](cudaStream_t stream) {
        return cudaLaunchKernel(reinterpret_cast<const void*>(empty_large), dim3(132), dim3(384), params, 0,
                                stream) == cudaSuccess;
    });
}

template <bool kBusy, bool kGemmShaped = false, bool kRunsLong = false, bool kKernelHandle = false>
void launch_driver(benchmark::State& state) {
    auto launch_ex = driver_entry<PFN_cuLaunchKernelEx_v11060>("cuLaunchKernelEx", 11060);
    const void* kernel = kRunsLong     ? reinterpret_cast<const void*>(busy_gemm_shaped)
                         : kGemmShaped ? reinterpret_cast<const void*>(empty_gemm_shaped)
                                       : reinterpret_cast<const void*>(empty_large);
    if (kGemmShaped) {
        check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kGemmSmemBytes),
              "cudaFuncSetAttribute");
    }
    cudaFunction_t function = nullptr;
    if (kKernelHandle) {
        cudaKernel_t handle = nullptr;
        check(cudaGetKernel(&handle, kernel), "cudaGetKernel");
        function = reinterpret_cast<cudaFunction_t>(handle);  // cuLaunchKernelEx takes either
    } else {
        check(cudaGetFuncBySymbol(&function, kernel), "cudaGetFuncBySymbol");
    }
    CUlaunchConfig config = {};
    config.gridDimX = 132;
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = 384;
    config.blockDimY = config.blockDimZ = 1;
    config.sharedMemBytes = kGemmShaped ? kGemmSmemBytes : 0;
    CUtensorMap map{};
    KernelArgsBytes args{};
    void* params[] = {&map, &map, &args};
    time_launches(state, [&](cudaStream_t stream) {
        config.hStream = reinterpret_cast<CUstream>(stream);
        return launch_ex(&config, reinterpret_cast<CUfunction>(function), params, nullptr) == CUDA_SUCCESS;
    }, kBusy);
}

}  // namespace

void register_host_parts() {
    auto add = [](const char* name, void (*fn)(benchmark::State&)) {
        benchmark::RegisterBenchmark(name,
                                     [fn](benchmark::State& state) {
                                         try {
                                             fn(state);
                                         } catch (const std::exception& error) {
                                             state.SkipWithError(error.what());
                                         }
                                     })
            ->Iterations(kIterations)
            ->Unit(benchmark::kMicrosecond);
    };
    add("host/parts/get_device", get_device);
    add("host/parts/context_device", context_device);
    add("host/parts/pointer_attributes", pointer_attributes);
    add("host/parts/driver_pointer_attributes", driver_pointer_attributes);
    add("host/parts/encode_tensor_map", encode_tensor_map);
    add("host/parts/launch/4B", launch<false>);
    add("host/parts/launch/400B", launch<true>);
    add("host/parts/launch_plain/400B", launch_plain);
    add("host/parts/launch_driver/400B", launch_driver<false>);
    add("host/parts/launch_driver_smem/400B", launch_driver<false, true>);
    add("host/parts/launch_driver_smem_busy/400B", launch_driver<true, true>);
    add("host/parts/launch_driver_80us/400B", launch_driver<false, true, true>);
    add("host/parts/launch_kernel_handle_80us/400B", launch_driver<false, true, true, true>);
    add("host/parts/launch_driver_busy/400B", launch_driver<true>);
}

}  // namespace ggemm_bench
