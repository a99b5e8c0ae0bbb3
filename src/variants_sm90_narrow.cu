// SM90 variants, the math warps' own stores (any dtypes), K-major weights, tiles 64 wide or less
// or 64 rows high: small calls, where wider tiles would leave most SMs idle (the planner counts
// waves).
#include "src/variants_sm90.cuh"

namespace ggemm {

namespace {

using Tile64 = sm90::Config<64, 8>;
// 32 wide: single experts of a few hundred rows and N of 1536-2048 fill the SMs only in tiles
// this narrow (DeepGEMM's heuristic picks 32-wide tiles there). K-major weights only (an N-major
// box is 64 columns).
using Tile32 = sm90::Config<32, 10>;
// One math warpgroup, 64-row tiles: single experts of a few hundred rows, where 128-row tiles
// load the whole A block for every few columns.
using Rows64Tile64 = sm90::Config<64, 12, sm90::Output::kWarpStores, 0, kKMajor, 1, sm90::PreL2::kPrefetchAtStart, 1>;
using Rows64Tile128 = sm90::Config<128, 8, sm90::Output::kWarpStores, 0, kKMajor, 1, sm90::PreL2::kPrefetchAtStart, 1>;

const KernelVariant kVariants[] = {
    sm90_variant<Tile64>("sm90_tma_wgmma_128x64x64_s8"),
    sm90_variant<Tile32>("sm90_tma_wgmma_128x32x64_s10"),
    sm90_variant<Rows64Tile64>("sm90_tma_wgmma_64x64x64_s12"),
    sm90_variant<Rows64Tile128>("sm90_tma_wgmma_64x128x64_s8"),
};

}  // namespace

VariantList sm90_narrow_variants() { return family_of(kVariants); }

}  // namespace ggemm
