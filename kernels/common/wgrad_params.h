// What the host hands the weight-gradient kernel for one call, by value. Shared by src/ (host)
// and kernels/ (device); plain data only.
#pragma once

#include <cstdint>

#include "kernels/common/contract.h"

namespace ggemm {

// How the kernel writes a summed tile (WgradKernelArgs::store_path): straight from registers
// (every output mode), or staged in shared memory and stored with TMA through out_map (a dense
// output overwritten).
constexpr int32_t kWgradStoreRegisters = 0;
constexpr int32_t kWgradStoreTma = 1;

struct WgradKernelArgs {
    const int32_t* padded_offsets;    // L cumulative row ends (validated on the device)
    const float* alpha;               // L, or nullptr: every alpha is 1
    void* out;                        // dense output: L x P x Q of out_dtype; nullptr in pointer mode
    const uint64_t* out_ptrs;         // pointer mode: L pointers to P x Q; nullptr in dense mode
    unsigned long long* tile_counter; // dynamic scheduler: in the workspace, zeroed in-stream
    uint32_t* device_status;          // optional GGEMM_DEVICE_STATUS_* word, written whole by CTA 0
    int64_t m;                        // rows of X1 and X2 this call
    int32_t p;
    int32_t q;
    int32_t num_experts;
    int32_t out_dtype;
    int32_t output_mode;
    int32_t accumulate;
    int32_t scheduler;
    int32_t store_path;               // kWgradStoreRegisters or kWgradStoreTma
};

}  // namespace ggemm
