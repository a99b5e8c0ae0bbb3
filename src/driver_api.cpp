// Driver entry points, resolved once (see driver_api.h).
#include "src/driver_api.h"

#include <mutex>

namespace ggemm {
namespace {

// The entry point `name` at ABI `version` (the CUDA release that introduced that signature), or
// null; *error and *query say why not.
void* resolve(const char* name, int version, cudaError_t* error, cudaDriverEntryPointQueryResult* query) {
    void* function = nullptr;
    *error = cudaGetDriverEntryPointByVersion(name, &function, version, cudaEnableDefault, query);
    if (*error != cudaSuccess) {
        cudaGetLastError();  // not the caller's error: clear the runtime's last-error slot
        return nullptr;
    }
    return *query == cudaDriverEntryPointSuccess ? function : nullptr;
}

template <class Pfn>
Pfn resolve_as(const char* name, int version) {
    cudaError_t error;
    cudaDriverEntryPointQueryResult query;
    return reinterpret_cast<Pfn>(resolve(name, version, &error, &query));
}

}  // namespace

const DriverApi& driver_api() noexcept {
    static std::once_flag once;
    static DriverApi api;
    std::call_once(once, [] {
        api.encode_tiled = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(
            resolve("cuTensorMapEncodeTiled", 12000, &api.encode_error, &api.encode_query));
        api.launch_kernel_ex = resolve_as<PFN_cuLaunchKernelEx_v11060>("cuLaunchKernelEx", 11060);
        api.ctx_get_current = resolve_as<PFN_cuCtxGetCurrent_v4000>("cuCtxGetCurrent", 4000);
        api.ctx_get_device = resolve_as<PFN_cuCtxGetDevice_v2000>("cuCtxGetDevice", 2000);
        api.device_get = resolve_as<PFN_cuDeviceGet_v2000>("cuDeviceGet", 2000);
        api.pointer_get_attributes = resolve_as<PFN_cuPointerGetAttributes_v7000>("cuPointerGetAttributes", 7000);
    });
    return api;
}

cudaError_t ensure_current_context(int device) noexcept {
    const PFN_cuCtxGetCurrent_v4000 get_current = driver_api().ctx_get_current;
    CUcontext context = nullptr;
    if (get_current != nullptr && get_current(&context) == CUDA_SUCCESS && context != nullptr) return cudaSuccess;
    const cudaError_t error = cudaSetDevice(device);
    if (error != cudaSuccess) cudaGetLastError();
    return error;
}

}  // namespace ggemm
