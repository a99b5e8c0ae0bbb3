// SM90 variants for dGLU with a bf16 saved pre-activation and d_pre, through TMA: each math
// warpgroup a whole tile in turn; its pre-activation columns (twice the tile's) pass through the
// warpgroup's two 8 KB atom buffers (32 KB for both warpgroups, a stage's room), beside six
// stages at 128 columns of R and four at 192. 192 columns: a sixth less operand traffic per
// output than 128 ((128 + 192) / (128 x 192) against 2 / 128). kPreL2: how the pre-activation and
// d_pre pass the L2 (sm90::PreL2); evict-first on N-major weights, the layout of a dgrad's, where
// it was measured.
#include "src/variants_sm90.cuh"

namespace ggemm {

namespace {

template <int kTileN, int kWeightLayout = kKMajor, sm90::PreL2 kPreL2 = sm90::PreL2::kPrefetchAtStart>
using Dglu = sm90::Config<kTileN, kTileN == 128 ? 6 : 4, sm90::Output::kTmaStore, 2 * kTileN, kWeightLayout, 1,
                          kPreL2>;
using Tile128Dglu = Dglu<128>;
using Tile192Dglu = Dglu<192>;
using Tile128DgluNMajor = Dglu<128, kNMajor, sm90::PreL2::kEvictFirst>;
using Tile192DgluNMajor = Dglu<192, kNMajor, sm90::PreL2::kEvictFirst>;

const KernelVariant kVariants[] = {
    sm90_variant<Tile128Dglu>("sm90_tmastore_dglu_128x128x64_s6"),
    sm90_variant<Tile192Dglu>("sm90_tmastore_dglu_128x192x64_s4"),
    sm90_variant<Tile128DgluNMajor>("sm90_tmastore_dglu_evictfirst_128x128x64_s6_nmajor"),
    sm90_variant<Tile192DgluNMajor>("sm90_tmastore_dglu_evictfirst_128x192x64_s4_nmajor"),
};

}  // namespace

VariantList sm90_dglu_variants() { return family_of(kVariants); }

}  // namespace ggemm
