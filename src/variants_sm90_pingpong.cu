// SM90 ping-pong variants: a bf16 D without C stored by TMA, the math warpgroups taking whole
// 128 x 128 tiles in turn (sm90::PingPong), each with a buffer of its tile's width (a 64-row half
// at a time: 16 KB, 32 KB for both), beside six stages. The planner offers it to decode-sized
// calls only (src/heuristics.h, pingpong_pays).
#include "src/variants_sm90.cuh"

namespace ggemm {

namespace {

using Tile128PingPong = sm90::PingPong<sm90::Config<128, 6, sm90::Output::kTmaStore, 128>>;

const KernelVariant kVariants[] = {
    sm90_variant<Tile128PingPong>("sm90_tmastore_pingpong_128x128x64_s6"),
};

}  // namespace

VariantList sm90_pingpong_variants() { return family_of(kVariants); }

}  // namespace ggemm
