// The SM90 grouped GEMM: persistent, warp-specialized, TMA + wgmma.
//
// Read top to bottom: configuration and its compile-time checks, shared-memory carve-up,
// barrier init, role split with register reallocation, producer loop, math loop, epilogue.
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

#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/common/claim_item.cuh"
#include "kernels/common/offset_report.cuh"
#include "kernels/common/params.h"
#include "kernels/common/scheduler.h"
#include "kernels/common/shared_storage.cuh"
#include "kernels/common/split_k.h"
#include "kernels/common/tile_ring.cuh"
#include "kernels/sm90/dglu_pingpong_sm90.cuh"
#include "kernels/sm90/epilogue_sm90.cuh"
#include "kernels/sm90/operand_layout.h"
#include "kernels/sm90/shared_memory.h"
#include "kernels/sm90/tma_store_epilogue_sm90.cuh"
#include "ptx/barrier.cuh"
#include "ptx/cluster.cuh"
#include "ptx/fence.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/prefetch.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"

namespace ggemm::sm90 {

// How a tile's output leaves: the math warps store it (any dtypes, C too), or TMA stores a bf16
// D (no C) from a buffer of kStoreColumns columns per math warpgroup.
enum class Output { kWarpStores, kTmaStore };

// kWeightLayout: how B_g lies in global memory (kKMajor: N x K, kNMajor: K x N), and so how a
// stage's B tile is loaded and described to wgmma (operand_layout.h). Output design and weight
// layout are compile-time properties: each combination is its own kernel. kClusterM: CTAs per
// cluster along M (1, or 2 to multicast the weight tile to both halves of a 256-row tile).
// kPreL2 (dGLU through TMA only): how the saved pre-activation and d_pre pass the L2
// (dglu_pingpong_sm90.cuh). kMathWarpgroups: 2 (128-row tiles), or 1 (64-row tiles for single
// experts of a few hundred rows: warp stores of the plain or general epilogue only, no GLU, no
// split K, no setmaxnreg: the 256-thread CTA keeps the registers ptxas gives it).
template <int kTileN_, int kStages_, Output kOutput_ = Output::kWarpStores, int kStoreColumns_ = 0,
          int kWeightLayout_ = kKMajor, int kClusterM_ = 1, PreL2 kPreL2_ = PreL2::kPrefetchAtStart,
          int kMathWarpgroups_ = 2>
struct Config {
    static constexpr int kTileN = kTileN_;
    static constexpr int kStages = kStages_;
    static constexpr Output kOutput = kOutput_;
    static constexpr int kStoreColumns = kStoreColumns_;
    static constexpr int kStoreAtoms = kStoreColumns / kAtomColumns;
    static constexpr int kWeightLayout = kWeightLayout_;
    static constexpr int kTransposeB = kWeightLayout == kNMajor ? 1 : 0;  // wgmma imm-trans-b
    static constexpr int kMathWarpgroups = kMathWarpgroups_;
    static constexpr int kTileM = 64 * kMathWarpgroups;  // math warpgroups x 64 rows (wgmma M = 64)
    static constexpr int kBlockK = sm90::kBlockK;  // 64 bf16 = 128 bytes: one 128-byte swizzle row
    static constexpr int kThreads = 128 * (1 + kMathWarpgroups);
    static constexpr int kMathWarps = kMathWarpgroups * 4;
    static constexpr int kRowsPerWarpgroup = kTileM / kMathWarpgroups;
    static constexpr int kTileRing = 2;         // tiles published ahead to the math warpgroups
    static constexpr int kGroupM = 16;          // row blocks per raster group (even: see scheduler.h)
    static constexpr uint32_t kABytes = kTileM * kBlockK * 2;
    static constexpr uint32_t kBBytes = kTileN * kBlockK * 2;
    // A cluster computes one schedule tile of kClusterM x 128 rows; raster groups keep the same
    // rows (kGroupM x 128) whatever the cluster. Each CTA loads 1 / kClusterM of the weight tile
    // (K-major: kBPartRows rows of N; N-major: every kClusterM-th 64-column box) for all of them.
    static constexpr int kClusterM = kClusterM_;
    static constexpr int kScheduleTileM = kTileM * kClusterM;
    static constexpr PreL2 kPreL2 = kPreL2_;
    // Whether the kernel can split K (kernels/common/split_k.h): not in clusters, where both CTAs
    // would count their partials on one tile's counters, nor 32 wide (split_k.h sizes the
    // counters and the 32-bit work-item count for tiles of 64 columns or more).
    // dGLU through TMA (kStoreColumns: the tile's pre-activation columns, twice its own): each
    // math warpgroup a whole tile in turn; the saved pre-activation comes in by TMA into the
    // warpgroup's atom buffers, becomes d_pre in place and leaves by TMA (dglu_pingpong_sm90.cuh).
    static constexpr bool kTmaStoreDglu = kOutput == Output::kTmaStore && kStoreColumns == 2 * kTileN;
    // Per math warpgroup; dGLU's: two pre-activation atoms, loaded and stored by TMA in turn.
    static constexpr int kBufferAtoms = kTmaStoreDglu ? kDgluBufferAtoms : kStoreAtoms;
    // The math warps that read each stage: both warpgroups (each its 64 rows of the tile), or
    // in dGLU through TMA the one warpgroup whose tile it is (compute_dglu_tiles).
    static constexpr int kStageReaderWarps = kTmaStoreDglu ? 4 : kMathWarpgroups * 4;
    // Whether the math warpgroups take whole tiles in turn (dGLU through TMA, and PingPong below).
    static constexpr bool kPingPong = kTmaStoreDglu;
    static constexpr bool kSplitK = kMathWarpgroups == 2 && kClusterM == 1 && kTileN >= 64 &&
                                    kTileN % kPieceColumns == 0 && !kTmaStoreDglu;
    // Whether this instance compiles the plain epilogue alone (PlainEpilogue, below), or the
    // fused GLU forward alone (GluEpilogue).
    static constexpr bool kPlainOnly = false;
    static constexpr bool kGluOnly = false;
    // Whether the kernel fuses the GLU forward and dGLU epilogues: the narrower warp-store kernels.
    // The 256-wide one keeps its registers for the 128 accumulators and every other epilogue
    // (fused, it would spill); the 32-wide one holds no whole gate-and-up block pair.
    static constexpr bool kFusedGlu = kMathWarpgroups == 2 && kOutput == Output::kWarpStores && kTileN < 256 &&
                                      kTileN >= 64 && kTileN % (2 * kGluBlockColumns) == 0;
    // Whether its TMA-store epilogue fuses the GLU forward (a bf16 D without C): the one-CTA
    // K-major kernels 256 wide with a buffer of half the tile (the output is half the tile: one
    // pass) and 192 wide.
    static constexpr bool kTmaStoreGlu = kOutput == Output::kTmaStore && kClusterM == 1 &&
                                         kWeightLayout == kKMajor &&
                                         ((kTileN == 256 && kStoreColumns == 128) || kTileN == 192);
    // Atoms of a tile's last TMA-store pass held in registers and stored behind the next tile's
    // first wgmma batch (tma_store_epilogue_sm90.cuh, DeferredAtoms): the second pass of the
    // kernels whose buffer is half the tile, which waited for the first pass's stores to read the
    // buffer (32 registers beside the 128 accumulators). A whole-tile buffer leaves in one pass
    // with no such wait: held, it measured slower (192 wide) or spilled (256 wide). Not in
    // clusters, whose every-epilogue instance spilled.
    static constexpr int kDeferAtoms =
        kOutput == Output::kTmaStore && !kTmaStoreDglu && kClusterM == 1 && 2 * kStoreColumns == kTileN
            ? kStoreAtoms
            : 0;
    static constexpr int kScheduleGroupM = kGroupM / kClusterM;
    static constexpr int kBPartRows = kTileN / kClusterM;
    static constexpr uint16_t kClusterMask = (1u << kClusterM) - 1;
    // The shared copy of the offsets holds every expert the contract allows, except where the
    // TMA-store buffer leaves less room: there the planner keeps plans of more experts off the
    // variant (KernelVariant::max_experts). 256 bytes are kept for the barriers and the ring,
    // 1024 for aligning the dynamic shared memory.
    static constexpr int kOffsetCapacity =
        kOutput == Output::kWarpStores
            ? ggemm::kMaxExperts
            : offset_capacity(kSharedMemoryLimit - 1024 - kStages * static_cast<int>(kABytes + kBBytes) -
                              kMathWarpgroups * kBufferAtoms * kAtomBytes - 256);
    // wgmma batches a math warpgroup keeps in flight behind the one it just issued. With 3 stages
    // it keeps none: it waits for each batch and releases its stage at once, so it holds one
    // stage and the producer stays two ahead (with one in flight it would hold two, and the
    // producer only one ahead: the 3-stage kernels leave room for a whole-tile output buffer).
    // The 32- and 64-wide tiles keep one too: their 10 and 8 stages still leave the producer
    // eight and six ahead (nine and seven without), and their wgmmas are short next to the loop
    // from one batch's completion to the next one's issue, which a batch in flight hides.
    static constexpr int kBatchesInFlight = kStages <= 3 ? 0 : 1;
    // Tiles up to 128 wide serve the calls of one or two tiles per SM, where loading alpha after
    // the main loop waited on it; wider tiles serve calls of many, where it did not and the
    // load at the tile's start measured slower (kernels/common/epilogue.cuh).
    static constexpr AlphaLoad kAlphaLoad = kTileN <= 128 ? AlphaLoad::kAtTileStart : AlphaLoad::kAfterMainLoop;
    // Registers after setmaxnreg must fit the CTA's own pool, 384 x 168 (the launch-bounds cap):
    // 128 x 56 + 256 x 224 = 64512. A larger sum makes setmaxnreg.inc wait forever. The 192-wide
    // ping-pong dGLU holds a whole 128 x 192 tile per math warpgroup (192 accumulators per
    // thread): its math warps take 240, its producer 24 (128 x 24 + 256 x 240 = 64512).
    static constexpr bool kWideDglu = kTmaStoreDglu && kTileN > 128;
    static constexpr int kProducerRegisters = kWideDglu ? 24 : 56;
    static constexpr int kMathRegisters = kWideDglu ? 240 : 224;

