// dGLU through TMA (a bf16 saved pre-activation and a bf16 d_pre): the epilogue of the kernels
// whose tiles' pre-activation passes through the operand ring (Config::kTmaStoreDglu).
//
// R's 32-column block b of a tile pairs with the pre-activation's 64 columns 2 n_begin + 64 b ..
// (gate then up): one column atom (epilogue_layout.h: 64 rows x 128 bytes, 128-byte swizzled,
// the shared-memory side of one TMA box of {64 columns, 64 rows}). A tile's atoms fill
// kDgluSlots ring slots after its last k-block, each slot kDgluSlotAtoms atoms of each math
// warpgroup: warpgroup w's atom b at slot b / kDgluSlotAtoms, position w kDgluSlotAtoms +
// b % kDgluSlotAtoms. So:
//   1. the producer loads them into the slots that follow the tile's k-blocks (load_pre_slot),
//      so that the ring keeps every stage for the operands during the main loop;
//   2. after the main loop every thread reads the gate and up pairs of its own accumulators from
//      the slots, computes d_gate and d_up and writes them back to the same bytes: d_pre has the
//      pre-activation's layout, so the slots become the tile's d_pre in place, each element read
//      and written by one thread;
//   3. one thread of the warpgroup stores its atoms with TMA (D's map: dims {2N, M}); once the
//      next tile's first wgmma batch is issued, it waits until they have read the slots and
//      releases both slots for its warpgroup's four warps (release_pre_slots).
// A ring slot holds the operands of a k-block (128 x 64 of A and 128 x 64 of B: 32 KB) or four
// atoms: the 128-wide tile's 256 pre-activation columns fill two. A buffer of its own, the
// pre-activation took two of the seven stages' room for the whole main loop; waiting on the five
// left, the math warps spent a third of their time for operands (docs/PERFORMANCE.md).
// The arithmetic and the order of d_prob's sums are store_dglu_output's (epilogue_sm90.cuh,
// dglu_pair), so both output designs give the same bits.
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

// Ring slots per tile, and pre-activation atoms per warpgroup in a slot.
constexpr int kDgluSlots = 2;
constexpr int kDgluSlotAtoms = 2;
constexpr int kDgluWarpgroups = 2;
constexpr uint32_t kWarpgroupWarps = 4;
constexpr uint32_t kDgluSlotBytes = kDgluWarpgroups * kDgluSlotAtoms * kAtomBytes;

// Pre-activation atoms of a tile or piece for each warpgroup: one per 32 columns of R from
// n_begin, none past R's width n.
__device__ __forceinline__ int dglu_pre_atoms(int32_t n_begin, int32_t width, int32_t n) {
    const int32_t r_end = n_begin + width < n ? n_begin + width : n;
    return (r_end - n_begin + kGluBlockColumns - 1) / kGluBlockColumns;
}

// Step 1, by the producer's elected lane: slot `slot` of a tile (kDgluSlots in a row after its
// k-blocks) on its full barrier. A slot past the tile's atoms gets no bytes and completes with
// the arrival alone.
__device__ __forceinline__ void load_pre_slot(uint8_t* stage, uint64_t* full, const CUtensorMap* pre_map,
                                              int slot, int32_t n_begin, int32_t width, int32_t n,
                                              int32_t row_begin) {
    const int atoms = dglu_pre_atoms(n_begin, width, n) - slot * kDgluSlotAtoms;
    const int count = atoms < 0 ? 0 : (atoms > kDgluSlotAtoms ? kDgluSlotAtoms : atoms);
    ptx::mbarrier_arrive_expect_tx(full, static_cast<uint32_t>(count * kDgluWarpgroups * kAtomBytes));
    for (int w = 0; w < kDgluWarpgroups; ++w) {
        for (int j = 0; j < count; ++j) {
            ptx::tma_load_2d(stage + (w * kDgluSlotAtoms + j) * kAtomBytes, pre_map, full,
                             2 * n_begin + (slot * kDgluSlotAtoms + j) * kAtomColumns, row_begin + w * kSliceRows);
        }
    }
}

