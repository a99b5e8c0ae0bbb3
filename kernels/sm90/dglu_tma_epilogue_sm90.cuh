// dGLU through TMA (a bf16 saved pre-activation and a bf16 d_pre): the epilogue of the kernels
// whose tiles' pre-activation passes through the operand ring (Config::kTmaStoreDglu), run by
// epilogue warps of their own (the producer warpgroup's other three warps) while the math
// warpgroups go on to the next tile's MMAs.
//
// R's 32-column block b of a tile pairs with the pre-activation's 64 columns 2 n_begin + 64 b ..
// (gate then up): one column atom (epilogue_layout.h: 64 rows x 128 bytes, 128-byte swizzled,
// the shared-memory side of one TMA box of {64 columns, 64 rows}). After a tile's k-blocks the
// ring holds, in order, kDgluSlots slots of pre-activation atoms (each kDgluSlotAtoms atoms of
// each math warpgroup: warpgroup w's atom b at slot b / kDgluSlotAtoms, position
// w kDgluSlotAtoms + b % kDgluSlotAtoms) and kDgluRSlots slots of R (math warpgroup w's
// accumulators in slot w, fp32 as they are). So:
//   1. the producer loads the atoms into their slots (load_pre_slot) and hands the R slots to
//      the math warps once they are free (no bytes: its arrival completes their phase);
//   2. each math thread writes its accumulators to its warpgroup's R slot (write_r) and arrives
//      on r_ready, then starts the next tile;
//   3. the epilogue warps read R, compute d_gate and d_up from the gate and up pairs and write
//      them back to the same bytes: d_pre has the pre-activation's layout, so the slots become
//      the tile's d_pre in place. Each epilogue warp computes what a math warp's lanes would have
//      computed (dglu_warp_rows), with the same lanes, arithmetic and order, so the bits are
//      those of the warp-store design (store_dglu_output, epilogue_sm90.cuh);
//   4. they release the R slots, and one thread stores the atoms with TMA (D's map: dims
//      {2N, M}), waits until the stores have read them and releases the atom slots.
// A ring slot holds the operands of a k-block (128 x 64 of A and 128 x 64 of B: 32 KB), four
// atoms or one warpgroup's R (64 x 128 fp32). While the epilogue warps work on a tile, its four
// slots are theirs and the next tile's main loop runs on the other stages. Run by the math
// warps between two tiles' main loops, the epilogue held the tensor cores idle: 1.11-1.26x the
// time of the plain dgrad GEMM (docs/PERFORMANCE.md).
//
// Bank conflicts: a warp's 32 lanes read one 16-byte chunk of eight rows (rows r .. r + 7 of the
// accumulator layout, four lanes per row): the swizzle puts the eight rows' chunks in eight
// different chunk positions, so the 32 words fall in 32 banks. R is laid out by thread (chunk q
// of thread t at 16 (128 q + t)): a warp's 32 lanes write and read 512 contiguous bytes.
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

// Ring slots per tile: pre-activation atoms and R; pre-activation atoms per warpgroup in a slot.
constexpr int kDgluSlots = 2;
constexpr int kDgluRSlots = 2;
constexpr int kDgluSlotAtoms = 2;
constexpr int kDgluWarpgroups = 2;
constexpr int kWarpgroupWarps = 4;
constexpr int kDgluEpilogueWarps = 3;
constexpr int kDgluEpilogueShare = (kDgluWarpgroups * kWarpgroupWarps + kDgluEpilogueWarps - 1) /
                                   kDgluEpilogueWarps;  // math warps' rows per epilogue warp, at most
constexpr uint32_t kDgluSlotBytes = kDgluWarpgroups * kDgluSlotAtoms * kAtomBytes;
constexpr int kDgluTileN = kDgluSlots * kDgluSlotAtoms * kGluBlockColumns;  // R's columns of a tile: 128
static_assert(kSliceRows * kDgluTileN * 4 == kDgluSlotBytes, "one warpgroup's R fills one ring slot");

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

