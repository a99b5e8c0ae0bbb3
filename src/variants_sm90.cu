// The SM90 kernel variants the planner chooses from: one per tile width and weight layout with
// the math warps' own stores (any dtypes; the N-major kernels differ only in how B is loaded and
// described), and TMA-store variants for a bf16 D without C (either weight layout), some of them
// again as clusters of two CTAs along M that multicast the weight tile (names ending _c2: the name
// gives one CTA's 128-row tile, the plan's tile_m is the cluster's 256), and for dGLU with a bf16
// saved pre-activation and d_pre, kernels that load the one and store the other by TMA. Every one
// has run on a GPU (KernelVariant::proven). Stages fill the shared memory (227 KB per CTA on SM90)
// that the tile and its output buffer leave. Compiled for sm_90a only: this translation unit
// instantiates the kernels and their host-side prepare and launch.
#include "kernels/common/glu_reduce.cuh"
#include "kernels/sm90/grouped_gemm_sm90.cuh"
#include "src/launch.cuh"
#include "src/tensor_map.h"
#include "src/variants.h"
#include "src/workspace.h"

namespace ggemm {

// dGLU: d_prob from the GEMM's partial sums (kernels/common/glu_reduce.cuh).
__global__ void __launch_bounds__(kReduceDProbThreads) reduce_d_prob(const float* partials, int64_t blocks,
                                                                     int64_t m, float* d_prob) {
    reduce_d_prob_row(partials, blocks, m, d_prob);
}

namespace sm90 {

// The kernel of an instance (Cfg or PlainEpilogue<Cfg>), for cudaFuncSetAttribute.
template <class Cfg>
const void* kernel_of() {
    if constexpr (Cfg::kTmaStoreDglu) {
        return reinterpret_cast<const void*>(grouped_gemm_sm90_dglu<Cfg>);
    } else if constexpr (Cfg::kOutput == Output::kTmaStore) {
        return reinterpret_cast<const void*>(grouped_gemm_sm90_tma_store<Cfg>);
    } else {
        return reinterpret_cast<const void*>(grouped_gemm_sm90<Cfg>);
    }
}

// Each variant but dGLU's is two kernel instances: Cfg for every epilogue, PlainEpilogue<Cfg> for
// the plain one (grouped_gemm_sm90.cuh). They share the shared-memory size.
template <class Cfg>
cudaError_t prepare() {
    const cudaError_t error =
        cudaFuncSetAttribute(kernel_of<Cfg>(), cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes<Cfg>);
    if constexpr (Cfg::kTmaStoreDglu) {
        return error;
    } else {
        static_assert(kSmemBytes<PlainEpilogue<Cfg>> == kSmemBytes<Cfg>, "one size for both instances");
        if (error != cudaSuccess) return error;
        if constexpr (kGluOverlap<Cfg>) {
            static_assert(kSmemBytes<GluEpilogue<Cfg>> == kSmemBytes<Cfg>, "one size for every instance");
            const cudaError_t glu = cudaFuncSetAttribute(
                kernel_of<GluEpilogue<Cfg>>(), cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes<Cfg>);
            if (glu != cudaSuccess) return glu;
        }
        return cudaFuncSetAttribute(kernel_of<PlainEpilogue<Cfg>>(), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    kSmemBytes<Cfg>);
    }
}

// Whether the plain instance serves a call: its epilogue is plain and K is not split (and no test
// has asked for the general instance).
inline bool plain_instance_serves(const KernelArgs& args, bool tma_store) {
    return args.k_splits <= 1 && plain_epilogue(args, tma_store) && !general_instance_forced();
}

// The GLU instance serves the fused GLU forward (a gated activation, no dGLU) with K unsplit.
inline bool glu_instance_serves(const KernelArgs& args) {
    return args.k_splits <= 1 && args.activation != kActivationNone && !args.glu_backward &&
           !general_instance_forced();
}

// Clusters of kClusterM CTAs along x (rank = blockIdx.x % kClusterM); the planner's grid is a
// multiple of the variant's cluster_m (src/heuristics.cpp, persistent_grid).
template <class Cfg>
cudaError_t launch(const LaunchParams& p, cudaStream_t stream) {
    if (Cfg::kClusterM > 1 && (p.grid <= 0 || p.grid % Cfg::kClusterM != 0)) return cudaErrorInvalidConfiguration;
    if constexpr (Cfg::kTmaStoreDglu) {
        const cudaError_t error =
            launch_gemm_with_pre_map<grouped_gemm_sm90_dglu<Cfg>>(p, Cfg::kThreads, kSmemBytes<Cfg>, stream);
        if (error != cudaSuccess) return error;
        return launch_reduce_d_prob<reduce_d_prob>(p.args, stream);
    } else if constexpr (Cfg::kOutput == Output::kTmaStore) {
        if (plain_instance_serves(p.args, true)) {
            return launch_gemm_with_output_map<grouped_gemm_sm90_tma_store<PlainEpilogue<Cfg>>>(
                p, Cfg::kThreads, kSmemBytes<Cfg>, Cfg::kClusterM, stream);
        }
        if constexpr (kGluOverlap<Cfg>) {
            if (glu_instance_serves(p.args)) {
                return launch_gemm_with_output_map<grouped_gemm_sm90_tma_store<GluEpilogue<Cfg>>>(
                    p, Cfg::kThreads, kSmemBytes<Cfg>, Cfg::kClusterM, stream);
            }
        }
        return launch_gemm_with_output_map<grouped_gemm_sm90_tma_store<Cfg>>(p, Cfg::kThreads, kSmemBytes<Cfg>,
                                                                             Cfg::kClusterM, stream);
    } else {
        if (plain_instance_serves(p.args, false)) {
            return launch_gemm<grouped_gemm_sm90<PlainEpilogue<Cfg>>>(p, Cfg::kThreads, kSmemBytes<Cfg>,
                                                                     Cfg::kClusterM, stream);
        }
        const cudaError_t error =
            launch_gemm<grouped_gemm_sm90<Cfg>>(p, Cfg::kThreads, kSmemBytes<Cfg>, Cfg::kClusterM, stream);
        if (error != cudaSuccess || !p.args.glu_backward) return error;
        return launch_reduce_d_prob<reduce_d_prob>(p.args, stream);
    }
}

}  // namespace sm90

static_assert(sm90::kNMajorBoxColumns == static_cast<int>(kNMajorBoxColumns),
              "the host's N-major box must be the kernel's");

namespace {

template <class Cfg>
constexpr KernelVariant sm90_variant(const char* name) {
    KernelVariant variant = {name,
            90,
            /*tile_m=*/Cfg::kScheduleTileM,  // rows per tile: a cluster of two computes 256
            Cfg::kTileN,
            Cfg::kBlockK,
            Cfg::kStages,
            Cfg::kClusterM,
            /*a_box_rows=*/Cfg::kTileM,       // each CTA loads its own 128 (or 64) rows of A
            /*b_box_rows=*/Cfg::kBPartRows,   // and its part of B (K-major; a cluster: tile_n / 2)
            /*max_tail_pieces=*/Cfg::kTileN % kPieceColumns == 0 ? kMaxPieces : 1,  // 112 is never cut
            sm90::kSmemBytes<Cfg>,
            Cfg::kThreads,
            &sm90::prepare<Cfg>,
            &sm90::launch<Cfg>};
    if (Cfg::kOutput == sm90::Output::kTmaStore) {
        variant.d_box_cols = sm90::kAtomColumns;
        variant.d_box_rows = Cfg::kRowsPerWarpgroup;
    }
    variant.max_experts = Cfg::kOffsetCapacity;
    variant.weight_layout = Cfg::kWeightLayout;
    variant.dynamic_scheduler = Cfg::kClusterM == 1;  // both CTAs of a cluster must take the same items
    variant.max_split_k = Cfg::kSplitK ? kMaxSplitK : 1;  // grouped_gemm_sm90.cuh says which split K
    variant.fused_glu = Cfg::kFusedGlu || Cfg::kTmaStoreGlu || Cfg::kTmaStoreDglu;
    variant.tma_dglu = Cfg::kTmaStoreDglu;
    if (sm90::kHalfBoxesWithCounts<Cfg>) variant.a_box_rows_counted = Cfg::kRowsPerWarpgroup;
    variant.glu_instance = sm90::kGluOverlap<Cfg>;
    variant.math_warpgroups = Cfg::kMathWarpgroups;
    return variant;
}

using Tile256 = sm90::Config<256, 4>;
using Tile192 = sm90::Config<192, 5>;
using Tile128 = sm90::Config<128, 6>;
// 64 wide: for small calls, where 128 x 256 tiles would leave most SMs idle (the planner counts waves).
using Tile64 = sm90::Config<64, 8>;
// One math warpgroup, 64-row tiles: single experts of a few hundred rows, where 128-row tiles
// load the whole A block for every few columns.
using Rows64Tile64 = sm90::Config<64, 12, sm90::Output::kWarpStores, 0, kKMajor, 1, sm90::PreL2::kPrefetchAtStart, 1>;
using Rows64Tile128 = sm90::Config<128, 8, sm90::Output::kWarpStores, 0, kKMajor, 1, sm90::PreL2::kPrefetchAtStart, 1>;
// 32 wide: single experts of a few hundred rows and N of 1536-2048 fill the SMs only in tiles
// this narrow (DeepGEMM's heuristic picks 32-wide tiles there). K-major weights only (an N-major
// box is 64 columns).
using Tile32 = sm90::Config<32, 10>;
// 112 wide: single experts whose N is a multiple of 112 but the 128-wide tiles leave SMs idle
// (N = 7168: 64 column tiles of 112 against 56 of 128; DeepGEMM's heuristic picks 112 there).
// K-major only, never cut into pieces, no split-K, no fused GLU (whole 64-column block pairs).
using Tile112 = sm90::Config<112, 6>;
// TMA stores: 256 wide, four stages and a buffer of half the tile (two passes), or three stages
// and the whole tile (one pass); 192 wide, four stages and the whole tile.
using Tile256Halves = sm90::Config<256, 4, sm90::Output::kTmaStore, 128>;
using Tile256Whole = sm90::Config<256, 3, sm90::Output::kTmaStore, 256>;
using Tile192Whole = sm90::Config<192, 4, sm90::Output::kTmaStore, 192>;
using Tile256HalvesNMajor = sm90::Config<256, 4, sm90::Output::kTmaStore, 128, kNMajor>;
using Tile256WholeNMajor = sm90::Config<256, 3, sm90::Output::kTmaStore, 256, kNMajor>;
using Tile192WholeNMajor = sm90::Config<192, 4, sm90::Output::kTmaStore, 192, kNMajor>;
using Tile256NMajor = sm90::Config<256, 4, sm90::Output::kWarpStores, 0, kNMajor>;
using Tile192NMajor = sm90::Config<192, 5, sm90::Output::kWarpStores, 0, kNMajor>;
using Tile128NMajor = sm90::Config<128, 6, sm90::Output::kWarpStores, 0, kNMajor>;
using Tile64NMajor = sm90::Config<64, 8, sm90::Output::kWarpStores, 0, kNMajor>;
// Clusters of two along M, the weight tile multicast (static scheduler only). The planner ranks
// them below their one-CTA twins: they serve desc->cluster_m = 2 (or tile_m = 256) and
// GGEMM_KERNEL.
using Tile256HalvesCluster = sm90::Config<256, 4, sm90::Output::kTmaStore, 128, kKMajor, 2>;
using Tile256WholeCluster = sm90::Config<256, 3, sm90::Output::kTmaStore, 256, kKMajor, 2>;
using Tile192WholeCluster = sm90::Config<192, 4, sm90::Output::kTmaStore, 192, kKMajor, 2>;
using Tile256HalvesNMajorCluster = sm90::Config<256, 4, sm90::Output::kTmaStore, 128, kNMajor, 2>;
// dGLU through TMA: each math warpgroup a whole tile in turn; its pre-activation columns (twice
// the tile's) pass through the warpgroup's two 8 KB atom buffers (32 KB for both warpgroups, a
// stage's room), beside six stages at 128 columns of R and four at 192. 192 columns: a sixth
// less operand traffic per output than 128 ((128 + 192) / (128 x 192) against 2 / 128). kPreL2:
// how the pre-activation and d_pre pass the L2 (sm90::PreL2); evict-first on N-major weights,
// the layout of a dgrad's, where it was measured.
template <int kTileN, int kWeightLayout = kKMajor, sm90::PreL2 kPreL2 = sm90::PreL2::kPrefetchAtStart>
using Dglu = sm90::Config<kTileN, kTileN == 128 ? 6 : 4, sm90::Output::kTmaStore, 2 * kTileN, kWeightLayout, 1,
                          kPreL2>;
using Tile128Dglu = Dglu<128>;
using Tile192Dglu = Dglu<192>;
using Tile128DgluNMajor = Dglu<128, kNMajor, sm90::PreL2::kEvictFirst>;
using Tile192DgluNMajor = Dglu<192, kNMajor, sm90::PreL2::kEvictFirst>;

const KernelVariant kVariants[] = {
    sm90_variant<Tile256>("sm90_tma_wgmma_128x256x64_s4"),
    sm90_variant<Tile192>("sm90_tma_wgmma_128x192x64_s5"),
    sm90_variant<Tile128>("sm90_tma_wgmma_128x128x64_s6"),
    sm90_variant<Tile112>("sm90_tma_wgmma_128x112x64_s6"),
    sm90_variant<Tile64>("sm90_tma_wgmma_128x64x64_s8"),
    sm90_variant<Tile32>("sm90_tma_wgmma_128x32x64_s10"),
    sm90_variant<Rows64Tile64>("sm90_tma_wgmma_64x64x64_s12"),
    sm90_variant<Rows64Tile128>("sm90_tma_wgmma_64x128x64_s8"),
    sm90_variant<Tile256Halves>("sm90_tmastore_halves_128x256x64_s4"),
    sm90_variant<Tile256Whole>("sm90_tmastore_whole_128x256x64_s3"),
    sm90_variant<Tile192Whole>("sm90_tmastore_whole_128x192x64_s4"),
    sm90_variant<Tile256HalvesNMajor>("sm90_tmastore_halves_128x256x64_s4_nmajor"),
    sm90_variant<Tile256WholeNMajor>("sm90_tmastore_whole_128x256x64_s3_nmajor"),
    sm90_variant<Tile192WholeNMajor>("sm90_tmastore_whole_128x192x64_s4_nmajor"),
    sm90_variant<Tile256NMajor>("sm90_tma_wgmma_128x256x64_s4_nmajor"),
    sm90_variant<Tile192NMajor>("sm90_tma_wgmma_128x192x64_s5_nmajor"),
    sm90_variant<Tile128NMajor>("sm90_tma_wgmma_128x128x64_s6_nmajor"),
    sm90_variant<Tile64NMajor>("sm90_tma_wgmma_128x64x64_s8_nmajor"),
    sm90_variant<Tile256HalvesCluster>("sm90_tmastore_halves_128x256x64_s4_c2"),
    sm90_variant<Tile256WholeCluster>("sm90_tmastore_whole_128x256x64_s3_c2"),
    sm90_variant<Tile192WholeCluster>("sm90_tmastore_whole_128x192x64_s4_c2"),
    sm90_variant<Tile256HalvesNMajorCluster>("sm90_tmastore_halves_128x256x64_s4_nmajor_c2"),
    sm90_variant<Tile128Dglu>("sm90_tmastore_dglu_128x128x64_s6"),
    sm90_variant<Tile192Dglu>("sm90_tmastore_dglu_128x192x64_s4"),
    sm90_variant<Tile128DgluNMajor>("sm90_tmastore_dglu_evictfirst_128x128x64_s6_nmajor"),
    sm90_variant<Tile192DgluNMajor>("sm90_tmastore_dglu_evictfirst_128x192x64_s4_nmajor"),
};

}  // namespace

const KernelVariant* sm90_variants(int* count) {
    *count = static_cast<int>(sizeof(kVariants) / sizeof(kVariants[0]));
    return kVariants;
}

}  // namespace ggemm
