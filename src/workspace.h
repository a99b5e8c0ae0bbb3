// Layout of the caller-provided device workspace. One workspace per launch in flight.
//
//   [0, 128)                    tile counter of the dynamic scheduler, 64-bit (zeroed in-stream
//                               when that scheduler runs; reserved in discrete mode otherwise)
//   [128, 128 + 128 * L)        discrete mode: one CUtensorMap per expert, built on the device
//   [128 + 128 * L, + 4 * L)    discrete mode: one status word per expert, written by the map
//                               builder (0: usable), rounded up to a multiple of 128 bytes
//   then, when K is split       the arrival counters (2 per tile, zeroed in-stream with the
//   (kernels/common/split_k.h)  tile counter's line every call), then the fp32 partial tiles
//   then, for dGLU only:        ceil(N / 64) x M fp32 partial sums of d_prob, one per row and
//   (never with a split)        64-column block of R (zeroed in-stream before every launch), so
//                               this part grows with the call's M
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/common/contract.h"
#include "kernels/common/split_k.h"

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

// Rows a split plan's partials have room for: its capacity, at most kSplitRowLimit (larger
// calls run unsplit).
constexpr int64_t split_rows(int64_t m_capacity) {
    return m_capacity < kSplitRowLimit ? m_capacity : kSplitRowLimit;
}

// Where the split-K counters start: after the tile counter's line and the discrete-mode maps.
constexpr uint64_t workspace_split_offset(int32_t weight_mode, int32_t num_experts) {
    return weight_mode == kDiscrete ? workspace_bytes(kDiscrete, kStatic, num_experts) : kWorkspaceCounterBytes;
}

// The whole workspace of a forward plan that splits K `splits` ways (<= 1: not at all) with
// room for `rows` rows of N columns.
constexpr uint64_t forward_workspace_bytes(int32_t weight_mode, int32_t scheduler, int32_t num_experts,
                                           int32_t splits, int64_t rows, int64_t n) {
    return splits <= 1 ? workspace_bytes(weight_mode, scheduler, num_experts)
                       : workspace_split_offset(weight_mode, num_experts) + split_counter_bytes(splits, rows, n) +
                             split_partial_bytes(splits, rows, n);
}

// dGLU's partial sums of d_prob: one per row and 64-column block of R (kernels/sm90/
// epilogue_sm90.cuh), after the fields above.
constexpr int64_t kGluPartialColumns = 64;
constexpr int64_t glu_partial_blocks(int64_t n) { return (n + kGluPartialColumns - 1) / kGluPartialColumns; }
constexpr uint64_t glu_partials_bytes(int64_t n, int64_t m) {
    const uint64_t bytes = sizeof(float) * static_cast<uint64_t>(glu_partial_blocks(n)) * static_cast<uint64_t>(m);
    return (bytes + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
}

// The workspace of a call of `m` rows: the plan's fields (a split plan's partials and counters
// included), and dGLU's partials for those rows (a plan never both splits K and fuses dGLU).
constexpr uint64_t call_workspace_bytes(int32_t weight_mode, int32_t scheduler, int32_t num_experts, int32_t splits,
                                        int64_t split_rows, int32_t glu_backward, int64_t n, int64_t m) {
    return forward_workspace_bytes(weight_mode, scheduler, num_experts, splits, split_rows, n) +
           (glu_backward ? glu_partials_bytes(n, m) : 0);
}

}  // namespace ggemm
