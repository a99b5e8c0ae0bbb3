// How the planner ranks kernel variants: tables of data and one scoring rule.
//
// score = width_efficiency(tile_n) x column_use x tile_m_preference x cluster_preference x grid_use
//         x output_preference
//
//   width_efficiency  how fast a tile of that width runs per useful column when nothing is
//                     wasted (wider tiles reuse each A load across more columns)
//   column_use        N / (ceil(N / tile_n) * tile_n): the fraction of computed columns that
//                     are kept; the last tile of each row band is partly padding
//   tile_m / cluster  mild preferences (256-row tiles halve B traffic per row; a cluster of 2
//                     multicasts the B tile to both CTAs)
//   grid_use          persistent CTAs / SMs offered: rounding the grid down to a multiple of
//                     the cluster can leave an SM idle
//   output            how the tile's output leaves: the math warps' own stores, or TMA stores
//                     from a tile buffer (only where the variant serves the plan's outputs)
//
// M is a run-time value, so nothing here depends on it. The numbers are first estimates, to be
// replaced by measurements (bench/); changing them changes choices, never correctness.
#pragma once

#include <cstdint>

#include "src/kernel_variant.h"

namespace ggemm {

struct TileWidthEfficiency {
    int32_t arch;
    int32_t tile_n;
    double efficiency;
};

struct Preference {
    int32_t value;
    double factor;
};

// Width efficiency assumed for a width missing from the table.
constexpr double kUnknownWidthEfficiency = 0.80;

extern const TileWidthEfficiency kTileWidthEfficiency[];
extern const int kTileWidthEfficiencyCount;
extern const Preference kTileMPreference[];
extern const int kTileMPreferenceCount;
extern const Preference kClusterPreference[];
extern const int kClusterPreferenceCount;

// Output factors: the math warps store C and D; TMA stores D from a tile buffer.
struct OutputPreference {
    double warp_stores;
    double tma_store;
};
extern const OutputPreference kOutputPreference;

struct VariantScore {
    double width_efficiency;
    bool width_in_table;   // false: kUnknownWidthEfficiency was assumed
    double column_use;
    int64_t padded_n;      // ceil(N / tile_n) * tile_n
    double tile_m_factor;
    double cluster_factor;
    double grid_use;
    double output_factor;
    int32_t grid;          // persistent CTAs
    double total;
};

// CTAs of the persistent grid: the SMs left after the margin, rounded down to whole clusters.
int32_t persistent_grid(int32_t sm_count, int32_t sm_margin, int32_t cluster_m) noexcept;

VariantScore score_variant(const KernelVariant& variant, int64_t n, int32_t sm_count,
                           int32_t sm_margin) noexcept;

// True when `a` should be chosen over `b` (higher score; ties: more stages, then name).
bool better_choice(const KernelVariant& a, const VariantScore& a_score, const KernelVariant& b,
                   const VariantScore& b_score) noexcept;

}  // namespace ggemm
