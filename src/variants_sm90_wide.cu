// SM90 variants, the math warps' own stores (any dtypes), K-major weights, 128-row tiles 112 to
// 256 wide: the suite's layers whose outputs take no TMA store, and single experts whose N is a
// multiple of 112.
#include "src/variants_sm90.cuh"

namespace ggemm {

namespace {

using Tile256 = sm90::Config<256, 4>;
using Tile192 = sm90::Config<192, 5>;
using Tile128 = sm90::Config<128, 6>;
// 112 wide: single experts whose N is a multiple of 112 but the 128-wide tiles leave SMs idle
// (N = 7168: 64 column tiles of 112 against 56 of 128; DeepGEMM's heuristic picks 112 there).
// K-major only, never cut into pieces, no split-K, no fused GLU (whole 64-column block pairs).
using Tile112 = sm90::Config<112, 6>;

const KernelVariant kVariants[] = {
    sm90_variant<Tile256>("sm90_tma_wgmma_128x256x64_s4"),
    sm90_variant<Tile192>("sm90_tma_wgmma_128x192x64_s5"),
    sm90_variant<Tile128>("sm90_tma_wgmma_128x128x64_s6"),
    sm90_variant<Tile112>("sm90_tma_wgmma_128x112x64_s6"),
};

}  // namespace

VariantList sm90_wide_variants() { return family_of(kVariants); }

}  // namespace ggemm
