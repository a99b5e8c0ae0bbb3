// The planner's tables. Each row is a belief about the hardware, stated once.
#include "src/heuristics.h"

#include <cstring>

#include "kernels/common/contract.h"

namespace ggemm {

const TileWidthEfficiency kTileWidthEfficiency[] = {
    // Hopper: one wgmma m64nNk16 per warpgroup per k-step; N=256 amortizes the A fragment
    // best, N=192 is close, N=128 pays for twice the A traffic per output column of N=256.
    // 128: the 128x128 kernel's rate per column over the 128x256 one's, timed in the same
    // rounds on the nine decode layers of bench/small_shapes.json (fec134c, 2026-12-02), the
    // rounds each ran divided out: 0.946-0.972 on eight, 0.914 on gptoss_fc2_decode_L32.
    {90, 256, 1.00},  {90, 224, 0.99}, {90, 192, 0.985}, {90, 160, 0.965}, {90, 128, 0.95},
    {90, 112, 0.90},  {90, 64, 0.80},   {90, 32, 0.65},
    // Blackwell: an ESTIMATE, never measured on SM100 (no SM100 GPU has run these kernels,
    // docs/SM100.md). The rows copy Hopper's on the same reuse argument: tcgen05.mma
    // accumulates in TMEM (512 columns) and a wider tile reads A once for more output columns.
    {100, 256, 1.00}, {100, 224, 0.99}, {100, 192, 0.985}, {100, 160, 0.965}, {100, 128, 0.95},
    {100, 64, 0.80},
};
const int kTileWidthEfficiencyCount = sizeof kTileWidthEfficiency / sizeof kTileWidthEfficiency[0];

// dGLU through TMA reads the saved pre-activation and writes d_pre, twice R's columns, beside the
// operands, and the wider tile draws a sixth less operand traffic from the L2 per output column:
// with the same L2 streams the 128-wide kernels ran at 0.76-0.95x the 192-wide ones' rate per
// column they compute (H100, 2026-12-05, bench/glu.py's fc1 cases, N' = 768-14336, N-major),
// against 0.96x in the table above.
const TileWidthEfficiency kTmaDgluTileWidthEfficiency[] = {
    {90, 192, 0.985},
    {90, 128, 0.81},
};
const int kTmaDgluTileWidthEfficiencyCount =
    sizeof kTmaDgluTileWidthEfficiency / sizeof kTmaDgluTileWidthEfficiency[0];

// Single-CTA 128-row tiles first: they are what has run on an H200 (docs/PERFORMANCE.md). The SM100
// CTA-pair kernels (256 rows, cluster 2) have never run on hardware, so they are chosen only
// through the tile_m / cluster_m overrides, or when nothing else fits, until they have. The SM90
// 64-row tiles (one math warpgroup) serve calls the fill model decides, single experts of a few
// hundred rows; the score keeps them behind the 128-row tiles of any width everywhere else.
const Preference kTileMPreference[] = {{128, 1.00}, {256, 0.97}, {64, 0.60}};
const int kTileMPreferenceCount = sizeof kTileMPreference / sizeof kTileMPreference[0];

const Preference kClusterPreference[] = {{1, 1.00}, {2, 0.98}};
const int kClusterPreferenceCount = sizeof kClusterPreference / sizeof kClusterPreference[0];

// Hopper: the math warps' own global stores of D cost about one k-block per tile (7 % at
// K = 768); TMA stores from a tile buffer take them off the math warps' path. dGLU through the
// math warps (the pre-activation's loads waited for after the main loop, twice the columns
// stored) took 1.26-1.68x the time of the plain GEMM of its size, through TMA on 128 x 128 tiles
// 1.04-1.21x: the loads land during the main loop and the stores leave behind the next tile's.
// Preferred to the warp stores of any width at the same column use: 0.81 x 1.35 (the narrowest
// TMA dGLU tile, kTmaDgluTileWidthEfficiency) above the warp stores' best width, 0.985.
//
// The ping-pong kernel (128 x 128 tiles, a warpgroup's epilogue beside the other's MMAs) ran
// 1.019-1.068x the speed of the plan's choice on the decode layers of bench/small_shapes.json
// with K <= 2048 and four or more tiles per CTA (qwen3_fc2_decode_L32 1.066-1.068x,
// dsv3_fc2_decode_L8 1.053-1.066x, qwen3_fc1_decode_L32 1.019x; H100, 2026-12-08, two runs).
// Where K was larger, the experts held more rows or the tiles were fewer it ran 0.51-0.98x, but
// on the MoE suite's qwen3_fc2_L128 (1160 rows an expert) 1.000x and on gptoss_fc1_decode_L32
// (K = 2880, against a 192-wide tile) 1.028-1.030x; gptoss_fc2_decode_L32, the same K, 0.963x.
// Its factor puts the 128-wide tile (0.95) above the 256-wide one with TMA stores (1.01) inside
// kPingPongRegime (pingpong_pays), the only calls the planner offers it.
const OutputPreference kOutputPreference = {1.00, 1.01, 1.35, 1.07};
const PingPongRegime kPingPongRegime = {256, 2048, 4};

const int64_t kLargeExpertRows = 2048;

// Hopper (H100 / H200): 4096 bf16 flops per SM per cycle (989 TFLOP/s dense at 1.83 GHz x 132
// SMs); 45 bytes of operands per SM per cycle, what ggemm's 128 x 64 kernel drew on single
// experts of 256 rows and K = 7168 on an H200 (537-546 cycles per 24 KB k-block; DeepGEMM's
// heuristic assumes 64, and its kernel of that configuration drew 61); about 6150 bytes per
// cycle from L2 for all SMs together (DeepGEMM's number); 4.8 TB/s of HBM3e at 1.83 GHz, about
// 2600 bytes per cycle. One math warpgroup: the 64 x 128 kernel took 0.93-0.94x the 128 x 64
// kernel's time per k-block (the same 24 KB; one warpgroup's wgmma reads B from shared memory
// once, two read it twice) and about 0.45 us more per call (H100, 2026-12-05, two machines,
// bench/k_scan_shapes.json at N = 4096, K = 2048-7168): 48 bytes per cycle, 800 cycles more per
// item. Blackwell: no model (never measured), so the score alone chooses there.
const FillModel kFillModel[] = {
    {90, 4096.0, /*two_warpgroups=*/{45.0, 2000.0}, /*one_warpgroup=*/{48.0, 2800.0}, 6150.0, 2600.0, 64.0},
};
const int kFillModelCount = sizeof kFillModel / sizeof kFillModel[0];

namespace {

// A value missing from a preference table is neither favoured nor penalized beyond the
// smallest listed factor.
double preference(const Preference* table, int count, int32_t value) {
    double smallest = 1.0;
    for (int i = 0; i < count; ++i) {
        if (table[i].value == value) return table[i].factor;
        if (table[i].factor < smallest) smallest = table[i].factor;
    }
    return smallest;
}

}  // namespace

int32_t persistent_grid(int32_t sm_count, int32_t sm_margin, int32_t cluster_m) noexcept {
    const int32_t available = sm_count - sm_margin;
    if (available <= 0 || cluster_m <= 0) return 0;
    return available / cluster_m * cluster_m;
}

int64_t tile_count(const KernelVariant& variant, int64_t m, int64_t n) noexcept {
    if (variant.tile_m <= 0 || variant.tile_n <= 0) return 0;
    return m / variant.tile_m * ((n + variant.tile_n - 1) / variant.tile_n);
}

TailSplit deal_tiles(const KernelVariant& variant, int32_t grid, int64_t tiles) noexcept {
    const int32_t clusters = variant.cluster_m > 0 ? grid / variant.cluster_m : 0;
    return choose_tail_split(tiles, clusters, variant.tile_n, variant.max_tail_pieces);
}

double output_factor(const KernelVariant& variant) noexcept {
    if (variant.tma_dglu) return kOutputPreference.tma_dglu;
    if (variant.pingpong) return kOutputPreference.pingpong;
    return variant.d_box_rows > 0 ? kOutputPreference.tma_store : kOutputPreference.warp_stores;
}

VariantScore score_variant(const KernelVariant& variant, int64_t m_capacity, int64_t n, int32_t sm_count,
                           int32_t sm_margin) noexcept {
    VariantScore score{};
    score.width_efficiency = kUnknownWidthEfficiency;
    const TileWidthEfficiency* table = variant.tma_dglu ? kTmaDgluTileWidthEfficiency : kTileWidthEfficiency;
    const int count = variant.tma_dglu ? kTmaDgluTileWidthEfficiencyCount : kTileWidthEfficiencyCount;
    for (int i = 0; i < count; ++i) {
        if (table[i].arch == variant.arch && table[i].tile_n == variant.tile_n) {
            score.width_efficiency = table[i].efficiency;
            score.width_in_table = true;
        }
    }
    const int64_t column_tiles = variant.tile_n > 0 ? (n + variant.tile_n - 1) / variant.tile_n : 0;
    score.padded_n = column_tiles * variant.tile_n;
    score.column_use = score.padded_n > 0 ? static_cast<double>(n) / static_cast<double>(score.padded_n) : 0.0;
    score.tile_m_factor = preference(kTileMPreference, kTileMPreferenceCount, variant.tile_m);
    score.cluster_factor = preference(kClusterPreference, kClusterPreferenceCount, variant.cluster_m);
    score.grid = persistent_grid(sm_count, sm_margin, variant.cluster_m);
    const int32_t offered = sm_count - sm_margin;
    score.grid_use = offered > 0 ? static_cast<double>(score.grid) / offered : 0.0;
    // The rounds as the kernel is dealt them (deal_tiles), a cut last round as 1 / pieces.
    score.round_use = 1.0;
    score.rounds = 0.0;
    const int32_t clusters = variant.cluster_m > 0 ? score.grid / variant.cluster_m : 0;
    const int64_t tiles = tile_count(variant, m_capacity, n);
    if (clusters > 0 && tiles > 0) {
        const TailSplit split = deal_tiles(variant, score.grid, tiles);
        score.rounds = static_cast<double>(tiles / clusters);
        if (tiles % clusters != 0) score.rounds += 1.0 / split.pieces;
        score.round_use = static_cast<double>(tiles) / (score.rounds * clusters);
    }
    score.output_factor = output_factor(variant);
    score.total = score.width_efficiency * score.column_use * score.tile_m_factor * score.cluster_factor *
                  score.grid_use * score.round_use * score.output_factor;
    return score;
}

FillEstimate estimate_fill(const KernelVariant& variant, int64_t rows, int64_t n, int64_t k, int32_t experts,
                           int32_t splits, int32_t grid) noexcept {
    FillEstimate e{};
    e.splits = splits;
    const FillModel* model = nullptr;
    for (int i = 0; i < kFillModelCount; ++i)
        if (kFillModel[i].arch == variant.arch) model = &kFillModel[i];
    if (model == nullptr || grid <= 0 || splits <= 0 || variant.tile_m <= 0 || variant.tile_n <= 0) return e;
    const double tile_m = variant.tile_m, tile_n = variant.tile_n, block_k = variant.block_k;
    e.tiles = tile_count(variant, rows, n);
    e.waves = (e.tiles * splits + grid - 1) / grid;
    const int64_t k_blocks = (k + variant.block_k - 1) / variant.block_k;
    const double mma = 2.0 * tile_m * tile_n * block_k / model->mma_flops_per_cycle;
    const ItemRates& rates = variant.math_warpgroups == 1 ? model->one_warpgroup : model->two_warpgroups;
    const double operands = (tile_m + tile_n) * block_k * 2.0 / rates.operand_bytes_per_cycle;
    const double block = mma > operands ? mma : operands;
    const double output = tile_m * tile_n * 2.0 / rates.operand_bytes_per_cycle;
    // Split: each split stores its fp32 partial; the last loads all of them (one more on average).
    const double partial_bytes = splits > 1 ? 2.0 * tile_m * tile_n * 4.0 : 0.0;
    const double item_blocks = static_cast<double>((k_blocks + splits - 1) / splits);
    e.item_cycles = item_blocks * block + rates.item_overhead_cycles + output / splits +
                    partial_bytes / model->partial_bytes_per_cycle;
    const double items = static_cast<double>(e.tiles) * splits;
    e.l2_cycles = items * (item_blocks * (tile_m + tile_n) * block_k * 2.0 + partial_bytes) / model->l2_bytes_per_cycle;
    // Unique bytes: the weights of the experts the rows can reach (a non-empty expert holds at
    // least one 256-row segment), A, and D.
    const int64_t segments = rows / kSegmentAlignment;
    const double reached = static_cast<double>(segments < experts ? segments : experts);
    const double bytes = 2.0 * (reached * static_cast<double>(n) * static_cast<double>(k) +
                                static_cast<double>(rows) * static_cast<double>(k + n));
    e.dram_cycles = bytes / model->dram_bytes_per_cycle;
    double slowest = static_cast<double>(e.waves) * e.item_cycles;
    if (e.l2_cycles > slowest) slowest = e.l2_cycles;
    if (e.dram_cycles > slowest) slowest = e.dram_cycles;
    e.total = slowest / output_factor(variant);
    return e;
}

bool pingpong_pays(const KernelVariant& variant, int64_t m_capacity, int32_t experts, int64_t n, int64_t k,
                   int32_t grid) noexcept {
    if (experts <= 0 || grid <= 0) return false;
    return m_capacity <= kPingPongRegime.max_rows_per_expert * experts && k <= kPingPongRegime.max_k &&
           tile_count(variant, m_capacity, n) >= kPingPongRegime.min_tiles_per_cta * grid;
}

bool large_experts(int64_t m_capacity, int32_t num_experts) noexcept {
    return m_capacity >= kLargeExpertRows * num_experts;
}

bool better_choice(const KernelVariant& a, const VariantScore& a_score, const KernelVariant& b,
                   const VariantScore& b_score, bool large_experts) noexcept {
    if (a.proven != b.proven) return a.proven;
    if (a_score.total != b_score.total) return a_score.total > b_score.total;
    // A deeper pipeline hides more latency, except where the experts are large (kLargeExpertRows).
    if (a.stages != b.stages) return large_experts ? a.stages < b.stages : a.stages > b.stages;
    return std::strcmp(a.name, b.name) < 0;                // deterministic, whatever the list order
}

}  // namespace ggemm
