// The SM90 grouped GEMM: persistent, warp-specialized, TMA + wgmma.
//
// Read top to bottom: configuration and shared memory (config_sm90.cuh), the producer
// (producer_sm90.cuh), the math warps' main loop (main_loop_sm90.cuh), their tile loops
// (tile_loop_sm90.cuh; the GLU instance's, glu_tile_loop_sm90.cuh; the ping-pong kernels',
// pingpong_sm90.cuh); here, which tile loop a call runs, then the kernel: barrier init, role split
// with register reallocation, producer and math warpgroups.
//
// One CTA per SM. Warpgroup 0 is the producer: one warp walks the tile schedule, one lane publishes
// each tile to the math warpgroups through a small ring, and an elected lane streams A and B
// k-blocks into a multi-stage shared-memory ring with TMA (B as one K-major box, or as 64-column
// N-major boxes: operand_layout.h). In a cluster of two CTAs along M (kClusterM = 2, static
// scheduler only) the schedule's tiles are 256 rows: both CTAs walk the same work items, CTA rank r
// computes rows [row_begin + 128 r, + 128) on the same columns, and each loads its own A and half
// of the weight tile, multicast into both CTAs. Warpgroups 1 and 2 each own 64 rows of the 128-row
// tile and issue m64nNk16 wgmma over the full tile width (over a piece's width when the last
// partial round of tiles is cut along N, kernels/common/tail_split.h), keeping one wgmma batch in
// flight, then run the epilogue. With valid-row counts (KernelArgs::valid_rows), a math warpgroup
// whose 64 rows all lie past its expert's count skips its wgmma and its epilogue (it still releases
// every stage), and one whose rows are partly valid writes only the valid ones. Two output designs:
// the math warps' own stores, staged through shared memory 128 bytes of a row at a time
// (epilogue_sm90.cuh, every dtype and C), or, for a bf16 D without C, a tile buffer in shared
// memory stored by TMA while the next tile's main loop runs (tma_store_epilogue_sm90.cuh). Small
// calls may split each tile's K range over several work items (kernels/common/split_k.h): each
// stores an fp32 partial, and the last to arrive sums them in split order and runs the epilogue
// (reduce_split).
#pragma once

#include <cstdint>

#include "kernels/common/offset_report.cuh"
#include "kernels/common/params.h"
#include "kernels/common/shared_storage.cuh"
#include "kernels/sm90/config_sm90.cuh"
#include "kernels/sm90/glu_tile_loop_sm90.cuh"
#include "kernels/sm90/pingpong_sm90.cuh"
#include "kernels/sm90/producer_sm90.cuh"
#include "kernels/sm90/tile_loop_sm90.cuh"
#include "ptx/cluster.cuh"
#include "ptx/fence.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"

