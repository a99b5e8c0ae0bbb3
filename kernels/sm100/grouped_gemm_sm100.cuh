// The SM100 grouped GEMM: persistent, warp-specialized, TMA + tcgen05.mma + tensor memory.
//
// NOT RUN ON HARDWARE: no SM100 GPU was available. It is compiled for sm_100a, its SASS is checked
// (tests/sass/check_sass.sh) and its encodings are unit-tested (tests/host/test_sm100_encodings.cpp);
// docs/SM100.md says exactly what was and was not verified.
//
// Read top to bottom: configuration and its compile-time checks, shared-memory carve-up, the
// producer (TMA), the MMA issuer (tcgen05), the epilogue (TMEM -> registers -> global; its fused
// GLU and dGLU paths in glu_epilogue_sm100.cuh), the kernel (barrier init, TMEM allocation, role
// split, teardown). src/variants_sm100.cu instantiates
// it and holds its host-side prepare and launch.
//
// One CTA per SM, 6 warps:
//   warps 0-3  epilogue: warp w drains TMEM lanes [32 (w % 4), +32) = rows of the tile, staging
//              32 x 32 slices in its own shared buffer for store_chunk (epilogue_sm100.cuh), or
//              with a fused GLU forward pairs of 32-column gate and up halves (drain_glu), with
//              dGLU 32-column chunks of R and the row's saved pre-activation from global memory
//              (drain_dglu); rows past an expert's valid-row count are not stored
//   warp 4     producer: one thread walks the tile schedule, publishes each tile to the other
//              roles through a small ring, and streams A and B k-blocks into the stage ring
//   warp 5     MMA: allocates TMEM; one thread issues tcgen05.mma (M = 128, cta_group::1) into
//              one of two accumulator buffers and commits to mbarriers
// The two accumulator buffers (2 x tile_n TMEM columns) let the epilogue of tile i overlap the
// MMAs of tile i + 1. Scheduler, epilogue arithmetic and discrete weight maps are the ones SM90
// uses (kernels/common/).
//
// Weight layouts (Config<..., kWeightLayout>): K-major B_g (N x K) arrives as one box of N rows x
// 64 K per stage and is read K-major; N-major B_g (K x N) as boxes of 64 N-columns x 64 K-rows
// and is read MN-major (transpose-B in the instruction descriptor, the MN-major shared-memory
// descriptor of encodings.h). A, the epilogue and everything else are the same for both.
//
// CTA pairs (Config<..., kCtaGroup = 2>): a cluster of two CTAs computes one 256 x tile_n tile,
// the scheduler's tiles 2p (rank 0, the leader) and 2p + 1 (rank 1, the peer), which are the two
// 128-row halves of one 256-row block with the same columns (kernels/common/scheduler.h). Each CTA
// loads its own 128 rows of A and half of the tile's B rows (rank r: columns
// [n_begin + r tile_n / 2, + tile_n / 2); N-major: as whole 64-column boxes, so the pairs of 256
// and 128 columns have N-major forms and the pair of 192 has none) into the same shared-memory
// offsets, and both loads complete their bytes on the LEADER's full barrier (TMA .cta_group::2).
// The leader's MMA thread alone issues tcgen05.mma.cta_group::2 (M = 256, N = tile_n), which
// reads A and B from both CTAs and writes each CTA's 128 rows into that CTA's TMEM (allocated with
// cta_group::2 by warp 5 of both CTAs); its commits multicast to both CTAs' stage and accumulator
// barriers. The leader's producer alone walks the schedule (one dynamic claim per pair) and writes
// each tile into both CTAs' tile rings; the peer's producer and both CTAs' epilogues read their
// own ring and release the slot and the accumulator buffer on the leader's barriers. Every
// epilogue drains its own TMEM exactly as in cta_group::1.
#pragma once

#include <cuda_bf16.h>

#include <cstddef>
#include <cstdint>

#include "kernels/common/offset_report.cuh"
#include "kernels/common/params.h"
#include "kernels/common/scheduler.h"
#include "kernels/common/shared_storage.cuh"
#include "kernels/common/tile_ring.cuh"
#include "kernels/sm100/encodings.h"
#include "kernels/sm100/epilogue_sm100.cuh"
#include "kernels/sm100/glu_epilogue_sm100.cuh"
#include "ptx/cluster.cuh"
#include "ptx/cta_pair.cuh"
#include "ptx/fence.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tcgen05.cuh"
#include "ptx/tma.cuh"
#include "ptx/tmem.cuh"

