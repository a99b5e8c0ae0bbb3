// The device status word's offset bits (and the valid-row counts' bit), reported by one CTA of
// the grid (both kernels run this; the scheduler in every CTA skips the experts that bad offsets
// touch and clamps the counts, scheduler.h).
#pragma once

#include <cstdint>

#include "kernels/common/params.h"
#include "kernels/common/scheduler.h"

namespace ggemm {

// Called by kThreads threads of block 0 (the whole block, or one warp when kThreads is 32), with
// `thread` their index among them, once `offsets` (the shared-memory copy of padded_offsets) and
// `valid_rows` (the counts, or nullptr) are complete; `cta_status` is a shared word zeroed at
// barrier init. Dense weights: this CTA alone writes the word, whole, so execute need not clear
// it first. Discrete: execute cleared it and the map builder ORed in pointer bits.
template <int kThreads>
__device__ __forceinline__ void report_offsets(const int32_t* offsets, const int32_t* valid_rows, uint32_t* cta_status,
                                               const KernelArgs& args, int thread) {
    for (int g = thread; g < args.num_experts; g += kThreads) {
        const int64_t begin = g == 0 ? 0 : offsets[g - 1];
        uint32_t bits = offset_status(begin, offsets[g], args.m);
        if (valid_rows != nullptr) bits |= valid_rows_status(begin, offsets[g], valid_rows[g], args.m);
        if (bits != 0) atomicOr(cta_status, bits);
    }
    if constexpr (kThreads == 32) {
        __syncwarp();
    } else {
        __syncthreads();
    }
    if (thread == 0) {
        if (args.weight_mode == kDense) {
            *args.device_status = *cta_status;
        } else if (*cta_status != 0) {
            atomicOr(args.device_status, *cta_status);
        }
    }
}

}  // namespace ggemm
