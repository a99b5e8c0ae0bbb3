// The grouped tile scheduler: turns a linear tile index into (expert, rows, columns) from the
// device-resident padded_offsets, skipping experts whose offsets (or weight pointer) are unsafe.
// With valid-row counts, an expert contributes only the row blocks that hold a valid row: tiles
// wholly past its count are never numbered, so no CTA runs them on either scheduler.
//
// Tiles of one expert are numbered in raster groups of `group_m` row blocks: inside a group the
// row block varies fastest, so CTAs that run at the same time share weight columns (L2 reuse),
// and tiles 2j, 2j+1 are the two row blocks of one 256-row pair (an SM100 CTA pair computes them
// together). The SM90 cluster kernels instantiate it with 256-row tiles instead and split each
// tile between the cluster's CTAs (cluster_share). Every CTA walks its tiles in increasing order, so a cursor over the
// experts finds each tile's expert in amortised O(1); a producer that knows its next tile early
// moves the cursor toward it one expert at a time between its loads (step_toward).
//
// Pure and __host__ __device__: the CPU tests check the same code the kernels run.
#pragma once

#include <cstdint>

#include "kernels/common/contract.h"
#include "kernels/common/hd.h"
#include "kernels/common/tail_split.h"

namespace ggemm {

// What is wrong with padded_offsets[g] (given padded_offsets[g-1], or 0 for g = 0).
GGEMM_HD uint32_t offset_status(int64_t previous_end, int64_t end, int64_t m) {
    uint32_t bits = 0;
    if (end < 0) bits |= kStatusOffsetNegative;
    if (end % kSegmentAlignment != 0) bits |= kStatusOffsetMisaligned;
    if (end > m) bits |= kStatusOffsetPastM;
    if (end < previous_end) bits |= kStatusOffsetDecreasing;
    return bits;
}

// Whether an offset can bound a segment: at least 0, aligned, at most M. A template: the tile
// walk runs it in 32 bits (int32 offsets against M clamped to int32, which keeps every result),
// where each expert it passes is a chain of dependent instructions that 64-bit compares would
// lengthen.
static_assert((kSegmentAlignment & (kSegmentAlignment - 1)) == 0, "a mask tests the alignment");
template <class Int>
GGEMM_HD bool offset_usable(Int v, Int m) {
    return v >= 0 && (v & (kSegmentAlignment - 1)) == 0 && v <= m;
}

// Whether an expert whose offsets are begin and end computes rows [begin, end): both offsets
// usable, in order, and the begin not below any earlier usable offset (`high_water`, the largest
// of offsets[0, g-1)). Then the computed ranges of all experts are disjoint whatever the offsets
// hold, so no row is written (or summed) twice.
template <class Int>
GGEMM_HD bool segment_computed(Int begin, Int end, Int m, Int high_water) {
    return offset_usable(begin, m) && offset_usable(end, m) && end >= begin && begin >= high_water;
}

// Carries high_water past offset `passed` (the end offset of the expert a walk leaves behind).
template <class Int>
GGEMM_HD void raise_high_water(Int& high_water, Int passed, Int m) {
    if (offset_usable(passed, m) && passed > high_water) high_water = passed;
}

// What is wrong with a discrete-mode weight pointer (TMA needs 16-byte aligned global addresses).
GGEMM_HD uint32_t weight_pointer_status(uint64_t ptr) {
    if (ptr == 0) return kStatusWeightPtrNull;
    return (ptr % 16 != 0) ? kStatusWeightPtrMisaligned : 0u;
}

// What is wrong with a valid-row count of an expert whose offsets are begin and end: below 0, or
// above the segment's size when the offsets themselves are sound (experts with unsound offsets
// are skipped whatever their count, and the offset bits report them).
GGEMM_HD uint32_t valid_rows_status(int64_t begin, int64_t end, int64_t count, int64_t m) {
    if (count < 0) return kStatusValidRowsClamped;
    const bool sound = segment_computed(begin, end, m, int64_t{0});
    return sound && count > end - begin ? kStatusValidRowsClamped : 0u;
}

// A count clamped to [0, size]: the rows of a segment of `size` rows that are computed.
GGEMM_HD int64_t clamped_valid_rows(int64_t count, int64_t size) {
    return count < 0 ? 0 : (count > size ? size : count);
}

struct TileCoord {
    int32_t expert;     // -1 once the tiles are exhausted
    int32_t row_begin;  // first row of the tile (< 2^31: M is bounded by the int32 offsets)
    int32_t n_begin;    // first column of the tile (or of the piece: tail_split.h)
    int32_t n_width;    // columns: the tile width, or a piece's
    int32_t row_end;    // one past the expert's last valid row: rows of the tile at or past it are not written
    int32_t k_split;    // split of the tile's K range (split_k.h); 0 when K is not split
    int32_t tile_index; // linear tile index (< 2^31 whenever K is split: the host bounds the rows)
};

GGEMM_HD bool fits_uint32(int64_t v) { return v >= 0 && v <= int64_t{0xffffffff}; }

// The index of the lowest set bit of a non-zero v (the shift that divides by a power of two).
GGEMM_HD uint32_t low_bit_index(uint32_t v) {
#if defined(__CUDA_ARCH__)
    return static_cast<uint32_t>(__ffs(static_cast<int>(v)) - 1);
#else
    return static_cast<uint32_t>(__builtin_ctz(v));
#endif
}

// Position of tile `local` of an expert with m_blocks x n_blocks tiles, in raster groups of
// group_m row blocks (row block fastest inside a group). group_m must be even.
struct TilePosition {
    int32_t m_block;
    int32_t n_block;
};

GGEMM_HD TilePosition raster_tile(int64_t local, int32_t m_blocks, int32_t n_blocks, int32_t group_m) {
    const int64_t tiles_per_group = static_cast<int64_t>(group_m) * n_blocks;
    if (fits_uint32(local) && fits_uint32(tiles_per_group)) {
        // 32-bit division is inline on the GPU; 64-bit division is a called routine, whose
        // instructions the producer fetches before it can issue a CTA's first load. Each division
        // by a runtime value is a chain of about twenty dependent instructions on the producer's
        // way to a call's first load, so the common cases skip them: the first group (every tile
        // of a call of one round), and groups of a power-of-two number of row blocks (a group cut
        // short by an expert of few rows: 2 for the 256-row segment), divided by shifts.
        const uint32_t tiles = static_cast<uint32_t>(tiles_per_group);
        const uint32_t group = static_cast<uint32_t>(local) < tiles ? 0u : static_cast<uint32_t>(local) / tiles;
        const uint32_t first_m = group * static_cast<uint32_t>(group_m);
        const uint32_t left = static_cast<uint32_t>(m_blocks) - first_m;
        const uint32_t rows_in_group = left < static_cast<uint32_t>(group_m) ? left : static_cast<uint32_t>(group_m);
        const uint32_t within = static_cast<uint32_t>(local) - group * tiles;
        if ((rows_in_group & (rows_in_group - 1)) == 0) {
            const uint32_t shift = low_bit_index(rows_in_group);
            return {static_cast<int32_t>(first_m + (within & (rows_in_group - 1))),
                    static_cast<int32_t>(within >> shift)};
        }
        return {static_cast<int32_t>(first_m + within % rows_in_group), static_cast<int32_t>(within / rows_in_group)};
    }
    const int32_t group = static_cast<int32_t>(local / tiles_per_group);
    const int32_t first_m = group * group_m;
    const int32_t rows_in_group = (m_blocks - first_m) < group_m ? (m_blocks - first_m) : group_m;
    const int64_t within = local - group * tiles_per_group;
    return {first_m + static_cast<int32_t>(within % rows_in_group),
            static_cast<int32_t>(within / rows_in_group)};
}

template <int kTileM, int kTileN>
struct GroupedTileScheduler {
    const int32_t* offsets;  // L cumulative row ends (a shared-memory copy in the kernels)
    const uint32_t* weight_status;  // discrete mode: experts with a non-zero word are skipped; else null
    const int32_t* valid_rows;      // L valid-row counts, or null: every row of a segment is valid
    int32_t m_rows;  // M clamped to int32: an int32 offset is at most M exactly when at most m_rows
    int32_t num_experts;
    int32_t n_blocks;
    int32_t group_m;

