// The SM90 weight gradient, grouped along K: W_g = alpha_g * X1_g^T X2_g for every expert g,
// where X1_g and X2_g are the expert's rows of X1 (M x P) and X2 (M x Q). Persistent,
// warp-specialized, TMA + wgmma, like the forward (grouped_gemm_sm90.cuh).
//
// Read top to bottom: configuration and its compile-time checks, shared-memory carve-up,
// barrier init, role split with register reallocation, producer loop, math loop, epilogue.
//
// A tile is 128 rows of P x kTileQ columns of Q of one expert's output, summed over all the
// expert's rows (no split of K: each output element is written by one CTA in one fixed order,
// so results are bitwise reproducible). Warpgroup 0 is the producer: one warp walks the tile
// schedule (wgrad_schedule.h; for the static deal, over experts sorted by their rows,
// wgrad_order.cuh), decides what each tile does (sum, zeros, or nothing), publishes
// it to the math warpgroups through a small ring, and streams 64-row k-blocks of X1 and X2 into
// a multi-stage shared-memory ring with TMA. Both operands stay as stored: the row index r is
// the GEMM's K, so they are MN-major in shared memory (wgrad_layout_sm90.h) and the wgmma reads
// them transposed. Warpgroups 1 and 2 each own 64 rows of P and issue m64 n kTileQ k16 wgmma,
// keeping one batch in flight, then store their accumulators: from registers
// (wgrad_epilogue_sm90.cuh), or, for a dense output overwritten or accumulated into in fp32,
// through a staging atom per warpgroup and TMA stores or reduce-adds (wgrad_tma_store_sm90.cuh;
// a 16-bit tile's last atoms stored behind the next tile's first MMAs). Empty experts get their
// zeros from registers either way.
#pragma once

#include <cuda.h>  // CUtensorMap (a type only)
#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/common/claim_item.cuh"
#include "kernels/common/contract.h"
#include "kernels/common/shared_storage.cuh"
#include "kernels/common/wgrad_order.cuh"
#include "kernels/common/wgrad_params.h"
#include "kernels/common/wgrad_schedule.h"
#include "kernels/common/wgrad_tile.cuh"
#include "kernels/sm90/wgrad_epilogue_sm90.cuh"
#include "kernels/sm90/shared_memory.h"
#include "kernels/sm90/wgrad_layout_sm90.h"
#include "kernels/sm90/wgrad_tma_store_sm90.cuh"
#include "ptx/fence.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"
#include "ptx/wgmma_mma.cuh"

namespace ggemm::sm90 {

template <int kTileQ_, int kStages_, int kStagingSlots_ = 1>
struct WgradConfig {
    static constexpr int kTileP = 128;  // two math warpgroups x 64 rows of P (wgmma M = 64)
    static constexpr int kTileQ = kTileQ_;
    static constexpr int kStages = kStages_;
    // Staging atoms per math warpgroup for the TMA store path (wgrad_tma_store_sm90.cuh): with
    // two, a warpgroup writes one atom while the store of the one before reads the other.
    static constexpr int kStagingSlots = kStagingSlots_;
    // Atoms of a 16-bit tile held in registers and stored behind the next tile's first wgmma
    // batch (WgradHeldAtoms): its last, one per staging slot.
    static constexpr int kHeldAtoms = kTileQ_ / wgrad_atom_columns(2) > kStagingSlots ? kStagingSlots : 0;
    static constexpr int kBlockRows = kWgradBlockRows;  // rows r (the GEMM's K) per stage
    static constexpr int kMathWarpgroups = 2;
    static constexpr int kThreads = 128 * (1 + kMathWarpgroups);
    static constexpr int kMathWarps = kMathWarpgroups * 4;
    static constexpr int kTileRing = 2;  // tiles published ahead to the math warpgroups
    static constexpr int kX1Boxes = kTileP / kWgradBoxColumns;
    static constexpr int kX2Boxes = kTileQ / kWgradBoxColumns;
    static constexpr uint32_t kStageBytes = (kX1Boxes + kX2Boxes) * kWgradBoxBytes;
    // The shared copy of the offsets, and the order of the experts (6 bytes an expert), holds
    // every expert the contract allows, except where the staging atoms leave less room: there the
    // planner keeps plans of more experts off the variant (WgradVariant::max_experts). 512 bytes
    // are kept for the barriers and the tile ring, 1024 for aligning the dynamic shared memory.
    static constexpr int kOffsetCapacity = offset_capacity(kSharedMemoryLimit - 1536 -
                                                               kStages * static_cast<int>(kStageBytes) -
                                                               kMathWarpgroups * kStagingSlots * kWgradAtomBytes,
                                                           6);
    // Registers after setmaxnreg must fit the CTA's own pool, 384 x 168 (the launch-bounds cap).
    static constexpr int kProducerRegisters = 56;
    static constexpr int kMathRegisters = 224;

