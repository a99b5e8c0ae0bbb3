// What the host knows of a compiled kernel: the parameters of one launch, and each variant's
// description as data for the planner (src/variants.h lists the compiled ones).
#pragma once

#include <cuda.h>  // CUtensorMap (a type only: the library does not link libcuda)
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/common/params.h"

namespace ggemm {

// Everything one launch needs. The maps are passed to the kernel as __grid_constant__
// parameters; in discrete mode b_map is the template the kernel patches per expert.
struct LaunchParams {
    CUtensorMap a_map;  // A: dims {K, M}, box {block_k, tile_m / (consumer split)}
    CUtensorMap b_map;  // B dense: dims {K, N, L}; discrete: template dims {K, N} (N-major: N and K swapped)
    CUtensorMap d_map;  // D, for variants that store it with TMA (d_box_rows > 0): dims {N, M} ({N/2, M} with a
                        // GLU, {2N, M} for dGLU)
    CUtensorMap pre_map;  // dGLU through TMA (tma_dglu): the saved pre-activation, dims {2N, M}
    KernelArgs args;
    const uint64_t* b_ptrs;  // discrete mode: L pointers to N x K bf16, read by the map builder only
    int32_t grid;       // persistent CTAs (a multiple of cluster_m)
};

using LaunchFn = cudaError_t (*)(const LaunchParams&, cudaStream_t);
// Called once at plan creation: raises the kernel's dynamic shared-memory limit.
using PrepareFn = cudaError_t (*)();

// One compiled kernel configuration, described as data for the planner.
struct KernelVariant {
    const char* name;       // e.g. "sm90_tma_wgmma_128x256x64_s4_c1"
    int32_t arch;           // 90 or 100
    int32_t tile_m;         // rows of C/D per tile (never straddles an expert: segments are 256-aligned)
    int32_t tile_n;         // columns per tile
    int32_t block_k;        // K per pipeline stage
    int32_t stages;         // shared-memory pipeline depth
    int32_t cluster_m;      // CTAs per cluster along M (TMA multicast of the weight tile)
    int32_t a_box_rows;     // rows per TMA box of A (the A map's box height)
    int32_t b_box_rows;     // rows per TMA box of B
    int32_t max_tail_pieces;  // pieces the kernel can cut a tile of the last round into (1: none)
    int32_t smem_bytes;     // dynamic shared memory per CTA
    int32_t threads;        // threads per CTA
    PrepareFn prepare;
    LaunchFn launch;
    // The TMA store box of D, {d_box_cols, d_box_rows}; 0: the math warps store C and D and the
    // variant serves any dtypes. Otherwise it serves only a bf16 D without C, through D's map.
    int32_t d_box_cols = 0;
    int32_t d_box_rows = 0;
    int32_t max_experts = kMaxExperts;  // the most experts its shared copy of the offsets holds
    // How the kernel reads B_g (GGEMM_WEIGHT_LAYOUT_*): K-major boxes {block_k, b_box_rows}, or
    // N-major boxes of 64 columns (one 128-byte swizzle row) x block_k rows, tile_n / 64 of them.
    int32_t weight_layout = kKMajor;
    // Whether it can run the dynamic scheduler (an atomic counter claimed by one thread). SM90
    // clusters cannot: both CTAs of a cluster derive the same items from the static rule.
    bool dynamic_scheduler = true;
    // The most splits of K the kernel can reduce (kernels/common/split_k.h); 1: it cannot split.
    int32_t max_split_k = 1;
    // Whether its epilogue fuses the GLU forward (desc->activation): the math warps' stores fuse
    // dGLU too, TMA stores (d_box_rows > 0) the forward of a bf16 D without C only.
    bool fused_glu = true;
    // dGLU through TMA: the saved pre-activation (bf16) is loaded into the output buffer by TMA and
    // d_pre (bf16, no C) leaves from it by TMA. Such a kernel serves dGLU only.
    bool tma_dglu = false;
    // Whether a fused GLU forward with K unsplit runs its GLU instance, which computes a tile's
    // activation while the tensor cores run its last and the next tile's first k-blocks
    // (kernels/sm90/config_sm90.cuh, GluEpilogue).
    bool glu_instance = false;
    // Whether the kernel has passed the GPU tests on hardware of its arch. The planner ranks a
    // variant that has not below every one that has (better_choice): it serves a plan only when
    // nothing proven can, e.g. GGEMM_KERNEL names it.
    bool proven = true;
    // Warpgroups issuing the tile's MMAs (SM90: one per 64 rows of the CTA's tile); the fill
    // model's rates depend on it (src/heuristics.h, ItemRates).
    int32_t math_warpgroups = 2;
    // Rows per TMA box of A in a call with valid-row counts (0: a_box_rows). SM90's two-warpgroup
    // kernels load A in two boxes of 64 rows there, and only the first where the tile's second
    // warpgroup has no valid row (it issues no MMA then).
    int32_t a_box_rows_counted = 0;
    // Whether its math warpgroups take whole tiles in turn, so that one's epilogue runs beside
    // the other's MMAs (the SM90 ping-pong kernel of a bf16 D without C). The planner offers it
    // only to the calls where that pays (src/heuristics.h, pingpong_pays).
    bool pingpong = false;
};

// A view of some kernel variants.
struct VariantList {
    const KernelVariant* items = nullptr;
    int count = 0;
};

}  // namespace ggemm