namespace ggemm::sm100 {

// Largest dynamic shared memory one CTA may opt into on SM100 (227 KB).
constexpr int kMaxSmemPerCta = 232448;

// kWeightLayout: how B_g lies in global memory (kKMajor: N x K, kNMajor: K x N), and so how a
// stage's B tile is loaded and described to the MMA (encodings.h).
template <int kTileN_, int kStages_, int kCtaGroup_ = 1, int kWeightLayout_ = kKMajor>
struct Config {
    static constexpr int kTileN = kTileN_;
    static constexpr int kStages = kStages_;
    static constexpr int kCtaGroup = kCtaGroup_;  // CTAs per MMA: 1, or 2 (a CTA pair, cluster of 2)
    static constexpr int kWeightLayout = kWeightLayout_;
    static constexpr bool kBMnMajor = kWeightLayout == kNMajor;  // transpose B in the MMA
    static constexpr int kTileM = static_cast<int>(kRowsPerCta);  // rows per CTA = TMEM lanes = A box
    static constexpr int kMmaM = static_cast<int>(mma_m_for(kCtaGroup));  // 128 (cta_group::1), 256 (::2)
    static constexpr int kBRows = static_cast<int>(b_rows_per_cta(kTileN, kCtaGroup));  // B box rows
    static constexpr int kBlockK = static_cast<int>(sm100::kBlockK);  // one 128-byte swizzle row
    static constexpr int kEpilogueWarps = 4;      // one per TMEM lane quarter
    static constexpr int kProducerWarp = 4;
    static constexpr int kMmaWarp = 5;
    static constexpr int kThreads = 32 * 6;
    static constexpr int kTileRing = 2;           // tiles published ahead to the MMA and epilogue
    static constexpr int kGroupM = 16;            // row blocks per raster group, as SM90
    static constexpr int kMaxExperts = ggemm::kMaxExperts;  // sizes the shared copy of the offsets
    static constexpr uint32_t kABytes = kTileM * kBlockK * 2;  // per CTA and stage
    static constexpr uint32_t kBBytes = kBRows * kBlockK * 2;
    // What the (leader's) full barrier of a stage receives: both CTAs' loads for a pair.
    static constexpr uint32_t kStageTxBytes = stage_tx_bytes(kTileN, kCtaGroup);
    // N-major: the 64-column boxes of this CTA's part of B per stage (0 when not whole boxes).
    static constexpr int kBBoxes = static_cast<int>(mnmajor_boxes_per_cta(kTileN, kCtaGroup));
    static constexpr uint32_t kInstrDesc =
        make_instr_desc_bf16_f32(kMmaM, kTileN, kCtaGroup, /*a_mn_major=*/false, kBMnMajor);
    static constexpr uint32_t kTmemAllocColumns = tmem_alloc_columns(accumulator_columns(kTileN));
    static constexpr int kEpilogueChunk = kEpilogueChunkCols;  // columns per tcgen05.ld (.32x32b.x32)

