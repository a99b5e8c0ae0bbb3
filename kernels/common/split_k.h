// Split-K: the K range of a tile cut into `splits` parts run as separate work items, for problems
// whose tiles leave most SMs idle even at the narrowest width (one 256-row expert, a few columns).
//
// Work item i of a split plan is split i % splits of tile i / splits, so every CTA still walks
// tiles in increasing order (scheduler.h). Each split accumulates its k-blocks, stores the fp32
// partial tile in the workspace and counts itself in the tile's arrival counter (one per math
// warpgroup); the split that arrives last sums the partials of splits 0..splits-1 in that order,
// its own read back like the others, and runs the epilogue. The sum's order never depends on
// which split came last, so both schedulers and every run give the same bits. No CTA ever waits
// for another: the last arrival finds everything it needs already stored.
//
// Pure and __host__ __device__: the CPU tests check the same code the host and kernels run.
#pragma once

#include <cstdint>

#include "kernels/common/hd.h"

namespace ggemm {

// The most splits of K a plan can ask for (ggemm_plan_desc::split_k).
constexpr int32_t kMaxSplitK = 8;
// K is split at whole k-blocks of this depth (every kernel's stage depth): at most one split per block.
constexpr int32_t kSplitBlockK = 64;
// Rows of a call up to which a split plan splits; larger calls run unsplit. Past a few hundred
// rows the narrow tiles alone fill the machine, and the partials' workspace grows with the rows.
constexpr int64_t kSplitRowLimit = 1024;
// The most work items (tiles x splits) a split call of n columns can have, at the narrowest tile
// (128 x 64): the kernel maps them to tiles in 32-bit arithmetic, so for every n the contract
// allows this stays below 2^31 (src/validate.cpp asserts it).
constexpr int64_t max_split_items(int64_t n) { return (kSplitRowLimit / 128) * ((n + 63) / 64) * kMaxSplitK; }

// Arrival counters per tile: one per math warpgroup (each finishes its 64 rows on its own).
constexpr int32_t kSplitCountersPerTile = 2;

// The k-blocks [begin, end) of split `split` of `splits` over `k_blocks`: as even as whole
// blocks allow, in order, together covering every block exactly once. Empty only when there
// are more splits than blocks (the host never asks for that).
struct KBlockRange {
    int32_t begin;
    int32_t end;
};

// In 32 bits, which the GPU divides inline: K < 2^31 makes k_blocks < 2^25, times at most
// kMaxSplitK = 8 splits.
GGEMM_HD KBlockRange split_k_range(int32_t k_blocks, int32_t splits, int32_t split) {
    return {k_blocks * split / splits, k_blocks * (split + 1) / splits};
}
static_assert(int64_t{2147483647 / kSplitBlockK + 1} * kMaxSplitK <= 2147483647, "k_blocks x splits fits 32 bits");

// Workspace bytes of the partial tiles and arrival counters of a split plan: room for `rows`
// rows (the plan's capacity, at most kSplitRowLimit) at every tile width up to 256 (a tile row
// of width w pads N to at most round_up(N, 64) + w - 64 columns). Zero when splits <= 1.
GGEMM_HD uint64_t split_partial_bytes(int32_t splits, int64_t rows, int64_t n) {
    if (splits <= 1 || rows <= 0) return 0;
    const uint64_t padded_n = static_cast<uint64_t>((n + 63) / 64 * 64 + 192);
    return static_cast<uint64_t>(splits) * static_cast<uint64_t>(rows) * padded_n * sizeof(float);
}

GGEMM_HD uint64_t split_counter_bytes(int32_t splits, int64_t rows, int64_t n) {
    if (splits <= 1 || rows <= 0) return 0;
    const uint64_t tiles = static_cast<uint64_t>(rows / 128) * static_cast<uint64_t>((n + 63) / 64);
    return (tiles * kSplitCountersPerTile * sizeof(uint32_t) + 127) / 128 * 128;
}

}  // namespace ggemm
