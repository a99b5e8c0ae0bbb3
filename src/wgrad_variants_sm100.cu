// The SM100 weight-gradient variants: one per tile width along Q, 128 columns of P on one CTA
// (cta_group::1). Stages fill the shared memory (227 KB per CTA) that the tile and the epilogue's
// staging leave; TMEM holds two accumulators of tile_q f32 columns each (at most 512 columns).
//
// Compiled for sm_100a only: this translation unit instantiates the kernels and their host-side
// prepare and launch. These kernels have never run on an SM100 GPU (docs/SM100.md).
#include "kernels/sm100/wgrad_sm100.cuh"
#include "src/wgrad_launch.cuh"
#include "src/wgrad_variant.h"

namespace ggemm {

namespace sm100 {

template <class Cfg>
cudaError_t wgrad_prepare() {
    return cudaFuncSetAttribute(wgrad_sm100<Cfg>, cudaFuncAttributeMaxDynamicSharedMemorySize, kWgradSmemBytes<Cfg>);
}

// The kernel stores from registers only: a plan never gives it the TMA store path.
template <class Cfg>
cudaError_t wgrad_launch(const WgradLaunchParams& p, cudaStream_t stream) {
    if (p.args.store_path != kWgradStoreRegisters) return cudaErrorInvalidValue;
    return launch_wgrad<wgrad_sm100<Cfg>>(p, Cfg::kThreads, kWgradSmemBytes<Cfg>, stream);
}

}  // namespace sm100

namespace {

template <class Cfg>
constexpr WgradVariant sm100_wgrad_variant(const char* name) {
    return {name,
            100,
            Cfg::kTileP,
            Cfg::kTileQ,
            Cfg::kBlockRows,
            Cfg::kStages,
            static_cast<int32_t>(sm100::kWgradBoxColumns),
            sm100::kWgradSmemBytes<Cfg>,
            Cfg::kThreads,
            /*tma_store=*/false,
            kMaxExperts,
            &sm100::wgrad_prepare<Cfg>,
            &sm100::wgrad_launch<Cfg>};
}

using WgradTile256 = sm100::WgradConfig<256, 4>;  // 48 KB per stage, 512 TMEM columns
using WgradTile192 = sm100::WgradConfig<192, 5>;  // 40 KB per stage, 384 -> 512 TMEM columns
using WgradTile128 = sm100::WgradConfig<128, 6>;  // 32 KB per stage, 256 TMEM columns

const WgradVariant kWgradVariants[] = {
    sm100_wgrad_variant<WgradTile256>("sm100_wgrad_tma_tcgen05_128x256x64_s4"),
    sm100_wgrad_variant<WgradTile192>("sm100_wgrad_tma_tcgen05_128x192x64_s5"),
    sm100_wgrad_variant<WgradTile128>("sm100_wgrad_tma_tcgen05_128x128x64_s6"),
};

}  // namespace

const WgradVariant* sm100_wgrad_variants(int* count) {
    *count = static_cast<int>(sizeof(kWgradVariants) / sizeof(kWgradVariants[0]));
    return kWgradVariants;
}

}  // namespace ggemm