    static_assert(kCtaGroup == 1 || kCtaGroup == 2, "tcgen05.mma has cta_group::1 and ::2 only");
    static_assert(kWeightLayout == kKMajor || kWeightLayout == kNMajor, "a weight layout");
    static_assert(!kBMnMajor || (kBBoxes > 0 && kBBoxes * kMnMajorBoxBytes == kBRows * kBlockK * 2u),
                  "N-major: each CTA's part of B is whole 64-column boxes (a pair of 192 is not)");
    static_assert(kInstrDesc != 0, "tile_n is not a valid tcgen05.mma N for this M (Table 39)");
    static_assert(idesc_m(kInstrDesc) == static_cast<uint32_t>(kMmaM) &&
                      idesc_n(kInstrDesc) == static_cast<uint32_t>(kTileN),
                  "the instruction descriptor must carry the MMA shape");
    static_assert(kTmemAllocColumns != 0,
                  "two f32 accumulators of tile_n columns must fit the 512 TMEM columns");
    static_assert(kTileN <= 256, "tcgen05.mma N and the TMA box of B are at most 256");
    static_assert(kTileN % kCtaGroup == 0 && kBRows % kSwizzleAtomRows == 0,
                  "each CTA's half of B is whole 8-row swizzle atoms");
    static_assert(kTileN % kEpilogueChunk == 0, "the epilogue drains whole 32-column chunks");
    static_assert(kEpilogueChunk == 32, "one tcgen05.ld.32x32b.x32 per staged chunk");
    static_assert(load_32x32b_num(kEpilogueChunk) == kEpilogueChunk, "no tcgen05.ld form for the chunk");
    static_assert(accumulator_load_shape(kMmaM, kCtaGroup) == TmemLoadShape::k32x32b,
                  "the epilogue reads one accumulator row per thread");
    static_assert(kSegmentAlignment % (kTileM * kCtaGroup) == 0,
                  "a tile (a pair's 256 rows) must never straddle two experts");
    static_assert(kGroupM % 2 == 0, "raster groups pair row blocks: tiles 2p, 2p + 1 share columns");
    static_assert(kStageTxBytes == (kABytes + kBBytes) * kCtaGroup, "every CTA loads one A and one B box");
    static_assert(kABytes % kSwizzleAtomBytes == 0 && kBBytes % kSwizzleAtomBytes == 0,
                  "stage tiles are whole 1024-byte swizzle atoms, so each starts atom-aligned");
    static_assert(kEpilogueWarps == 4 && kProducerWarp % 4 == 0 && kMmaWarp == kProducerWarp + 1,
                  "epilogue warps 0-3 cover the four TMEM lane quarters");
};

template <class Cfg>
struct SharedStorage {
    // Each operand tile starts on a 1024-byte boundary: the 128-byte swizzle pattern repeats every
    // 8 rows x 128 bytes and the tcgen05 descriptors say base offset 0 (PTX ISA 9.7.16.4.1).
    struct alignas(1024) Stage {
        __nv_bfloat16 a[Cfg::kTileM * Cfg::kBlockK];
        // A pair: this CTA's half of the tile's B. N-major: kBBoxes boxes of 64 columns x 64 K-rows.
        __nv_bfloat16 b[Cfg::kBRows * Cfg::kBlockK];
    };
    Stage stages[Cfg::kStages];
    // Pairs use the leader's full, accum_empty and tile_empty barriers only (the peer's stay idle).
    uint64_t full[Cfg::kStages];      // TMA bytes landed in the stage (a pair: in both CTAs)
    uint64_t empty[Cfg::kStages];     // the MMAs reading the stage have completed (tcgen05.commit)
    uint64_t accum_full[2];           // the tile's last MMA has completed (tcgen05.commit)
    uint64_t accum_empty[2];          // every epilogue warp (of both CTAs) has read the buffer
    uint64_t tile_full[Cfg::kTileRing];
    uint64_t tile_empty[Cfg::kTileRing];
    TileCoord tiles[Cfg::kTileRing];
    // Each epilogue warp stages its 32 rows x 32 columns here before store_chunk (epilogue_sm100.cuh).
    alignas(16) float epilogue[Cfg::kEpilogueWarps][32 * kEpiloguePitch];
    float prob[Cfg::kEpilogueWarps][32];  // of the warp's 32 tile rows
    int32_t offsets[Cfg::kMaxExperts];
    uint32_t tmem_base;               // written by tcgen05.alloc
    uint32_t status;
};

// Dynamic shared memory is only 16-byte aligned by the launch; the kernel aligns it by hand.
template <class Cfg>
constexpr int kSmemBytes = static_cast<int>(sizeof(SharedStorage<Cfg>)) + 1024;

// Arrivals each barrier expects per phase. For a pair these are the counts of the leader's
// barriers, which both CTAs release (the peer's consumers arrive remotely).
template <class Cfg>
struct Arrivals {
    static constexpr uint32_t kFull = 1;          // the (leader's) producer's expect_tx
    static constexpr uint32_t kEmpty = 1;         // one tcgen05.commit (a pair: multicast to both)
    static constexpr uint32_t kAccumFull = 1;     // one tcgen05.commit (a pair: multicast to both)
    static constexpr uint32_t kAccumEmpty = Cfg::kEpilogueWarps * Cfg::kCtaGroup;  // each epilogue warp
    static constexpr uint32_t kTileFull = 1;      // the (leader's) producer
    // cta_group::1: MMA thread + epilogue warps. Pair leader: its MMA thread + its epilogue warps,
    // plus the peer's producer + the peer's epilogue warps.
    static constexpr uint32_t kTileEmpty = (1 + Cfg::kEpilogueWarps) * Cfg::kCtaGroup;
};

// ---- barrier access that differs between one CTA and a pair --------------------------------------
// A pair's ring slots and accumulators are released on the LEADER's barriers, some of them by the
// other CTA: arrive with release at cluster scope (mapa to rank 0; the leader maps to itself) and
// wait with acquire at cluster scope. One CTA keeps the CTA-scope forms.
template <class Cfg>
__device__ __forceinline__ void wait_released(uint64_t* bar, uint32_t parity) {
    if constexpr (Cfg::kCtaGroup == 2) {
        ptx::mbarrier_wait_cluster(bar, parity);
    } else {
        ptx::mbarrier_wait(bar, parity);
    }
}

template <class Cfg>
__device__ __forceinline__ void release_to_leader(uint64_t* bar) {
    if constexpr (Cfg::kCtaGroup == 2) {
        ptx::mbarrier_arrive_cluster(bar, 0);
    } else {
        ptx::mbarrier_arrive(bar);
    }
}

// Leader of a pair: writes the peer's tile into the peer's ring slot and publishes it there.
__device__ __forceinline__ void publish_to_peer(TileCoord* slot, uint64_t* tile_full, const TileCoord& tile) {
    const uint32_t remote = ptx::cluster_shared_address(slot, 1);
    ptx::st_shared_cluster_u32(remote + offsetof(TileCoord, expert), static_cast<uint32_t>(tile.expert));
    ptx::st_shared_cluster_u32(remote + offsetof(TileCoord, row_begin), static_cast<uint32_t>(tile.row_begin));
    ptx::st_shared_cluster_u32(remote + offsetof(TileCoord, n_begin), static_cast<uint32_t>(tile.n_begin));
    ptx::st_shared_cluster_u32(remote + offsetof(TileCoord, n_width), static_cast<uint32_t>(tile.n_width));
    ptx::st_shared_cluster_u32(remote + offsetof(TileCoord, row_end), static_cast<uint32_t>(tile.row_end));
    ptx::st_shared_cluster_u32(remote + offsetof(TileCoord, k_split), static_cast<uint32_t>(tile.k_split));
    ptx::st_shared_cluster_u32(remote + offsetof(TileCoord, tile_index), static_cast<uint32_t>(tile.tile_index));
    ptx::mbarrier_arrive_cluster(tile_full, 1);  // release.cluster: the stores above come first
}

// ---- producer: one thread per CTA ----------------------------------------------------------------
// One TMA box of B: 2D through an expert's own map (discrete), 3D through the dense map (the third
// coordinate is the expert). One CTA completes the bytes on its own full barrier; a pair's CTAs
// on the leader's (`leader_full`: its cluster address).
__device__ __forceinline__ void load_b_box(void* dst, const CUtensorMap* map, bool discrete, uint64_t* full,
                                           int32_t c0, int32_t c1, int32_t expert) {
    if (discrete) {
        ptx::tma_load_2d(dst, map, full, c0, c1);
    } else {
        ptx::tma_load_3d(dst, map, full, c0, c1, expert);
    }
}

__device__ __forceinline__ void load_b_box(void* dst, const CUtensorMap* map, bool discrete, uint32_t leader_full,
                                           int32_t c0, int32_t c1, int32_t expert) {
    if (discrete) {
        ptx::tma_load_2d_pair(dst, map, leader_full, c0, c1);
    } else {
        ptx::tma_load_3d_pair(dst, map, leader_full, c0, c1, expert);
    }
}

// One k-block of this CTA's part of B (tile columns from `b_col`) into a stage. K-major (maps
// {K, N}): one box of kBRows rows of N x 64 K. N-major (maps {N, K}): kBBoxes boxes of 64
// columns x 64 K-rows, box j at j x 8 KB holding columns [b_col + 64 j, + 64), the layout the
// MN-major descriptor describes (encodings.h).
template <class Cfg, class Barrier>
__device__ __forceinline__ void load_b(__nv_bfloat16* b, const CUtensorMap* map, bool discrete, Barrier full,
                                       int32_t k, int32_t b_col, int32_t expert) {
    if constexpr (Cfg::kBMnMajor) {
#pragma unroll
        for (int box = 0; box < Cfg::kBBoxes; ++box) {
            load_b_box(b + box * (kMnMajorBoxBytes / 2), map, discrete, full,
                       b_col + box * static_cast<int32_t>(kMnMajorBoxColumns), k, expert);
        }
    } else {
        load_b_box(b, map, discrete, full, k, b_col, expert);
    }
}

// The walker (the one CTA, or a pair's leader) claims work units: tiles, or for a pair the tile
// pairs (2p, 2p + 1), one dynamic claim per unit. It publishes each tile to its own ring and, for
// a pair, tile 2p + 1 to the peer's ring. The peer's producer takes its tiles from its ring.
// Then every producer streams its own A rows and its part of B into its stage ring.
template <class Cfg>
__device__ __forceinline__ void produce(SharedStorage<Cfg>& s, const CUtensorMap* a_map,
                                        const CUtensorMap* b_map, const KernelArgs& args, uint32_t rank,
                                        const int32_t* valid_rows) {
    constexpr bool kPair = Cfg::kCtaGroup == 2;
    const bool discrete = args.weight_mode == kDiscrete;
    const bool walker = rank == 0;
    // Valid-row counts reach the one-CTA kernels only (execute refuses them with a pair, whose
    // units need an even number of 128-row blocks per expert).
    GroupedTileScheduler<Cfg::kTileM, Cfg::kTileN> schedule(
        s.offsets, discrete ? args.weight_status : nullptr, args.m, args.num_experts, args.n, Cfg::kGroupM,
        kPair ? nullptr : valid_rows);
    const int32_t k_blocks = (args.k + Cfg::kBlockK - 1) / Cfg::kBlockK;
    const bool dynamic = args.scheduler == kDynamic;
    // Static rule: unit u goes to CTA (cluster) u % count. The grid is a multiple of the cluster.
    const int64_t first_unit = kPair ? ptx::cluster_id_x() : blockIdx.x;
    const int64_t unit_stride = kPair ? ptx::cluster_count_x() : gridDim.x;
    // Column offset of this CTA's part of B: a pair's peer loads the second half.
    const int32_t b_offset = static_cast<int32_t>(b_row_offset(rank, Cfg::kTileN, Cfg::kCtaGroup));

    int64_t unit = !walker ? 0 : dynamic ? atomicAdd(args.tile_counter, 1ull) : first_unit;
    int32_t mapped_expert = -1;
    uint32_t stage = 0, phase = 0;
    for (uint32_t i = 0;; ++i) {
        const uint32_t slot = i % Cfg::kTileRing;
        const uint32_t ring_parity = (i / Cfg::kTileRing) & 1;
        TileCoord tile;
        if (walker) {
            // Tiles 2p and 2p + 1 exist together: every expert has an even number of 128-row
            // blocks (256-aligned segments), and the raster pairs them (scheduler.h).
            tile = schedule.tile(unit * Cfg::kCtaGroup);
            wait_released<Cfg>(&s.tile_empty[slot], ring_parity ^ 1);
            s.tiles[slot] = tile;
            ptx::mbarrier_arrive(&s.tile_full[slot]);
            if constexpr (kPair) publish_to_peer(&s.tiles[slot], &s.tile_full[slot], schedule.tile(unit * 2 + 1));
        } else {
            ptx::mbarrier_wait_cluster(&s.tile_full[slot], ring_parity);
            tile = s.tiles[slot];
            release_to_leader<Cfg>(&s.tile_empty[slot]);
        }
        if (tile.expert < 0) {
            // Tail: wait until the MMAs have released every stage, so that no tcgen05.commit
            // arrival is still headed for this CTA's shared memory when it exits.
            for (int i = 0; i < Cfg::kStages; ++i) {
                ptx::mbarrier_wait(&s.empty[stage], phase ^ 1);
                if (++stage == Cfg::kStages) {
                    stage = 0;
                    phase ^= 1;
                }
            }
            return;
        }
        // Claim the next unit now so the atomic's latency hides behind this tile's loads.
        if (walker) unit = dynamic ? atomicAdd(args.tile_counter, 1ull) : unit + unit_stride;

        const CUtensorMap* expert_map = discrete ? args.b_maps + tile.expert : b_map;
        if (discrete && tile.expert != mapped_expert) {
            ptx::fence_proxy_tensormap_acquire(expert_map);
            mapped_expert = tile.expert;
        }
        const int32_t b_col = tile.n_begin + b_offset;
        for (int32_t kb = 0; kb < k_blocks; ++kb) {
            ptx::mbarrier_wait(&s.empty[stage], phase ^ 1);
            auto& st = s.stages[stage];
            // Out-of-bounds box elements (K and N tails) are zero-filled and still counted.
            // A pair's leader expects both CTAs' bytes; the peer's loads only complete bytes.
            if (walker) ptx::mbarrier_arrive_expect_tx(&s.full[stage], Cfg::kStageTxBytes);
            const int32_t k = kb * Cfg::kBlockK;
            if constexpr (kPair) {
                const uint32_t full = ptx::cluster_shared_address(&s.full[stage], 0);
                ptx::tma_load_2d_pair(st.a, a_map, full, k, tile.row_begin);
                load_b<Cfg>(st.b, expert_map, discrete, full, k, b_col, tile.expert);
            } else {
                ptx::tma_load_2d(st.a, a_map, &s.full[stage], k, tile.row_begin);
                load_b<Cfg>(st.b, expert_map, discrete, &s.full[stage], k, b_col, tile.expert);
            }
            if (++stage == Cfg::kStages) {
                stage = 0;
                phase ^= 1;
            }
        }
    }
}

// tcgen05.commit of this thread's MMAs to `bar`; a pair's to `bar` in both CTAs.
template <class Cfg>
__device__ __forceinline__ void commit(uint64_t* bar) {
    if constexpr (Cfg::kCtaGroup == 2) {
        ptx::tcgen05_commit_pair_multicast(bar, kPairCtaMask);
    } else {
        ptx::tcgen05_commit(bar);
    }
}

// A stage's B descriptor and its MMA step k: K-major, or MN-major for N-major weights (the
// instruction descriptor's transpose-B bit says which, Config::kInstrDesc).
template <class Cfg>
__device__ __forceinline__ uint64_t b_descriptor(uint32_t b_address) {
    if constexpr (Cfg::kBMnMajor) {
        return mnmajor_sw128_descriptor(b_address);
    } else {
        return kmajor_sw128_descriptor(b_address);
    }
}

template <class Cfg>
__device__ __forceinline__ uint64_t advance_b_k_step(uint64_t b_desc, uint32_t k) {
    if constexpr (Cfg::kBMnMajor) {
        return advance_mn_k_step(b_desc, k);
    } else {
        return advance_k_step(b_desc, k);
    }
}

// ---- MMA issuer: one thread (a pair: in the leader only) ----------------------------------------
// Tile i accumulates into buffer i % 2. Per k-block: 4 MMAs of K = 16, then a commit that frees the
// stage once they complete; after the last k-block, a commit that hands the buffer to the epilogue.
// A pair's MMAs (cta_group::2, M = 256) read the same stage offsets in both CTAs, so the commits
// multicast to both CTAs' barriers: both producers reuse the stage, both epilogues drain.
template <class Cfg>
__device__ __forceinline__ void issue_mma(SharedStorage<Cfg>& s, const KernelArgs& args,
                                          uint32_t tmem_base) {
    const int32_t k_blocks = (args.k + Cfg::kBlockK - 1) / Cfg::kBlockK;  // >= 1: K >= 8
    uint32_t stage = 0, phase = 0;
    for (uint32_t i = 0;; ++i) {
        const uint32_t slot = i % Cfg::kTileRing;
        ptx::mbarrier_wait(&s.tile_full[slot], (i / Cfg::kTileRing) & 1);
        const TileCoord tile = s.tiles[slot];
        ptx::mbarrier_arrive(&s.tile_empty[slot]);
        if (tile.expert < 0) return;

        const uint32_t buffer = i & 1;
        const uint32_t use = (i >> 1) & 1;
        wait_released<Cfg>(&s.accum_empty[buffer], use ^ 1);  // the epilogue(s) drained it
        ptx::tcgen05_fence_after_thread_sync();
        const uint32_t d_tmem = tmem_base + accumulator_column(buffer, Cfg::kTileN);

        for (int32_t kb = 0; kb < k_blocks; ++kb) {
            ptx::mbarrier_wait(&s.full[stage], phase);
            ptx::tcgen05_fence_after_thread_sync();
            const uint64_t a_desc = kmajor_sw128_descriptor(ptx::smem_addr(s.stages[stage].a));
            const uint64_t b_desc = b_descriptor<Cfg>(ptx::smem_addr(s.stages[stage].b));
#pragma unroll
            for (uint32_t k = 0; k < Cfg::kBlockK / kMmaK; ++k) {
                if constexpr (Cfg::kCtaGroup == 2) {
                    ptx::tcgen05_mma_f16_cta2(d_tmem, advance_k_step(a_desc, k), advance_b_k_step<Cfg>(b_desc, k),
                                              Cfg::kInstrDesc, kb > 0 || k > 0);
                } else {
                    ptx::tcgen05_mma_f16_cta1(d_tmem, advance_k_step(a_desc, k), advance_b_k_step<Cfg>(b_desc, k),
                                              Cfg::kInstrDesc, kb > 0 || k > 0);
                }
            }
            commit<Cfg>(&s.empty[stage]);
            if (++stage == Cfg::kStages) {
                stage = 0;
                phase ^= 1;
            }
        }
        commit<Cfg>(&s.accum_full[buffer]);
    }
}

// ---- epilogue: warps 0-3 -------------------------------------------------------------------------
// Layout D (M = 128, cta_group::1): tile row r is TMEM lane r, tile column c is column
// (buffer base + c). A pair (M = 256, cta_group::2) keeps the same per-CTA picture: the CTA's 128
// rows of the 256 are lanes 0-127 of its own TMEM, tile_n columns. Warp w reads lanes
// [32 w, 32 w + 32) with tcgen05.ld.32x32b.x32: thread t of the warp gets row 32 w + t, columns
// [32 chunk, +32), one register per column. The warp stages the 32 x 32 slice in its own shared
// buffer and hands it to store_chunk (epilogue_sm100.cuh), which stores whole row segments with vector
// stores; with a fused GLU, drain_glu takes the tile a 64-column block at a time instead. Warps
// never wait for each other.
template <class Cfg>
__device__ __forceinline__ void drain(SharedStorage<Cfg>& s, const KernelArgs& args, uint32_t tmem_base) {
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const uint32_t lane_base = warp_lane_quarter_base(static_cast<uint32_t>(warp));
    float* staged = s.epilogue[warp];
    for (uint32_t i = 0;; ++i) {
        const uint32_t slot = i % Cfg::kTileRing;
        wait_released<Cfg>(&s.tile_full[slot], (i / Cfg::kTileRing) & 1);  // a pair's peer: leader-written
        const TileCoord tile = read_tile_slot(&s.tiles[slot], lane);
        if (lane == 0) release_to_leader<Cfg>(&s.tile_empty[slot]);
        if (tile.expert < 0) return;

        // The warp's rows before the tile's valid-row end (all 32 without counts).
        const int64_t warp_row_begin = tile.row_begin + static_cast<int64_t>(lane_base);
        const int64_t valid = tile.row_end - warp_row_begin;
        const int warp_rows = valid < 0 ? 0 : (valid > 32 ? 32 : static_cast<int>(valid));
        if (args.glu_backward && lane < warp_rows) prefetch_pre_row<Cfg>(args, warp_row_begin + lane, tile.n_begin);

        const uint32_t buffer = i & 1;
        const uint32_t use = (i >> 1) & 1;
        ptx::mbarrier_wait(&s.accum_full[buffer], use);
        ptx::tcgen05_fence_after_thread_sync();

        const EpilogueTile et = epilogue_tile(args, tile.expert);
        float* staged_prob = s.prob[warp];
        staged_prob[lane] = prob_of(args.prob, warp_row_begin + lane);  // visible after the first __syncwarp
        const uint32_t taddr =
            tmem_address(tmem_base, lane_base, accumulator_column(buffer, Cfg::kTileN));
        // A warp with no valid row loads and stores nothing (the same for the whole warp, as
        // tcgen05.ld requires); a fused GLU or dGLU drains the tile by its own blocks instead of
        // chunks.
        if (warp_rows > 0 && et.activation != kActivationNone) {
            drain_fused<Cfg>(et, taddr, staged, staged_prob[lane], warp_row_begin, warp_rows, tile.n_begin, lane);
        }
        const int chunks = et.activation == kActivationNone && warp_rows > 0 ? Cfg::kTileN / Cfg::kEpilogueChunk : 0;
#pragma unroll 1
        for (int chunk = 0; chunk < chunks; ++chunk) {
            const int32_t col_begin = tile.n_begin + chunk * Cfg::kEpilogueChunk;
            if (col_begin >= args.n) break;  // N tail: the same for the whole warp
            uint32_t acc[Cfg::kEpilogueChunk];
            ptx::tmem_load_32x32b_x32(taddr + chunk * Cfg::kEpilogueChunk, acc);
            ptx::tmem_wait_load();
            ptx::tmem_hold_registers(acc);
            float* my_row = staged + lane * kEpiloguePitch;
#pragma unroll
            for (int c = 0; c < Cfg::kEpilogueChunk; c += 4) {
                *reinterpret_cast<float4*>(my_row + c) =
                    make_float4(__uint_as_float(acc[c]), __uint_as_float(acc[c + 1]),
                                __uint_as_float(acc[c + 2]), __uint_as_float(acc[c + 3]));
            }
            __syncwarp();  // the slice is staged
            store_chunk<32, 32>(et, staged, staged_prob, warp_row_begin, warp_rows, col_begin, lane);
            __syncwarp();  // the slice is read: the buffer may be reused
        }
        // Our tcgen05.ld are complete (waited); order them before the arrival that lets the MMA
        // warp overwrite the buffer.
        ptx::tcgen05_fence_before_thread_sync();
        __syncwarp();
        if (lane == 0) release_to_leader<Cfg>(&s.accum_empty[buffer]);
    }
}

// ---- the kernel ----------------------------------------------------------------------------------
template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    grouped_gemm_sm100(const __grid_constant__ CUtensorMap a_map,
                       const __grid_constant__ CUtensorMap b_map, const KernelArgs args) {
    static_assert(kSmemBytes<Cfg> <= kMaxSmemPerCta, "stages + barriers + offsets exceed 227 KB");
#if defined(GGEMM_PTX_SM100A)
    constexpr bool kPair = Cfg::kCtaGroup == 2;
    // Dynamic shared memory starts at the same offset in every CTA of the kernel, so a pair's two
    // SharedStorage copies sit at the same offsets, as the pair MMA, mapa and multicast require.
    extern __shared__ uint8_t smem_raw[];
    auto& s = aligned_shared_storage<SharedStorage<Cfg>>(smem_raw);
    const int thread = threadIdx.x;
    const int warp = thread / 32;
    const int lane = thread % 32;
    const uint32_t rank = kPair ? ptx::cluster_cta_rank() : 0;  // 0: the pair's leader
    using Count = Arrivals<Cfg>;

    if (thread == 0) {
        for (int i = 0; i < Cfg::kStages; ++i) {
            ptx::mbarrier_init(&s.full[i], Count::kFull);
            ptx::mbarrier_init(&s.empty[i], Count::kEmpty);
        }
        for (int i = 0; i < 2; ++i) {
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
        // A pair allocates collectively: this warp in each CTA, the same columns in both TMEMs
        // (PTX ISA 9.7.16.5, Table 46: the first warp may block until the peer's joins).
        if constexpr (kPair) {
            ptx::tmem_alloc_pair(&s.tmem_base, Cfg::kTmemAllocColumns);
            ptx::tmem_relinquish_alloc_permit_pair();
        } else {
            ptx::tmem_alloc(&s.tmem_base, Cfg::kTmemAllocColumns);
            ptx::tmem_relinquish_alloc_permit();
        }
    }
    if (thread == Cfg::kProducerWarp * 32) {
        ptx::tma_prefetch_map(&a_map);
        if (args.weight_mode == kDense) ptx::tma_prefetch_map(&b_map);
    }
    // Every role walks the experts: keep the offsets, and the valid-row counts where both fit, in
    // shared memory (the counts after the offsets; else the scheduler reads them from global
    // memory, once per expert it visits).
    const bool shared_counts = args.valid_rows != nullptr && 2 * args.num_experts <= Cfg::kMaxExperts;
    for (int g = thread; g < args.num_experts; g += Cfg::kThreads) {
        s.offsets[g] = args.padded_offsets[g];
        if (shared_counts) s.offsets[args.num_experts + g] = args.valid_rows[g];
    }
    const int32_t* valid_rows = shared_counts ? s.offsets + args.num_experts : args.valid_rows;
    // The TMEM address was written by the tensor-core side: fence around the CTA barrier. A pair
    // syncs the cluster: the peer's loads, arrivals and tile stores target the leader's barriers
    // and ring (and the leader's the peer's), which must be initialized first.
    ptx::tcgen05_fence_before_thread_sync();
    if constexpr (kPair) {
        ptx::cluster_sync();
    } else {
        __syncthreads();
    }
    ptx::tcgen05_fence_after_thread_sync();
    const uint32_t tmem_base = s.tmem_base;

    // One CTA reports bad offsets and counts; the scheduler in every CTA skips the experts they
    // touch and clamps the counts.
    if (blockIdx.x == 0 && args.device_status != nullptr) {
        report_offsets<Cfg::kThreads>(s.offsets, valid_rows, &s.status, args, thread);
    }

    if (warp < Cfg::kEpilogueWarps) {
        drain<Cfg>(s, args, tmem_base);
    } else if (warp == Cfg::kProducerWarp) {
        if (lane == 0) produce<Cfg>(s, &a_map, &b_map, args, rank, valid_rows);
        __syncwarp();
    } else {
        if (lane == 0 && rank == 0) issue_mma<Cfg>(s, args, tmem_base);
        __syncwarp();
    }

    // Every accumulator was committed and drained (the epilogue waited on each accum_full and
    // finished its loads); only then may the allocating warp free the columns. A pair syncs the
    // cluster: no MMA of the leader may still write the peer's TMEM, no arrival of either CTA may
    // still be headed for the other's barriers, and the peer's dealloc joins the leader's
    // (Table 47 of PTX ISA 9.7.16.5 is this sequence).
    ptx::tcgen05_fence_before_thread_sync();
    if constexpr (kPair) {
        ptx::cluster_sync();
    } else {
        __syncthreads();
    }
    if (warp == Cfg::kMmaWarp) {
        ptx::tcgen05_fence_after_thread_sync();
        if constexpr (kPair) {
            ptx::tmem_dealloc_pair(tmem_base, Cfg::kTmemAllocColumns);
        } else {
            ptx::tmem_dealloc(tmem_base, Cfg::kTmemAllocColumns);
        }
    }
#endif
}

}  // namespace ggemm::sm100