    static_assert(128 * kProducerRegisters + 128 * kMathWarpgroups * kMathRegisters <=
                      kThreads * (65536 / kThreads / 8 * 8),
                  "setmaxnreg budget exceeds the registers the launch gave the CTA");
    static_assert((kTileN % kPieceColumns == 0 || kTileN == kPieceColumns / 2 || kTileN == 112) && kTileN <= 256,
                  "wgmma N, pieces (a tile narrower than a piece, or 112 wide, is never cut) and the TMA box "
                  "(<= 256 rows)");
    static_assert(kTileM % kSegmentAlignment == 0 || kSegmentAlignment % kTileM == 0,
                  "a tile must never straddle two experts");
    static_assert(kGroupM % 2 == 0, "raster groups pair row blocks");
    static_assert(kABytes % 1024 == 0 && kBBytes % 1024 == 0, "128-byte swizzle atoms are 1024 bytes");
    static_assert(kOutput == Output::kWarpStores ? kStoreColumns == 0
                                                 : kStoreColumns % kAtomColumns == 0 && kStoreColumns > 0 &&
                                                       (kStoreColumns <= kTileN || kTmaStoreDglu),
                  "a TMA-store buffer is whole column atoms, at most the tile (dGLU: twice the tile)");
    static_assert(!kTmaStoreDglu || (kClusterM == 1 && (kTileN == 128 || kTileN == 192) &&
                                     kTileM == 2 * kSliceRows && kBatchesInFlight == 1),
                  "ping-pong dGLU: one CTA, each warpgroup a whole 128 x 128 or 128 x 192 tile");
    static_assert(kOffsetCapacity >= 32, "room for the offsets of a useful number of experts");
    static_assert(kWeightLayout == kKMajor || kWeightLayout == kNMajor, "a weight layout");
    static_assert(kWeightLayout == kKMajor || kTileN % kNMajorBoxColumns == 0,
                  "N-major B is loaded in boxes of 64 columns");
    static_assert(kClusterM == 1 || kClusterM == 2, "one CTA, or two along M sharing the weight tile");
    static_assert(kMathWarpgroups == 2 || (kMathWarpgroups == 1 && kOutput == Output::kWarpStores && kClusterM == 1),
                  "one math warpgroup: the one-CTA warp-store kernels only");
    static_assert(kPreL2 == PreL2::kPrefetchAtStart || kTmaStoreDglu,
                  "only dGLU through TMA streams a pre-activation");
    static_assert(kSegmentAlignment % kScheduleTileM == 0, "a cluster's tile never straddles two experts");
    static_assert(kBPartRows * kBlockK * 2 % 1024 == 0, "each CTA's part of B starts on a swizzle atom");
};

// The instance of a kernel that compiles only the plain epilogue (plain_epilogue in
// kernels/common/params.h: a bf16 D = alpha * acc * prob or acc itself, no C, bias or activation)
// and never splits K. The host launches it for such calls. Every other epilogue is most of a
// kernel's code (the 128x64 kernel: 336 KB of SASS, 35 KB in this instance), and a call of one or
// two tiles per SM waits on the instruction fetches of the code it runs: this instance ran such
// calls up to 1.29x faster on an H200 (docs/PERFORMANCE.md). Same shared memory, same tiles, same
// results.
template <class Cfg>
struct PlainEpilogue : Cfg {
    static_assert(!Cfg::kTmaStoreDglu, "a dGLU kernel has no plain epilogue");
    static constexpr bool kPlainOnly = true;
    static constexpr bool kSplitK = false;
    static constexpr bool kFusedGlu = false;
};

// Whether a kernel has a GluEpilogue instance: the 256-wide one-CTA K-major kernel whose
// TMA-store buffer is half the tile (a GLU tile's output: two atoms), one wgmma batch kept in
// flight. (The 192-wide kernel's, its tile as n128 + n64 wgmmas, measured 0.996x its general
// instance on gpt-oss's fc1: docs/PERFORMANCE.md.)
template <class Cfg>
constexpr bool kGluOverlap = Cfg::kTmaStoreGlu && Cfg::kTileN == 256 && Cfg::kStoreAtoms == 2 &&
                             Cfg::kBatchesInFlight == 1;

// Whether, in a call with valid-row counts, the kernel loads A in two boxes of 64 rows, one per
// math warpgroup (the host encodes A's map with that box: KernelVariant::a_box_rows_counted), and
// only the first where the second warpgroup's rows are all past the count: that warpgroup then
// issues no MMA (it passes over the stages), and the rows it would read are not loaded. Decode
// layers hold a few to a few dozen tokens per expert: most of their tiles are such. Not the
// ping-pong kernels, whose warpgroups each take whole tiles (dGLU through TMA refuses counts).
template <class Cfg>
constexpr bool kHalfBoxesWithCounts = Cfg::kMathWarpgroups == 2 && !Cfg::kPingPong;

// The instance of such a kernel that compiles only the fused GLU forward (compute_glu_tiles,
// whose activation runs behind the tensor cores' work), for calls with an activation and K
// unsplit. Its own instance, so that the general instance's code and registers stay as they are.
// Same shared memory, same tiles, same results as the general instance.
template <class Cfg>
struct GluEpilogue : Cfg {
    static_assert(kGluOverlap<Cfg>, "the 256-wide half-tile kernel");
    static constexpr bool kGluOnly = true;
    static constexpr bool kSplitK = false;
};

// A TMA-store kernel whose math warpgroups take the tiles in turn, each a whole 128-row tile
// (compute_pingpong_tiles), so that one's epilogue runs while the other's MMAs keep the tensor
// cores busy: where K is small, the epilogue is a large share of a tile's time. The tile is
// 128 x kTileN per warpgroup (two m64 wgmmas per k16 slice); each warpgroup stores its tile's two
// 64-row halves in turn through its own buffer. No split K, no fused GLU; with valid-row counts A
// is loaded whole (the warpgroup computes both halves, and stores only the valid rows).
template <class Cfg>
struct PingPong : Cfg {
    static_assert(Cfg::kOutput == Output::kTmaStore && !Cfg::kTmaStoreDglu && Cfg::kClusterM == 1 &&
                      Cfg::kMathWarpgroups == 2 && Cfg::kTileN <= 128 && Cfg::kStoreColumns == Cfg::kTileN &&
                      Cfg::kBatchesInFlight == 1 && !Cfg::kTmaStoreGlu && Cfg::kDeferAtoms == 0,
                  "ping-pong: one CTA, a whole-width buffer per warpgroup, at most 128 accumulators a half");
    static constexpr bool kPingPong = true;
    static constexpr int kStageReaderWarps = 4;
    static constexpr bool kSplitK = false;
};

// Named barriers (bar.sync ids); 0 is __syncthreads'.
enum class NamedBarrier : uint32_t {
    kEpilogue = 1,      // + math warpgroup index: its staged bias row, or its TMA-store buffer
    kSplitArrival = 3,  // + math warpgroup index: its partial tile is stored, its arrival counted
};

// Where a tile's output waits in shared memory. Warp stores: per math warpgroup one
// 128-byte-wide slice of output on its way to global memory, and the tile's bias columns as fp32
// (epilogue_sm90.cuh; 256 entries, one pair per thread). TMA stores: per math warpgroup its
// output buffer of column atoms (tma_store_epilogue_sm90.cuh; bias is read from global memory).
// dGLU through TMA: none (its tiles' output leaves from the ring's slots).
template <class Cfg, Output = Cfg::kOutput, bool = Cfg::kTmaStoreDglu>
struct OutputStorage {
    alignas(1024) uint8_t epilogue[Cfg::kMathWarpgroups][kSliceBytes];
    float bias[Cfg::kMathWarpgroups][256];
};
template <class Cfg>
struct OutputStorage<Cfg, Output::kTmaStore, false> {
    alignas(1024) uint8_t d_tile[Cfg::kMathWarpgroups][Cfg::kBufferAtoms * kAtomBytes];
};
template <class Cfg>
struct OutputStorage<Cfg, Output::kTmaStore, true> {
    alignas(1024) uint8_t pre[Cfg::kMathWarpgroups][kDgluBufferAtoms][kAtomBytes];
};

// The ping-pong kernels' (compute_dglu_tiles, compute_pingpong_tiles): turn[w] completes when the
// warpgroup before w in the tile order has passed every full-barrier wait of its tile's main loop
// (one arrival per warp); dGLU's pre_full[w][b] when warpgroup w's atom buffer b has its TMA load
// (initialised in PingPong's kernel too, never waited on). Other kernels have none.
template <bool kPingPong>
struct PingPongBarriers {
    uint64_t turn[2];
    uint64_t pre_full[2][kDgluBufferAtoms];
};
template <>
struct PingPongBarriers<false> {};

template <class Cfg>
struct SharedStorage {
    // Each operand tile starts on a 1024-byte boundary: the 128-byte swizzle pattern repeats every
    // 8 rows x 128 bytes, and the wgmma descriptors assume base offset 0.
    struct alignas(1024) Stage {
        __nv_bfloat16 a[Cfg::kTileM * Cfg::kBlockK];
        __nv_bfloat16 b[Cfg::kTileN * Cfg::kBlockK];
    };
    Stage stages[Cfg::kStages];
    OutputStorage<Cfg> output;      // 1024-byte aligned too: next to the stages, no padding
    uint64_t full[Cfg::kStages];    // TMA bytes landed in the stage
    uint64_t empty[Cfg::kStages];   // every math warp of the cluster is done reading the stage
    uint64_t tile_full[Cfg::kTileRing];
    uint64_t tile_empty[Cfg::kTileRing];
    TileCoord tiles[Cfg::kTileRing];
    // padded_offsets, then the valid-row counts when they are given and both fit (else the
    // scheduler reads the counts from global memory, once per expert it visits).
    int32_t offsets[Cfg::kOffsetCapacity];
    uint32_t status;
    uint32_t split_last[Cfg::kMathWarpgroups];  // split-K: the warpgroup's split arrived last
    PingPongBarriers<Cfg::kPingPong> pingpong;  // the warpgroups' turns, dGLU's pre-activation loads
};

// Dynamic shared memory is only 16-byte aligned by the launch; the kernel aligns it by hand.
template <class Cfg>
constexpr int kSmemBytes = static_cast<int>(sizeof(SharedStorage<Cfg>)) + 1024;

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

template <class Cfg>
__device__ __forceinline__ void next_stage(uint32_t& stage, uint32_t& phase) {
    if (++stage == Cfg::kStages) {
        stage = 0;
        phase ^= 1;
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

// A math warp is done reading a stage: one lane arrives on the stage's empty barrier in every CTA
// that writes into it (its own, and in a cluster the other CTA, which multicasts part of B here).
// Its wgmma reads of the stage are complete (wgmma_wait) and it wrote nothing the producers need,
// so the arrival needs no release at cluster scope, nor the producer's wait an acquire there.
template <class Cfg>
__device__ __forceinline__ void release_stage(uint64_t* empty, int lane) {
    if constexpr (Cfg::kClusterM == 1) {
        if (lane == 0) ptx::mbarrier_arrive(empty);
    } else {
        if (lane < Cfg::kClusterM) ptx::mbarrier_arrive_peer(empty, static_cast<uint32_t>(lane));
    }
}

// The slice-0 descriptors of the first stage's A (a math warpgroup's rows) and B (from b_offset
// bytes into its B tile); every other stage's are a multiply-add away (stage_descriptor).
struct FirstStage {
    uint64_t a;
    uint64_t b;
};

template <class Cfg>
__device__ __forceinline__ FirstStage first_stage(SharedStorage<Cfg>& s, int warpgroup, uint32_t b_offset) {
    const uint32_t a_base = ptx::smem_addr(s.stages[0].a) + warpgroup * Cfg::kRowsPerWarpgroup * 128;
    const uint32_t b_base = ptx::smem_addr(s.stages[0].b) + b_offset;
    return {a_descriptor(a_base), b_slice_descriptor<Cfg::kWeightLayout>(b_base, 0)};
}

// first_stage's descriptors for a loop over k-blocks, made opaque to the compiler: without that
// it builds them again from the shared-memory base inside the loop (a chain of four dependent
// instructions between the full barrier's wait and the first wgmma of every k-block), and in
// the 32- and 64-wide kernels, whose wgmmas are short, that chain is part of every k-block's time.
template <class Cfg>
__device__ __forceinline__ FirstStage loop_first_stage(SharedStorage<Cfg>& s, int warpgroup, uint32_t b_offset) {
    FirstStage first = first_stage<Cfg>(s, warpgroup, b_offset);
    asm volatile("" : "+l"(first.a), "+l"(first.b));
    return first;
}

// Issues the four k16 slices of the k-block in `stage` as m64 n kWidth k16 wgmmas on `acc`, from
// the first stage's descriptors `first` stepped to `stage` and along K with adds (the stages are
// one array; operand_layout.h's stage_descriptor and slice steps). The first slice overwrites
// acc unless `accumulate`.
template <class Cfg, int kWidth>
__device__ __forceinline__ void issue_stage(const FirstStage& first, uint32_t stage, float (&acc)[kWidth / 2],
                                            bool accumulate) {
    using Mma = ptx::Wgmma<kWidth, Cfg::kTransposeB>;
    using Stage = typename SharedStorage<Cfg>::Stage;
    static_assert(sizeof(Stage) % 16 == 0, "stage_descriptor steps whole 16-byte units");
    const uint64_t desc_a0 = stage_descriptor(first.a, stage, sizeof(Stage));
    const uint64_t desc_b0 = stage_descriptor(first.b, stage, sizeof(Stage));
#pragma unroll
    for (int k = 0; k < Cfg::kBlockK / 16; ++k) {
        const uint64_t desc_a = ptx::wgmma_desc_advance(desc_a0, k * kKMajorSliceBytes);
        const uint64_t desc_b = ptx::wgmma_desc_advance(desc_b0, k * kBSliceBytes<Cfg::kWeightLayout>);
        Mma::mma(acc, desc_a, desc_b, (accumulate || k > 0) ? 1u : 0u);
    }
}

// issue_stage for the loops that do not keep first_stage's descriptors, B from b_offset bytes
// into the stage's B tile (K-major: b_offset / 128 rows of N further on).
template <class Cfg, int kWidth>
__device__ __forceinline__ void issue_k_block(SharedStorage<Cfg>& s, uint32_t stage, int warpgroup,
                                              float (&acc)[kWidth / 2], uint32_t b_offset, bool accumulate) {
    issue_stage<Cfg, kWidth>(first_stage<Cfg>(s, warpgroup, b_offset), stage, acc, accumulate);
}

template <int kCount>
__device__ __forceinline__ void fence_operands(float (&acc)[kCount]) {
#pragma unroll
    for (int r = 0; r < kCount; ++r) ptx::wgmma_fence_operand(acc[r]);
}

// One tile's (or piece's) main loop, kWidth columns wide: m64 n kWidth k16 wgmma over every
// k-block, keeping Cfg::kBatchesInFlight batches in flight and releasing each stage as soon as
// its batch is done. Once the first batch is issued, the atoms the previous tile held back are
// stored (DeferredAtoms) and the output may start its own loads (output.after_first_batch: dGLU
// through TMA loads the saved pre-activation then).
template <class Cfg, int kWidth, class Out>
__device__ __forceinline__ void main_loop(SharedStorage<Cfg>& s, const Out& output, int32_t k_blocks, int warpgroup,
                                          int lane, float (&acc)[kWidth / 2], uint32_t& stage, uint32_t& phase,
                                          DeferredAtoms<Cfg::kDeferAtoms>& deferred) {
    uint32_t previous_stage = 0;
    const FirstStage first = loop_first_stage<Cfg>(s, warpgroup, 0);
    for (int32_t kb = 0; kb < k_blocks; ++kb) {
        ptx::mbarrier_wait(&s.full[stage], phase);
        fence_operands(acc);
        ptx::wgmma_fence();
        issue_stage<Cfg, kWidth>(first, stage, acc, kb > 0);
        ptx::wgmma_commit();
        if (kb == 0) deferred.write();
        if constexpr (Out::kLoadsDuringMainLoop) {
            if (kb == 0) output.after_first_batch();
        }
        fence_operands(acc);
        if constexpr (Cfg::kBatchesInFlight == 0) {
            ptx::wgmma_wait<0>();
            release_stage<Cfg>(&s.empty[stage], lane);
        } else if (kb > 0) {
            // Keep this batch in flight; the previous one has finished reading its stage.
            ptx::wgmma_wait<1>();
            release_stage<Cfg>(&s.empty[previous_stage], lane);
        }
        previous_stage = stage;
        next_stage<Cfg>(stage, phase);
    }
    if constexpr (Cfg::kBatchesInFlight > 0) {
        ptx::wgmma_wait<0>();
        release_stage<Cfg>(&s.empty[previous_stage], lane);
    }
    fence_operands(acc);
}

// A tile's main loop for a warpgroup whose rows are all past the valid-row count: no wgmma, but
// the stages are waited for and released like main_loop's, since both math warpgroups share the
// ring (each stage's `empty` barrier counts every math warp).
template <class Cfg>
__device__ __forceinline__ void skip_main_loop(SharedStorage<Cfg>& s, int32_t k_blocks, int lane, uint32_t& stage,
                                               uint32_t& phase) {
    for (int32_t kb = 0; kb < k_blocks; ++kb) {
        ptx::mbarrier_wait(&s.full[stage], phase);
        release_stage<Cfg>(&s.empty[stage], lane);
        next_stage<Cfg>(stage, phase);
    }
}

// The copies of the math warpgroups' tile loop (compute): kGeneral serves every epilogue; kPlain a
// call whose epilogue is D = g * prob alone (no C, bias or activation; a bf16 D for the warp-store
// kernels); kPlainUnscaled such a call without alpha and prob, whose D is the accumulator itself.
enum class TileLoop { kGeneral, kPlain, kPlainUnscaled };

// The value a plain copy's D takes.
constexpr EpilogueValue plain_value(TileLoop loop) {
    return loop == TileLoop::kPlainUnscaled ? EpilogueValue::kUnscaled : EpilogueValue::kScaledByProb;
}

// One warpgroup's output of a tile through the math warps' stores (epilogue_sm90.cuh).
template <TileLoop kLoop, AlphaLoad kAlphaLoad>
struct WarpStoreOutput {
    static constexpr bool kLoadsDuringMainLoop = false;
    FragmentEpilogue epilogue;
    float2 bias_pair;
    __device__ __forceinline__ int32_t rows() const { return epilogue.rows; }
    __device__ __forceinline__ void after_first_batch() const {}
    template <int kWidth, class Deferred>
    __device__ __forceinline__ void store(const float (&acc)[kWidth / 2], Deferred&) const {
        const FragmentEpilogue e = after_main_loop<kAlphaLoad>(epilogue);
        if constexpr (kLoop != TileLoop::kGeneral) {
            store_output<__nv_bfloat16, plain_value(kLoop), kWidth>(e, e.t.d, acc, e.t.n);
        } else {
            begin_epilogue(e, bias_pair);
            store_tile<kWidth>(e, acc);
        }
    }
    // The fused GLU's epilogues, over the whole tile's accumulators up to `width` columns.
    template <int kTileN>
    __device__ __forceinline__ void store_fused(const float (&acc)[kTileN / 2], int32_t width) const {
        const FragmentEpilogue e = after_main_loop<kAlphaLoad>(epilogue);
        begin_epilogue(e, bias_pair);
        store_fused_tile<kTileN>(e, acc, width);
    }
};

// One warpgroup's output of a tile through TMA stores (tma_store_epilogue_sm90.cuh); kGlu: with
// the fused GLU forward.
template <int kStoreAtoms, bool kGlu, TileLoop kLoop, AlphaLoad kAlphaLoad>
struct TmaStoreOutput {
    static constexpr bool kLoadsDuringMainLoop = false;
    TmaStoreEpilogue epilogue;
    __device__ __forceinline__ int32_t rows() const { return epilogue.rows; }
    __device__ __forceinline__ void after_first_batch() const {}
    template <int kWidth, int kDeferAtoms>
    __device__ __forceinline__ void store(const float (&acc)[kWidth / 2], DeferredAtoms<kDeferAtoms>& deferred) const {
        if constexpr (kLoop != TileLoop::kGeneral) {
            store_passes<plain_value(kLoop), float, kActivationNone, kWidth, kStoreAtoms>(
                after_main_loop<kAlphaLoad>(epilogue), acc, deferred);
        } else {
            store_tile_tma<kWidth, kStoreAtoms, kGlu>(after_main_loop<kAlphaLoad>(epilogue), acc, deferred);
        }
    }
};

// One warpgroup's fused GLU of a tile through TMA stores, its activation known at compile time.
template <int kStoreAtoms, int32_t kActivation, AlphaLoad kAlphaLoad>
struct GluTmaStoreOutput : TmaStoreOutput<kStoreAtoms, true, TileLoop::kGeneral, kAlphaLoad> {
    template <int kWidth, int kDeferAtoms>
    __device__ __forceinline__ void store(const float (&acc)[kWidth / 2], DeferredAtoms<kDeferAtoms>& deferred) const {
        store_passes<EpilogueValue::kScaledByProb, float, kActivation, kWidth, kStoreAtoms>(
            after_main_loop<kAlphaLoad>(this->epilogue), acc, deferred);
    }
};

// How many of a warpgroup's `rows` rows, from row_begin, lie before the tile's valid-row end.
__device__ __forceinline__ int32_t valid_rows_of(const TileCoord& tile, int32_t row_begin, int32_t rows) {
    const int32_t valid = tile.row_end - row_begin;
    return valid < 0 ? 0 : (valid > rows ? rows : valid);
}

// A TMA-store epilogue's warpgroup fields: its output buffer (none in dGLU through TMA, whose
// output leaves from the ring's slots) and the named barrier that guards it.
template <class Cfg>
__device__ __forceinline__ void set_output_buffer(SharedStorage<Cfg>& s, int warpgroup, TmaStoreEpilogue& e) {
    if constexpr (Cfg::kTmaStoreDglu) {
        e.buffer = nullptr;
        e.buffer_addr = 0;
    } else {
        e.buffer = s.output.d_tile[warpgroup];
        e.buffer_addr = ptx::smem_addr(s.output.d_tile[warpgroup]);
    }
    e.barrier = static_cast<uint32_t>(NamedBarrier::kEpilogue) + warpgroup;
}

// The per-tile epilogue state of one warpgroup, in the variant's output design. Its global reads
// are issued when the tile starts, so their latency hides behind the main loop.
template <class Cfg, TileLoop kLoop>
__device__ __forceinline__ auto make_output(SharedStorage<Cfg>& s, const KernelArgs& args, const CUtensorMap* d_map,
                                            const TileCoord& tile, int warpgroup, int lane) {
    const int32_t row_begin = tile.row_begin + warpgroup * Cfg::kRowsPerWarpgroup;
    const int64_t prob_row = row_begin + (threadIdx.x % 128) / 32 * 16 + lane / 4;
    constexpr bool kScaled = kLoop != TileLoop::kPlainUnscaled;
    const float2 prob = kScaled ? make_float2(prob_of(args.prob, prob_row), prob_of(args.prob, prob_row + 8))
                                : make_float2(1.f, 1.f);
    if constexpr (Cfg::kOutput == Output::kWarpStores) {
        WarpStoreOutput<kLoop, Cfg::kAlphaLoad> out;
        out.epilogue.t = epilogue_tile<Cfg::kAlphaLoad>(args, tile.expert);
        out.epilogue.row_begin = row_begin;
        out.epilogue.rows = valid_rows_of(tile, row_begin, Cfg::kRowsPerWarpgroup);
        out.epilogue.n_begin = tile.n_begin;
        out.epilogue.slice_addr = ptx::smem_addr(s.output.epilogue[warpgroup]);
        out.epilogue.bias_addr = ptx::smem_addr(s.output.bias[warpgroup]);
        out.epilogue.barrier = static_cast<uint32_t>(NamedBarrier::kEpilogue) + warpgroup;
        out.epilogue.prob = prob;
        out.bias_pair = kLoop != TileLoop::kGeneral ? make_float2(0.f, 0.f)
                                                    : load_bias_pair<Cfg::kTileN>(out.epilogue.t, tile.n_begin);
        if constexpr (Cfg::kFusedGlu && kLoop == TileLoop::kGeneral) {
            if (out.epilogue.t.glu_backward) prefetch_pre_tile<Cfg::kTileN>(out.epilogue.t, prob_row, tile.n_begin, lane);
        }
        return out;
    } else {
        TmaStoreEpilogue e;
        e.t = epilogue_tile<Cfg::kAlphaLoad>(args, tile.expert);
        e.prob = prob;
        set_output_buffer(s, warpgroup, e);
        e.row_begin = row_begin;
        e.rows = valid_rows_of(tile, row_begin, Cfg::kRowsPerWarpgroup);
        e.n_begin = tile.n_begin;
        e.d_map = d_map;
        TmaStoreOutput<Cfg::kStoreAtoms, Cfg::kTmaStoreGlu, kLoop, Cfg::kAlphaLoad> out;
        out.epilogue = e;
        return out;
    }
}

// Split-K (kernels/common/split_k.h): stores this split's partial of the warpgroup's 64 rows, counts
// its arrival, and, in the split that arrives last, replaces `acc` by the sum of every split's
// partial in split order. Returns whether this split arrived last (and so runs the epilogue).
// Each thread reads back only the elements that same thread position wrote in the other
// splits, so one counter per warpgroup orders everything: every writer fences before the
// warpgroup's barrier that precedes the count, and the last arrival fences after seeing it.
// `split_item` is tile_index x k_splits + k_split.
template <class Cfg, int kWidth>
__device__ __forceinline__ bool reduce_split(SharedStorage<Cfg>& s, const KernelArgs& args, int32_t split_item,
                                             int warpgroup, float (&acc)[kWidth / 2]) {
    constexpr int kPairs = kWidth / 4;  // float2 per thread
    const int thread = threadIdx.x % 128;
    const int32_t tile_index = split_item / args.k_splits;
    // Partials: [tile][split][warpgroup] blocks of 64 x kTileN fp32, pair j of thread t at j * 128 + t.
    constexpr int64_t kBlockPairs = Cfg::kRowsPerWarpgroup * Cfg::kTileN / 2;
    float2* mine = reinterpret_cast<float2*>(args.split_partials) +
                   (int64_t{split_item} * Cfg::kMathWarpgroups + warpgroup) * kBlockPairs + thread;
#pragma unroll
    for (int j = 0; j < kPairs; ++j) __stcg(mine + j * 128, make_float2(acc[2 * j], acc[2 * j + 1]));
    __threadfence();
    const uint32_t barrier = static_cast<uint32_t>(NamedBarrier::kSplitArrival) + warpgroup;
    ptx::named_barrier_sync(barrier, 128);
    if (thread == 0) {
        uint32_t* counter = args.split_counters + int64_t{tile_index} * kSplitCountersPerTile + warpgroup;
        const uint32_t arrived = atomicAdd(counter, 1u);
        s.split_last[warpgroup] = arrived + 1 == static_cast<uint32_t>(args.k_splits) ? 1u : 0u;
    }
    ptx::named_barrier_sync(barrier, 128);
    // Through a shuffle: a shared-memory read is not known to be warp-uniform, and a branch the
    // compiler thinks divergent moves the main loop's state out of uniform registers.
    if (__shfl_sync(0xffffffffu, s.split_last[warpgroup], 0) == 0) return false;
    __threadfence();
    const float2* first = reinterpret_cast<const float2*>(args.split_partials) +
                          (int64_t{tile_index} * args.k_splits * Cfg::kMathWarpgroups + warpgroup) * kBlockPairs + thread;
    // Split 0's partial, then each later split's added in turn: one order for every element.
#pragma unroll
    for (int j = 0; j < kPairs; ++j) {
        const float2 partial = __ldcg(first + j * 128);
        acc[2 * j] = partial.x;
        acc[2 * j + 1] = partial.y;
    }
    for (int split = 1; split < args.k_splits; ++split) {
        const float2* next = first + int64_t{split} * Cfg::kMathWarpgroups * kBlockPairs;
#pragma unroll
        for (int j = 0; j < kPairs; ++j) {
            const float2 partial = __ldcg(next + j * 128);
            acc[2 * j] += partial.x;
            acc[2 * j + 1] += partial.y;
        }
    }
    return true;
}

// The main loop and epilogue of a tile or piece kWidth columns wide, on the first kWidth / 2
// accumulators of each thread (the fragment layout of a narrower wgmma is the same prefix). With a
// fused GLU (warp stores only) the epilogue is the one instance at the full tile width, bounded by
// the piece's width at run time, so its code exists once per kernel. A split of K (whole tiles
// only) runs its k-blocks, then the reduction, and only the split that arrives last goes on to
// the epilogue: the same instance as an unsplit tile's, so the epilogue's code exists once.
// Returns whether acc holds the warpgroup's finished tile (false: its rows are all past the
// valid-row count, or it is a split that arrived before the last).
template <class Cfg, int kWidth, class Out>
__device__ __forceinline__ bool run_tile(SharedStorage<Cfg>& s, const Out& output, const KernelArgs& args,
                                         const TileCoord& tile, int32_t k_blocks, int warpgroup, int lane,
                                         float (&acc)[Cfg::kTileN / 2], uint32_t& stage, uint32_t& phase,
                                         bool fused, DeferredAtoms<Cfg::kDeferAtoms>& deferred) {
    static_assert(kWidth <= Cfg::kTileN && (kWidth % kPieceColumns == 0 || kWidth == Cfg::kTileN),
                  "a tile or a piece of one");
    if (output.rows() == 0) {  // every row of this warpgroup is past the valid-row count
        skip_main_loop<Cfg>(s, k_blocks, lane, stage, phase);
        return false;
    }
    auto& part = reinterpret_cast<float(&)[kWidth / 2]>(acc);
    main_loop<Cfg, kWidth>(s, output, k_blocks, warpgroup, lane, part, stage, phase, deferred);
    if constexpr (Cfg::kSplitK && kWidth == Cfg::kTileN) {
        if (args.k_splits > 1) {
            const int32_t split_item = tile.tile_index * args.k_splits + tile.k_split;
            if (!reduce_split<Cfg, kWidth>(s, args, split_item, warpgroup, part)) return false;
        }
    }
    if constexpr (Cfg::kOutput == Output::kWarpStores) {
        if (fused) return true;  // compute() stores it
    }
    output.template store<kWidth>(part, deferred);
    return true;
}

// The math warpgroups' i-th tile: waits until the producer has published it in the ring, reads
// it and releases its slot.
template <class Cfg>
__device__ __forceinline__ TileCoord take_tile(SharedStorage<Cfg>& s, uint32_t i, int lane) {
    const uint32_t slot = i % Cfg::kTileRing;
    ptx::mbarrier_wait(&s.tile_full[slot], (i / Cfg::kTileRing) & 1);
    const TileCoord tile = read_tile_slot(&s.tiles[slot], lane);
    if (lane == 0) ptx::mbarrier_arrive(&s.tile_empty[slot]);
    return tile;
}

template <class Cfg, TileLoop kLoop>
__device__ __forceinline__ void compute_tiles(SharedStorage<Cfg>& s, const KernelArgs& args,
                                              const CUtensorMap* d_map, int warpgroup) {
    const int lane = threadIdx.x % 32;
    const int32_t k_blocks = (args.k + Cfg::kBlockK - 1) / Cfg::kBlockK;
    // Zeroed once: a fused epilogue reads the whole array, past a piece's columns too (never stored).
    float acc[Cfg::kTileN / 2] = {};
    uint32_t stage = 0, phase = 0;
    DeferredAtoms<Cfg::kDeferAtoms> deferred;  // the last tile's held atoms, stored behind this one's MMAs
    for (uint32_t i = 0;; ++i) {
        const TileCoord tile = take_tile(s, i, lane);
        if (tile.expert < 0) {
            if constexpr (Cfg::kOutput == Output::kTmaStore) finish_tma_stores(deferred);
            return;
        }
        if (tile.n_begin >= args.n) continue;  // a piece wholly past N (the producer skips it too)
        const auto output = make_output<Cfg, kLoop>(s, args, d_map, tile, warpgroup, lane);
        // A split of K runs its own k-blocks (split_k.h; split plans cut no pieces).
        int32_t tile_k_blocks = k_blocks;
        if constexpr (Cfg::kSplitK) {
            if (args.k_splits > 1) {
                const KBlockRange blocks = split_k_range(k_blocks, args.k_splits, tile.k_split);
                tile_k_blocks = blocks.end - blocks.begin;
            }
        }

        // A whole tile, or a piece of the last round (tail_split.h: 128 or 64 columns; a tile
        // that is not whole pieces wide, 32 or 112, is never cut).
        const bool fused = Cfg::kFusedGlu && kLoop == TileLoop::kGeneral && args.activation != kActivationNone;
        bool finished = false;
        if (Cfg::kTileN % kPieceColumns != 0 || tile.n_width == Cfg::kTileN) {
            finished = run_tile<Cfg, Cfg::kTileN>(s, output, args, tile, tile_k_blocks, warpgroup, lane, acc, stage,
                                                  phase, fused, deferred);
        } else if constexpr (Cfg::kTileN == 256) {
            if (tile.n_width == 128) {
                finished = run_tile<Cfg, 128>(s, output, args, tile, tile_k_blocks, warpgroup, lane, acc, stage,
                                              phase, fused, deferred);
            } else {
                finished = run_tile<Cfg, kPieceColumns>(s, output, args, tile, tile_k_blocks, warpgroup, lane, acc,
                                                        stage, phase, fused, deferred);
            }
        } else if constexpr (Cfg::kTileN % kPieceColumns == 0) {
            finished = run_tile<Cfg, kPieceColumns>(s, output, args, tile, tile_k_blocks, warpgroup, lane, acc, stage,
                                                    phase, fused, deferred);
        }
        if constexpr (Cfg::kFusedGlu && kLoop == TileLoop::kGeneral) {
            if (fused && finished) output.template store_fused<Cfg::kTileN>(acc, tile.n_width);
        }
    }
}

// The fused GLU forward of the GLU instance (kGluOverlap): a tile's output is two atoms, atom 0
// from pre-activation columns 0-127 (acc[0..63]) and atom 1 from columns 128-255 (acc[64..127]),
// and their activation runs behind the tensor cores' work instead of between two tiles' MMAs.
// Every k-block is issued as two n128 wgmmas, one per half (GluHalves). The tile's last
// kGluTailBlocks k-blocks go as every first half, then every second half: once the first halves
// are done, atom 0's activation runs and is written to the buffer while the second halves' MMAs
// run. The next tile's first kGluHeadBlocks k-blocks go the same way: columns 0-127 (acc[0..63],
// free once atom 0 is written), then atom 1's activation from the previous tile's acc[64..127]
// and its write, then columns 128-255; the two atoms are then stored by TMA behind those MMAs.
// A whole-width tile of partly valid rows stores through store_passes' masked copies; pieces of
// the last round take main_loop and store_passes, after the pending atom's store. Same
// arithmetic, same bits.
constexpr int kGluHeadBlocks = 2;
constexpr int kGluTailBlocks = 2;

// The two register blocks of a GLU instance's tile, each issued as wgmmas of its own: columns
// 0-127 (acc[0..63]: atom 0's gate and up blocks) and 128-255 (acc[64..127]: atom 1's).
template <class Cfg>
struct GluHalves {
    static constexpr int kWidth = Cfg::kTileN / 2;
    static constexpr uint32_t kHighOffset = kWidth * Cfg::kBlockK * 2;  // K-major: B's rows 128.. of the stage
    static_assert(kWidth == 128, "two n128 halves");
    __device__ __forceinline__ static float (&low(float (&acc)[Cfg::kTileN / 2]))[kWidth / 2] {
        return reinterpret_cast<float(&)[kWidth / 2]>(acc[0]);
    }
    __device__ __forceinline__ static float (&high(float (&acc)[Cfg::kTileN / 2]))[kWidth / 2] {
        return reinterpret_cast<float(&)[kWidth / 2]>(acc[kWidth / 2]);
    }
};

// Writes atom `atom` (0 or 1) of e's GLU tile to its place in the buffer.
template <int32_t kActivation, int kWidth>
__device__ __forceinline__ void write_glu_atom(const TmaStoreEpilogue& e, const float (&acc)[kWidth / 2], int atom) {
    write_output_atom<EpilogueValue::kScaledByProb, float, kActivation, kWidth>(e, acc, atom,
                                                                                e.buffer_addr + atom * kAtomBytes);
}

// Waits until the warpgroup's buffer is free: its earlier stores have read it.
__device__ __forceinline__ void glu_buffer_free(const TmaStoreEpilogue& e) {
    if (threadIdx.x % 128 == 0) ptx::tma_store_wait_read<0>();
    ptx::named_barrier_sync(e.barrier, 128);
}

// What a whole GLU tile leaves pending for the next one (its atom 1): the fields of its epilogue
// that change from tile to tile. The rest are the call's or the warpgroup's (pending_epilogue).
struct GluPendingTile {
    float alpha;
    const void* bias;
    float2 prob;
    int32_t row_begin;
    int32_t n_begin;
};

__device__ __forceinline__ GluPendingTile pending_tile(const TmaStoreEpilogue& e) {
    return {e.t.alpha, e.t.bias, e.prob, e.row_begin, e.n_begin};
}

// The epilogue of a pending tile, rebuilt from its fields and the call's: what atom 1's
// activation, write and store read (alpha, bias and its dtype, N, the activation's constants,
// prob, the buffer, the barrier, D's map and the tile's position).
template <class Cfg>
__device__ __forceinline__ TmaStoreEpilogue pending_epilogue(SharedStorage<Cfg>& s, const KernelArgs& args,
                                                            const CUtensorMap* d_map, int warpgroup,
                                                            const GluPendingTile& p) {
    TmaStoreEpilogue e{};
    e.t.alpha = p.alpha;
    e.t.bias = p.bias;
    e.t.bias_dtype = args.bias_dtype;
    e.t.n = args.n;
    e.t.activation = args.activation;
    e.t.glu = args.glu;
    e.prob = p.prob;
    set_output_buffer(s, warpgroup, e);
    e.row_begin = p.row_begin;
    e.rows = Cfg::kRowsPerWarpgroup;
    e.n_begin = p.n_begin;
    e.d_map = d_map;
    return e;
}

// Writes atom 1 of a pending tile, then stores both of its atoms (a box wholly past N/2 is not
// issued; TMA clips the other).
template <class Cfg, int32_t kActivation>
__device__ __forceinline__ void finish_glu_tile(SharedStorage<Cfg>& s, const KernelArgs& args,
                                                const CUtensorMap* d_map, int warpgroup, const GluPendingTile& p,
                                                const float (&acc)[Cfg::kTileN / 2]) {
    const TmaStoreEpilogue e = pending_epilogue<Cfg>(s, args, d_map, warpgroup, p);
    const int32_t out_n = e.t.n / 2;
    const int32_t out_begin = e.n_begin / 2;
    write_glu_atom<kActivation, Cfg::kTileN>(e, acc, 1);
    ptx::fence_proxy_async_shared();
    ptx::named_barrier_sync(e.barrier, 128);
    if (threadIdx.x % 128 == 0) {
        ptx::tma_store_2d(e.d_map, e.buffer, out_begin, e.row_begin);
        if (out_begin + kAtomColumns < out_n) {
            ptx::tma_store_2d(e.d_map, e.buffer + kAtomBytes, out_begin + kAtomColumns, e.row_begin);
        }
        ptx::tma_store_commit();
    }
}

// Waits for the next kCount stages to land, records them in `stages` and steps stage and phase
// past them. The head and the tail wait for all of theirs before their first wgmma: a wait
// between two wgmmas would be a branch inside their pipeline stage, and ptxas would serialize
// every wgmma of the kernel.
template <class Cfg, int kCount>
__device__ __forceinline__ void wait_stages(SharedStorage<Cfg>& s, uint32_t& stage, uint32_t& phase,
                                            uint32_t (&stages)[kCount]) {
#pragma unroll
    for (int t = 0; t < kCount; ++t) {
        ptx::mbarrier_wait(&s.full[stage], phase);
        stages[t] = stage;
        next_stage<Cfg>(stage, phase);
    }
}

// Issues one half (kWidth columns, B from b_offset) of each k-block in `stages`, the first of
// which is k-block kb of the tile.
template <class Cfg, int kWidth, int kCount>
__device__ __forceinline__ void issue_half(SharedStorage<Cfg>& s, const uint32_t (&stages)[kCount], int warpgroup,
                                           float (&half)[kWidth / 2], uint32_t b_offset, int32_t kb) {
#pragma unroll
    for (int t = 0; t < kCount; ++t) issue_k_block<Cfg, kWidth>(s, stages[t], warpgroup, half, b_offset, kb + t > 0);
}

// Issues the kTail k-blocks from `stage`, kb the first one's index: every first half
// (acc[0..63]) as one wgmma group, then every second half (acc[64..127]) as another.
template <class Cfg, int kTail>
__device__ __forceinline__ void issue_glu_tail(SharedStorage<Cfg>& s, uint32_t& stage, uint32_t& phase, int32_t kb,
                                               int warpgroup, float (&acc)[Cfg::kTileN / 2]) {
    using Halves = GluHalves<Cfg>;
    uint32_t stages[kTail];
    wait_stages<Cfg>(s, stage, phase, stages);
    fence_operands(acc);
    ptx::wgmma_fence();
    issue_half<Cfg, Halves::kWidth>(s, stages, warpgroup, Halves::low(acc), 0, kb);
    ptx::wgmma_commit();
    issue_half<Cfg, Halves::kWidth>(s, stages, warpgroup, Halves::high(acc), Halves::kHighOffset, kb);
    ptx::wgmma_commit();
}

// One warpgroup's main loop of a whole-width GLU tile (kGluOverlap), every k-block issued as two
// n128 wgmmas on acc[0..63] and acc[64..127] (GluHalves): no wgmma spans both, so each half is a
// register block of its own and either can be issued while the other is read. `last`, when
// pending, is the previous tile, whose atom 1 is not written yet (K is more than kGluHeadBlocks
// k-blocks then). With whole rows the tile's atom 0 is in the buffer on return. `e` comes back
// with its alpha.
template <class Cfg, int32_t kActivation>
__device__ __forceinline__ void glu_main_loop(SharedStorage<Cfg>& s, const KernelArgs& args, const CUtensorMap* d_map,
                                              TmaStoreEpilogue& e, const GluPendingTile& last, bool pending,
                                              bool whole, int32_t k_blocks, int warpgroup, int lane,
                                              float (&acc)[Cfg::kTileN / 2], uint32_t& stage, uint32_t& phase,
                                              DeferredAtoms<Cfg::kDeferAtoms>& deferred) {
    using Halves = GluHalves<Cfg>;
    auto& low = Halves::low(acc);
    auto& high = Halves::high(acc);
    // The stages issued and not yet released: `unreleased` of them from `oldest`.
    uint32_t oldest = stage;
    int32_t unreleased = 0;
    const auto release = [&] {
        for (; unreleased > 0; --unreleased) {
            release_stage<Cfg>(&s.empty[oldest], lane);
            if (++oldest == Cfg::kStages) oldest = 0;
        }
    };
    int32_t kb = 0;
    if (pending) {
        uint32_t head_stages[kGluHeadBlocks];
        wait_stages<Cfg>(s, stage, phase, head_stages);
        fence_operands(low);
        ptx::wgmma_fence();
        issue_half<Cfg, Halves::kWidth>(s, head_stages, warpgroup, low, 0, 0);
        ptx::wgmma_commit();
        // Every earlier group is done: this retires none, but ends the pipeline stage of the
        // wgmmas on `low` before `high` is read.
        ptx::wgmma_wait<1>();
        finish_glu_tile<Cfg, kActivation>(s, args, d_map, warpgroup, last, acc);
        fence_operands(high);
        ptx::wgmma_fence();
        issue_half<Cfg, Halves::kWidth>(s, head_stages, warpgroup, high, Halves::kHighOffset, 0);
        ptx::wgmma_commit();
        fence_operands(acc);
        unreleased = kGluHeadBlocks;
        kb = kGluHeadBlocks;
    }
    // The last kGluTailBlocks k-blocks (one if K has no more): their first halves, then their
    // second halves, so that atom 0 is written while the second halves run.
    const int32_t tail = k_blocks - kb >= kGluTailBlocks ? kGluTailBlocks : 1;
    const FirstStage first_low = loop_first_stage<Cfg>(s, warpgroup, 0);
    const FirstStage first_high = loop_first_stage<Cfg>(s, warpgroup, Halves::kHighOffset);
    for (; kb < k_blocks - tail; ++kb) {
        ptx::mbarrier_wait(&s.full[stage], phase);
        fence_operands(acc);
        ptx::wgmma_fence();
        issue_stage<Cfg, Halves::kWidth>(first_low, stage, low, kb > 0);
        issue_stage<Cfg, Halves::kWidth>(first_high, stage, high, kb > 0);
        ptx::wgmma_commit();
        if (kb == 0) deferred.write();  // atoms an earlier piece's store_passes held back
        fence_operands(acc);
        // Keep this group in flight: every one before it has finished reading its stages.
        ptx::wgmma_wait<1>();
        release();
        oldest = stage;
        unreleased = 1;
        next_stage<Cfg>(stage, phase);
    }
    e = after_main_loop<Cfg::kAlphaLoad>(e);
    const uint32_t tail_stage = stage;
    if (tail == kGluTailBlocks) {
        issue_glu_tail<Cfg, kGluTailBlocks>(s, stage, phase, kb, warpgroup, acc);
    } else {
        issue_glu_tail<Cfg, 1>(s, stage, phase, kb, warpgroup, acc);
    }
    if (kb == 0) deferred.write();
    fence_operands(acc);
    ptx::wgmma_wait<1>();  // the first halves are done
    release();
    oldest = tail_stage;
    unreleased = tail;
    if (whole) {
        glu_buffer_free(e);
        write_glu_atom<kActivation, Cfg::kTileN>(e, acc, 0);
    }
    ptx::wgmma_wait<0>();
    release();
    fence_operands(acc);
}

// The tile loop of a fused GLU call in a kGluOverlap kernel (unsplit K). Its whole-width tiles
// never issue an n256 wgmma (glu_main_loop); pieces of the last round issue n128 or n64 on
// acc[0..63] (run_tile), after the pending atom's store.
template <class Cfg, int32_t kActivation>
__device__ __forceinline__ void compute_glu_tiles(SharedStorage<Cfg>& s, const KernelArgs& args,
                                                  const CUtensorMap* d_map, int warpgroup) {
    const int lane = threadIdx.x % 32;
    const int32_t k_blocks = (args.k + Cfg::kBlockK - 1) / Cfg::kBlockK;
    float acc[Cfg::kTileN / 2] = {};
    uint32_t stage = 0, phase = 0;
    DeferredAtoms<Cfg::kDeferAtoms> deferred;  // atoms store_passes held back, stored behind the next MMAs
    GluPendingTile last{};                     // the previous tile, if its atom 1 is pending
    bool pending = false;
    for (uint32_t i = 0;; ++i) {
        const TileCoord tile = take_tile(s, i, lane);
        if (tile.expert < 0) {
            if (pending) finish_glu_tile<Cfg, kActivation>(s, args, d_map, warpgroup, last, acc);
            finish_tma_stores(deferred);
            return;
        }
        if (tile.n_begin >= args.n) continue;  // a piece wholly past N (the producer skips it too)
        const auto general = make_output<Cfg, TileLoop::kGeneral>(s, args, d_map, tile, warpgroup, lane);
        const int32_t rows = general.rows();
        const bool full_width = tile.n_width == Cfg::kTileN && rows > 0;
        // The pending atom is written here, in the open, unless a whole-width tile's head can
        // hide it (K of more than kGluHeadBlocks k-blocks).
        if (pending && (!full_width || k_blocks <= kGluHeadBlocks)) {
            finish_glu_tile<Cfg, kActivation>(s, args, d_map, warpgroup, last, acc);
            pending = false;
        }
        if (full_width) {
            TmaStoreEpilogue e = general.epilogue;
            const bool whole = rows == Cfg::kRowsPerWarpgroup;
            glu_main_loop<Cfg, kActivation>(s, args, d_map, e, last, pending, whole, k_blocks, warpgroup, lane, acc,
                                            stage, phase, deferred);
            if (whole) {
                last = pending_tile(e);
                pending = true;
            } else {
                pending = false;
                store_passes<EpilogueValue::kScaledByProb, float, kActivation, Cfg::kTileN, Cfg::kStoreAtoms>(
                    e, acc, deferred);
            }
            continue;
        }
        if (rows == 0) {
            skip_main_loop<Cfg>(s, k_blocks, lane, stage, phase);
            continue;
        }
        const GluTmaStoreOutput<Cfg::kStoreAtoms, kActivation, Cfg::kAlphaLoad> output{general};
        if (tile.n_width == 128) {
            run_tile<Cfg, 128>(s, output, args, tile, k_blocks, warpgroup, lane, acc, stage, phase, false, deferred);
        } else {
            run_tile<Cfg, kPieceColumns>(s, output, args, tile, k_blocks, warpgroup, lane, acc, stage, phase, false,
                                         deferred);
        }
    }
}

// dGLU with a bf16 pre-activation and d_pre (Cfg::kTmaStoreDglu): the math warpgroups take the
// tiles in turn, each a whole tile of 128 rows (two m64 wgmmas per k16 slice: 128 accumulators
// in the 128-wide kernel, 192 in the 192-wide one), so that one runs its epilogue while the
// other's MMAs keep the tensor cores busy: the epilogue (d_gate, d_up and d_prob from R and the
// saved pre-activation) costs as much as a quarter of a tile's MMAs at K = 2048, which run
// alone when both warpgroups share every tile. Every stage is read by the warpgroup whose tile
// it holds (the empty barriers count its four warps); the ring holds the tiles' k-blocks in
// turn, so each warpgroup passes over the other's, and starts waiting on its own only after the
// other has passed its waits of the tile before (the turn barriers). The epilogue stages the pre-activation through two atom buffers of its own
// (dglu_pingpong_sm90.cuh): while it runs, the other warpgroup's main loop has every stage.
// Valid-row counts are refused with dGLU (the host's checks): every tile's rows are whole.
//
// advance_stages: (stage, phase) past `count` k-blocks, the other warpgroup's tile.
template <class Cfg>
__device__ __forceinline__ void advance_stages(uint32_t& stage, uint32_t& phase, int32_t count) {
    const uint32_t next = stage + static_cast<uint32_t>(count);
    phase ^= (next / Cfg::kStages) & 1;
    stage = next % Cfg::kStages;
}

// A ping-pong warpgroup's main loop over its whole tile (dGLU's and PingPong's kernels): each
// k-block as two m64 wgmma batches, one per 64-row half of A, on acc[0 .. kTileN / 2) and
// acc[kTileN / 2 .. kTileN). A piece of the last round computes the tile's full width too (its
// epilogue reads only its columns).
template <class Cfg>
__device__ __forceinline__ void pingpong_main_loop(SharedStorage<Cfg>& s, int32_t k_blocks, int lane,
                                                   float (&acc)[Cfg::kTileN], uint32_t& stage, uint32_t& phase,
                                                   uint64_t* next_turn) {
    auto& top = reinterpret_cast<float(&)[Cfg::kTileN / 2]>(acc[0]);
    auto& bottom = reinterpret_cast<float(&)[Cfg::kTileN / 2]>(acc[Cfg::kTileN / 2]);
    uint32_t previous_stage = 0;
    // first_stage's warpgroup index picks A's 64-row half: 0 the top, 1 the bottom.
    const FirstStage first_top = loop_first_stage<Cfg>(s, 0, 0);
    const FirstStage first_bottom = loop_first_stage<Cfg>(s, 1, 0);
    for (int32_t kb = 0; kb < k_blocks; ++kb) {
        ptx::mbarrier_wait(&s.full[stage], phase);
        fence_operands(acc);
        ptx::wgmma_fence();
        issue_stage<Cfg, Cfg::kTileN>(first_top, stage, top, kb > 0);
        issue_stage<Cfg, Cfg::kTileN>(first_bottom, stage, bottom, kb > 0);
        ptx::wgmma_commit();
        fence_operands(acc);
        if (kb > 0) {
            ptx::wgmma_wait<1>();
            release_stage<Cfg>(&s.empty[previous_stage], lane);
        }
        previous_stage = stage;
        next_stage<Cfg>(stage, phase);
    }
    // Every wait of this tile is passed (the wgmmas above are warp-aligned: each warp's lanes
    // too): the next tile's owner may wait on its stages.
    if (lane == 0) ptx::mbarrier_arrive(next_turn);
    ptx::wgmma_wait<0>();
    release_stage<Cfg>(&s.empty[previous_stage], lane);
    fence_operands(acc);
}

template <class Cfg>
__device__ __forceinline__ void compute_dglu_tiles(SharedStorage<Cfg>& s, const KernelArgs& args,
                                                   const CUtensorMap* d_map, const CUtensorMap* pre_map,
                                                   int warpgroup) {
    static_assert(Cfg::kMathWarpgroups == 2, "two warpgroups take the tiles in turn");
    const int lane = threadIdx.x % 32;
    const int32_t k_blocks = (args.k + Cfg::kBlockK - 1) / Cfg::kBlockK;
    // Zeroed once: the epilogue reads the whole array, past a piece's columns too (never stored).
    float acc[Cfg::kTileN] = {};
    uint32_t stage = 0, phase = 0;
    uint32_t taken = 0;  // tiles with columns (a piece wholly past N has no stages)
    uint32_t turns = 0;  // this warpgroup's waits on its turn barrier
    DgluBuffers buf;
#pragma unroll
    for (int b = 0; b < kDgluBufferAtoms; ++b) {
        buf.atom[b] = s.output.pre[warpgroup][b];
        buf.full[b] = &s.pingpong.pre_full[warpgroup][b];
        buf.parity[b] = 0;
    }
    buf.pre_map = pre_map;
    buf.d_map = d_map;
    buf.barrier = static_cast<uint32_t>(NamedBarrier::kEpilogue) + warpgroup;
    for (uint32_t i = 0;; ++i) {
        const TileCoord tile = take_tile(s, i, lane);
        if (tile.expert < 0) {
            if (threadIdx.x % 128 == 0) ptx::tma_store_wait<0>();  // the buffers are read before the CTA exits
            return;
        }
        if (tile.n_begin >= args.n) continue;  // a piece wholly past N (the producer skips it too)
        const uint32_t order = taken++;
        if (static_cast<int>(order % Cfg::kMathWarpgroups) != warpgroup) {
            advance_stages<Cfg>(stage, phase, k_blocks);  // the other warpgroup's tile
            continue;
        }
        // A full barrier's parity tells apart only two fills: a warpgroup that passed over the
        // other's k-blocks could take the fill before its own, still in flight, for its own. So
        // its waits begin only once the previous tile's owner has passed all of that tile's.
        if (order > 0) {
            ptx::mbarrier_wait(&s.pingpong.turn[warpgroup], turns & 1);
            ++turns;
        }
        // The epilogue's fields, read before the main loop so that their latency hides behind it.
        DgluRowsEpilogue e;
        e.t = epilogue_tile<Cfg::kAlphaLoad>(args, tile.expert);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int64_t prob_row = tile.row_begin + h * kSliceRows + (threadIdx.x % 128) / 32 * 16 + lane / 4;
            e.prob[h] = make_float2(prob_of(args.prob, prob_row), prob_of(args.prob, prob_row + 8));
        }
        e.row_begin = tile.row_begin;
        e.n_begin = tile.n_begin;
        e.width = tile.n_width;
        if constexpr (Cfg::kPreL2 == PreL2::kPrefetchAtStart) prefetch_dglu_tile<Cfg::kTileN>(e);
        pingpong_main_loop<Cfg>(s, k_blocks, lane, acc, stage, phase, &s.pingpong.turn[1 - warpgroup]);
        e = after_main_loop<Cfg::kAlphaLoad>(e);
        store_dglu_pingpong_tile<Cfg::kTileN, Cfg::kPreL2 == PreL2::kEvictFirst>(e, buf, acc);
    }
}

// The plain and general TMA-store epilogues of a ping-pong kernel (PingPong): the warpgroups take
// the tiles in turn, as compute_dglu_tiles, with its main loop over the whole tile. The epilogue
// stores the tile's top 64 rows (acc[0 .. kTileN / 2)), then its bottom 64, through the
// warpgroup's buffer (store_passes waits for the first half's stores to read it); a half whose
// rows are all past the valid-row count is not stored.
template <class Cfg, TileLoop kLoop>
__device__ __forceinline__ void compute_pingpong_tiles(SharedStorage<Cfg>& s, const KernelArgs& args,
                                                       const CUtensorMap* d_map, int warpgroup) {
    static_assert(Cfg::kMathWarpgroups == 2, "two warpgroups take the tiles in turn");
    constexpr int kHalf = Cfg::kTileN / 2;  // accumulators of a 64-row half
    const int lane = threadIdx.x % 32;
    const int32_t k_blocks = (args.k + Cfg::kBlockK - 1) / Cfg::kBlockK;
    float acc[Cfg::kTileN] = {};
    uint32_t stage = 0, phase = 0;
    uint32_t taken = 0;  // tiles with columns (a piece wholly past N has no stages)
    uint32_t turns = 0;  // this warpgroup's waits on its turn barrier
    DeferredAtoms<0> none;
    for (uint32_t i = 0;; ++i) {
        const TileCoord tile = take_tile(s, i, lane);
        if (tile.expert < 0) {
            if (threadIdx.x % 128 == 0) ptx::tma_store_wait<0>();  // the buffer is read before the CTA exits
            return;
        }
        if (tile.n_begin >= args.n) continue;  // a piece wholly past N (the producer skips it too)
        const uint32_t order = taken++;
        if (static_cast<int>(order % Cfg::kMathWarpgroups) != warpgroup) {
            advance_stages<Cfg>(stage, phase, k_blocks);  // the other warpgroup's tile
            continue;
        }
        if (order > 0) {
            ptx::mbarrier_wait(&s.pingpong.turn[warpgroup], turns & 1);
            ++turns;
        }
        // Both halves' fields, read before the main loop so that their latency hides behind it.
        const EpilogueTile t = epilogue_tile<Cfg::kAlphaLoad>(args, tile.expert);
        TmaStoreEpilogue e[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int32_t row_begin = tile.row_begin + h * kSliceRows;
            const int64_t prob_row = row_begin + (threadIdx.x % 128) / 32 * 16 + lane / 4;
            e[h].t = t;
            e[h].prob = kLoop != TileLoop::kPlainUnscaled
                            ? make_float2(prob_of(args.prob, prob_row), prob_of(args.prob, prob_row + 8))
                            : make_float2(1.f, 1.f);
            set_output_buffer(s, warpgroup, e[h]);
            e[h].row_begin = row_begin;
            e[h].rows = valid_rows_of(tile, row_begin, kSliceRows);
            e[h].n_begin = tile.n_begin;
            e[h].d_map = d_map;
        }
        pingpong_main_loop<Cfg>(s, k_blocks, lane, acc, stage, phase, &s.pingpong.turn[1 - warpgroup]);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            if (e[h].rows == 0) continue;
            const TmaStoreEpilogue half = after_main_loop<Cfg::kAlphaLoad>(e[h]);
            auto& whole = reinterpret_cast<float(&)[kHalf]>(acc[h * kHalf]);
            auto& piece = reinterpret_cast<float(&)[kPieceColumns / 2]>(acc[h * kHalf]);
            if constexpr (kLoop != TileLoop::kGeneral) {
                if (Cfg::kTileN % kPieceColumns != 0 || tile.n_width == Cfg::kTileN) {
                    store_passes<plain_value(kLoop), float, kActivationNone, Cfg::kTileN, Cfg::kStoreAtoms>(
                        half, whole, none);
                } else {
                    store_passes<plain_value(kLoop), float, kActivationNone, kPieceColumns, Cfg::kStoreAtoms>(
                        half, piece, none);
                }
            } else {
                if (Cfg::kTileN % kPieceColumns != 0 || tile.n_width == Cfg::kTileN) {
                    store_tile_tma<Cfg::kTileN, Cfg::kStoreAtoms, false>(half, whole, none);
                } else {
                    store_tile_tma<kPieceColumns, Cfg::kStoreAtoms, false>(half, piece, none);
                }
            }
        }
    }
}

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
