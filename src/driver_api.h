// The CUDA driver functions ggemm calls directly, resolved once per process through the runtime
// (cudaGetDriverEntryPointByVersion): the library never links libcuda. Each one may be missing
// (no driver, or one too old); callers check for null and fall back to the runtime where the
// runtime has an equivalent. The driver calls are on the hot path of ggemm_execute because they
// are cheaper than the runtime's (bench host/parts/*).
#pragma once

#include <cudaTypedefs.h>  // the PFN_* types (no libcuda symbol)
#include <cuda_runtime_api.h>

namespace ggemm {

struct DriverApi {
    PFN_cuTensorMapEncodeTiled_v12000 encode_tiled = nullptr;
    PFN_cuLaunchKernelEx_v11060 launch_kernel_ex = nullptr;
    PFN_cuCtxGetCurrent_v4000 ctx_get_current = nullptr;
    PFN_cuCtxGetDevice_v2000 ctx_get_device = nullptr;
    PFN_cuDeviceGet_v2000 device_get = nullptr;
    PFN_cuPointerGetAttributes_v7000 pointer_get_attributes = nullptr;
    // Why encode_tiled is missing, for the error message: the runtime's error, or else the
    // query result (1: symbol not found, 2: driver too old).
    cudaError_t encode_error = cudaSuccess;
    cudaDriverEntryPointQueryResult encode_query = cudaDriverEntryPointSuccess;
};

// Resolved on first use, thread-safe.
const DriverApi& driver_api() noexcept;

// Driver calls act on the calling thread's current context, and a thread that has not called
// the runtime yet has none (cuTensorMapEncodeTiled then fails with CUDA_ERROR_INVALID_CONTEXT).
// When there is none, makes `device`'s primary context current the way the runtime would on
// its next call (cudaSetDevice; not cudaFree(0), which a global-mode stream capture on another
// thread forbids). One driver call when a context is current already.
cudaError_t ensure_current_context(int device) noexcept;

}  // namespace ggemm