// Consecutive ring slots of one tile (its pre-activation atoms, or its R).
template <int kCount>
struct DgluSlots {
    uint8_t* stage[kCount];  // the slots' bytes (generic addresses: TMA stores read them)
    uint64_t* full[kCount];
    uint64_t* empty[kCount];
    uint32_t parity[kCount];  // the phase of full each slot completes for this tile
};

// Step 2, by every thread of math warpgroup: its accumulators (a tile's, or a piece's first
// columns and stale ones past them, never read) into the warpgroup's R slot.
__device__ __forceinline__ void write_r(uint8_t* r_slot, const float (&acc)[kDgluTileN / 2], int thread) {
    const uint32_t base = ptx::smem_addr(r_slot) + thread * 16;
#pragma unroll
    for (int q = 0; q < kDgluTileN / 8; ++q) {
        ptx::st_shared_v4_f32(base + q * 128 * 16, acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]);
    }
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

// What an epilogue warp needs of one math warp's 16 rows of a tile.
struct DgluWarpRows {
    EpilogueTile t;   // alpha, the activation's constants, d_prob's partials
    float2 prob;      // prob of the rows r and r + 8 (r = 16 warp + lane / 4 of the warpgroup)
    int64_t top;      // row r in the call
    int32_t n_begin;  // the tile's first column of R
    int32_t n_end;    // one past its last: the tile's or piece's end, or N
    int warpgroup;    // whose atoms and R slot
    int warp;         // which of its warps (0..3)
};

