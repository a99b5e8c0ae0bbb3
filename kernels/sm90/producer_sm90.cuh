// The SM90 kernel's producer warp: it copies the offsets into shared memory, walks the tile
// schedule, publishes each tile to the math warpgroups and streams A and B k-blocks into the stage
// ring with TMA.
#pragma once

#include <cstdint>

#include "kernels/common/claim_item.cuh"
#include "kernels/common/params.h"
#include "kernels/common/scheduler.h"
#include "kernels/common/split_k.h"
#include "kernels/sm90/config_sm90.cuh"
#include "ptx/barrier.cuh"
#include "ptx/cluster.cuh"
#include "ptx/fence.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"

namespace ggemm::sm90 {

// Static rule: work item u goes to CTA u mod (CTAs), or in clusters to cluster u mod (clusters),
// whose CTAs all take it. The grid is a multiple of the cluster (the planner's).
template <class Cfg>
__device__ __forceinline__ uint32_t first_static_item() {
    if constexpr (Cfg::kClusterM == 1) {
        return blockIdx.x;
    } else {
        return ptx::cluster_id_x();
    }
}

template <class Cfg>
__device__ __forceinline__ uint32_t static_item_stride() {
    if constexpr (Cfg::kClusterM == 1) {
        return gridDim.x;
    } else {
        return ptx::cluster_count_x();
    }
}

// One k-block of B into a stage, on the stage's full barrier. A piece loads the tile-wide B from
// its own first column and uses its first n_width columns (whole tiles: one K-major box, or
// tile_n / 64 N-major boxes). In a cluster, this CTA loads its part (rank) and multicasts it to
// the same offset, and the same barrier, in every CTA of the cluster. Boxes wholly or partly
// past N or K are zero-filled and still counted, as in the one-CTA kernel.
template <class Cfg>
__device__ __forceinline__ void load_b(__nv_bfloat16* b, const CUtensorMap* b_map, const CUtensorMap* expert_map,
                                       uint64_t* full, bool discrete, int32_t k, const TileCoord& tile,
                                       uint32_t rank) {
    if constexpr (Cfg::kClusterM == 1) {
        if constexpr (Cfg::kWeightLayout == kKMajor) {
            if (discrete) {
                ptx::tma_load_2d(b, expert_map, full, k, tile.n_begin);
            } else {
                ptx::tma_load_3d(b, b_map, full, k, tile.n_begin, tile.expert);
            }
        } else {
#pragma unroll
            for (int box = 0; box < Cfg::kTileN / kNMajorBoxColumns; ++box) {
                __nv_bfloat16* b_box = b + box * (kNMajorBoxBytes / 2);
                const int32_t n = tile.n_begin + box * kNMajorBoxColumns;
                if (discrete) {
                    ptx::tma_load_2d(b_box, expert_map, full, n, k);
                } else {
                    ptx::tma_load_3d(b_box, b_map, full, n, k, tile.expert);
                }
            }
        }
    } else {
        if constexpr (Cfg::kWeightLayout == kKMajor) {
            const int32_t part = static_cast<int32_t>(rank) * Cfg::kBPartRows;
            __nv_bfloat16* b_part = b + part * Cfg::kBlockK;
            if (discrete) {
                ptx::tma_load_2d_multicast(b_part, expert_map, full, Cfg::kClusterMask, k, tile.n_begin + part);
            } else {
                ptx::tma_load_3d_multicast(b_part, b_map, full, Cfg::kClusterMask, k, tile.n_begin + part,
                                           tile.expert);
            }
        } else {
#pragma unroll
            for (int box = 0; box < Cfg::kTileN / kNMajorBoxColumns; ++box) {
                if (box % Cfg::kClusterM != static_cast<int>(rank)) continue;
                __nv_bfloat16* b_box = b + box * (kNMajorBoxBytes / 2);
                const int32_t n = tile.n_begin + box * kNMajorBoxColumns;
                if (discrete) {
                    ptx::tma_load_2d_multicast(b_box, expert_map, full, Cfg::kClusterMask, n, k);
                } else {
                    ptx::tma_load_3d_multicast(b_box, b_map, full, Cfg::kClusterMask, n, k, tile.expert);
                }
            }
        }
    }
}

// The producer: run by every lane of one warp, which all walk the same schedule, so the loop's
// state is warp-uniform and lives in uniform registers (walked by one thread, it was not, and
// each TMA load sat in a loop moving its operands into uniform registers). One lane publishes the
// tiles; one lane chosen by elect.sync arms each stage's barrier and issues its loads. Chosen
// by its lane index instead, each load sat in a loop over the warp's active lanes, and the
// producer spent most of a 128x32 tile's k-block issuing one stage (docs/PERFORMANCE.md).
template <class Cfg>
__device__ __forceinline__ void produce(SharedStorage<Cfg>& s, const CUtensorMap* a_map,
                                        const CUtensorMap* b_map, const KernelArgs& args,
                                        const int32_t* valid_rows) {
    const bool leader = threadIdx.x % 32 == 0;
    const bool discrete = args.weight_mode == kDiscrete;
    GroupedTileScheduler<Cfg::kScheduleTileM, Cfg::kTileN> schedule(
        s.offsets, discrete ? args.weight_status : nullptr, args.m, args.num_experts, args.n, Cfg::kScheduleGroupM,
        valid_rows);
    const int32_t k_blocks = (args.k + Cfg::kBlockK - 1) / Cfg::kBlockK;
    // Clusters run the static schedule only (the planner refuses them the dynamic one): both CTAs
    // must take the same items, with the same skips.
    const bool dynamic = Cfg::kClusterM == 1 && args.scheduler == kDynamic;
    const uint32_t rank = Cfg::kClusterM == 1 ? 0u : ptx::cluster_cta_rank();

    // Work items: tiles, then pieces of the last round's tiles (tail_split.h). The dynamic
    // scheduler deals its first round as the static one does (claim_item.cuh).
    ItemClaims claims(args.tile_counter, leader);
    int64_t item = first_static_item<Cfg>();
    int32_t mapped_expert = -1;
    uint32_t stage = 0, phase = 0;
    const int32_t k_splits = Cfg::kSplitK ? args.k_splits : 1;
    const bool half_boxes = kHalfBoxesWithCounts<Cfg> && args.valid_rows != nullptr;  // A's map: 64-row boxes
    for (uint32_t i = 0;; ++i) {
        if (dynamic && i > 0) item = claims.take();
        const TileCoord tile = cluster_share(schedule.item(item, args.tail, k_splits), rank, Cfg::kTileM);
        const uint32_t slot = i % Cfg::kTileRing;
        ptx::mbarrier_wait(&s.tile_empty[slot], ((i / Cfg::kTileRing) & 1) ^ 1);
        if (leader) {
            s.tiles[slot] = tile;
            ptx::mbarrier_arrive(&s.tile_full[slot]);
        }
        if (tile.expert < 0) return;
        // Claim the next item now, read it when that item starts: the atomic's round trip runs
        // behind this one's loads. The static deal knows its next item now: the cursor walks
        // toward it one expert after each of this item's loads (a call of many small experts
        // passes several experts per item, each step a chain of dependent shared-memory loads and
        // compares), so that little of the walk is left between this item's last load and the
        // next item's first.
        int64_t next_tile = -1;
        if (dynamic) {
            claims.request();
        } else {
            item += static_item_stride<Cfg>();
            next_tile = schedule.item_tile(item, args.tail, k_splits);
        }
        if (tile.n_begin >= args.n) continue;  // a piece wholly past N: nothing to load
        // Unsplit, every k-block: split_k_range's divisions would sit between a call's start and
        // its first load.
        const KBlockRange blocks =
            k_splits > 1 ? split_k_range(k_blocks, k_splits, tile.k_split) : KBlockRange{0, k_blocks};

        // In boxes of 64 rows with counts: the second only where the second warpgroup has rows.
        const bool second_box = half_boxes && tile.row_end - tile.row_begin > Cfg::kRowsPerWarpgroup;
        const uint32_t a_bytes = half_boxes && !second_box ? Cfg::kABytes / 2 : Cfg::kABytes;
        const CUtensorMap* expert_map = discrete ? args.b_maps + tile.expert : b_map;
        if (discrete && tile.expert != mapped_expert) {
            ptx::fence_proxy_tensormap_acquire(expert_map);
            mapped_expert = tile.expert;
        }
        const auto load_k_block = [&](int32_t kb) {
            ptx::mbarrier_wait(&s.empty[stage], phase ^ 1);
            if (ptx::elect_one_sync()) {
                auto& st = s.stages[stage];
                // The whole B tile lands here, in a cluster half of it from the other CTA's load
                // (whose bytes may complete on this barrier before this arrival: the count goes
                // negative until then, and the phase cannot complete without the arrival).
                ptx::mbarrier_arrive_expect_tx(&s.full[stage], a_bytes + Cfg::kBBytes);
                const int32_t k = kb * Cfg::kBlockK;
                ptx::tma_load_2d(st.a, a_map, &s.full[stage], k, tile.row_begin);
                if (second_box) {
                    ptx::tma_load_2d(st.a + Cfg::kRowsPerWarpgroup * Cfg::kBlockK, a_map, &s.full[stage], k,
                                     tile.row_begin + Cfg::kRowsPerWarpgroup);
                }
                load_b<Cfg>(st.b, b_map, expert_map, &s.full[stage], discrete, k, tile, rank);
            }
            next_stage<Cfg>(stage, phase);
        };
        // Two loops: the loads with a step after each while the cursor is behind the next tile,
        // then the loads alone: the narrow tiles' producer issues a load every few hundred
        // cycles, and on 64 x 64 tiles a step's test after every load measured 7-10 % slower.
        bool walking = next_tile >= 0;
        int32_t kb = blocks.begin;
        for (; walking && kb < blocks.end; ++kb) {
            load_k_block(kb);
            walking = schedule.step_toward(next_tile);
        }
        for (; kb < blocks.end; ++kb) load_k_block(kb);
    }
}

// The producer warp's copy of padded_offsets (and of the valid-row counts, where both fit in
// shared memory: at offsets + num_experts). Lane l loads expert l's before the block's barrier
// (load_first_offsets) and stores it after (store_offsets), with every later expert's.
struct FirstOffsets {
    int32_t offset;
    int32_t count;
};

__device__ __forceinline__ FirstOffsets load_first_offsets(const KernelArgs& args, bool shared_counts, int lane) {
    FirstOffsets first{};
    if (lane < args.num_experts) {
        first.offset = args.padded_offsets[lane];
        if (shared_counts) first.count = args.valid_rows[lane];
    }
    return first;
}

__device__ __forceinline__ void store_offsets(int32_t* offsets, FirstOffsets first, const KernelArgs& args,
                                              bool shared_counts, int lane) {
    const int32_t experts = args.num_experts;
    if (lane < experts) {
        offsets[lane] = first.offset;
        if (shared_counts) offsets[experts + lane] = first.count;
    }
    for (int32_t g = lane + 32; g < experts; g += 32) {
        offsets[g] = args.padded_offsets[g];
        if (shared_counts) offsets[experts + g] = args.valid_rows[g];
    }
    __syncwarp();
}

}  // namespace ggemm::sm90
