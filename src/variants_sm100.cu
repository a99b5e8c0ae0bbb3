// The SM100 kernel variants the planner chooses from: per tile width, 128-row tiles on one CTA
// (cta_group::1) and 256-row tiles on a CTA pair (cta_group::2, cluster of 2 along M; each CTA
// holds 128 rows of A and half of the tile's B, so a stage is smaller and more of them fit).
// Stages fill the shared memory (227 KB per CTA on SM100) that the tile leaves; TMEM holds two
// accumulators of tile_n f32 columns each (at most 512 columns), per CTA. Each configuration
// exists once per weight layout (the N-major kernels carry the suffix _nmajor), except the pair of
// 192 columns, whose 96 columns per CTA are not whole 64-column N-major boxes.
//
// Compiled for sm_100a only: this translation unit instantiates the kernels and their host-side
// prepare and launch. These kernels have never run on an SM100 GPU (docs/SM100.md).
#include "kernels/sm100/grouped_gemm_sm100.cuh"
#include "src/launch.cuh"
#include "src/tensor_map.h"
#include "src/variants.h"

namespace ggemm {

namespace sm100 {

// dGLU: d_prob from the GEMM's partial sums (kernels/common/glu_reduce.cuh), compiled for sm_100a.
__global__ void __launch_bounds__(kReduceDProbThreads) reduce_d_prob(const float* partials, int64_t blocks,
                                                                     int64_t m, float* d_prob) {
    reduce_d_prob_row(partials, blocks, m, d_prob);
}

template <class Cfg>
cudaError_t prepare() {
    return cudaFuncSetAttribute(grouped_gemm_sm100<Cfg>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                kSmemBytes<Cfg>);
}

// A pair kernel is launched in clusters of two CTAs along x (rank = blockIdx.x % 2); the planner's
// grid is a multiple of the variant's cluster_m (src/heuristics.cpp, persistent_grid). dGLU
// enqueues the reduction of d_prob's partials after the GEMM.
template <class Cfg>
cudaError_t launch(const LaunchParams& p, cudaStream_t stream) {
    if (p.grid <= 0 || p.grid % Cfg::kCtaGroup != 0) return cudaErrorInvalidConfiguration;
    const cudaError_t error =
        launch_gemm<grouped_gemm_sm100<Cfg>>(p, Cfg::kThreads, kSmemBytes<Cfg>, Cfg::kCtaGroup, stream);
    if (error != cudaSuccess || !p.args.glu_backward) return error;
    return launch_reduce_d_prob<reduce_d_prob>(p.args, stream);
}

}  // namespace sm100

static_assert(sm100::kMnMajorBoxColumns == kNMajorBoxColumns, "the host's N-major box must be the kernel's");

namespace {

template <class Cfg>
constexpr KernelVariant sm100_variant(const char* name) {
    KernelVariant variant = {name,
            100,
            /*tile_m=*/Cfg::kTileM * Cfg::kCtaGroup,  // rows per tile: a pair computes 256
            Cfg::kTileN,
            Cfg::kBlockK,
            Cfg::kStages,
            /*cluster_m=*/Cfg::kCtaGroup,
            /*a_box_rows=*/Cfg::kTileM,                // each CTA loads its own 128 rows of A
            /*b_box_rows=*/Cfg::kBRows,                // and its part of B (a pair: tile_n / 2)
            /*max_tail_pieces=*/1,                     // tiles are never cut (tail_split.h)
            sm100::kSmemBytes<Cfg>,
            Cfg::kThreads,
            &sm100::prepare<Cfg>,
            &sm100::launch<Cfg>};
    variant.weight_layout = Cfg::kWeightLayout;
    variant.proven = false;
    return variant;
}

using Tile256 = sm100::Config<256, 4>;  // 48 KB per stage, 512 TMEM columns
using Tile192 = sm100::Config<192, 5>;  // 40 KB per stage, 384 -> 512 TMEM columns
using Tile128 = sm100::Config<128, 6>;  // 32 KB per stage, 256 TMEM columns
// CTA pairs: per CTA, A 16 KB + B tile_n / 2 rows per stage.
using Pair256 = sm100::Config<256, 6, 2>;  // 32 KB per stage, 512 TMEM columns in each CTA
using Pair192 = sm100::Config<192, 7, 2>;  // 28 KB per stage, 384 -> 512 TMEM columns
using Pair128 = sm100::Config<128, 8, 2>;  // 24 KB per stage, 256 TMEM columns
// N-major weights: the same stages (a stage's B holds the same bytes, as 64-column boxes).
using Tile256NMajor = sm100::Config<256, 4, 1, kNMajor>;
using Tile192NMajor = sm100::Config<192, 5, 1, kNMajor>;
using Tile128NMajor = sm100::Config<128, 6, 1, kNMajor>;
using Pair256NMajor = sm100::Config<256, 6, 2, kNMajor>;  // 128 columns = 2 boxes per CTA
using Pair128NMajor = sm100::Config<128, 8, 2, kNMajor>;  // 64 columns = 1 box per CTA

const KernelVariant kVariants[] = {
    sm100_variant<Tile256>("sm100_tma_tcgen05_128x256x64_s4"),
    sm100_variant<Tile192>("sm100_tma_tcgen05_128x192x64_s5"),
    sm100_variant<Tile128>("sm100_tma_tcgen05_128x128x64_s6"),
    sm100_variant<Pair256>("sm100_tma_tcgen05_256x256x64_s6_c2"),
    sm100_variant<Pair192>("sm100_tma_tcgen05_256x192x64_s7_c2"),
    sm100_variant<Pair128>("sm100_tma_tcgen05_256x128x64_s8_c2"),
    sm100_variant<Tile256NMajor>("sm100_tma_tcgen05_128x256x64_s4_nmajor"),
    sm100_variant<Tile192NMajor>("sm100_tma_tcgen05_128x192x64_s5_nmajor"),
    sm100_variant<Tile128NMajor>("sm100_tma_tcgen05_128x128x64_s6_nmajor"),
    sm100_variant<Pair256NMajor>("sm100_tma_tcgen05_256x256x64_s6_c2_nmajor"),
    sm100_variant<Pair128NMajor>("sm100_tma_tcgen05_256x128x64_s8_c2_nmajor"),
};

}  // namespace

const KernelVariant* sm100_variants(int* count) {
    *count = static_cast<int>(sizeof(kVariants) / sizeof(kVariants[0]));
    return kVariants;
}

}  // namespace ggemm
