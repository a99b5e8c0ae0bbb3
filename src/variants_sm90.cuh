// The host side of the SM90 kernel variants, shared by the translation units that instantiate
// them: src/variants_sm90_<family>.cu, each one family of variants with its kernels, prepare and
// launch, compiled for sm_90a only (a translation unit per family, so that they compile in
// parallel: all in one took four minutes), and listed in the planner's order by
// src/variants_sm90.cpp. Every variant has run on a GPU (KernelVariant::proven). Stages fill the
// shared memory (227 KB per CTA on SM90) that the tile and its output buffer leave.
#pragma once

#include "kernels/common/glu_reduce.cuh"
#include "kernels/sm90/grouped_gemm_sm90.cuh"
#include "src/launch.cuh"
#include "src/tensor_map.h"
#include "src/variants.h"
#include "src/workspace.h"

namespace ggemm {

// dGLU: d_prob from the GEMM's partial sums (kernels/common/glu_reduce.cuh), launched after every
// dGLU GEMM. Static, as build_weight_maps: each translation unit launches a copy of its own.
static __global__ void __launch_bounds__(kReduceDProbThreads) reduce_d_prob(const float* partials, int64_t blocks,
                                                                            int64_t m, float* d_prob) {
    reduce_d_prob_row(partials, blocks, m, d_prob);
}

namespace sm90 {

// The kernel of an instance (Cfg, PlainEpilogue<Cfg> or GluEpilogue<Cfg>), for cudaFuncSetAttribute.
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

// Each variant but dGLU's is two kernel instances, three where kGluOverlap: Cfg for every epilogue,
// PlainEpilogue<Cfg> for the plain one, GluEpilogue<Cfg> for the fused GLU forward
// (kernels/sm90/config_sm90.cuh). They share the shared-memory size.
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

// A variant's description for the planner, from its Config.
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
    variant.max_split_k = Cfg::kSplitK ? kMaxSplitK : 1;  // config_sm90.cuh says which split K
    variant.fused_glu = Cfg::kFusedGlu || Cfg::kTmaStoreGlu || Cfg::kTmaStoreDglu;
    variant.tma_dglu = Cfg::kTmaStoreDglu;
    variant.pingpong = Cfg::kPingPong && !Cfg::kTmaStoreDglu;
    if (sm90::kHalfBoxesWithCounts<Cfg>) variant.a_box_rows_counted = Cfg::kRowsPerWarpgroup;
    variant.glu_instance = sm90::kGluOverlap<Cfg>;
    variant.math_warpgroups = Cfg::kMathWarpgroups;
    return variant;
}

// A family's table, as src/variants_sm90.cpp takes it.
template <int kCount>
VariantList family_of(const KernelVariant (&variants)[kCount]) {
    return {variants, kCount};
}

}  // namespace ggemm
