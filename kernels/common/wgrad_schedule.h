// The weight gradient's work: tiles of (expert, P block, Q block), each a full sum over the
// expert's rows, and what a tile does with its output. Pure and __host__ __device__: the CPU
// tests check the code the kernel runs.
//
// Every expert has the same number of tiles (its output is P x Q whatever its rows), so a tile
// index maps to its expert by one division: tiles are numbered expert by expert, the P block
// varying fastest inside an expert. Which rows an expert sums is the forward's rule
// (scheduler.h, expert_rows): both offsets usable, in order, and the begin not below any earlier
// usable offset, so that no row can be counted by two experts whatever the device memory holds.
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
            if (expert >= 1 && offset_usable(offsets[expert - 1], m) && offsets[expert - 1] > high_water)
                high_water = offsets[expert - 1];
        }
        const ExpertRows r = expert_rows(offsets, g, m, high_water);
        const int64_t begin = g == 0 ? 0 : offsets[g - 1];
        const int64_t end = offsets[g];
        const bool usable = offset_usable(begin, m) && offset_usable(end, m) && end >= begin && begin >= high_water;
        return {r.row_begin, r.row_end, usable};
    }
};

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
