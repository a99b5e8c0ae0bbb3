// How the planner ranks kernel variants: tables of data and one scoring rule.
//
// score = width_efficiency(tile_n) x column_use x tile_m_preference x cluster_preference x grid_use
//         x round_use x output_preference
//
//   width_efficiency  how fast a tile of that width runs per useful column when nothing is
//                     wasted (wider tiles reuse each A load across more columns)
//   column_use        N / (ceil(N / tile_n) * tile_n): the fraction of computed columns that
//                     are kept; the last tile of each row band is partly padding
//   tile_m / cluster  mild preferences (256-row tiles halve B traffic per row; a cluster of 2
//                     multicasts the B tile to both CTAs)
//   grid_use          persistent CTAs / SMs offered: rounding the grid down to a multiple of
//                     the cluster can leave an SM idle
//   round_use         tiles at M = m_capacity / (rounds x clusters): the last round of a
//                     persistent grid is partly idle, less so where its tiles are cut along N
//                     (kernels/common/tail_split.h: a cut round lasts 1 / pieces of a round).
//                     Near 1 over many rounds; over a few it can favour another width
//                     (6 experts of 256 rows, N = 7168: 128 x 256 tiles leave the third round
//                     55 % full, too full to cut; 128 x 128 ones cut the sixth, 9 % full)
//   output            how the tile's output leaves: the math warps' own stores, or TMA stores
//                     from a tile buffer (only where the variant serves the plan's outputs), or
//                     the ping-pong kernel's (only in its regime: pingpong_pays)
//
// Only round_use depends on M. Where the plan's m_capacity leaves the best-scored variant
// (the primary) less than kFillWaves waves of tiles, a second rule, the fill model, estimates
// each candidate's time at that M, with K split as desc->split_k asks (kernels/common/split_k.h;
// unsplit unless asked, src/fill.cpp says why):
//
//   time = max(waves x item_cycles, l2_bytes / l2_rate, dram_bytes / dram_rate)
//   waves       = ceil(tiles x splits / grid)                    tiles = M/128 x ceil(N/tile_n)
//   item_cycles = ceil(k_blocks / splits) x max(mma, operands)   per 64-deep k-block of a tile
//               + per-item overhead + output (+ the partials' store and sum when split)
//   l2_bytes    = every item's operand loads (+ partials): what all SMs draw from L2 together
//
// and keeps the fastest, the primary on ties (a narrower tile wins only by cutting waves). The
// numbers are first estimates, to be replaced by measurements (bench/); changing them changes
// choices, never correctness.
#pragma once

#include <cstdint>

#include "kernels/common/tail_split.h"
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
// The same for the kernels of dGLU through TMA (KernelVariant::tma_dglu).
extern const TileWidthEfficiency kTmaDgluTileWidthEfficiency[];
extern const int kTmaDgluTileWidthEfficiencyCount;
extern const Preference kTileMPreference[];
extern const int kTileMPreferenceCount;
extern const Preference kClusterPreference[];
extern const int kClusterPreferenceCount;

// Output factors: the math warps store C and D; TMA stores D from a tile buffer.
struct OutputPreference {
    double warp_stores;
    double tma_store;
    double tma_dglu;  // dGLU's kernels that load the pre-activation and store d_pre by TMA
    double pingpong;  // the ping-pong kernel (KernelVariant::pingpong), where pingpong_pays
};
extern const OutputPreference kOutputPreference;

// The calls the ping-pong kernel serves: experts of one 256-row segment on average (decode), K
// small enough that a tile's epilogue is a large share of its time, and tiles enough for each
// math warpgroup to take several.
struct PingPongRegime {
    int64_t max_rows_per_expert;  // m_capacity / L
    int64_t max_k;
    int64_t min_tiles_per_cta;    // 128 x tile_n tiles at M = m_capacity, per CTA of the grid
};
extern const PingPongRegime kPingPongRegime;

// Whether a call of m_capacity rows over `experts` experts, N x K, on `grid` CTAs lies in
// kPingPongRegime for `variant` (a ping-pong kernel).
bool pingpong_pays(const KernelVariant& variant, int64_t m_capacity, int32_t experts, int64_t n, int64_t k,
                   int32_t grid) noexcept;

// The variant's output factor: kOutputPreference's entry for its output design.
double output_factor(const KernelVariant& variant) noexcept;

