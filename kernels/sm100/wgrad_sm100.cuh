// The SM100 weight gradient, grouped along K: W_g = alpha_g * X1_g^T X2_g for every expert g,
// where X1_g and X2_g are the expert's rows of X1 (M x P) and X2 (M x Q). Persistent,
// warp-specialized, TMA + tcgen05.mma + tensor memory, one CTA per MMA (cta_group::1).
//
// NOT RUN ON HARDWARE: no SM100 GPU was available. It is compiled for sm_100a, its SASS is checked
// (tests/sass/check_sass.sh) and its encodings are unit-tested (tests/host/test_sm100_wgrad.cpp);
// docs/SM100.md says exactly what was and was not verified.
//
// Read top to bottom: configuration and its compile-time checks, shared-memory carve-up, the
// producer (TMA), the MMA issuer (tcgen05), the epilogue (TMEM -> registers -> global), the
// kernel (barrier init, TMEM allocation, role split, teardown). src/wgrad_variants_sm100.cu
// instantiates it and holds its host-side prepare and launch.
//
// A tile is 128 columns of P x kTileQ columns of Q of one expert's output, summed over all the
// expert's rows (no split of K: each output element is written by one CTA in one fixed order).
// The schedule over (expert, P block, Q block) and what each tile does (sum, zeros or nothing)
// are the SM90 kernel's (wgrad_schedule.h, wgrad_tile.cuh). One CTA per SM, 6 warps:
//   warps 0-3  epilogue: warp w drains TMEM lanes [32 w, +32) = rows of P of the tile, 32 columns
//              at a time, staged in its own shared buffer for store_wgrad_slice
//              (wgrad_epilogue_sm100.cuh); an empty expert in overwrite mode gets zeros straight
//              from these warps
//   warp 4     producer: one thread walks the tile schedule, publishes each tile to the other
//              roles through a small ring, and streams 64-row k-blocks of X1 and X2 into the
//              stage ring as 64-column TMA boxes (wgrad_layout_sm100.h)
//   warp 5     MMA: allocates TMEM; one thread issues tcgen05.mma (M = 128, N = kTileQ, K = 16,
//              A and B MN-major) into one of two accumulator buffers and commits to mbarriers
// Only summed tiles take an accumulator buffer: the MMA thread and the epilogue count them alike
// (the n-th summed tile uses buffer n % 2), so the epilogue of one overlaps the MMAs of the next.
#pragma once

#include <cuda.h>  // CUtensorMap (a type only)
#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/common/contract.h"
#include "kernels/common/shared_storage.cuh"
#include "kernels/common/wgrad_params.h"
#include "kernels/common/wgrad_schedule.h"
#include "kernels/common/wgrad_tile.cuh"
#include "kernels/sm100/encodings.h"
#include "kernels/sm100/grouped_gemm_sm100.cuh"  // kMaxSmemPerCta
#include "kernels/sm100/wgrad_epilogue_sm100.cuh"
#include "kernels/sm100/wgrad_layout_sm100.h"
#include "ptx/fence.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tcgen05.cuh"
#include "ptx/tma.cuh"
#include "ptx/tmem.cuh"

namespace ggemm::sm100 {

template <int kTileQ_, int kStages_>
struct WgradConfig {
    static constexpr int kTileP = static_cast<int>(kWgradTileP);
    static constexpr int kTileQ = kTileQ_;
    static constexpr int kStages = kStages_;
    static constexpr int kBlockRows = static_cast<int>(kWgradBlockRows);
    static constexpr int kX1Boxes = static_cast<int>(wgrad_boxes(kTileP));
    static constexpr int kX2Boxes = static_cast<int>(wgrad_boxes(kTileQ));
    static constexpr uint32_t kStageBytes = wgrad_stage_bytes(kTileQ);
    static constexpr int kEpilogueWarps = 4;  // one per TMEM lane quarter
    static constexpr int kProducerWarp = 4;
    static constexpr int kMmaWarp = 5;
    static constexpr int kThreads = 32 * 6;
    static constexpr int kTileRing = 2;       // tiles published ahead to the MMA and epilogue
    static constexpr uint32_t kInstrDesc = wgrad_instr_desc(kTileQ);
    static constexpr uint32_t kTmemAllocColumns = tmem_alloc_columns(accumulator_columns(kTileQ));
    static constexpr int kEpilogueChunk = kEpilogueChunkCols;  // columns per tcgen05.ld (.32x32b.x32)

