// The SM90 weight-gradient variants: one per tile width along Q. Stages fill the shared memory
// the tile leaves. Compiled for sm_90a only: this translation unit instantiates the kernels and
// their host-side prepare and launch.
#include "kernels/sm90/wgrad_sm90.cuh"
#include "src/wgrad_launch.cuh"
#include "src/wgrad_variant.h"

namespace ggemm {

namespace sm90 {

template <class Cfg>
cudaError_t wgrad_prepare() {
    return cudaFuncSetAttribute(wgrad_sm90<Cfg>, cudaFuncAttributeMaxDynamicSharedMemorySize, kWgradSmemBytes<Cfg>);
}

template <class Cfg>
cudaError_t wgrad_launch(const WgradLaunchParams& p, cudaStream_t stream) {
    return launch_wgrad<wgrad_sm90<Cfg>>(p, Cfg::kThreads, kWgradSmemBytes<Cfg>, stream);
}

}  // namespace sm90

namespace {

template <class Cfg>
constexpr WgradVariant sm90_wgrad_variant(const char* name) {
    return {name,
            90,
            Cfg::kTileP,
            Cfg::kTileQ,
            Cfg::kBlockRows,
            Cfg::kStages,
            sm90::kWgradBoxColumns,
            sm90::kWgradSmemBytes<Cfg>,
            Cfg::kThreads,
            /*tma_store=*/true,
            Cfg::kOffsetCapacity,
            &sm90::wgrad_prepare<Cfg>,
            &sm90::wgrad_launch<Cfg>};
}

using WgradTile256 = sm90::WgradConfig<256, 4, 2>;  // two staging atoms: at most 256 experts
using WgradTile192 = sm90::WgradConfig<192, 5>;  // Q = 2880 (gpt-oss): 15 tiles, no padding column
using WgradTile128 = sm90::WgradConfig<128, 6>;

const WgradVariant kWgradVariants[] = {
    sm90_wgrad_variant<WgradTile256>("sm90_wgrad_tma_wgmma_128x256x64_s4"),
    sm90_wgrad_variant<WgradTile192>("sm90_wgrad_tma_wgmma_128x192x64_s5"),
    sm90_wgrad_variant<WgradTile128>("sm90_wgrad_tma_wgmma_128x128x64_s6"),
};

}  // namespace

const WgradVariant* sm90_wgrad_variants(int* count) {
    *count = static_cast<int>(sizeof(kWgradVariants) / sizeof(kWgradVariants[0]));
    return kWgradVariants;
}

}  // namespace ggemm
