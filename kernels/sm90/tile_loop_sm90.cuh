// The SM90 kernel's math warpgroups over their tiles (compute_tiles): each tile's main loop, its
// epilogue through the math warps' stores or TMA stores, and the split-K partials' reduction.
#pragma once

#include <cstdint>

#include "kernels/common/params.h"
#include "kernels/common/scheduler.h"
#include "kernels/common/split_k.h"
#include "kernels/common/tile_ring.cuh"
#include "kernels/sm90/config_sm90.cuh"
#include "kernels/sm90/epilogue_sm90.cuh"
#include "kernels/sm90/main_loop_sm90.cuh"
#include "kernels/sm90/tma_store_epilogue_sm90.cuh"
#include "ptx/barrier.cuh"
#include "ptx/common.cuh"
#include "ptx/mbarrier.cuh"

namespace ggemm::sm90 {

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

}  // namespace ggemm::sm90
