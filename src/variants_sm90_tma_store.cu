// SM90 variants that store D by TMA: a bf16 D without C, either weight layout, one CTA.
#include "src/variants_sm90.cuh"

namespace ggemm {

namespace {

// 256 wide, four stages and a buffer of half the tile (two passes), or three stages and the whole
// tile (one pass); 192 wide, four stages and the whole tile.
using Tile256Halves = sm90::Config<256, 4, sm90::Output::kTmaStore, 128>;
using Tile256Whole = sm90::Config<256, 3, sm90::Output::kTmaStore, 256>;
using Tile192Whole = sm90::Config<192, 4, sm90::Output::kTmaStore, 192>;
using Tile256HalvesNMajor = sm90::Config<256, 4, sm90::Output::kTmaStore, 128, kNMajor>;
using Tile256WholeNMajor = sm90::Config<256, 3, sm90::Output::kTmaStore, 256, kNMajor>;
using Tile192WholeNMajor = sm90::Config<192, 4, sm90::Output::kTmaStore, 192, kNMajor>;

const KernelVariant kVariants[] = {
    sm90_variant<Tile256Halves>("sm90_tmastore_halves_128x256x64_s4"),
    sm90_variant<Tile256Whole>("sm90_tmastore_whole_128x256x64_s3"),
    sm90_variant<Tile192Whole>("sm90_tmastore_whole_128x192x64_s4"),
    sm90_variant<Tile256HalvesNMajor>("sm90_tmastore_halves_128x256x64_s4_nmajor"),
    sm90_variant<Tile256WholeNMajor>("sm90_tmastore_whole_128x256x64_s3_nmajor"),
    sm90_variant<Tile192WholeNMajor>("sm90_tmastore_whole_128x192x64_s4_nmajor"),
};

}  // namespace

VariantList sm90_tma_store_variants() { return family_of(kVariants); }

}  // namespace ggemm
