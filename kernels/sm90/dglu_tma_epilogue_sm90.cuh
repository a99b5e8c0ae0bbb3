// dGLU through TMA (a bf16 saved pre-activation and a bf16 d_pre): the epilogue of the kernels
// whose output buffer holds twice the tile's columns (Config::kTmaStoreDglu).
//
// R's 32-column block b of a tile pairs with the pre-activation's 64 columns 2 n_begin + 64 b ..
// (gate then up), which is one column atom of the buffer (epilogue_layout.h: 64 rows x 128 bytes,
// 128-byte swizzled, the shared-memory side of one TMA box of {64 columns, 64 rows}). So:
//   1. during the tile's main loop one thread of the warpgroup loads the warpgroup's 64 rows of
//      those columns into its buffer with TMA (load_pre_tile), once the previous tile's stores
//      have read the buffer;
//   2. after the main loop every thread reads the gate and up pairs of its own accumulators from
//      the buffer, computes d_gate and d_up and writes them back to the same bytes: d_pre has the
//      pre-activation's layout, so the buffer becomes the tile's d_pre in place, each element
//      read and written by one thread;
//   3. the same thread as in 1 stores the atoms with TMA (D's map: dims {2N, M}).
// The arithmetic and the order of d_prob's sums are store_dglu_output's (epilogue_sm90.cuh), so
// both output designs give the same bits.
//
// Bank conflicts: a warp's 32 lanes read one 16-byte chunk of eight rows (rows r .. r + 7 of the
// accumulator layout, four lanes per row): the swizzle puts the eight rows' chunks in eight
// different chunk positions, so the 32 words fall in 32 banks.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/common/epilogue.cuh"
#include "kernels/common/glu.h"
#include "kernels/sm90/epilogue_layout.h"
#include "kernels/sm90/epilogue_sm90.cuh"
#include "kernels/sm90/tma_store_epilogue_sm90.cuh"
#include "ptx/barrier.cuh"
#include "ptx/fence.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/smem.cuh"
#include "ptx/tma.cuh"

namespace ggemm::sm90 {

// What one thread's share of a tile's dGLU epilogue through TMA needs besides the accumulators.
struct TmaDgluEpilogue {
    TmaStoreEpilogue out;         // the buffer (kTileN / 32 atoms), D's map ({2N, M}), rows and columns
    const CUtensorMap* pre_map;   // the saved pre-activation: dims {2N, M}, box {64, 64}, 128-byte swizzle
    uint64_t* pre_full;           // the warpgroup's barrier: its rows of the tile's pre-activation landed
    uint32_t pre_parity;          // the phase of pre_full this tile completes
    int32_t width;                // R's columns of this tile or piece (a multiple of 64, or up to N)
};

// Pre-activation atoms a tile or piece covers: one per 32 columns of R, none past 2N.
__device__ __forceinline__ int pre_atoms(const TmaDgluEpilogue& e) {
    const int32_t r_end = e.out.n_begin + e.width < e.out.t.n ? e.out.n_begin + e.width : e.out.t.n;
    return (r_end - e.out.n_begin + kGluBlockColumns - 1) / kGluBlockColumns;
}

// Step 1, by the warpgroup's storing thread: waits until the previous tile's stores have read
// the buffer, then loads this tile's pre-activation atoms into it on pre_full.
__device__ __forceinline__ void load_pre_tile(const TmaDgluEpilogue& e) {
    ptx::tma_store_wait_read<0>();
    const int atoms = pre_atoms(e);
    ptx::mbarrier_arrive_expect_tx(e.pre_full, static_cast<uint32_t>(atoms * kAtomBytes));
    // The buffer is read-only to the TMA-store epilogue's threads; here TMA writes it.
    uint8_t* buffer = const_cast<uint8_t*>(e.out.buffer);
    for (int a = 0; a < atoms; ++a) {
        ptx::tma_load_2d(buffer + a * kAtomBytes, e.pre_map, e.pre_full,
                         2 * e.out.n_begin + a * kAtomColumns, e.out.row_begin);
    }
}

__device__ __forceinline__ float2 bf16_pair_to_float2(uint32_t bits) {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&bits));
}

__device__ __forceinline__ uint32_t float2_to_bf16_pair(float2 v) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(v.x, v.y);
    return *reinterpret_cast<const uint32_t*>(&h);
}

