// What the host side needs to know about a CUDA device, as plain data: validation and
// planning take a DeviceInfo, so tests describe fake devices without a GPU.
#pragma once

#include <cstdint>

#include "ggemm.h"

namespace ggemm {

struct DeviceInfo {
    bool present = false;             // the runtime found at least one usable device
    const char* absence_reason = "";  // the runtime's words when !present (static storage)
    int32_t count = 0;                // devices visible to this process
    int32_t ordinal = -1;             // the device described below (valid when 0 <= ordinal < count)
    int32_t cc_major = 0;
    int32_t cc_minor = 0;
    int32_t sm_count = 0;
    int32_t max_smem_optin = 0;       // dynamic shared memory one block may opt into, bytes
    char name[256] = {};  // cudaDeviceProp::name is 256 bytes
};

// 90 for compute capability 9.0 (sm_90a code), 100 for 10.0 (sm_100a code runs only there),
// 0 for anything ggemm has no kernel for.
int32_t arch_of(const DeviceInfo& device) noexcept;

// Asks the CUDA runtime about device `ordinal`. "No device" and "no usable driver" are not
// failures here: they give present = false and the runtime's reason, for validation to refuse.
// An ordinal outside [0, count) leaves the properties unset. Fails (GGEMM_ERROR_CUDA) only
// when the runtime cannot answer about a device that exists.
ggemm_status_t query_device(int32_t ordinal, DeviceInfo* device) noexcept;

}  // namespace ggemm