    static_assert(128 * kProducerRegisters + 128 * kMathWarpgroups * kMathRegisters <=
                      kThreads * (65536 / kThreads / 8 * 8),
                  "setmaxnreg budget exceeds the registers the launch gave the CTA");
    static_assert(kTileP == 64 * kMathWarpgroups, "one 64-row wgmma M per math warpgroup, one box each");
    static_assert(kTileQ % kWgradBoxColumns == 0 && kTileQ <= 256, "whole boxes; wgmma N <= 256");
    static_assert(kSegmentAlignment % kBlockRows == 0, "segments hold whole k-blocks: no row tails");
    static_assert(kStagingSlots >= 1 && kOffsetCapacity >= 32, "a staging atom, and room for useful offsets");
};

template <class Cfg>
struct WgradSharedStorage {
    // Each box starts on a 1024-byte boundary (the 128-byte swizzle atom; descriptors assume base
    // offset 0): boxes are 8 KB and stages 1024-aligned.
    struct alignas(1024) Stage {
        __nv_bfloat16 x1[Cfg::kTileP * Cfg::kBlockRows];
        __nv_bfloat16 x2[Cfg::kTileQ * Cfg::kBlockRows];
    };
    Stage stages[Cfg::kStages];
    // Each math warpgroup's staging atoms for the TMA store path (1024-aligned: the swizzle atom).
    alignas(1024) uint8_t out_atoms[Cfg::kMathWarpgroups][Cfg::kStagingSlots][kWgradAtomBytes];
    uint64_t full[Cfg::kStages];   // TMA bytes landed in the stage
    uint64_t empty[Cfg::kStages];  // every math warp is done reading the stage
    uint64_t tile_full[Cfg::kTileRing];
    uint64_t tile_empty[Cfg::kTileRing];
    WgradTileSlot tiles[Cfg::kTileRing];
    int32_t offsets[Cfg::kOffsetCapacity];
    uint16_t order[Cfg::kOffsetCapacity];  // the experts by rows, largest first (wgrad_order.cuh)
    uint32_t status;
};

// Dynamic shared memory is only 16-byte aligned by the launch; the kernel aligns it by hand.
template <class Cfg>
constexpr int kWgradSmemBytes = static_cast<int>(sizeof(WgradSharedStorage<Cfg>)) + 1024;

// The math warpgroups' named barriers of the TMA store path (0 is __syncthreads).
constexpr uint32_t kWgradStoreBarrier = 1;

// The producer's two deals of tile slots (wgrad_schedule.h), each with first() (this CTA's first
// item), request() (called as an item's loads begin) and next(item) (called when the next item
// starts). In the experts' own order: the dynamic scheduler's claims (claim_item.cuh), or the
// static deal round-robin.
struct ExpertOrderDeal {
    ExpertRowCursor cursor;  // items only grow
    ItemClaims claims;
    bool dynamic;

    __device__ __forceinline__ int64_t first() { return claims.first(); }
    __device__ __forceinline__ void request() {
        if (dynamic) claims.request();
    }
    __device__ __forceinline__ int64_t next(int64_t item) { return dynamic ? claims.take() : item + gridDim.x; }
    // The expert of a slot, and its rows.
    __device__ __forceinline__ WgradExpert place(WgradTilePosition& position) {
        return position.expert >= 0 ? cursor.rows(position.expert) : WgradExpert{0, 0, false};
    }
};

// The static deal over the experts sorted by rows (wgrad_order.cuh): rounds of the grid in
// alternating directions.
struct RowOrderDeal {
    const uint16_t* order;
    const int32_t* offsets;
    int64_t step;

