// What the host side needs to know about a CUDA device, as plain data: validation and
// planning take a DeviceInfo, so tests describe fake devices without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cuda_runtime_api.h>

#include "ggemm.h"

namespace ggemm {

struct DeviceInfo {
    bool present = false;             // the runtime found at least one usable device
    char absence_reason[192] = {};    // why no device can be used, when !present
    int32_t count = 0;                // devices visible to this process
    int32_t ordinal = -1;             // the device described below (valid when 0 <= ordinal < count)
    int32_t driver_handle = -1;       // its CUdevice (cuDeviceGet), -1 when the driver did not say
    int32_t cc_major = 0;
    int32_t cc_minor = 0;
    int32_t sm_count = 0;
    int32_t max_smem_optin = 0;       // dynamic shared memory one block may opt into, bytes
    char name[256] = {};  // cudaDeviceProp::name is 256 bytes
};

// Why nothing can run here, in words that say what to fix: `counted` is what cudaGetDeviceCount
// returned (and `count` the devices it reported), `driver_version` what cudaDriverGetVersion
// gives (0: no driver was loaded) and `runtime_version` this library's CUDA runtime. The
// runtime's own text for a missing driver ("CUDA driver version is insufficient for CUDA
// runtime version") would send a user without a GPU off to upgrade a driver they do not have.
void describe_absence(cudaError_t counted, int count, int driver_version, int runtime_version,
                      char* text, std::size_t size) noexcept;

// 90 for compute capability 9.0 (sm_90a code), 100 for 10.0 (sm_100a code runs only there),
// 0 for anything ggemm has no kernel for.
int32_t arch_of(const DeviceInfo& device) noexcept;

// Asks the CUDA runtime about device `ordinal`. "No device" and "no usable driver" are not
// failures here: they give present = false and the reason (describe_absence), for validation
// to refuse.
// An ordinal outside [0, count) leaves the properties unset. Fails (GGEMM_ERROR_CUDA) only
// when the runtime cannot answer about a device that exists.
ggemm_status_t query_device(int32_t ordinal, DeviceInfo* device) noexcept;

}  // namespace ggemm
