// The SM90 weight gradient's order of experts for its static deal (wgrad_schedule.h,
// WgradOrderKey): each expert's rows checked as ExpertRowCursor checks them, then the experts
// sorted by their row blocks, largest first. Run once per CTA by the producer warp before its
// first load; every CTA computes the same order from the same offsets.
#pragma once

#include <cstdint>

#include "kernels/common/scheduler.h"
#include "kernels/common/wgrad_schedule.h"

namespace ggemm {

namespace wgrad_order_detail {

constexpr unsigned kFullMask = 0xffffffffu;

// Each expert's key into keys[0, experts), counting blocks of kBlockRows rows. The high water of
// expert g (the largest usable offset among offsets[0, g-1)) is a running maximum: a warp scan
// over 32 experts at a time, carried from one group to the next. Returns whether every expert has
// the same row blocks.
template <int kBlockRows>
__device__ __forceinline__ bool expert_keys(const int32_t* offsets, int64_t m, int32_t experts, uint32_t* keys,
                                            int lane) {
    int32_t before_last = 0;  // the largest usable offset among offsets[0, base - 1)
    int32_t last = 0;         // ... among offsets[0, base)
    uint32_t fewest = 0xffffffffu, most = 0;
    for (int32_t base = 0; base < experts; base += 32) {
        const int32_t g = base + lane;
        const bool here = g < experts;
        const int32_t end = here ? offsets[g] : 0;
        // Offsets are int32: a usable one is >= 0, so 0 stands for "none" in the maximum.
        int32_t high = here && offset_usable(int64_t{end}, m) ? end : 0;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const int32_t other = __shfl_up_sync(kFullMask, high, d);
            if (lane >= d && other > high) high = other;
        }
        if (last > high) high = last;  // now: the largest usable offset among offsets[0, g]
        const int32_t two_back = __shfl_up_sync(kFullMask, high, 2);
        const int32_t high_water = lane >= 2 ? two_back : (lane == 1 ? last : before_last);
        if (here) {
            const int32_t begin = g == 0 ? 0 : offsets[g - 1];
            const bool usable = segment_computed<int64_t>(begin, end, m, high_water);
            const int64_t blocks = usable ? (int64_t{end} - begin) / kBlockRows : 0;
            keys[g] = WgradOrderKey::make(blocks, usable, g);
            const uint32_t b = static_cast<uint32_t>(blocks < WgradOrderKey::kMaxBlocks ? blocks : WgradOrderKey::kMaxBlocks);
            fewest = b < fewest ? b : fewest;
            most = b > most ? b : most;
        }
        before_last = __shfl_sync(kFullMask, high, 30);
        last = __shfl_sync(kFullMask, high, 31);
    }
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) {
        const uint32_t f = __shfl_xor_sync(kFullMask, fewest, d);
        const uint32_t mo = __shfl_xor_sync(kFullMask, most, d);
        fewest = f < fewest ? f : fewest;
        most = mo > most ? mo : most;
    }
    return fewest == most;
}

// Bitonic sort of keys[0, n), n a power of two, largest first, by the 32 lanes of a warp.
__device__ __forceinline__ void sort_keys(uint32_t* keys, int32_t n, int lane) {
    for (int32_t size = 2; size <= n; size <<= 1) {
        for (int32_t stride = size >> 1; stride > 0; stride >>= 1) {
            for (int32_t pair = lane; pair < n / 2; pair += 32) {
                const int32_t i = ((pair & ~(stride - 1)) << 1) | (pair & (stride - 1));
                const int32_t j = i + stride;
                const uint32_t a = keys[i], b = keys[j];
                // Runs of `size` alternate direction until the last, which runs largest first.
                const bool largest_first = (i & size) == 0;
                if ((a < b) == largest_first) {
                    keys[i] = b;
                    keys[j] = a;
                }
            }
            __syncwarp();
        }
    }
}

}  // namespace wgrad_order_detail

// order[0, experts): the experts' slots (wgrad_order_entry), largest row blocks first, equal
// ones by index. Returns false, with no order written, when every expert has the same row
// blocks: the experts' own order is as good then. scratch: room for the next power of two of
// `experts` keys, which nothing else uses until this returns (the kernel lends a pipeline stage,
// before its first load).
template <int kBlockRows>
__device__ __forceinline__ bool build_wgrad_order(const int32_t* offsets, int64_t m, int32_t experts,
                                                  uint32_t* scratch, uint16_t* order, int lane) {
    const bool equal = wgrad_order_detail::expert_keys<kBlockRows>(offsets, m, experts, scratch, lane);
    __syncwarp();
    if (equal) return false;
    int32_t n = 1;
    while (n < experts) n <<= 1;
    for (int32_t i = experts + lane; i < n; i += 32) scratch[i] = 0;  // keys are never 0: last
    __syncwarp();
    wgrad_order_detail::sort_keys(scratch, n, lane);
    for (int32_t r = lane; r < experts; r += 32) order[r] = wgrad_order_entry(scratch[r]);
    __syncwarp();
    return true;
}

}  // namespace ggemm