    __device__ __forceinline__ int64_t first() { return wgrad_static_item(step, blockIdx.x, gridDim.x); }
    __device__ __forceinline__ void request() {}
    __device__ __forceinline__ int64_t next(int64_t) { return wgrad_static_item(++step, blockIdx.x, gridDim.x); }
    __device__ __forceinline__ WgradExpert place(WgradTilePosition& position) {
        if (position.expert < 0) return {0, 0, false};
        const uint16_t entry = order[position.expert];
        position.expert = wgrad_order_expert(entry);
        return wgrad_order_rows(entry, offsets);
    }
};

// Run by every lane of one warp, as the forward's producer (producer_sm90.cuh): the loop's state is
// warp-uniform; one lane publishes the tiles, and one lane elected by elect.sync arms each stage
// and issues its loads (no loop over the active lanes around each load).
template <class Cfg, class Deal>
__device__ __forceinline__ void wgrad_produce_tiles(WgradSharedStorage<Cfg>& s, const CUtensorMap* x1_map,
                                                    const CUtensorMap* x2_map, const WgradKernelArgs& args,
                                                    const WgradTiles& tiles, Deal deal) {
    const bool leader = threadIdx.x % 32 == 0;
    int64_t item = deal.first();
    uint32_t stage = 0, phase = 0;
    for (uint32_t i = 0;; ++i) {
        if (i > 0) item = deal.next(item);
        WgradTilePosition position = tiles.at(item);  // of a slot; place() names its expert
        const WgradExpert rows = deal.place(position);
        const WgradTileSlot tile = plan_tile<Cfg::kBlockRows>(position, rows, args);
        const uint32_t slot = i % Cfg::kTileRing;
        ptx::mbarrier_wait(&s.tile_empty[slot], ((i / Cfg::kTileRing) & 1) ^ 1);
        if (leader) {
            s.tiles[slot] = tile;
            ptx::mbarrier_arrive(&s.tile_full[slot]);
        }
        if (tile.expert < 0) return;
        // Claim the next tile now, read it when that tile starts: the atomic's round trip runs
        // behind this one's loads.
        deal.request();
        if (tile.action != static_cast<int32_t>(WgradAction::kSum)) continue;

        for (int32_t kb = 0; kb < tile.k_blocks; ++kb) {
            ptx::mbarrier_wait(&s.empty[stage], phase ^ 1);
            if (ptx::elect_one_sync()) {
                auto& st = s.stages[stage];
                ptx::mbarrier_arrive_expect_tx(&s.full[stage], Cfg::kStageBytes);
                const int32_t row = tile.row_begin + kb * Cfg::kBlockRows;
                // Boxes past P or Q arrive as zeros and still count their full bytes.
#pragma unroll
                for (int b = 0; b < Cfg::kX1Boxes; ++b) {
                    ptx::tma_load_2d(st.x1 + b * kWgradBoxColumns * Cfg::kBlockRows, x1_map, &s.full[stage],
                                     tile.p_begin + b * kWgradBoxColumns, row);
                }
#pragma unroll
                for (int b = 0; b < Cfg::kX2Boxes; ++b) {
                    ptx::tma_load_2d(st.x2 + b * kWgradBoxColumns * Cfg::kBlockRows, x2_map, &s.full[stage],
                                     tile.q_begin + b * kWgradBoxColumns, row);
                }
            }
            if (++stage == Cfg::kStages) {
                stage = 0;
                phase ^= 1;
            }
        }
    }
}

// The static deal takes the experts sorted by rows where wgrad_sorts_experts says so and their
// rows differ; the dynamic scheduler, and the static one otherwise, the experts' own order (on
// mixtral's weight gradient, whose experts have as many tiles as the grid has CTAs or more, the
// sorted deal gained nothing: 0.97-0.99x, docs/PERFORMANCE.md).
template <class Cfg>
__device__ __forceinline__ void wgrad_produce(WgradSharedStorage<Cfg>& s, const CUtensorMap* x1_map,
                                              const CUtensorMap* x2_map, const WgradKernelArgs& args) {
    const int lane = threadIdx.x % 32;
    const bool dynamic = args.scheduler == kDynamic;
    const WgradTiles tiles = wgrad_tiles(args.num_experts, args.p, args.q, Cfg::kTileP, Cfg::kTileQ);
    if (!dynamic && wgrad_sorts_experts(tiles, gridDim.x)) {
        // Sorted in stage 0, which no load has reached yet; the fence orders those generic-proxy
        // writes before the TMA loads (async proxy) that later fill the stage.
        const bool by_rows = build_wgrad_order<Cfg::kBlockRows>(
            s.offsets, args.m, args.num_experts, reinterpret_cast<uint32_t*>(s.stages[0].x1), s.order, lane);
        ptx::fence_proxy_async_shared();
        if (by_rows) {
            wgrad_produce_tiles<Cfg>(s, x1_map, x2_map, args, tiles, RowOrderDeal{s.order, s.offsets, 0});
            return;
        }
    }
    wgrad_produce_tiles<Cfg>(s, x1_map, x2_map, args, tiles,
                             ExpertOrderDeal{ExpertRowCursor(s.offsets, args.m),
                                             ItemClaims(args.tile_counter, lane == 0), dynamic});
}

// One tile's sum over its k-blocks: m64 n kTileQ k16 wgmma with both operands MN-major, keeping
// one batch in flight and releasing each stage as soon as its batch is done. Once the first batch
// is issued, the atoms the previous tile held back are stored.
template <class Cfg>
__device__ __forceinline__ void wgrad_main_loop(WgradSharedStorage<Cfg>& s, int32_t k_blocks, int warpgroup,
                                                int lane, float (&acc)[Cfg::kTileQ / 2], uint32_t& stage,
                                                uint32_t& phase, WgradHeldAtoms<Cfg::kHeldAtoms>& held) {
    using Mma = ptx::Wgmma<Cfg::kTileQ, /*kTransposeB=*/1, /*kTransposeA=*/1>;
    uint32_t previous_stage = 0;
    for (int32_t kb = 0; kb < k_blocks; ++kb) {
        ptx::mbarrier_wait(&s.full[stage], phase);
        // The warpgroup's 64 columns of P are box `warpgroup` of X1.
        const uint32_t a_box = ptx::smem_addr(s.stages[stage].x1) + warpgroup * kWgradBoxBytes;
        const uint32_t b_box = ptx::smem_addr(s.stages[stage].x2);
        // Slice 0's descriptors, stepped to the later k16 slices with one add each.
        const uint64_t a_desc0 = wgrad_operand_desc(a_box, 0);
        const uint64_t b_desc0 = wgrad_operand_desc(b_box, 0);
#pragma unroll
        for (int r = 0; r < Cfg::kTileQ / 2; ++r) ptx::wgmma_fence_operand(acc[r]);
        ptx::wgmma_fence();
#pragma unroll
        for (int k = 0; k < Cfg::kBlockRows / 16; ++k) {
            Mma::mma(acc, ptx::wgmma_desc_advance(a_desc0, k * kWgradK16Bytes),
                     ptx::wgmma_desc_advance(b_desc0, k * kWgradK16Bytes), (kb > 0 || k > 0) ? 1u : 0u);
        }
        ptx::wgmma_commit();
        if (kb == 0) held.write();
#pragma unroll
        for (int r = 0; r < Cfg::kTileQ / 2; ++r) ptx::wgmma_fence_operand(acc[r]);
        if (kb > 0) {
            ptx::wgmma_wait<1>();
            if (lane == 0) ptx::mbarrier_arrive(&s.empty[previous_stage]);
        }
        previous_stage = stage;
        if (++stage == Cfg::kStages) {
            stage = 0;
            phase ^= 1;
        }
    }
    ptx::wgmma_wait<0>();
    if (lane == 0) ptx::mbarrier_arrive(&s.empty[previous_stage]);
#pragma unroll
    for (int r = 0; r < Cfg::kTileQ / 2; ++r) ptx::wgmma_fence_operand(acc[r]);
}

template <class Cfg>
__device__ __forceinline__ void wgrad_compute(WgradSharedStorage<Cfg>& s, const CUtensorMap* out_map,
                                              const WgradKernelArgs& args, int warpgroup) {
    const int lane = threadIdx.x % 32;
    const int warp = (threadIdx.x % 128) / 32;
    float acc[Cfg::kTileQ / 2];
    uint32_t stage = 0, phase = 0;
    const bool tma_store = args.store_path == kWgradStoreTma;
    WgradHeldAtoms<Cfg::kHeldAtoms> held;  // the last tile's held atoms, stored behind this one's MMAs
    for (uint32_t i = 0;; ++i) {
        const uint32_t slot = i % Cfg::kTileRing;
        ptx::mbarrier_wait(&s.tile_full[slot], (i / Cfg::kTileRing) & 1);
        const WgradTileSlot tile = read_wgrad_slot(&s.tiles[slot], lane);
        if (lane == 0) ptx::mbarrier_arrive(&s.tile_empty[slot]);
        if (tile.expert < 0) {
            if (tma_store) finish_wgrad_tma_stores(held);
            return;
        }
        if (tile.action == static_cast<int32_t>(WgradAction::kSkip)) continue;
        WgradFragment fragment;
        fragment.expert_out = reinterpret_cast<void*>(tile.out);
        fragment.p = args.p;
        fragment.q = args.q;
        fragment.row = tile.p_begin + warpgroup * 64 + warp * 16 + lane / 4;
        fragment.q_begin = tile.q_begin;
        // Read before the main loop, so its latency hides behind it.
        fragment.alpha = args.alpha != nullptr ? args.alpha[tile.expert] : 1.0f;
        if (tile.action == static_cast<int32_t>(WgradAction::kZeros)) {
            // An empty expert: exact zeros, whatever alpha holds (and no accumulator involved, so
            // the registers of the main loop are not shared with a second definition).
            store_wgrad_zeros<Cfg::kTileQ>(fragment, args.out_dtype);
            continue;
        }
        wgrad_main_loop<Cfg>(s, tile.k_blocks, warpgroup, lane, acc, stage, phase, held);
        if (tma_store) {
            WgradTmaStore store;
            store.out_map = out_map;
            store.atom = s.out_atoms[warpgroup][0];
            store.atom_addr = ptx::smem_addr(s.out_atoms[warpgroup][0]);
            store.barrier = kWgradStoreBarrier + static_cast<uint32_t>(warpgroup);
            store.p = args.p;
            store.q = args.q;
            store.row_begin = tile.p_begin + warpgroup * 64;
            store.q_begin = tile.q_begin;
            store.expert = tile.expert;
            store.alpha = fragment.alpha;
            store.accumulate = args.accumulate != 0;
            store_wgrad_tile_tma<Cfg::kTileQ, Cfg::kStagingSlots>(store, args.out_dtype, acc, held);
        } else {
            store_wgrad_tile<Cfg::kTileQ>(fragment, args.out_dtype, args.accumulate != 0, acc);
        }
    }
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    wgrad_sm90(const __grid_constant__ CUtensorMap x1_map, const __grid_constant__ CUtensorMap x2_map,
               const __grid_constant__ CUtensorMap out_map, const WgradKernelArgs args) {
    static_assert(kWgradSmemBytes<Cfg> <= kSharedMemoryLimit, "stages + offsets exceed 227 KB");
#if defined(GGEMM_PTX_SM90A)
    extern __shared__ uint8_t smem_raw[];
    auto& s = aligned_shared_storage<WgradSharedStorage<Cfg>>(smem_raw);
    const int thread = threadIdx.x;

    if (thread == 0) {
        for (int i = 0; i < Cfg::kStages; ++i) {
            ptx::mbarrier_init(&s.full[i], 1);
            ptx::mbarrier_init(&s.empty[i], Cfg::kMathWarps);
        }
        for (int i = 0; i < Cfg::kTileRing; ++i) {
            ptx::mbarrier_init(&s.tile_full[i], 1);
            ptx::mbarrier_init(&s.tile_empty[i], Cfg::kMathWarps);
        }
        s.status = 0;
        ptx::fence_mbarrier_init();
    }
    // With M = 0 the maps were never encoded (nothing is loaded): do not touch them.
    if (thread == 32 && args.m > 0) {
        ptx::tma_prefetch_map(&x1_map);
        ptx::tma_prefetch_map(&x2_map);
    }
    // The output map is encoded only for the TMA store path.
    if (thread == 64 && args.store_path == kWgradStoreTma) ptx::tma_prefetch_map(&out_map);
    // The planner keeps plans of more experts than the shared copy holds off this variant.
    if constexpr (Cfg::kOffsetCapacity < kMaxExperts) {
        if (args.num_experts > Cfg::kOffsetCapacity) __trap();
    }
    for (int g = thread; g < args.num_experts; g += Cfg::kThreads) s.offsets[g] = args.padded_offsets[g];
    __syncthreads();

    if (blockIdx.x == 0 && args.device_status != nullptr) {
        report_wgrad_status<Cfg::kThreads>(s.offsets, &s.status, args, thread);
    }

    // Through a shuffle, so the compiler knows it is warp-uniform: the wgmma descriptors, which
    // depend on it, are then built in uniform registers (kernels/sm90/grouped_gemm_sm90.cuh).
    const int warpgroup = __shfl_sync(0xffffffffu, thread / 128, 0);
    if (warpgroup == 0) {
        ptx::setmaxnreg_dec<Cfg::kProducerRegisters>();
        if (__shfl_sync(0xffffffffu, thread / 32, 0) == 0) wgrad_produce<Cfg>(s, &x1_map, &x2_map, args);
    } else {
        ptx::setmaxnreg_inc<Cfg::kMathRegisters>();
        wgrad_compute<Cfg>(s, &out_map, args, warpgroup - 1);
    }
#endif
}

}  // namespace ggemm::sm90
