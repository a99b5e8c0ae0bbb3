// SM90 variants in clusters of two CTAs along M that multicast the weight tile (static scheduler
// only), storing D by TMA. A name ending _c2 gives one CTA's 128-row tile; the plan's tile_m is
// the cluster's 256. The planner ranks them below their one-CTA twins: they serve
// desc->cluster_m = 2 (or tile_m = 256) and GGEMM_KERNEL.
#include "src/variants_sm90.cuh"

namespace ggemm {

namespace {

using Tile256HalvesCluster = sm90::Config<256, 4, sm90::Output::kTmaStore, 128, kKMajor, 2>;
using Tile256WholeCluster = sm90::Config<256, 3, sm90::Output::kTmaStore, 256, kKMajor, 2>;
using Tile192WholeCluster = sm90::Config<192, 4, sm90::Output::kTmaStore, 192, kKMajor, 2>;
using Tile256HalvesNMajorCluster = sm90::Config<256, 4, sm90::Output::kTmaStore, 128, kNMajor, 2>;

const KernelVariant kVariants[] = {
    sm90_variant<Tile256HalvesCluster>("sm90_tmastore_halves_128x256x64_s4_c2"),
    sm90_variant<Tile256WholeCluster>("sm90_tmastore_whole_128x256x64_s3_c2"),
    sm90_variant<Tile192WholeCluster>("sm90_tmastore_whole_128x192x64_s4_c2"),
    sm90_variant<Tile256HalvesNMajorCluster>("sm90_tmastore_halves_128x256x64_s4_nmajor_c2"),
};

}  // namespace

VariantList sm90_cluster_variants() { return family_of(kVariants); }

}  // namespace ggemm
