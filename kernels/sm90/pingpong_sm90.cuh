// The SM90 ping-pong tile loops, whose math warpgroups take whole tiles in turn: dGLU through TMA
// (compute_dglu_tiles) and the PingPong kernel's (compute_pingpong_tiles).
#pragma once

#include <cstdint>

#include "kernels/common/params.h"
#include "kernels/sm90/config_sm90.cuh"
#include "kernels/sm90/dglu_pingpong_sm90.cuh"
#include "kernels/sm90/main_loop_sm90.cuh"
#include "kernels/sm90/tile_loop_sm90.cuh"
#include "kernels/sm90/tma_store_epilogue_sm90.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"

namespace ggemm::sm90 {

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

}  // namespace ggemm::sm90