    // Cursor: the expert that holds linear tiles [expert_first_tile, + expert_tiles). Its rows
    // are read again when a tile is located: fewer values live across the producer's loads.
    int32_t expert = -1;
    int32_t high_water = 0;  // largest usable offset before the cursor expert's begin offset
    int64_t expert_first_tile = 0;
    int64_t expert_tiles = 0;

    GGEMM_HD GroupedTileScheduler(const int32_t* offsets_, const uint32_t* weight_status_, int64_t m_,
                                  int32_t num_experts_, int32_t n, int32_t group_m_,
                                  const int32_t* valid_rows_ = nullptr)
        : offsets(offsets_), weight_status(weight_status_), valid_rows(valid_rows_),
          m_rows(m_ > INT32_MAX ? INT32_MAX : (m_ < 0 ? -1 : static_cast<int32_t>(m_))),
          num_experts(num_experts_), n_blocks((n + kTileN - 1) / kTileN), group_m(group_m_) {}

    // The rows expert g computes, [row_begin, row_end): its segment, cut at the clamped count.
    struct Rows {
        int32_t row_begin;
        int32_t row_end;
    };
    GGEMM_HD Rows rows_of(int32_t g) const {
        if (g < 0) return {0, 0};  // never asked; says to the host compiler that offsets[-1] is not read
        return counted_rows(g, g == 0 ? 0 : offsets[g - 1], offsets[g]);
    }

