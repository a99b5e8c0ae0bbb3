// dGLU through TMA (Config::kTmaStoreDglu), the ping-pong kernels: each math warpgroup computes
// a whole 128 x 128 (or 128 x 192) tile of R and runs its epilogue while the other warpgroup's
// MMAs keep the tensor cores busy. The epilogue stages the saved bf16 pre-activation through two
// atom buffers of its own (epilogue_layout.h's atom: 64 rows x 128 bytes, 128-byte swizzled; one
// TMA box of {64 columns, 64 rows}), so that the other warpgroup's main loop keeps every stage of
// the ring:
//   1. the warpgroup's thread 0 loads atom a + 1 by TMA while atom a is worked on, once the
//      buffer's last TMA store has read it;
//   2. every warp reads its gate and up pairs with ldmatrix (the accumulator layout), computes
//      d_gate and d_up and writes them back in place with stmatrix: d_pre has the pre-activation's
//      layout, so the buffer becomes the atom's d_pre;
//   3. thread 0 stores the atom by TMA (D's map: dims {2N, M}).
// The atoms go block by block, each R 32-column block's top 64 rows, then its bottom 64 (the
// pre-activation's 64 columns 2 n_begin + 64 block ..): a half's atoms always use the same
// buffer. The tile's rows are prefetched into the L2 when it starts, so the loads find them
// there; or (Config::kPreL2, PreL2) not prefetched, and the loads of step 1 and the stores of
// step 3 carry an L2 evict-first policy (DgluStreams). The pre-activation's tensor map fetches
// only each load's own rows into the L2 (no promotion: src/tensor_map.cpp).
//
// The arithmetic and the order of d_prob's sums are store_dglu_output's (epilogue_sm90.cuh,
// dglu_pair): the same bits as the other dGLU designs. Bank conflicts: each 8 x 8 matrix of an
// ldmatrix or stmatrix is one 16-byte chunk of eight rows, which the swizzle puts in eight
// different chunk positions.
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
#include "ptx/cache_policy.cuh"
#include "ptx/fence.cuh"
#include "ptx/ldmatrix.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/stmatrix.cuh"
#include "ptx/tma.cuh"

namespace ggemm::sm90 {

// Atom buffers per math warpgroup.
constexpr int kDgluBufferAtoms = 2;

// How the saved pre-activation and d_pre pass the L2. kPrefetchAtStart: a tile's pre-activation
// is prefetched into the L2 (prefetch_dglu_tile) when the tile starts, and the loads find it
// there. kEvictFirst: no prefetch (the loads go to memory while the other warpgroup's main loop
// runs), and the loads and stores carry an L2 evict-first policy, so that the L2 keeps the
// operands, which are read again, over these lines, read or written once. On N-major weights
// kEvictFirst took 0.91-0.96x the time of kPrefetchAtStart at 128 x 192 and 0.80-1.03x at
// 128 x 128 (H100, 2026-12-05, the fc1 cases of bench/glu.py), and less than the policy with the
// prefetch kept, at the tile's start or late in its main loop, on all but one case.
enum class PreL2 { kPrefetchAtStart, kEvictFirst };

// What one warpgroup's epilogue of a ping-pong tile needs besides the accumulators.
struct DgluRowsEpilogue {
    EpilogueTile t;
    float2 prob[2];     // prob of the thread's rows r and r + 8 in each 64-row half of the tile
    int64_t row_begin;  // the tile's first row
    int32_t n_begin;    // R's first column of the tile
    int32_t width;      // R's columns of this tile or piece
};

// The warpgroup's atom buffers, their barriers and the phase each completes next.
struct DgluBuffers {
    uint8_t* atom[kDgluBufferAtoms];  // generic addresses: TMA takes them
    uint64_t* full[kDgluBufferAtoms];
    uint32_t parity[kDgluBufferAtoms];
    const CUtensorMap* pre_map;
    const CUtensorMap* d_map;
    uint32_t barrier;  // the warpgroup's named barrier
};

// The pre-activation's loads and d_pre's stores, by thread 0: plain, or with an L2 evict-first
// policy (PreL2).
template <bool kEvictFirst>
struct DgluStreams {
    __device__ __forceinline__ void load(void* atom, const CUtensorMap* map, uint64_t* full, int32_t c0,
                                        int32_t c1) const {
        ptx::tma_load_2d(atom, map, full, c0, c1);
    }
    __device__ __forceinline__ void store(const CUtensorMap* map, const void* atom, int32_t c0, int32_t c1) const {
        ptx::tma_store_2d(map, atom, c0, c1);
    }
};
template <>
struct DgluStreams<true> {
    uint64_t policy = ptx::l2_policy_evict_first();
    __device__ __forceinline__ void load(void* atom, const CUtensorMap* map, uint64_t* full, int32_t c0,
                                        int32_t c1) const {
        ptx::tma_load_2d_hinted(atom, map, full, c0, c1, policy);
    }
    __device__ __forceinline__ void store(const CUtensorMap* map, const void* atom, int32_t c0, int32_t c1) const {
        ptx::tma_store_2d_hinted(map, atom, c0, c1, policy);
    }
};

__device__ __forceinline__ float2 bf16_bits_to_float2(uint32_t bits) {
    return make_float2(__uint_as_float(bits << 16), __uint_as_float(bits & 0xffff0000u));
}

__device__ __forceinline__ uint32_t float2_to_bf16_bits(float2 v) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(v.x, v.y);
    return *reinterpret_cast<const uint32_t*>(&h);
}

