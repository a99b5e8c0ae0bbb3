// dGLU of the ping-pong kernels (Config::kTmaStoreDglu; experiment): each math warpgroup computes
// a whole 128 x 128 tile of R and runs its epilogue while the other warpgroup's MMAs keep the
// tensor cores busy. The epilogue holds no shared memory: the saved bf16 pre-activation comes
// from global memory straight into registers (the tile's rows prefetched into the L2 when the
// tile starts, each block's loads issued a block ahead of its arithmetic) and d_pre goes back by
// 32-bit stores, so the other warpgroup's main loop keeps every stage of the ring.
//
// The arithmetic and the order of d_prob's sums are store_dglu_output's (epilogue_sm90.cuh,
// dglu_pair): the same bits as the other dGLU designs.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/common/epilogue.cuh"
#include "kernels/common/glu.h"
#include "kernels/sm90/epilogue_sm90.cuh"
#include "ptx/load.cuh"

namespace ggemm::sm90 {

// What one warpgroup's epilogue of a ping-pong tile needs besides the accumulators.
struct DgluRowsEpilogue {
    EpilogueTile t;
    float2 prob[2];     // prob of the thread's rows r and r + 8 in each 64-row half of the tile
    int64_t row_begin;  // the tile's first row
    int32_t n_begin;    // R's first column of the tile
    int32_t width;      // R's columns of this tile or piece
};

// A bf16 is the high half of the fp32 of the same value, so a pair widens in two integer
// operations.
__device__ __forceinline__ float2 bf16_bits_to_float2(uint32_t bits) {
    return make_float2(__uint_as_float(bits << 16), __uint_as_float(bits & 0xffff0000u));
}

__device__ __forceinline__ uint32_t float2_to_bf16_bits(float2 v) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(v.x, v.y);
    return *reinterpret_cast<const uint32_t*>(&h);
}

// The gate and up pairs of one 32-column block of R for rows top and top + 8: [group][row half].
struct DgluBlockBits {
    uint32_t gate[kGluBlockColumns / 8][2];
    uint32_t up[kGluBlockColumns / 8][2];
};

__device__ __forceinline__ void load_block_bits(const uint32_t* pre, int64_t top_word, int64_t row_words,
                                                int32_t r_col0, DgluBlockBits& bits) {
#pragma unroll
    for (int g = 0; g < kGluBlockColumns / 8; ++g) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            // Gate column 2 r_col0 + 8 g + 2 (lane % 4) of the row: word r_col0 + 4 g + lane % 4;
            // up 32 columns (16 words) on.
            const int64_t at = top_word + half * 8 * row_words + r_col0 + 4 * g;
            bits.gate[g][half] = __ldg(pre + at);
            bits.up[g][half] = __ldg(pre + at + kGluBlockColumns / 2);
        }
    }
}

// One 64-row half of the tile (`acc`, the half's kTileN / 2 accumulators), rows from `row_begin`.
template <int32_t kActivation, int kTileN>
__device__ __forceinline__ void store_dglu_rows(const DgluRowsEpilogue& e, float2 prob, int64_t row_begin,
                                                const float (&acc)[kTileN / 2]) {
    constexpr int kGroupsPerBlock = kGluBlockColumns / 8;
    constexpr int kBlocks = kTileN / kGluBlockColumns;
    const EpilogueTile& t = e.t;
    const int thread = threadIdx.x % 128;
    const int lane = thread % 32;
    const int64_t top = row_begin + (thread / 32) * 16 + lane / 4;
    const int32_t n_end = e.n_begin + e.width < t.n ? e.n_begin + e.width : t.n;
    // Rows of 2N bf16 are N 32-bit words; the thread's words of a row start at lane % 4.
    const int64_t row_words = t.n;
    const int64_t top_word = top * row_words + lane % 4;
    const uint32_t* pre = static_cast<const uint32_t*>(t.glu_pre);
    uint32_t* d_pre = static_cast<uint32_t*>(t.d);
    float prob_sum[2] = {0.f, 0.f};
    DgluBlockBits next;
    load_block_bits(pre, top_word, row_words, e.n_begin, next);
#pragma unroll
    for (int block = 0; block < kBlocks; ++block) {
        const int32_t r_col0 = e.n_begin + block * kGluBlockColumns;
        if (r_col0 >= n_end) break;  // R's tail (N is a multiple of 32: blocks are whole), or a piece's end
        const DgluBlockBits bits = next;
        // The next block's loads before this block's arithmetic: their latency runs beside it.
        if (block + 1 < kBlocks && r_col0 + kGluBlockColumns < n_end) {
            load_block_bits(pre, top_word, row_words, r_col0 + kGluBlockColumns, next);
        }
#pragma unroll
        for (int g = 0; g < kGroupsPerBlock; ++g) {
            const int j = block * kGroupsPerBlock + g;
#pragma unroll
            for (int half = 0; half < 2; ++half) {
                const DgluPair d = dglu_pair<kActivation>(
                    t, half == 0 ? prob.x : prob.y, acc[4 * j + 2 * half], acc[4 * j + 2 * half + 1],
                    bf16_bits_to_float2(bits.gate[g][half]), bf16_bits_to_float2(bits.up[g][half]), true,
                    prob_sum[half]);
                const int64_t at = top_word + half * 8 * row_words + r_col0 + 4 * g;
                d_pre[at] = float2_to_bf16_bits(d.d_gate);
                d_pre[at + kGluBlockColumns / 2] = float2_to_bf16_bits(d.d_up);
            }
        }
        const bool block_ends = block % 2 == 1 || r_col0 + kGluBlockColumns >= n_end;
        if (block_ends) store_prob_partials(t, top, r_col0, lane, prob_sum);
    }
}

// Into the L2 when the tile starts: the pre-activation of both 64-row halves of the warpgroup's tile.
template <int kTileN>
__device__ __forceinline__ void prefetch_dglu_tile(const DgluRowsEpilogue& e) {
    const int thread = threadIdx.x % 128;
    const int lane = thread % 32;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int64_t top = e.row_begin + h * kSliceRows + (thread / 32) * 16 + lane / 4;
        prefetch_pre_tile<kTileN>(e.t, top, e.n_begin, lane);
    }
}

// The whole tile: acc[0 .. kTileN / 2) are rows 0-63, acc[kTileN / 2 .. kTileN) rows 64-127.
template <int kTileN>
__device__ __forceinline__ void store_dglu_pingpong_tile(const DgluRowsEpilogue& e, const float (&acc)[kTileN]) {
    const auto& top = reinterpret_cast<const float(&)[kTileN / 2]>(acc[0]);
    const auto& bottom = reinterpret_cast<const float(&)[kTileN / 2]>(acc[kTileN / 2]);
    if (e.t.activation == kActivationSwiglu) {
        store_dglu_rows<kActivationSwiglu, kTileN>(e, e.prob[0], e.row_begin, top);
        store_dglu_rows<kActivationSwiglu, kTileN>(e, e.prob[1], e.row_begin + kSliceRows, bottom);
    } else {
        store_dglu_rows<kActivationClampedGeglu, kTileN>(e, e.prob[0], e.row_begin, top);
        store_dglu_rows<kActivationClampedGeglu, kTileN>(e, e.prob[1], e.row_begin + kSliceRows, bottom);
    }
}

}  // namespace ggemm::sm90