    // Rows [begin, end) of expert g cut at its clamped count.
    GGEMM_HD Rows counted_rows(int32_t g, int32_t begin, int32_t end) const {
        const int32_t size = end - begin;
        const int32_t rows = valid_rows != nullptr ? static_cast<int32_t>(clamped_valid_rows(valid_rows[g], size)) : size;
        return {begin, begin + rows};
    }

    // Tiles expert g contributes: zero when it is empty or skipped (segment_computed, in 32 bits,
    // and the weight pointer's rule).
    GGEMM_HD int64_t tiles_of(int32_t g) const {
        if (g < 0) return 0;
        const int32_t begin = g == 0 ? 0 : offsets[g - 1];
        const int32_t end = offsets[g];
        if (!segment_computed(begin, end, m_rows, high_water)) return 0;
        if (weight_status != nullptr && weight_status[g] != 0) return 0;
        return int64_t{row_blocks(counted_rows(g, begin, end))} * n_blocks;
    }

    GGEMM_HD static int32_t row_blocks(Rows rows) {
        return static_cast<int32_t>((static_cast<uint32_t>(rows.row_end - rows.row_begin) + kTileM - 1) / kTileM);
    }

    // Moves the cursor one expert toward linear tile `index` (never smaller than any index asked
    // before): whether it moved. A producer that knows its next tile early walks toward it one
    // expert at a time between its loads, so the walk need not sit between two tiles.
    GGEMM_HD bool step_toward(int64_t index) {
        if (expert >= num_experts || index < expert_first_tile + expert_tiles) return false;
        expert_first_tile += expert_tiles;
        if (expert >= 1) raise_high_water(high_water, offsets[expert - 1], m_rows);
        ++expert;
        if (expert == num_experts) return false;
        expert_tiles = tiles_of(expert);
        return true;
    }

    // Tile `index`, once the cursor has reached it (step_toward returns false).
    GGEMM_HD TileCoord located(int64_t index) const {
        if (expert >= num_experts) return {-1, 0, 0, 0, 0, 0, 0};
        // The cursor stops only at an expert with tiles, which passed tiles_of's checks.
        const Rows rows = rows_of(expert);
        const TilePosition p = raster_tile(index - expert_first_tile, row_blocks(rows), n_blocks, group_m);
        return {expert, rows.row_begin + p.m_block * kTileM, p.n_block * kTileN, kTileN, rows.row_end, 0,
                static_cast<int32_t>(index)};
    }

    // Maps a linear tile index (never smaller than the previous call's) to its tile.
    GGEMM_HD TileCoord tile(int64_t index) {
        while (step_toward(index)) {
        }
        return located(index);
    }

    // The linear tile index of a work item: a tile, a piece of a tile, or a split of a tile's K
    // range. A plan splits K (k_splits > 1) or cuts the last round, never both.
    GGEMM_HD static int64_t item_tile(int64_t work_item, TailSplit split, int32_t k_splits = 1) {
        // Split plans bound their items below 2^31 (the host caps their rows): 32-bit division,
        // which the GPU does inline (a 64-bit one is a called routine).
        if (k_splits > 1) return static_cast<int32_t>(work_item) / k_splits;
        return split_item(work_item, split, kTileN).tile;
    }

    // Work item `work_item`'s tile, piece or split, once the cursor has reached its tile.
    GGEMM_HD TileCoord located_item(int64_t work_item, TailSplit split, int32_t k_splits = 1) const {
        if (k_splits > 1) {
            const int32_t split_item = static_cast<int32_t>(work_item);
            TileCoord t = located(split_item / k_splits);
            t.k_split = split_item % k_splits;
            return t;
        }
        const SplitItem at = split_item(work_item, split, kTileN);
        TileCoord t = located(at.tile);
        t.n_begin += at.column;
        t.n_width = at.width;
        return t;
    }

    // Maps a work item (never smaller than the previous call's) to its tile, piece of a tile, or
    // split of a tile's K range.
    GGEMM_HD TileCoord item(int64_t work_item, TailSplit split, int32_t k_splits = 1) {
        const int64_t index = item_tile(work_item, split, k_splits);
        while (step_toward(index)) {
        }
        return located_item(work_item, split, k_splits);
    }
};

// A cluster of CTAs along M computes one schedule tile of (CTAs) x cta_rows rows together: every
// CTA takes the same work item, and CTA `rank` its rows [row_begin + rank x cta_rows, + cta_rows)
// on the tile's (or piece's) columns. One CTA: rank 0, the tile itself.
GGEMM_HD TileCoord cluster_share(TileCoord tile, uint32_t rank, int32_t cta_rows) {
    tile.row_begin += static_cast<int32_t>(rank) * cta_rows;
    return tile;
}

}  // namespace ggemm