// The ring slots of one tile's pre-activation, as the math warpgroups see them.
struct DgluSlots {
    uint8_t* stage[kDgluSlots];  // the slots' bytes (generic addresses: TMA stores read them)
    uint64_t* full[kDgluSlots];
    uint64_t* empty[kDgluSlots];
    uint32_t parity[kDgluSlots];  // the phase of full each slot completes for this tile
};

// What one thread's share of a tile's dGLU epilogue through TMA needs besides the accumulators.
struct TmaDgluEpilogue {
    TmaStoreEpilogue out;  // D's map ({2N, M}), rows and columns, the warpgroup's named barrier
    int32_t width;         // R's columns of this tile or piece (a multiple of 64, or up to N)
    int warpgroup;         // which of each slot's atoms are this warpgroup's
};

// Step 3's release, by the warpgroup's storing thread: waits until its stores have read the
// slots (d_pre), then arrives on each slot's empty barrier for the warpgroup's four warps (each
// warp's reads and writes of the slots came before the barrier that preceded the stores).
__device__ __forceinline__ void release_pre_slots(const DgluSlots& slots) {
    ptx::tma_store_wait_read<0>();
#pragma unroll
    for (int c = 0; c < kDgluSlots; ++c) ptx::mbarrier_arrive_count(slots.empty[c], kWarpgroupWarps);
}

// A bf16 is the high half of the fp32 of the same value, so a pair widens in two integer
// operations (__bfloat1622float2 compiles to three: it moves the high half down, then back up).
__device__ __forceinline__ float2 bf16_pair_to_float2(uint32_t bits) {
    return make_float2(__uint_as_float(bits << 16), __uint_as_float(bits & 0xffff0000u));
}

__device__ __forceinline__ uint32_t float2_to_bf16_pair(float2 v) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(v.x, v.y);
    return *reinterpret_cast<const uint32_t*>(&h);
}