// Step 1, by thread 0: the atom of R's block `block` and the tile's 64-row half `half` into
// buffer `half`, once every store has read its buffer (stores go out in atom order, so the
// buffer's last one is among them).
template <bool kEvictFirst>
__device__ __forceinline__ void load_pre_atom(const DgluRowsEpilogue& e, const DgluBuffers& buf,
                                              const DgluStreams<kEvictFirst>& streams, int block, int half) {
    ptx::tma_store_wait_read<0>();
    ptx::mbarrier_arrive_expect_tx(buf.full[half], kAtomBytes);
    streams.load(buf.atom[half], buf.pre_map, buf.full[half], 2 * e.n_begin + block * kAtomColumns,
                 static_cast<int32_t>(e.row_begin) + half * kSliceRows);
}

// Steps 1-3 for the whole tile: acc[0 .. kTileN / 2) are rows 0-63, acc[kTileN / 2 .. kTileN)
// rows 64-127.
template <int32_t kActivation, int kTileN, bool kEvictFirst>
__device__ __forceinline__ void store_dglu_pingpong(const DgluRowsEpilogue& e, DgluBuffers& buf,
                                                    const float (&acc)[kTileN]) {
    const DgluStreams<kEvictFirst> streams;
    constexpr int kGroupsPerBlock = kGluBlockColumns / 8;
    constexpr int kBlocks = kTileN / kGluBlockColumns;
    const EpilogueTile& t = e.t;
    const int thread = threadIdx.x % 128;
    const int warp = thread / 32;
    const int lane = thread % 32;
    const int32_t n_end = e.n_begin + e.width < t.n ? e.n_begin + e.width : t.n;
    // ldmatrix / stmatrix: lane l addresses row warp * 16 + l % 8 of matrix l / 8 (R group l / 8),
    // chunk l / 8 of the gate columns or + 4 of the up ones; row + 8 is 1024 bytes on.
    const int lane_row = warp * 16 + lane % 8;
    const uint32_t gate_offset = slice_offset(lane_row, (lane / 8) * 16);
    const uint32_t up_offset = slice_offset(lane_row, (lane / 8) * 16 + kGluBlockColumns * 2);
    if (thread == 0) load_pre_atom(e, buf, streams, 0, 0);
    float prob_sum[2][2] = {{0.f, 0.f}, {0.f, 0.f}};  // [tile half][row half]
#pragma unroll
    for (int block = 0; block < kBlocks; ++block) {
        const int32_t r_col0 = e.n_begin + block * kGluBlockColumns;
        if (r_col0 >= n_end) break;  // R's tail (N is a multiple of 32: blocks are whole), or a piece's end
        const bool last_block = r_col0 + kGluBlockColumns >= n_end;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            if (thread == 0) {
                if (h == 0) {
                    load_pre_atom(e, buf, streams, block, 1);
                } else if (!last_block) {
                    load_pre_atom(e, buf, streams, block + 1, 0);
                }
            }
            ptx::mbarrier_wait(buf.full[h], buf.parity[h]);
            buf.parity[h] ^= 1;
            const uint32_t atom = ptx::smem_addr(buf.atom[h]);
            uint4 gate_bits[2], up_bits[2];  // [row half]: groups 0-3 in x, y, z, w
#pragma unroll
            for (int half = 0; half < 2; ++half) {
                gate_bits[half] = ptx::ldmatrix_x4(atom + gate_offset + half * 8 * kSliceRowBytes);
                up_bits[half] = ptx::ldmatrix_x4(atom + up_offset + half * 8 * kSliceRowBytes);
            }
#pragma unroll
            for (int half = 0; half < 2; ++half) {
                const uint32_t gate_in[kGroupsPerBlock] = {gate_bits[half].x, gate_bits[half].y, gate_bits[half].z,
                                                           gate_bits[half].w};
                const uint32_t up_in[kGroupsPerBlock] = {up_bits[half].x, up_bits[half].y, up_bits[half].z,
                                                         up_bits[half].w};
                uint32_t d_gate[kGroupsPerBlock], d_up[kGroupsPerBlock];
#pragma unroll
                for (int g = 0; g < kGroupsPerBlock; ++g) {
                    const int j = h * (kTileN / 2) + 4 * (block * kGroupsPerBlock + g) + 2 * half;
                    const DgluPair d = dglu_pair<kActivation>(
                        t, half == 0 ? e.prob[h].x : e.prob[h].y, acc[j], acc[j + 1],
                        bf16_bits_to_float2(gate_in[g]), bf16_bits_to_float2(up_in[g]), true, prob_sum[h][half]);
                    d_gate[g] = float2_to_bf16_bits(d.d_gate);
                    d_up[g] = float2_to_bf16_bits(d.d_up);
                }
                ptx::stmatrix_x4(atom + gate_offset + half * 8 * kSliceRowBytes, d_gate[0], d_gate[1], d_gate[2],
                                 d_gate[3]);
                ptx::stmatrix_x4(atom + up_offset + half * 8 * kSliceRowBytes, d_up[0], d_up[1], d_up[2], d_up[3]);
            }
            if (block % 2 == 1 || last_block) {
                const int64_t top = e.row_begin + h * kSliceRows + warp * 16 + lane / 4;
                store_prob_partials(t, top, r_col0, lane, prob_sum[h]);
            }
            ptx::fence_proxy_async_shared();  // the warp's d_pre writes, before the TMA reads them
            ptx::named_barrier_sync(buf.barrier, 128);
            if (thread == 0) {
                streams.store(buf.d_map, buf.atom[h], 2 * e.n_begin + block * kAtomColumns,
                              static_cast<int32_t>(e.row_begin) + h * kSliceRows);
                ptx::tma_store_commit();
            }
        }
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

template <int kTileN, bool kEvictFirst>
__device__ __forceinline__ void store_dglu_pingpong_tile(const DgluRowsEpilogue& e, DgluBuffers& buf,
                                                         const float (&acc)[kTileN]) {
    if (e.t.activation == kActivationSwiglu) {
        store_dglu_pingpong<kActivationSwiglu, kTileN, kEvictFirst>(e, buf, acc);
    } else {
        store_dglu_pingpong<kActivationClampedGeglu, kTileN, kEvictFirst>(e, buf, acc);
    }
}

}  // namespace ggemm::sm90
