// Device queries through the CUDA runtime.
#include "src/device.h"

#include <cstdio>
#include <cuda_runtime_api.h>

#include "src/driver_api.h"
#include "src/error.h"

namespace ggemm {

int32_t arch_of(const DeviceInfo& device) noexcept {
    if (device.cc_major == 9 && device.cc_minor == 0) return 90;
    if (device.cc_major == 10 && device.cc_minor == 0) return 100;
    return 0;
}

namespace {

// CUDA encodes versions as 1000 * major + 10 * minor.
int version_major(int version) { return version / 1000; }
int version_minor(int version) { return version % 1000 / 10; }

}  // namespace

void describe_absence(cudaError_t counted, int count, int driver_version, int runtime_version,
                      char* text, std::size_t size) noexcept {
    if (counted == cudaSuccess && count <= 0) {
        std::snprintf(text, size, "the NVIDIA driver reports no CUDA device");
    } else if (counted == cudaErrorInsufficientDriver && driver_version == 0) {
        // The runtime reports a driver it could not load as an insufficient one.
        std::snprintf(text, size, "no NVIDIA driver was found (libcuda.so.1 could not be loaded)");
    } else if (counted == cudaErrorInsufficientDriver) {
        std::snprintf(text, size,
                      "the NVIDIA driver supports CUDA up to %d.%d, but this library's CUDA runtime "
                      "is %d.%d and needs a driver that supports it",
                      version_major(driver_version), version_minor(driver_version),
                      version_major(runtime_version), version_minor(runtime_version));
    } else if (counted == cudaErrorNoDevice) {
        std::snprintf(text, size, "no CUDA device was found (the NVIDIA driver is loaded but sees none)");
    } else {
        std::snprintf(text, size, "the CUDA runtime cannot use any device: %s (%s)",
                      cudaGetErrorName(counted), cudaGetErrorString(counted));
    }
}

ggemm_status_t query_device(int32_t ordinal, DeviceInfo* device) noexcept {
    *device = DeviceInfo{};
    int count = 0;
    const cudaError_t counted = cudaGetDeviceCount(&count);
    if (counted != cudaSuccess || count <= 0) {
        // cudaErrorNoDevice, cudaErrorInsufficientDriver, a stub libcuda, ...: all mean that
        // nothing can run here. Clear the error so it does not surface in the caller's code.
        cudaGetLastError();
        int driver_version = 0;
        int runtime_version = 0;
        if (cudaDriverGetVersion(&driver_version) != cudaSuccess) driver_version = 0;
        if (cudaRuntimeGetVersion(&runtime_version) != cudaSuccess) runtime_version = CUDART_VERSION;
        cudaGetLastError();
        describe_absence(counted, count, driver_version, runtime_version, device->absence_reason,
                         sizeof device->absence_reason);
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
    // The handle the driver names this device by: execute compares the current context's device
    // with it (src/execute.cpp, current_device).
    CUdevice handle = 0;
    const PFN_cuDeviceGet_v2000 device_get = driver_api().device_get;
    if (device_get != nullptr && device_get(&handle, ordinal) == CUDA_SUCCESS) device->driver_handle = handle;
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