// Steps 2 and 3 for a tile kTileN columns of R wide (bounded at run time by e.width).
template <int32_t kActivation, int kTileN>
__device__ __forceinline__ void store_dglu_tma(const TmaDgluEpilogue& e, const DgluSlots& slots,
                                               const float (&acc)[kTileN / 2]) {
    constexpr int kGroupsPerBlock = kGluBlockColumns / 8;  // R groups of a 32-column block
    constexpr int kBlocks = kTileN / kGluBlockColumns;
    static_assert(kBlocks == kDgluSlots * kDgluSlotAtoms, "a tile's pre-activation fills its slots");
    const EpilogueTile& t = e.out.t;
    const int thread = threadIdx.x % 128;
    const int warp = thread / 32;
    const int lane = thread % 32;
    const int row = warp * 16 + lane / 4;  // and row + 8
    const int64_t top = e.out.row_begin + row;
    const int32_t n_end = e.out.n_begin + e.width < t.n ? e.out.n_begin + e.width : t.n;
    float prob_sum[2] = {0.f, 0.f};
    // The thread's gate and up pairs of group g lie at the same offsets in every atom, and those
    // of row + 8 (the same swizzle: it depends on the row modulo 8) eight rows further on. So each
    // slot needs one address per group for gate and one for up; the atoms within a slot and the
    // second row are constant steps from them, which the shared-memory accesses take as offsets.
    uint32_t gate_at[kDgluSlots][kGroupsPerBlock], up_at[kDgluSlots][kGroupsPerBlock];
#pragma unroll
    for (int c = 0; c < kDgluSlots; ++c) {
        const uint32_t slot = ptx::smem_addr(slots.stage[c]) + e.warpgroup * kDgluSlotAtoms * kAtomBytes;
#pragma unroll
        for (int g = 0; g < kGroupsPerBlock; ++g) {
            // Gate column 8g + 2(l % 4) of the block: chunk g of the atom's row; up: chunk g + 4.
            const int gate_byte = g * 16 + 4 * (lane % 4);
            gate_at[c][g] = slot + slice_offset(row, gate_byte);
            up_at[c][g] = slot + slice_offset(row, gate_byte + kGluBlockColumns * 2);
        }
    }
#pragma unroll
    for (int block = 0; block < kBlocks; ++block) {
        const int32_t r_col0 = e.out.n_begin + block * kGluBlockColumns;
        if (r_col0 >= n_end) break;  // R's tail (N is a multiple of 32: blocks are whole), or a piece's end
        // Each slot waited for as its first block comes (a slot past R's end is never waited
        // for: it holds no bytes, and its phase completed on the producer's arrival).
        const int c = block / kDgluSlotAtoms;
        if (block % kDgluSlotAtoms == 0) ptx::mbarrier_wait(slots.full[c], slots.parity[c]);
        // The block's loads first, then its arithmetic and stores: the shared-memory accesses
        // are volatile asm, kept in program order, so each element's loads after the previous
        // element's stores would leave every element's chain of latencies exposed.
        const uint32_t step = (block % kDgluSlotAtoms) * kAtomBytes;
        uint32_t gate_bits[kGroupsPerBlock][2], up_bits[kGroupsPerBlock][2];
#pragma unroll
        for (int g = 0; g < kGroupsPerBlock; ++g) {
#pragma unroll
            for (int half = 0; half < 2; ++half) {
                const uint32_t at = step + half * 8 * kSliceRowBytes;
                gate_bits[g][half] = ptx::ld_shared_b32(gate_at[c][g] + at);
                up_bits[g][half] = ptx::ld_shared_b32(up_at[c][g] + at);
            }
        }
#pragma unroll
        for (int g = 0; g < kGroupsPerBlock; ++g) {
            const int j = block * kGroupsPerBlock + g;
#pragma unroll
            for (int half = 0; half < 2; ++half) {
                const DgluPair d = dglu_pair<kActivation>(
                    t, half == 0 ? e.out.prob.x : e.out.prob.y, acc[4 * j + 2 * half], acc[4 * j + 2 * half + 1],
                    bf16_pair_to_float2(gate_bits[g][half]), bf16_pair_to_float2(up_bits[g][half]), true,
                    prob_sum[half]);
                const uint32_t at = step + half * 8 * kSliceRowBytes;
                ptx::st_shared_b32(gate_at[c][g] + at, float2_to_bf16_pair(d.d_gate));
                ptx::st_shared_b32(up_at[c][g] + at, float2_to_bf16_pair(d.d_up));
            }
        }
        const bool block_ends = block % 2 == 1 || r_col0 + kGluBlockColumns >= n_end;
        if (block_ends) store_prob_partials(t, top, r_col0, lane, prob_sum);
    }
    ptx::fence_proxy_async_shared();  // this thread's d_pre writes, before the TMA reads them
    ptx::named_barrier_sync(e.out.barrier, 128);
    if (thread == 0) {
        const int count = dglu_pre_atoms(e.out.n_begin, e.width, t.n);
#pragma unroll
        for (int a = 0; a < kBlocks; ++a) {  // unrolled: the slots' pointers stay in registers
            if (a >= count) break;
            const uint8_t* atom = slots.stage[a / kDgluSlotAtoms] +
                                  (e.warpgroup * kDgluSlotAtoms + a % kDgluSlotAtoms) * kAtomBytes;
            ptx::tma_store_2d(e.out.d_map, atom, 2 * e.out.n_begin + a * kAtomColumns, e.out.row_begin);
        }
        ptx::tma_store_commit();
    }
}

// The activation chosen at run time: one instance of each per kernel.
template <int kTileN>
__device__ __forceinline__ void store_dglu_tma_tile(const TmaDgluEpilogue& e, const DgluSlots& slots,
                                                    const float (&acc)[kTileN / 2]) {
    if (e.out.t.activation == kActivationSwiglu) {
        store_dglu_tma<kActivationSwiglu, kTileN>(e, slots, acc);
    } else {
        store_dglu_tma<kActivationClampedGeglu, kTileN>(e, slots, acc);
    }
}

}  // namespace ggemm::sm90