namespace ggemm::sm90 {

// The math warpgroups' loop over their tiles. The plain epilogue (plain_epilogue: the suite's and
// most inference calls) runs its own copy of the loop, chosen once per call, in which no tile
// branches over dtypes, bias or activations; a PlainEpilogue instance, which the host launches
// for plain calls, compiles no other. Without alpha and prob the plain copy skips the two
// multiplications per element, which sit between a tile's last wgmma and the next tile's first.
// (dGLU's kernels through TMA serve dGLU only: one copy.)
template <class Cfg>
__device__ __forceinline__ void compute(SharedStorage<Cfg>& s, const KernelArgs& args, const CUtensorMap* d_map,
                                        const CUtensorMap* pre_map, int warpgroup) {
    if constexpr (Cfg::kGluOnly) {
        if (args.activation == kActivationSwiglu) {
            compute_glu_tiles<Cfg, kActivationSwiglu>(s, args, d_map, warpgroup);
        } else {
            compute_glu_tiles<Cfg, kActivationClampedGeglu>(s, args, d_map, warpgroup);
        }
        return;
    }
    if constexpr (Cfg::kTmaStoreDglu) {
        compute_dglu_tiles<Cfg>(s, args, d_map, pre_map, warpgroup);
    } else if constexpr (Cfg::kPingPong) {
        if (Cfg::kPlainOnly || plain_epilogue(args, true)) {
            if (args.alpha == nullptr && args.prob == nullptr) {
                compute_pingpong_tiles<Cfg, TileLoop::kPlainUnscaled>(s, args, d_map, warpgroup);
            } else {
                compute_pingpong_tiles<Cfg, TileLoop::kPlain>(s, args, d_map, warpgroup);
            }
            return;
        }
        if constexpr (!Cfg::kPlainOnly) compute_pingpong_tiles<Cfg, TileLoop::kGeneral>(s, args, d_map, warpgroup);
    } else {
        if (Cfg::kPlainOnly || plain_epilogue(args, Cfg::kOutput == Output::kTmaStore)) {
            if (args.alpha == nullptr && args.prob == nullptr) {
                compute_tiles<Cfg, TileLoop::kPlainUnscaled>(s, args, d_map, warpgroup);
            } else {
                compute_tiles<Cfg, TileLoop::kPlain>(s, args, d_map, warpgroup);
            }
            return;
        }
        if constexpr (!Cfg::kPlainOnly) compute_tiles<Cfg, TileLoop::kGeneral>(s, args, d_map, warpgroup);
    }
}

// The kernel's body; d_map is D's tensor map for the TMA-store output, pre_map the saved
// pre-activation's for dGLU through TMA (nullptr otherwise).
template <class Cfg>
__device__ __forceinline__ void grouped_gemm_sm90_body(const CUtensorMap* a_map, const CUtensorMap* b_map,
                                                       const CUtensorMap* d_map, const CUtensorMap* pre_map,
                                                       const KernelArgs& args) {
    static_assert(kSmemBytes<Cfg> <= kSharedMemoryLimit, "stages + staging + offsets exceed 227 KB");
#if defined(GGEMM_PTX_SM90A)
    extern __shared__ uint8_t smem_raw[];
    auto& s = aligned_shared_storage<SharedStorage<Cfg>>(smem_raw);
    const int thread = threadIdx.x;

    if (thread == 0) {
        for (int i = 0; i < Cfg::kStages; ++i) {
            ptx::mbarrier_init(&s.full[i], 1);
            ptx::mbarrier_init(&s.empty[i], Cfg::kStageReaderWarps * Cfg::kClusterM);
        }
        for (int i = 0; i < Cfg::kTileRing; ++i) {
            ptx::mbarrier_init(&s.tile_full[i], 1);
            ptx::mbarrier_init(&s.tile_empty[i], Cfg::kMathWarps);
        }
        if constexpr (Cfg::kPingPong) {
            for (int w = 0; w < Cfg::kMathWarpgroups; ++w) {
                ptx::mbarrier_init(&s.pingpong.turn[w], Cfg::kMathWarps / Cfg::kMathWarpgroups);
                for (int b = 0; b < kDgluBufferAtoms; ++b) ptx::mbarrier_init(&s.pingpong.pre_full[w][b], 1);
            }
        }
        s.status = 0;
        ptx::fence_mbarrier_init();
    }
    if (thread == 32) {
        ptx::tma_prefetch_map(a_map);
        if (args.weight_mode == kDense) ptx::tma_prefetch_map(b_map);
        if constexpr (Cfg::kOutput == Output::kTmaStore) ptx::tma_prefetch_map(d_map);
        if constexpr (Cfg::kTmaStoreDglu) ptx::tma_prefetch_map(pre_map);
    }
    // The planner keeps plans of more experts than the shared copy holds off this variant.
    if constexpr (Cfg::kOffsetCapacity < ggemm::kMaxExperts) {
        if (args.num_experts > Cfg::kOffsetCapacity) __trap();
    }
    // The producer warp alone walks the experts: it keeps the offsets, and the counts where they
    // fit too, in shared memory. It issues the loads of the first 32 experts' before the block's
    // barrier and stores them after its register reallocation, so that the loads' latency
    // overlaps both (a call of one tile per SM waits for it before its first operand load).
    const bool shared_counts = args.valid_rows != nullptr && 2 * args.num_experts <= Cfg::kOffsetCapacity;
    const int lane = thread % 32;
    FirstOffsets first{};
    if (thread < 32) first = load_first_offsets(args, shared_counts, lane);
    __syncthreads();
    const int32_t* valid_rows = shared_counts ? s.offsets + args.num_experts : args.valid_rows;
    // The other CTA of a cluster multicasts into this one and arrives on its empty barriers: not
    // before they are initialised (fence_mbarrier_init releases them at cluster scope).
    if constexpr (Cfg::kClusterM > 1) ptx::cluster_sync();

    // Read through a shuffle so the compiler knows it is the same in every lane of a warp: the
    // branches on the tile's valid rows (run_tile) then stay warp-uniform, and the main loop
    // keeps its stage, phase and wgmma descriptors in uniform registers (without it, they move to
    // per-thread registers, with a warp synchronisation and register moves before each wgmma).
    const int warpgroup = __shfl_sync(0xffffffffu, thread / 128, 0);
    if (warpgroup == 0) {
        if constexpr (Cfg::kMathWarpgroups > 1) ptx::setmaxnreg_dec<Cfg::kProducerRegisters>();
        if (__shfl_sync(0xffffffffu, thread / 32, 0) == 0) {
            store_offsets(s.offsets, first, args, shared_counts, lane);
            produce<Cfg>(s, a_map, b_map, args, valid_rows);
            // One CTA reports bad offsets and counts, once its tiles are all handed out; the
            // scheduler in every CTA skips the experts they touch and clamps the counts.
            if (blockIdx.x == 0 && args.device_status != nullptr) {
                report_offsets<32>(s.offsets, valid_rows, &s.status, args, lane);
            }
        }
    } else {
        if constexpr (Cfg::kMathWarpgroups > 1) ptx::setmaxnreg_inc<Cfg::kMathRegisters>();
        compute<Cfg>(s, args, d_map, pre_map, warpgroup - 1);
    }
    // Stay until the other CTA is done too: its math warps arrive on this CTA's empty barriers
    // until their last k-block. (Its loads into this CTA have all landed: this CTA's math warps
    // waited for every stage they fill, since both walk the same items.)
    if constexpr (Cfg::kClusterM > 1) {
        __syncwarp();
        ptx::cluster_sync();
    }
#endif
}

// The warp-store variants: A and B maps only.
template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    grouped_gemm_sm90(const __grid_constant__ CUtensorMap a_map,
                      const __grid_constant__ CUtensorMap b_map, const KernelArgs args) {
    static_assert(Cfg::kOutput == Output::kWarpStores, "TMA-store variants take D's map");
    grouped_gemm_sm90_body<Cfg>(&a_map, &b_map, nullptr, nullptr, args);
}

// The TMA-store variants: D's map too.
template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    grouped_gemm_sm90_tma_store(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                                const __grid_constant__ CUtensorMap d_map, const KernelArgs args) {
    static_assert(Cfg::kOutput == Output::kTmaStore && !Cfg::kTmaStoreDglu,
                  "warp-store variants take no D map, dGLU through TMA the pre-activation's too");
    grouped_gemm_sm90_body<Cfg>(&a_map, &b_map, &d_map, nullptr, args);
}

// dGLU through TMA: D's map (d_pre, {2N, M}) and the saved pre-activation's.
template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    grouped_gemm_sm90_dglu(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                           const __grid_constant__ CUtensorMap d_map, const __grid_constant__ CUtensorMap pre_map,
                           const KernelArgs args) {
    static_assert(Cfg::kTmaStoreDglu, "the dGLU-through-TMA variants");
    grouped_gemm_sm90_body<Cfg>(&a_map, &b_map, &d_map, &pre_map, args);
}

}  // namespace ggemm::sm90
