// Layout of the caller-provided device workspace. One workspace per launch in flight.
//
//   [0, 128)                    tile counter of the dynamic scheduler, 64-bit (zeroed in-stream
//                               when that scheduler runs; reserved in discrete mode otherwise)
//   [128, 128 + 128 * L)        discrete mode: one CUtensorMap per expert, built on the device
//   [128 + 128 * L, + 4 * L)    discrete mode: one status word per expert, written by the map
//                               builder (0: usable), rounded up to a multiple of 128 bytes
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/common/contract.h"

namespace ggemm {

// Bytes of one device-side tensor map (PTX ISA: tensormap is 128 bytes, 64-byte aligned).
constexpr std::size_t kTensorMapBytes = 128;

constexpr uint64_t kWorkspaceCounterBytes = 128;
constexpr uint64_t kWorkspaceAlignment = 128;  // tensor maps need 64 B; keep the counter on its own line

constexpr uint64_t workspace_maps_offset() { return kWorkspaceCounterBytes; }

constexpr uint64_t workspace_weight_status_offset(int32_t num_experts) {
    return workspace_maps_offset() + kTensorMapBytes * static_cast<uint64_t>(num_experts);
}

constexpr uint64_t workspace_bytes(int32_t weight_mode, int32_t scheduler, int32_t num_experts) {
    const uint64_t status_bytes = sizeof(uint32_t) * static_cast<uint64_t>(num_experts);
    return (weight_mode == kDiscrete)
               ? workspace_weight_status_offset(num_experts) +
                     (status_bytes + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment
               : (scheduler == kDynamic ? kWorkspaceCounterBytes : 0);
}

}  // namespace ggemm