// What one SM's work items cost beside their tensor-core time, by the kernel's math warpgroups.
struct ItemRates {
    double operand_bytes_per_cycle;  // A and B bytes one SM's TMA loads bring per cycle (from L2)
    double item_overhead_cycles;     // per work item: pipeline fill and drain, scheduling
};
// The fill model's beliefs about one architecture's SM (kFillModel).
struct FillModel {
    int32_t arch;
    double mma_flops_per_cycle;      // dense bf16 tensor-core flops per SM per cycle
    ItemRates two_warpgroups;        // KernelVariant::math_warpgroups = 2 (128-row tiles)
    ItemRates one_warpgroup;         // math_warpgroups = 1 (64-row tiles)
    double l2_bytes_per_cycle;       // what all SMs together draw from L2 per cycle
    double dram_bytes_per_cycle;     // the whole device's memory bandwidth per SM clock
    double partial_bytes_per_cycle;  // one SM's fp32 partial stores and loads (split-K), per cycle
};
extern const FillModel kFillModel[];
extern const int kFillModelCount;

// The fill model applies while the primary has fewer than kFillWaves x grid tiles at M =
// m_capacity: with more, the score's choice stands (the last round's tiles are cut along N
// instead, kernels/common/tail_split.h).
constexpr int64_t kFillWaves = 2;

struct FillEstimate {
    int64_t tiles;        // M/128 x ceil(N/tile_n)
    int32_t splits;       // of K
    int64_t waves;        // ceil(tiles x splits / grid)
    double item_cycles;   // one work item on one SM
    double l2_cycles;     // every item's loads (and partials) over the L2 bandwidth
    double dram_cycles;   // the unique bytes over the device's memory bandwidth
    double total;         // max(waves x item_cycles, l2_cycles, dram_cycles) / output factor
};

// The fill model for `variant` at `rows` rows of N x K over `experts` experts, K split `splits`
// ways, on `grid` CTAs (total == 0: no model for the variant's arch).
FillEstimate estimate_fill(const KernelVariant& variant, int64_t rows, int64_t n, int64_t k, int32_t experts,
                           int32_t splits, int32_t grid) noexcept;

struct VariantScore {
    double width_efficiency;
    bool width_in_table;   // false: kUnknownWidthEfficiency was assumed
    double column_use;
    int64_t padded_n;      // ceil(N / tile_n) * tile_n
    double tile_m_factor;
    double cluster_factor;
    double grid_use;
    double round_use;      // 1 where M = m_capacity gives no tiles
    double rounds;         // of tiles at M = m_capacity, a cut last round counted as 1 / pieces
    double output_factor;
    int32_t grid;          // persistent CTAs
    double total;
};

// CTAs of the persistent grid: the SMs left after the margin, rounded down to whole clusters.
int32_t persistent_grid(int32_t sm_count, int32_t sm_margin, int32_t cluster_m) noexcept;

// Tiles of M rows: M / tile_m row blocks (M and every offset are multiples of 256) times
// ceil(N / tile_n) column blocks; 0 for a variant without a tile size.
int64_t tile_count(const KernelVariant& variant, int64_t m, int64_t n) noexcept;

// How a persistent grid of `grid` CTAs deals `tiles` to its clusters: whole rounds, the last
// partial one cut along N where the variant can (kernels/common/tail_split.h). The kernel's
// arguments (src/execute.cpp) and the score's round use both take it from here.
TailSplit deal_tiles(const KernelVariant& variant, int32_t grid, int64_t tiles) noexcept;

VariantScore score_variant(const KernelVariant& variant, int64_t m_capacity, int64_t n, int32_t sm_count,
                           int32_t sm_margin) noexcept;

// Experts this large on average (m_capacity / num_experts rows) take the shallower of two
// pipelines of equal score: on SM90 the 3-stage kernel whose room holds the whole tile's output
// buffer, over 4 stages and half a tile (measured faster with 8 experts of 2000+ rows, slower
// with 64-128 experts of 256-1200 rows).
extern const int64_t kLargeExpertRows;
bool large_experts(int64_t m_capacity, int32_t num_experts) noexcept;

// True when `a` should be chosen over `b`: a proven variant over one that has not run
// (KernelVariant::proven), then the higher score; ties: more stages (fewer where
// large_experts), then name.
bool better_choice(const KernelVariant& a, const VariantScore& a_score, const KernelVariant& b,
                   const VariantScore& b_score, bool large_experts) noexcept;

}  // namespace ggemm
