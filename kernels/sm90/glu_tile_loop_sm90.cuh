// The SM90 kernel's GLU instance (GluEpilogue): the fused GLU forward's tile loop, whose
// activation runs behind the tensor cores' work.
#pragma once

#include <cstdint>

#include "kernels/common/params.h"
#include "kernels/sm90/config_sm90.cuh"
#include "kernels/sm90/main_loop_sm90.cuh"
#include "kernels/sm90/tile_loop_sm90.cuh"
#include "kernels/sm90/tma_store_epilogue_sm90.cuh"
#include "ptx/barrier.cuh"
#include "ptx/fence.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"

namespace ggemm::sm90 {

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

}  // namespace ggemm::sm90