// Steps 2 and 3 for a tile kTileN columns of R wide (bounded at run time by e.width).
template <int32_t kActivation, int kTileN>
__device__ __forceinline__ void store_dglu_tma(const TmaDgluEpilogue& e, const float (&acc)[kTileN / 2]) {
    constexpr int kGroupsPerBlock = kGluBlockColumns / 8;  // R groups of a 32-column block
    constexpr int kBlocks = kTileN / kGluBlockColumns;
    const EpilogueTile& t = e.out.t;
    const int thread = threadIdx.x % 128;
    const int warp = thread / 32;
    const int lane = thread % 32;
    const int row = warp * 16 + lane / 4;  // and row + 8
    const int64_t top = e.out.row_begin + row;
    const int32_t n_end = e.out.n_begin + e.width < t.n ? e.out.n_begin + e.width : t.n;
    float prob_sum[2] = {0.f, 0.f};
    ptx::mbarrier_wait(e.pre_full, e.pre_parity);
#pragma unroll
    for (int block = 0; block < kBlocks; ++block) {
        const int32_t r_col0 = e.out.n_begin + block * kGluBlockColumns;
        if (r_col0 >= n_end) break;  // R's tail (N is a multiple of 32: blocks are whole), or a piece's end
        const uint32_t atom = e.out.buffer_addr + block * kAtomBytes;
#pragma unroll
        for (int g = 0; g < kGroupsPerBlock; ++g) {
            const int j = block * kGroupsPerBlock + g;
            // Gate column 8g + 2(l % 4) of the block: chunk g of the atom's row; up: chunk g + 4.
            const int gate_byte = g * 16 + 4 * (lane % 4);
            const int up_byte = gate_byte + kGluBlockColumns * 2;
#pragma unroll
            for (int half = 0; half < 2; ++half) {
                const int r = row + 8 * half;
                const uint32_t gate_at = atom + r * kSliceRowBytes + swizzled_chunk(r, gate_byte) + (gate_byte & 15);
                const uint32_t up_at = atom + r * kSliceRowBytes + swizzled_chunk(r, up_byte) + (up_byte & 15);
                const float2 gate = bf16_pair_to_float2(ptx::ld_shared_b32(gate_at));
                const float2 up = bf16_pair_to_float2(ptx::ld_shared_b32(up_at));
                const float r0 = scaled_value(t.alpha, acc[4 * j + 2 * half]);
                const float r1 = scaled_value(t.alpha, acc[4 * j + 2 * half + 1]);
                const float prob = half == 0 ? e.out.prob.x : e.out.prob.y;
                const GluGrad d0 = glu_grad<kActivation>(gate.x, up.x, t.glu);
                const GluGrad d1 = glu_grad<kActivation>(gate.y, up.y, t.glu);
                const float rp0 = __fmul_rn(r0, prob), rp1 = __fmul_rn(r1, prob);
                ptx::st_shared_b32(gate_at, float2_to_bf16_pair(make_float2(__fmul_rn(rp0, d0.d_gate),
                                                                             __fmul_rn(rp1, d1.d_gate))));
                ptx::st_shared_b32(up_at, float2_to_bf16_pair(make_float2(__fmul_rn(rp0, d0.d_up),
                                                                           __fmul_rn(rp1, d1.d_up))));
                prob_sum[half] = __fadd_rn(prob_sum[half], __fmul_rn(r0, d0.act));
                prob_sum[half] = __fadd_rn(prob_sum[half], __fmul_rn(r1, d1.act));
            }
        }
        const bool block_ends = block % 2 == 1 || r_col0 + kGluBlockColumns >= n_end;
        if (block_ends) store_prob_partials(t, top, r_col0, lane, prob_sum);
    }
    ptx::fence_proxy_async_shared();  // this thread's d_pre writes, before the TMA reads them
    ptx::named_barrier_sync(e.out.barrier, 128);
    if (thread == 0) {
        const int atoms = pre_atoms(e);
        for (int a = 0; a < atoms; ++a) {
            ptx::tma_store_2d(e.out.d_map, e.out.buffer + a * kAtomBytes, 2 * e.out.n_begin + a * kAtomColumns,
                              e.out.row_begin);
        }
        ptx::tma_store_commit();
    }
}

// The activation chosen at run time: one instance of each per kernel.
template <int kTileN>
__device__ __forceinline__ void store_dglu_tma_tile(const TmaDgluEpilogue& e, const float (&acc)[kTileN / 2]) {
    if (e.out.t.activation == kActivationSwiglu) {
        store_dglu_tma<kActivationSwiglu, kTileN>(e, acc);
    } else {
        store_dglu_tma<kActivationClampedGeglu, kTileN>(e, acc);
    }
}

}  // namespace ggemm::sm90