// Step 3 for one math warp's rows, by the lanes of an epilogue warp: d_pre in place of the
// pre-activation atoms, d_prob's partial sums to global memory. The arithmetic and the order of
// d_prob's sums are store_dglu_output's (epilogue_sm90.cuh), lane for lane.
template <int32_t kActivation>
__device__ __forceinline__ void dglu_warp_rows(const DgluWarpRows& e, const DgluSlots<kDgluSlots>& pre,
                                               const uint8_t* r_slot, int lane) {
    constexpr int kGroupsPerBlock = kGluBlockColumns / 8;  // R groups of a 32-column block
    constexpr int kBlocks = kDgluTileN / kGluBlockColumns;
    static_assert(kBlocks == kDgluSlots * kDgluSlotAtoms, "a tile's pre-activation fills its slots");
    const EpilogueTile& t = e.t;
    const int row = e.warp * 16 + lane / 4;  // and row + 8
    const uint32_t r_base = ptx::smem_addr(r_slot) + (e.warp * 32 + lane) * 16;
    float prob_sum[2] = {0.f, 0.f};
#pragma unroll
    for (int block = 0; block < kBlocks; ++block) {
        const int32_t r_col0 = e.n_begin + block * kGluBlockColumns;
        if (r_col0 >= e.n_end) break;  // R's tail (N is a multiple of 32: blocks are whole), or a piece's end
        const uint32_t atom = ptx::smem_addr(pre.stage[block / kDgluSlotAtoms]) +
                              (e.warpgroup * kDgluSlotAtoms + block % kDgluSlotAtoms) * kAtomBytes;
        // The block's loads first, then its arithmetic and stores: the shared-memory accesses
        // are volatile asm, kept in program order, so one element's loads after the previous
        // one's stores would leave each element's whole chain of latencies exposed.
        uint32_t gate_at[kGroupsPerBlock][2], up_at[kGroupsPerBlock][2];
        uint32_t gate_bits[kGroupsPerBlock][2], up_bits[kGroupsPerBlock][2];
        uint4 acc[kGroupsPerBlock];  // the math thread's acc[4j .. 4j + 3], j = 4 block + g
#pragma unroll
        for (int g = 0; g < kGroupsPerBlock; ++g) {
            acc[g] = ptx::ld_shared_v4_b32(r_base + (block * kGroupsPerBlock + g) * 128 * 16);
            // Gate column 8g + 2(l % 4) of the block: chunk g of the atom's row; up: chunk g + 4.
            const int gate_byte = g * 16 + 4 * (lane % 4);
            const int up_byte = gate_byte + kGluBlockColumns * 2;
#pragma unroll
            for (int half = 0; half < 2; ++half) {
                const int r = row + 8 * half;
                gate_at[g][half] = atom + r * kSliceRowBytes + swizzled_chunk(r, gate_byte) + (gate_byte & 15);
                up_at[g][half] = atom + r * kSliceRowBytes + swizzled_chunk(r, up_byte) + (up_byte & 15);
                gate_bits[g][half] = ptx::ld_shared_b32(gate_at[g][half]);
                up_bits[g][half] = ptx::ld_shared_b32(up_at[g][half]);
            }
        }
#pragma unroll
        for (int g = 0; g < kGroupsPerBlock; ++g) {
            const float accs[4] = {__uint_as_float(acc[g].x), __uint_as_float(acc[g].y), __uint_as_float(acc[g].z),
                                   __uint_as_float(acc[g].w)};
#pragma unroll
            for (int half = 0; half < 2; ++half) {
                const float2 gate = bf16_pair_to_float2(gate_bits[g][half]);
                const float2 up = bf16_pair_to_float2(up_bits[g][half]);
                const float r0 = scaled_value(t.alpha, accs[2 * half]);
                const float r1 = scaled_value(t.alpha, accs[2 * half + 1]);
                const float prob = half == 0 ? e.prob.x : e.prob.y;
                const GluGrad d0 = glu_grad<kActivation>(gate.x, up.x, t.glu);
                const GluGrad d1 = glu_grad<kActivation>(gate.y, up.y, t.glu);
                const float rp0 = __fmul_rn(r0, prob), rp1 = __fmul_rn(r1, prob);
                ptx::st_shared_b32(gate_at[g][half], float2_to_bf16_pair(make_float2(__fmul_rn(rp0, d0.d_gate),
                                                                                     __fmul_rn(rp1, d1.d_gate))));
                ptx::st_shared_b32(up_at[g][half], float2_to_bf16_pair(make_float2(__fmul_rn(rp0, d0.d_up),
                                                                                   __fmul_rn(rp1, d1.d_up))));
                prob_sum[half] = __fadd_rn(prob_sum[half], __fmul_rn(r0, d0.act));
                prob_sum[half] = __fadd_rn(prob_sum[half], __fmul_rn(r1, d1.act));
            }
        }
        const bool block_ends = block % 2 == 1 || r_col0 + kGluBlockColumns >= e.n_end;
        if (block_ends) store_prob_partials(t, e.top, r_col0, lane, prob_sum);
    }
}

// Step 4's stores, by one epilogue thread once every epilogue warp's d_pre writes are fenced and
// behind a barrier: warpgroup w's atoms of a tile (or piece) from row_begin, then committed.
__device__ __forceinline__ void store_dglu_atoms(const CUtensorMap* d_map, const DgluSlots<kDgluSlots>& pre, int w,
                                                 int32_t n_begin, int32_t width, int32_t n, int32_t row_begin) {
    const int count = dglu_pre_atoms(n_begin, width, n);
#pragma unroll
    for (int a = 0; a < kDgluSlots * kDgluSlotAtoms; ++a) {  // unrolled: the slots' pointers stay in registers
        if (a >= count) break;
        const uint8_t* atom = pre.stage[a / kDgluSlotAtoms] + (w * kDgluSlotAtoms + a % kDgluSlotAtoms) * kAtomBytes;
        ptx::tma_store_2d(d_map, atom, 2 * n_begin + a * kAtomColumns, row_begin);
    }
}

// Frees slots for the producer: every math warp's arrival on each slot's empty barrier at once.
template <int kCount>
__device__ __forceinline__ void release_dglu_slots(const DgluSlots<kCount>& slots, uint32_t math_warps) {
#pragma unroll
    for (int c = 0; c < kCount; ++c) ptx::mbarrier_arrive_count(slots.empty[c], math_warps);
}

}  // namespace ggemm::sm90