    static_assert(kX1Boxes == 2 && kX2Boxes > 0 && kX2Boxes * static_cast<int>(kWgradBoxColumns) == kTileQ,
                  "both operands are whole 64-column boxes");
    static_assert(kInstrDesc != 0, "tile_q is not a valid tcgen05.mma N for M = 128 (Table 39)");
    static_assert(idesc_m(kInstrDesc) == kWgradTileP && idesc_n(kInstrDesc) == static_cast<uint32_t>(kTileQ),
                  "the instruction descriptor must carry the MMA shape");
    static_assert(kTmemAllocColumns != 0, "two f32 accumulators of tile_q columns must fit the 512 TMEM columns");
    static_assert(kTileQ % kEpilogueChunk == 0, "the epilogue drains whole 32-column chunks");
    static_assert(load_32x32b_num(kEpilogueChunk) == kEpilogueChunk, "no tcgen05.ld form for the chunk");
    static_assert(accumulator_load_shape(kWgradTileP, 1) == TmemLoadShape::k32x32b,
                  "the epilogue reads one accumulator row per thread");
    static_assert(kEpilogueWarps * 32 == kTileP, "epilogue warps 0-3 cover the four TMEM lane quarters");
    static_assert(kSegmentAlignment % kBlockRows == 0, "segments hold whole k-blocks: no row tails");
};

template <class Cfg>
struct WgradSharedStorage {
    // Each box starts on a 1024-byte boundary (the 128-byte swizzle atom; the descriptors say base
    // offset 0): boxes are 8 KB and stages 1024-aligned.
    struct alignas(1024) Stage {
        __nv_bfloat16 x1[Cfg::kTileP * Cfg::kBlockRows];  // kX1Boxes boxes: A, M = 128 columns of P
        __nv_bfloat16 x2[Cfg::kTileQ * Cfg::kBlockRows];  // kX2Boxes boxes: B, N = kTileQ columns of Q
    };
    Stage stages[Cfg::kStages];
    uint64_t full[Cfg::kStages];   // TMA bytes landed in the stage
    uint64_t empty[Cfg::kStages];  // the MMAs reading the stage have completed (tcgen05.commit)
    uint64_t accum_full[kAccumulatorBuffers];   // the tile's last MMA has completed (tcgen05.commit)
    uint64_t accum_empty[kAccumulatorBuffers];  // every epilogue warp has read the buffer
    uint64_t tile_full[Cfg::kTileRing];
    uint64_t tile_empty[Cfg::kTileRing];
    WgradTileSlot tiles[Cfg::kTileRing];
    // Each epilogue warp stages 32 rows x 32 columns here before store_wgrad_slice.
    alignas(16) float epilogue[Cfg::kEpilogueWarps][32 * kEpiloguePitch];
    int32_t offsets[kMaxExperts];
    uint32_t tmem_base;  // written by tcgen05.alloc
    uint32_t status;
};

// Dynamic shared memory is only 16-byte aligned by the launch; the kernel aligns it by hand.
template <class Cfg>
constexpr int kWgradSmemBytes = static_cast<int>(sizeof(WgradSharedStorage<Cfg>)) + 1024;

// Arrivals each barrier expects per phase.
template <class Cfg>
struct WgradArrivals {
    static constexpr uint32_t kFull = 1;                         // the producer's expect_tx
    static constexpr uint32_t kEmpty = 1;                        // one tcgen05.commit
    static constexpr uint32_t kAccumFull = 1;                    // one tcgen05.commit
    static constexpr uint32_t kAccumEmpty = Cfg::kEpilogueWarps; // each epilogue warp
    static constexpr uint32_t kTileFull = 1;                     // the producer
    static constexpr uint32_t kTileEmpty = 1 + Cfg::kEpilogueWarps;  // MMA thread + epilogue warps
};

// ---- producer: one thread --------------------------------------------------------------------------
// Publishes every tile (the MMA thread and the epilogue follow the same sequence) and loads the
// k-blocks of the summed ones. Boxes past P or Q arrive as zeros and still count their bytes.
template <class Cfg>
__device__ __forceinline__ void wgrad_produce(WgradSharedStorage<Cfg>& s, const CUtensorMap* x1_map,
                                              const CUtensorMap* x2_map, const WgradKernelArgs& args) {
    const WgradTiles tiles = wgrad_tiles(args.num_experts, args.p, args.q, Cfg::kTileP, Cfg::kTileQ);
    ExpertRowCursor cursor(s.offsets, args.m);
    const bool dynamic = args.scheduler == kDynamic;
    int64_t item = dynamic ? static_cast<int64_t>(atomicAdd(args.tile_counter, 1ull)) : blockIdx.x;
    uint32_t stage = 0, phase = 0;
    for (uint32_t i = 0;; ++i) {
        const WgradTilePosition position = tiles.at(item);
        const WgradExpert rows = position.expert >= 0 ? cursor.rows(position.expert) : WgradExpert{0, 0, false};
        const WgradTileSlot tile = plan_tile<Cfg::kBlockRows>(position, rows, args);
        const uint32_t slot = i % Cfg::kTileRing;
        ptx::mbarrier_wait(&s.tile_empty[slot], ((i / Cfg::kTileRing) & 1) ^ 1);
        s.tiles[slot] = tile;
        ptx::mbarrier_arrive(&s.tile_full[slot]);
        if (tile.expert < 0) {
            // Tail: wait until the MMAs have released every stage, so that no tcgen05.commit
            // arrival is still headed for this CTA's shared memory when it exits.
            for (int n = 0; n < Cfg::kStages; ++n) {
                ptx::mbarrier_wait(&s.empty[stage], phase ^ 1);
                if (++stage == Cfg::kStages) {
                    stage = 0;
                    phase ^= 1;
                }
            }
            return;
        }
        // Claim the next tile now so the atomic's latency hides behind this one's loads.
        item = dynamic ? static_cast<int64_t>(atomicAdd(args.tile_counter, 1ull)) : item + gridDim.x;
        if (tile.action != static_cast<int32_t>(WgradAction::kSum)) continue;

        for (int32_t kb = 0; kb < tile.k_blocks; ++kb) {
            ptx::mbarrier_wait(&s.empty[stage], phase ^ 1);
            auto& st = s.stages[stage];
            ptx::mbarrier_arrive_expect_tx(&s.full[stage], Cfg::kStageBytes);
            const int32_t row = tile.row_begin + kb * Cfg::kBlockRows;
#pragma unroll
            for (int b = 0; b < Cfg::kX1Boxes; ++b) {
                ptx::tma_load_2d(st.x1 + b * (kWgradBoxBytes / 2), x1_map, &s.full[stage],
                                 tile.p_begin + b * static_cast<int32_t>(kWgradBoxColumns), row);
            }
#pragma unroll
            for (int b = 0; b < Cfg::kX2Boxes; ++b) {
                ptx::tma_load_2d(st.x2 + b * (kWgradBoxBytes / 2), x2_map, &s.full[stage],
                                 tile.q_begin + b * static_cast<int32_t>(kWgradBoxColumns), row);
            }
            if (++stage == Cfg::kStages) {
                stage = 0;
                phase ^= 1;
            }
        }
    }
}

// ---- MMA issuer: one thread -------------------------------------------------------------------------
// The n-th summed tile accumulates into buffer n % 2. Per k-block: 4 MMAs of K = 16 rows (the
// first of the tile overwrites the buffer), then a commit that frees the stage once they
// complete; after the last k-block, a commit that hands the buffer to the epilogue. A summed
// tile has at least 4 k-blocks (its expert's rows are a nonzero multiple of 256).
template <class Cfg>
__device__ __forceinline__ void wgrad_issue_mma(WgradSharedStorage<Cfg>& s, uint32_t tmem_base) {
    uint32_t stage = 0, phase = 0, sums = 0;
    for (uint32_t i = 0;; ++i) {
        const uint32_t slot = i % Cfg::kTileRing;
        ptx::mbarrier_wait(&s.tile_full[slot], (i / Cfg::kTileRing) & 1);
        const WgradTileSlot tile = s.tiles[slot];
        ptx::mbarrier_arrive(&s.tile_empty[slot]);
        if (tile.expert < 0) return;
        if (tile.action != static_cast<int32_t>(WgradAction::kSum)) continue;

        const uint32_t buffer = sums % kAccumulatorBuffers;
        const uint32_t use = (sums / kAccumulatorBuffers) & 1;
        ++sums;
        ptx::mbarrier_wait(&s.accum_empty[buffer], use ^ 1);  // the epilogue drained it
        ptx::tcgen05_fence_after_thread_sync();
        const uint32_t d_tmem = tmem_base + accumulator_column(buffer, Cfg::kTileQ);
        for (int32_t kb = 0; kb < tile.k_blocks; ++kb) {
            ptx::mbarrier_wait(&s.full[stage], phase);
            ptx::tcgen05_fence_after_thread_sync();
            const uint32_t a_box = ptx::smem_addr(s.stages[stage].x1);
            const uint32_t b_box = ptx::smem_addr(s.stages[stage].x2);
#pragma unroll
            for (uint32_t k = 0; k < kWgradKSteps; ++k) {
                ptx::tcgen05_mma_f16_cta1(d_tmem, wgrad_operand_descriptor(a_box, k),
                                          wgrad_operand_descriptor(b_box, k), Cfg::kInstrDesc, kb > 0 || k > 0);
            }
            ptx::tcgen05_commit(&s.empty[stage]);
            if (++stage == Cfg::kStages) {
                stage = 0;
                phase ^= 1;
            }
        }
        ptx::tcgen05_commit(&s.accum_full[buffer]);
    }
}

// ---- epilogue: warps 0-3 ----------------------------------------------------------------------------
// Layout D (M = 128, cta_group::1): tile row r (column p_begin + r of P) is TMEM lane r, tile
// column c is column (buffer base + c). Warp w reads lanes [32 w, 32 w + 32) with
// tcgen05.ld.32x32b.x32: lane t gets row 32 w + t, 32 consecutive columns, one register each.
template <class Cfg>
__device__ __forceinline__ void wgrad_drain(WgradSharedStorage<Cfg>& s, const WgradKernelArgs& args,
                                            uint32_t tmem_base) {
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const uint32_t lane_base = warp_lane_quarter_base(static_cast<uint32_t>(warp));
    float* staged = s.epilogue[warp];
    uint32_t sums = 0;
    for (uint32_t i = 0;; ++i) {
        const uint32_t slot = i % Cfg::kTileRing;
        ptx::mbarrier_wait(&s.tile_full[slot], (i / Cfg::kTileRing) & 1);
        const WgradTileSlot tile = read_wgrad_slot(&s.tiles[slot], lane);
        if (lane == 0) ptx::mbarrier_arrive(&s.tile_empty[slot]);
        if (tile.expert < 0) return;
        if (tile.action == static_cast<int32_t>(WgradAction::kSkip)) continue;

        WgradRows w;
        w.out = reinterpret_cast<void*>(tile.out);
        w.q = args.q;
        w.out_dtype = args.out_dtype;
        w.row_begin = tile.p_begin + static_cast<int64_t>(lane_base);
        const int64_t valid = args.p - w.row_begin;  // the warp's rows before P: the same in every lane
        w.rows = valid < 0 ? 0 : (valid > 32 ? 32 : static_cast<int>(valid));
        w.alpha = args.alpha != nullptr ? args.alpha[tile.expert] : 1.0f;
        w.accumulate = args.accumulate != 0;
        if (tile.action == static_cast<int32_t>(WgradAction::kZeros)) {
            store_wgrad_zero_rows<Cfg::kTileQ>(w, tile.q_begin, lane);
            continue;
        }

        const uint32_t buffer = sums % kAccumulatorBuffers;
        const uint32_t use = (sums / kAccumulatorBuffers) & 1;
        ++sums;
        ptx::mbarrier_wait(&s.accum_full[buffer], use);
        ptx::tcgen05_fence_after_thread_sync();
        const uint32_t taddr = tmem_address(tmem_base, lane_base, accumulator_column(buffer, Cfg::kTileQ));
        // A warp with no row before P loads and stores nothing (the same for the whole warp, as
        // tcgen05.ld requires).
        const int chunks = w.rows > 0 ? Cfg::kTileQ / Cfg::kEpilogueChunk : 0;
#pragma unroll 1
        for (int chunk = 0; chunk < chunks; ++chunk) {
            const int32_t col_begin = tile.q_begin + chunk * Cfg::kEpilogueChunk;
            if (col_begin >= args.q) break;  // Q tail: the same for the whole warp
            uint32_t acc[Cfg::kEpilogueChunk];
            ptx::tmem_load_32x32b_x32(taddr + chunk * Cfg::kEpilogueChunk, acc);
            ptx::tmem_wait_load();
            ptx::tmem_hold_registers(acc);
            float* my_row = staged + lane * kEpiloguePitch;
#pragma unroll
            for (int c = 0; c < Cfg::kEpilogueChunk; c += 4) {
                *reinterpret_cast<float4*>(my_row + c) =
                    make_float4(__uint_as_float(acc[c]), __uint_as_float(acc[c + 1]), __uint_as_float(acc[c + 2]),
                                __uint_as_float(acc[c + 3]));
            }
            __syncwarp();  // the slice is staged
            store_wgrad_slice(w, staged, col_begin, lane);
            __syncwarp();  // and read: the buffer may be reused
        }
        // Our tcgen05.ld are complete (waited); order them before the arrival that lets the MMA
        // thread overwrite the buffer.
        ptx::tcgen05_fence_before_thread_sync();
        __syncwarp();
        if (lane == 0) ptx::mbarrier_arrive(&s.accum_empty[buffer]);
    }
}

// ---- the kernel -------------------------------------------------------------------------------------
// out_map is unused: this kernel stores from registers only (the parameters are the SM90
// kernel's, so that both launch alike).
template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    wgrad_sm100(const __grid_constant__ CUtensorMap x1_map, const __grid_constant__ CUtensorMap x2_map,
                const __grid_constant__ CUtensorMap out_map, const WgradKernelArgs args) {
    static_assert(kWgradSmemBytes<Cfg> <= kMaxSmemPerCta, "stages + staging + offsets exceed 227 KB");
#if defined(GGEMM_PTX_SM100A)
    (void)out_map;
    extern __shared__ uint8_t smem_raw[];
    auto& s = aligned_shared_storage<WgradSharedStorage<Cfg>>(smem_raw);
    const int thread = threadIdx.x;
    const int warp = thread / 32;
    const int lane = thread % 32;
    using Count = WgradArrivals<Cfg>;

    if (thread == 0) {
        for (int i = 0; i < Cfg::kStages; ++i) {
            ptx::mbarrier_init(&s.full[i], Count::kFull);
            ptx::mbarrier_init(&s.empty[i], Count::kEmpty);
        }
        for (uint32_t i = 0; i < kAccumulatorBuffers; ++i) {
            ptx::mbarrier_init(&s.accum_full[i], Count::kAccumFull);
            ptx::mbarrier_init(&s.accum_empty[i], Count::kAccumEmpty);
        }
        for (int i = 0; i < Cfg::kTileRing; ++i) {
            ptx::mbarrier_init(&s.tile_full[i], Count::kTileFull);
            ptx::mbarrier_init(&s.tile_empty[i], Count::kTileEmpty);
        }
        s.status = 0;
        ptx::fence_mbarrier_init();
    }
    if (warp == Cfg::kMmaWarp) {
        // One CTA per SM (shared memory sees to it), so the columns are free; give up the permit
        // at once so a CTA of a following kernel need not wait for this one to exit to allocate.
        ptx::tmem_alloc(&s.tmem_base, Cfg::kTmemAllocColumns);
        ptx::tmem_relinquish_alloc_permit();
    }
    // With M = 0 the maps were never encoded (nothing is loaded): do not touch them.
    if (thread == Cfg::kProducerWarp * 32 && args.m > 0) {
        ptx::tma_prefetch_map(&x1_map);
        ptx::tma_prefetch_map(&x2_map);
    }
    for (int g = thread; g < args.num_experts; g += Cfg::kThreads) s.offsets[g] = args.padded_offsets[g];
    // The TMEM address was written by the tensor-core side: fence around the CTA barrier.
    ptx::tcgen05_fence_before_thread_sync();
    __syncthreads();
    ptx::tcgen05_fence_after_thread_sync();
    const uint32_t tmem_base = s.tmem_base;

    if (blockIdx.x == 0 && args.device_status != nullptr) {
        report_wgrad_status<Cfg::kThreads>(s.offsets, &s.status, args, thread);
    }

    if (warp < Cfg::kEpilogueWarps) {
        wgrad_drain<Cfg>(s, args, tmem_base);
    } else if (warp == Cfg::kProducerWarp) {
        if (lane == 0) wgrad_produce<Cfg>(s, &x1_map, &x2_map, args);
        __syncwarp();
    } else {
        if (lane == 0) wgrad_issue_mma<Cfg>(s, tmem_base);
        __syncwarp();
    }

    // Every accumulator was committed and drained (the epilogue waited on each accum_full and
    // finished its loads); only then may the allocating warp free the columns.
    ptx::tcgen05_fence_before_thread_sync();
    __syncthreads();
    if (warp == Cfg::kMmaWarp) {
        ptx::tcgen05_fence_after_thread_sync();
        ptx::tmem_dealloc(tmem_base, Cfg::kTmemAllocColumns);
    }
#endif
}

}  // namespace ggemm::sm100
