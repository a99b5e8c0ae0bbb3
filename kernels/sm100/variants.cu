// The SM100 kernel variants the planner chooses from: one per tile width, 128 rows (cta_group::1).
// Stages fill the shared memory (227 KB per CTA on SM100) that the tile leaves; TMEM holds two
// accumulators of tile_n f32 columns each (at most 512 columns).
//
// These kernels have never run: no SM100 GPU was available (docs/SM100.md).
#include "kernels/common/variants.h"
#include "kernels/sm100/grouped_gemm_sm100.cuh"

namespace ggemm {
namespace {

template <class Cfg>
constexpr KernelVariant sm100_variant(const char* name) {
    return {name,
            100,
            Cfg::kTileM,
            Cfg::kTileN,
            Cfg::kBlockK,
            Cfg::kStages,
            /*cluster_m=*/1,
            /*a_box_rows=*/Cfg::kTileM,
            /*b_box_rows=*/Cfg::kTileN,
            sm100::kSmemBytes<Cfg>,
            Cfg::kThreads,
            &sm100::prepare<Cfg>,
            &sm100::launch<Cfg>};
}

using Tile256 = sm100::Config<256, 4>;  // 48 KB per stage, 512 TMEM columns
using Tile192 = sm100::Config<192, 5>;  // 40 KB per stage, 384 -> 512 TMEM columns
using Tile128 = sm100::Config<128, 6>;  // 32 KB per stage, 256 TMEM columns

const KernelVariant kVariants[] = {
    sm100_variant<Tile256>("sm100_tma_tcgen05_128x256x64_s4"),
    sm100_variant<Tile192>("sm100_tma_tcgen05_128x192x64_s5"),
    sm100_variant<Tile128>("sm100_tma_tcgen05_128x128x64_s6"),
};

}  // namespace

const KernelVariant* sm100_variants(int* count) {
    *count = static_cast<int>(sizeof(kVariants) / sizeof(kVariants[0]));
    return kVariants;
}

}  // namespace ggemm
