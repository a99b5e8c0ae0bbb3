// Strict host-side checks of offsets and per-expert weight pointers, for callers who can
// afford to copy them to the host. The execute path never reads them; the kernel guards
// itself and reports through the device status word.
#pragma once

#include <cstdint>

#include "ggemm.h"
#include "src/pointer_oracle.h"

namespace ggemm {

ggemm_status_t check_offsets(const int32_t* host_offsets, int32_t num_experts, int64_t m) noexcept;

// `oracle` is asked about each entry unless device is GGEMM_DEVICE_ANY.
ggemm_status_t check_weight_pointers(const uint64_t* host_ptrs, int32_t num_experts, int32_t device,
                                     const PointerOracle& oracle) noexcept;

}  // namespace ggemm
