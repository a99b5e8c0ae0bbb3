// The weight gradient's work: tiles of (expert, P block, Q block), each a full sum over the
// expert's rows, and what a tile does with its output. Pure and __host__ __device__: the CPU
// tests check the code the kernel runs.
//
// Every expert has the same number of tiles (its output is P x Q whatever its rows), so a tile
// index maps to its expert slot by one division: tiles are numbered slot by slot, the P block
// varying fastest inside a slot. Which rows an expert sums is the forward's rule (scheduler.h,
// segment_computed): both offsets usable, in order, and the begin not below any earlier usable
// offset, so that no row can be counted by two experts whatever the device memory holds.
//
// A tile costs its expert's rows. Where each expert has fewer tiles than the grid has CTAs and
// the experts' rows differ, the SM90 kernel's static deal fills the slots in decreasing order of
// the experts' rows (WgradOrderKey; wgrad_order.cuh sorts them on the device) and deals the tiles
// in rounds of the grid, every other round in the opposite direction (wgrad_static_item), which
// pairs a CTA's large tile in one round with a small one in the next. Otherwise, and with the
// dynamic scheduler (whose CTAs claim the next tile as they finish one) or on SM100, the slots
// follow the experts' own order, dealt round-robin by the static scheduler.
#pragma once

#include <cstdint>

#include "kernels/common/contract.h"
#include "kernels/common/hd.h"
#include "kernels/common/scheduler.h"

namespace ggemm {

// What is wrong with an out_ptrs entry: the stores are up to 16 bytes wide.
GGEMM_HD uint32_t output_pointer_status(uint64_t ptr) {
    if (ptr == 0) return kStatusOutputPtrNull;
    return (ptr % 16 != 0) ? kStatusOutputPtrMisaligned : 0u;
}

struct WgradTilePosition {
    int32_t expert;  // -1 past the last tile
    int32_t p_begin;
    int32_t q_begin;
};

struct WgradTiles {
    int32_t num_experts;
    int32_t p_blocks;  // ceil(P / tile_p)
    int32_t q_blocks;  // ceil(Q / tile_q)
    int32_t tile_p;
    int32_t tile_q;

    GGEMM_HD int64_t per_expert() const { return int64_t{p_blocks} * q_blocks; }
    GGEMM_HD int64_t count() const { return per_expert() * num_experts; }

    GGEMM_HD WgradTilePosition at(int64_t index) const {
        if (index < 0 || index >= count()) return {-1, 0, 0};
        const int64_t local = index % per_expert();
        return {static_cast<int32_t>(index / per_expert()), static_cast<int32_t>(local % p_blocks) * tile_p,
                static_cast<int32_t>(local / p_blocks) * tile_q};
    }
};

GGEMM_HD WgradTiles wgrad_tiles(int32_t num_experts, int64_t p, int64_t q, int32_t tile_p, int32_t tile_q) {
    return {num_experts, static_cast<int32_t>((p + tile_p - 1) / tile_p),
            static_cast<int32_t>((q + tile_q - 1) / tile_q), tile_p, tile_q};
}

// Whether SM90's static deal takes the experts sorted by rows (where their rows differ):
// where each expert has fewer tiles than the grid has CTAs. With as many or more, round-robin
// gives every CTA about as many of each expert's tiles already.
GGEMM_HD bool wgrad_sorts_experts(const WgradTiles& tiles, int64_t grid) { return tiles.per_expert() < grid; }

// An expert's rows, and whether its offsets are usable at all (an empty range is both what a
// skipped expert and an empty one get; only the empty one is written in overwrite mode).
struct WgradExpert {
    int64_t row_begin;
    int64_t row_end;
    bool usable;
};

// The rows of expert g, for expert indices that never decrease from call to call (each CTA
// walks its tiles in increasing order): keeps the largest usable offset below the expert's begin
// offset as it goes, so each call costs amortized O(1).
struct ExpertRowCursor {
    const int32_t* offsets;
    int64_t m;
    int32_t expert = 0;
    int64_t high_water = 0;  // largest usable offset among offsets[0, expert - 1)

