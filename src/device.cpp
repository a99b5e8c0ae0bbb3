// Device queries through the CUDA runtime.
#include "src/device.h"

#include <cstdio>
#include <cuda_runtime_api.h>

#include "src/error.h"

namespace ggemm {

int32_t arch_of(const DeviceInfo& device) noexcept {
    if (device.cc_major == 9 && device.cc_minor == 0) return 90;
    if (device.cc_major == 10 && device.cc_minor == 0) return 100;
    return 0;
}

ggemm_status_t query_device(int32_t ordinal, DeviceInfo* device) noexcept {
    *device = DeviceInfo{};
    int count = 0;
    const cudaError_t counted = cudaGetDeviceCount(&count);
    if (counted != cudaSuccess) {
        // cudaErrorNoDevice, cudaErrorInsufficientDriver, a stub libcuda, ...: all mean that
        // nothing can run here. Clear the error so it does not surface in the caller's code.
        cudaGetLastError();
        device->absence_reason = cudaGetErrorString(counted);
        return GGEMM_SUCCESS;
    }
    if (count <= 0) {
        device->absence_reason = "cudaGetDeviceCount reports 0 devices";
        return GGEMM_SUCCESS;
    }
    device->present = true;
    device->count = count;
    device->ordinal = ordinal;
    if (ordinal < 0 || ordinal >= count) return GGEMM_SUCCESS;

    struct Query {
        cudaDeviceAttr attribute;
        int32_t* value;
        const char* what;
    };
    const Query queries[] = {
        {cudaDevAttrComputeCapabilityMajor, &device->cc_major, "compute capability major"},
        {cudaDevAttrComputeCapabilityMinor, &device->cc_minor, "compute capability minor"},
        {cudaDevAttrMultiProcessorCount, &device->sm_count, "multiprocessor count"},
        {cudaDevAttrMaxSharedMemoryPerBlockOptin, &device->max_smem_optin,
         "opt-in shared memory per block"},
    };
    for (const Query& query : queries) {
        int value = 0;
        const cudaError_t error = cudaDeviceGetAttribute(&value, query.attribute, ordinal);
        if (error != cudaSuccess) {
            cudaGetLastError();
            return fail(GGEMM_ERROR_CUDA, "cudaDeviceGetAttribute(%s, device %d) failed: %s (%s)",
                        query.what, ordinal, cudaGetErrorName(error), cudaGetErrorString(error));
        }
        *query.value = value;
    }
    cudaDeviceProp properties;
    if (cudaGetDeviceProperties(&properties, ordinal) == cudaSuccess) {
        std::snprintf(device->name, sizeof device->name, "%s", properties.name);
    } else {
        cudaGetLastError();  // the name is only for messages: go on without it
        std::snprintf(device->name, sizeof device->name, "unnamed device");
    }
    return GGEMM_SUCCESS;
}

}  // namespace ggemm
