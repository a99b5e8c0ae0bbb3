// SM90 variants, the math warps' own stores (any dtypes), N-major weights: the K-major kernels of
// the same widths but for how B is loaded and described.
#include "src/variants_sm90.cuh"

namespace ggemm {

namespace {

using Tile256NMajor = sm90::Config<256, 4, sm90::Output::kWarpStores, 0, kNMajor>;
using Tile192NMajor = sm90::Config<192, 5, sm90::Output::kWarpStores, 0, kNMajor>;
using Tile128NMajor = sm90::Config<128, 6, sm90::Output::kWarpStores, 0, kNMajor>;
using Tile64NMajor = sm90::Config<64, 8, sm90::Output::kWarpStores, 0, kNMajor>;

const KernelVariant kVariants[] = {
    sm90_variant<Tile256NMajor>("sm90_tma_wgmma_128x256x64_s4_nmajor"),
    sm90_variant<Tile192NMajor>("sm90_tma_wgmma_128x192x64_s5_nmajor"),
    sm90_variant<Tile128NMajor>("sm90_tma_wgmma_128x128x64_s6_nmajor"),
    sm90_variant<Tile64NMajor>("sm90_tma_wgmma_128x64x64_s8_nmajor"),
};

}  // namespace

VariantList sm90_nmajor_variants() { return family_of(kVariants); }

}  // namespace ggemm