    GGEMM_HD ExpertRowCursor(const int32_t* offsets_, int64_t m_) : offsets(offsets_), m(m_) {}

    GGEMM_HD WgradExpert rows(int32_t g) {
        for (; expert < g; ++expert) {
            if (expert >= 1) raise_high_water(high_water, int64_t{offsets[expert - 1]}, m);
        }
        const int64_t begin = g == 0 ? 0 : offsets[g - 1];
        const int64_t end = offsets[g];
        if (!segment_computed(begin, end, m, high_water)) return {0, 0, false};
        return {begin, end, true};
    }
};

// An expert's place in the SM90 order: its row blocks (descending), then its index (ascending),
// packed so that a larger key comes first, with whether its offsets are usable in the lowest bit
// (an unusable expert sums nothing: 0 blocks). Never 0, so 0 pads a sort to a power of two.
struct WgradOrderKey {
    static constexpr int kBlockShift = 12;  // bits 1-11: 2047 - expert, in 1024 ... 2047
    static constexpr int64_t kMaxBlocks = (int64_t{1} << (31 - kBlockShift)) - 1;  // larger ones tie

    GGEMM_HD static uint32_t make(int64_t blocks, bool usable, int32_t expert) {
        const int64_t b = blocks < kMaxBlocks ? blocks : kMaxBlocks;
        return static_cast<uint32_t>(b) << kBlockShift | static_cast<uint32_t>(2047 - expert) << 1 |
               (usable ? 1u : 0u);
    }
    GGEMM_HD static int32_t expert(uint32_t key) { return 2047 - static_cast<int32_t>(key >> 1 & 2047u); }
    GGEMM_HD static bool usable(uint32_t key) { return (key & 1u) != 0; }
};
static_assert(kMaxExperts <= 1024, "an expert index fits the key's index bits");

// A slot of the SM90 order as shared memory keeps it: the expert, and whether it is usable.
GGEMM_HD uint16_t wgrad_order_entry(uint32_t key) {
    return static_cast<uint16_t>(WgradOrderKey::expert(key) | (WgradOrderKey::usable(key) ? 0x8000 : 0));
}
GGEMM_HD int32_t wgrad_order_expert(uint16_t entry) { return entry & 0x7fff; }
GGEMM_HD bool wgrad_order_usable(uint16_t entry) { return (entry & 0x8000) != 0; }

// The rows of the expert in an order slot: its offsets as they are when usable (wgrad_order.cuh
// checked them, high water included), else none.
GGEMM_HD WgradExpert wgrad_order_rows(uint16_t entry, const int32_t* offsets) {
    const int32_t g = wgrad_order_expert(entry);
    if (!wgrad_order_usable(entry)) return {0, 0, false};
    return {g == 0 ? 0 : offsets[g - 1], offsets[g], true};
}

// The static scheduler's `step`-th work item of CTA `cta` on the SM90 kernel: the items in rounds
// of `grid`, even rounds dealt from CTA 0 up, odd ones from the last CTA down.
GGEMM_HD int64_t wgrad_static_item(int64_t step, int32_t cta, int32_t grid) {
    return step * grid + ((step & 1) != 0 ? grid - 1 - cta : cta);
}

// What one tile does.
enum class WgradAction : int32_t {
    kSkip = 0,   // write nothing: offsets or output pointer unusable, or an empty expert in accumulate mode
    kZeros = 1,  // an empty expert in overwrite mode: write zeros
    kSum = 2,    // sum the expert's rows and write (overwrite or accumulate)
};

GGEMM_HD WgradAction wgrad_action(bool usable, int64_t rows, bool output_ok, bool accumulate) {
    if (!usable || !output_ok) return WgradAction::kSkip;
    if (rows > 0) return WgradAction::kSum;
    return accumulate ? WgradAction::kSkip : WgradAction::kZeros;
}

}  // namespace ggemm
