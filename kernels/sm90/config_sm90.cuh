// The SM90 kernel's compile-time configuration (Config), the instances the host launches
// (PlainEpilogue, GluEpilogue, PingPong), its named barriers and its shared memory (SharedStorage):
// a stage ring of A and B tiles, the output buffers, the barriers and the offsets copy.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/common/scheduler.h"
#include "kernels/common/split_k.h"
#include "kernels/sm90/dglu_pingpong_sm90.cuh"
#include "kernels/sm90/epilogue_sm90.cuh"
#include "kernels/sm90/operand_layout.h"
#include "kernels/sm90/shared_memory.h"
#include "kernels/sm90/tma_store_epilogue_sm90.cuh"

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

template <class Cfg>
__device__ __forceinline__ void next_stage(uint32_t& stage, uint32_t& phase) {
    if (++stage == Cfg::kStages) {
        stage = 0;
        phase ^= 1;
    }
}

}  // namespace ggemm::sm90
