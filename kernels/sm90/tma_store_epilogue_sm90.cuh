// The SM90 epilogue of a bf16 D without C, through TMA stores: each math warpgroup converts its
// 64 rows of the tile in registers (the contract's arithmetic, kernels/common/epilogue.cuh),
// writes them with stmatrix into its own output buffer in shared memory, and one of its threads
// stores the buffer with TMA (cp.async.bulk.tensor) while the warpgroup goes on to the next
// tile's main loop. The math warps issue no global stores of D.
//
// The buffer is a row of column atoms: 64 rows x 64 bf16 (128 bytes), 128-byte swizzled
// (epilogue_layout.h), each the shared-memory side of one TMA store box of {64 columns, 64 rows}
// (the D map's box, src/tensor_map.cpp). A buffer of the whole tile width leaves in one pass; a
// narrower one in passes of its width, each pass waiting until the previous pass's stores have
// read the buffer. TMA clips the boxes at N; boxes wholly past N are not issued.
//
// Per pass: the storing thread waits until its earlier stores have read the buffer, a
// warpgroup barrier passes that on, every thread writes its fragments and fences them to the
// async proxy, a second barrier, and the storing thread issues the boxes and commits them as
// one bulk group. Before the CTA exits, the storing thread waits for all its stores.
//
// In the kernels that can hold it (Config::kDeferAtoms), the last pass of a tile waits in
// registers instead: its fragments are computed at once (the accumulators are needed for the
// next tile), and the pass runs once the next tile's first wgmma batch is issued, so its
// barriers, shared-memory writes and (with a half-tile buffer) the wait for the first pass's
// stores overlap the tensor cores' work instead of separating two tiles' MMAs.
//
// A fused GLU forward (desc->activation) stores the M x N/2 output through the same buffers and
// D map (dims {N/2, M}): each 64-column block of the accumulators, [gate 32 | up 32], gives 32
// output columns, so one atom holds the output of 128 pre-activation columns. In the fragment
// the thread holding gate column c of a block also holds up column c + 32 (16 accumulators
// further on), so the activation runs in registers and the pairs go to the atom as a plain
// tile's do. A tile whose output ends inside an atom (192 columns wide: 96 output columns, or a
// 64-column piece: 32) and not at N/2 copies that atom out with masked stores instead: a box
// would reach into the next tile's columns.
//
// A warpgroup whose rows are only partly valid (valid-row counts) cannot use the boxes: TMA
// clips a store at the tensor map's bounds only, and the map's box is 64 rows. Its passes write
// the same buffer, then each warp copies its own 16 rows out with masked 16-byte stores, as the
// warp-store epilogue does (epilogue_sm90.cuh, copy_slice): the buffer's atoms have that
// epilogue's slice layout. Such a warpgroup holds at most one per expert and tile column, so the
// slower path costs little; whole warpgroups keep the TMA stores.
//
// The wgmma accumulator layout (PTX ISA 9.7.15.5.1): in warp w of the warpgroup, lane l holds
// rows 16w + l/4 and + 8, and in each 8-column group j the columns 8j + 2(l%4) and + 1, as
// acc[4j..4j+1] and acc[4j+2..4j+3]. That is stmatrix's fragment of an 8 x 8 matrix: one
// stmatrix.x4 writes two 8-column groups of the warp's 16 rows.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "kernels/common/epilogue.cuh"
#include "kernels/common/glu.h"
#include "kernels/sm90/epilogue_layout.h"
#include "kernels/sm90/epilogue_sm90.cuh"
#include "ptx/barrier.cuh"
#include "ptx/fence.cuh"
#include "ptx/stmatrix.cuh"
#include "ptx/tma.cuh"

namespace ggemm::sm90 {

// One column atom of the output buffer: 64 bf16 columns of the warpgroup's 64 rows.
constexpr int kAtomColumns = kSliceRowBytes / 2;
constexpr int kAtomBytes = kSliceBytes;

// What one thread's share of a tile's TMA-store epilogue needs besides the accumulators.
struct TmaStoreEpilogue {
    EpilogueTile t;
    float2 prob;               // prob of the thread's rows r and r + 8
    const uint8_t* buffer;     // the warpgroup's output buffer (1024-byte aligned)
    uint32_t buffer_addr;      // the same, as a shared-window address
    uint32_t barrier;          // the warpgroup's named barrier
    int32_t row_begin;         // the warpgroup's first row
    int32_t rows;              // of its 64 rows, how many are valid (1..64): only those are written
    int32_t n_begin;           // the tile's first column (of the pre-activation, with a GLU)
    const CUtensorMap* d_map;  // D: dims {N, M} ({N/2, M} with a GLU), box {64, 64}, 128-byte swizzle
};

// The bias of columns col and col + 1 as fp32 (col < N, even), read from global memory: the
// tile's bias row is a few hundred bytes that every thread of the CTA reads, so it stays in L1.
template <class BiasT>
__device__ __forceinline__ float2 global_bias_pair(const void* bias, int32_t col) {
    if constexpr (std::is_same_v<BiasT, float>) {
        return __ldg(reinterpret_cast<const float2*>(static_cast<const float*>(bias) + col));
    } else if constexpr (std::is_same_v<BiasT, __half>) {
        return __half22float2(__ldg(reinterpret_cast<const __half2*>(static_cast<const __half*>(bias) + col)));
    } else {
        return __bfloat1622float2(
            __ldg(reinterpret_cast<const __nv_bfloat162*>(static_cast<const __nv_bfloat16*>(bias) + col)));
    }
}

// Two accumulators of one row, as the contract's kValue, rounded to a bf16 pair (low half first).
template <EpilogueValue kValue>
__device__ __forceinline__ uint32_t bf16_pair(float alpha, float a0, float a1, float prob, float2 bias) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(contract_value<kValue>(alpha, a0, prob, bias.x),
                                                   contract_value<kValue>(alpha, a1, prob, bias.y));
    return *reinterpret_cast<const uint32_t*>(&h);
}

// stmatrix's four registers for each 16-byte chunk pair of an atom: chunk pair p holds output
// groups 2p and 2p + 1 (rows r and r + 8 of each).
using AtomFragments = uint32_t[kAtomColumns / 16][4];

// Where this thread's stmatrix of chunk pair p of the atom at atom_addr writes. stmatrix: lane l
// addresses row l % 8 of matrix l / 8; matrices 0, 1 are the top and bottom eight rows of the
// first 8-column group, matrices 2, 3 those of the second.
__device__ __forceinline__ uint32_t fragment_address(uint32_t atom_addr, int p) {
    const int thread = threadIdx.x % 128;
    const int lane = thread % 32;
    const int row = 16 * (thread / 32) + (lane & 7) + ((lane >> 3) & 1) * 8;
    const int chunk = 2 * p + (lane >> 4);  // the 16-byte chunk of the 128-byte row
    return atom_addr + static_cast<uint32_t>(row * kSliceRowBytes + swizzled_chunk(row, chunk * 16));
}

// Writes the first `pairs` chunk pairs of an atom's fragments to the atom at atom_addr.
__device__ __forceinline__ void write_fragments(uint32_t atom_addr, const AtomFragments& f, int pairs) {
#pragma unroll
    for (int p = 0; p < kAtomColumns / 16; ++p) {
        if (p >= pairs) break;
        ptx::stmatrix_x4(fragment_address(atom_addr, p), f[p][0], f[p][1], f[p][2], f[p][3]);
    }
}

// The fragments of column atom `atom` of the tile (columns 64 atom ..).
template <EpilogueValue kValue, class BiasT, int kWidth>
__device__ __forceinline__ void atom_fragments(const TmaStoreEpilogue& e, const float (&acc)[kWidth / 2], int atom,
                                               AtomFragments& f) {
    constexpr int kGroups = kAtomColumns / 8;
    const int lane = threadIdx.x % 32;
    float2 bias[kGroups];
#pragma unroll
    for (int g = 0; g < kGroups; ++g) {
        bias[g] = make_float2(0.f, 0.f);
        if constexpr (kValue == EpilogueValue::kBiased) {
            const int32_t col = e.n_begin + (atom * kGroups + g) * 8 + 2 * (lane % 4);
            if (col < e.t.n) bias[g] = global_bias_pair<BiasT>(e.t.bias, col);  // N is a multiple of 8
        }
    }
#pragma unroll
    for (int p = 0; p < kGroups / 2; ++p) {
        const int j = atom * kGroups + 2 * p;
        f[p][0] = bf16_pair<kValue>(e.t.alpha, acc[4 * j], acc[4 * j + 1], e.prob.x, bias[2 * p]);
        f[p][1] = bf16_pair<kValue>(e.t.alpha, acc[4 * j + 2], acc[4 * j + 3], e.prob.y, bias[2 * p]);
        f[p][2] = bf16_pair<kValue>(e.t.alpha, acc[4 * j + 4], acc[4 * j + 5], e.prob.x, bias[2 * p + 1]);
        f[p][3] = bf16_pair<kValue>(e.t.alpha, acc[4 * j + 6], acc[4 * j + 7], e.prob.y, bias[2 * p + 1]);
    }
}

// The bias of columns col and col + 1 as fp32, of any bias dtype: the GLU epilogue switches at
// run time, so its code exists once per activation and width rather than once per bias dtype.
__device__ __forceinline__ float2 global_bias_pair_as(const void* bias, int32_t dtype, int32_t col) {
    switch (dtype) {
        case kBF16: return global_bias_pair<__nv_bfloat16>(bias, col);
        case kFP16: return global_bias_pair<__half>(bias, col);
        default: return global_bias_pair<float>(bias, col);
    }
}

// The output groups of a GLU tile kWidth pre-activation columns wide (kWidth / 16) whose
// fragments atom `atom` holds, in chunk pairs: a tile's last atom may be half full.
template <int kWidth>
__device__ __forceinline__ int glu_atom_pairs(int atom) {
    constexpr int kGroups = kAtomColumns / 8;
    constexpr int kOutGroups = kWidth / 2 / 8;
    const int groups = kOutGroups - atom * kGroups;
    return (groups < kGroups ? groups : kGroups) / 2;
}

// The fragments of output atom `atom` of a GLU tile (output columns 64 atom .., from
// pre-activation columns 128 atom ..), its first glu_atom_pairs chunk pairs, in a call with bias
// (kBias) or without. The arithmetic is store_glu_output's (epilogue_sm90.cuh), in the same
// order, so both output designs give the same bits.
template <int32_t kActivation, int kWidth, bool kBias>
__device__ __forceinline__ void glu_atom_fragments_of(const TmaStoreEpilogue& e, const float (&acc)[kWidth / 2],
                                                      int atom, AtomFragments& f) {
    static_assert(kWidth % (2 * kGluBlockColumns) == 0, "whole gate and up blocks");
    constexpr int kGroups = kAtomColumns / 8;  // output groups of an atom
    const int lane = threadIdx.x % 32;
    const int pairs = glu_atom_pairs<kWidth>(atom);
#pragma unroll
    for (int p = 0; p < kGroups / 2; ++p) {
        if (p >= pairs) break;
        const int first_group = atom * kGroups + 2 * p;
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int gate = glu_gate_group(first_group + i);
            float2 gate_bias = no_bias_pair(), up_bias = no_bias_pair();
            if constexpr (kBias) {
                const int32_t gate_col = e.n_begin + gate * 8 + 2 * (lane % 4);
                if (gate_col < e.t.n) {  // N is whole blocks: the up column is inside too
                    gate_bias = global_bias_pair_as(e.t.bias, e.t.bias_dtype, gate_col);
                    up_bias = global_bias_pair_as(e.t.bias, e.t.bias_dtype, gate_col + kGluBlockColumns);
                }
            }
#pragma unroll
            for (int half = 0; half < 2; ++half) {  // rows r and r + 8: stmatrix's order
                const float2 out =
                    glu_output_pair<kActivation, kWidth>(e.t, e.prob, acc, gate, half, gate_bias, up_bias);
                const __nv_bfloat162 h = __floats2bfloat162_rn(out.x, out.y);
                f[p][2 * i + half] = *reinterpret_cast<const uint32_t*>(&h);
            }
        }
    }
}

// Calls with and without bias take code of their own: in one, the no-bias path spent about two
// instructions per output element on the bias pairs' bounds, branches and -0 moves.
template <int32_t kActivation, int kWidth>
__device__ __forceinline__ void glu_atom_fragments(const TmaStoreEpilogue& e, const float (&acc)[kWidth / 2],
                                                   int atom, AtomFragments& f) {
    if (e.t.bias != nullptr) {
        glu_atom_fragments_of<kActivation, kWidth, true>(e, acc, atom, f);
    } else {
        glu_atom_fragments_of<kActivation, kWidth, false>(e, acc, atom, f);
    }
}

// The fragments of output atom `atom` of a tile, and how many chunk pairs of it hold output.
template <EpilogueValue kValue, class BiasT, int32_t kActivation, int kWidth>
__device__ __forceinline__ int output_fragments(const TmaStoreEpilogue& e, const float (&acc)[kWidth / 2], int atom,
                                                AtomFragments& f) {
    if constexpr (kActivation != kActivationNone) {
        glu_atom_fragments<kActivation, kWidth>(e, acc, atom, f);
        return glu_atom_pairs<kWidth>(atom);
    } else {
        atom_fragments<kValue, BiasT, kWidth>(e, acc, atom, f);
        return kAtomColumns / 16;
    }
}

// Writes output atom `atom` of a tile (its chunk pairs that hold output) to the atom at atom_addr.
template <EpilogueValue kValue, class BiasT, int32_t kActivation, int kWidth>
__device__ __forceinline__ void write_output_atom(const TmaStoreEpilogue& e, const float (&acc)[kWidth / 2], int atom,
                                                  uint32_t atom_addr) {
    AtomFragments f;
    const int pairs = output_fragments<kValue, BiasT, kActivation, kWidth>(e, acc, atom, f);
    write_fragments(atom_addr, f, pairs);
}

// A tile's last pass, held back: its atoms' fragments stay in registers until the next tile's
// first wgmma batch is issued (main_loop), and are written and stored then, behind that batch,
// instead of between this tile's last wgmma and the next tile's first. With a buffer of half the
// tile this also takes the wait for the first pass's stores to read the buffer off that path.
// kAtoms = 0: nothing is held back.
template <int kAtoms>
struct DeferredAtoms {
    AtomFragments fragments[kAtoms];
    const CUtensorMap* d_map;
    const uint8_t* buffer;
    uint32_t buffer_addr;    // the buffer, as a shared-window address
    uint32_t barrier;        // the warpgroup's named barrier
    int32_t row_begin;
    int32_t col;             // the output column of the first atom
    int32_t out_n;
    int32_t atoms = 0;       // atoms held (0: none); the same in every thread of the warpgroup

    // Where the held atoms go: `count` atoms of e's tile from output column col.
    __device__ __forceinline__ void hold(const TmaStoreEpilogue& e, int32_t first_col, int32_t n, int32_t count) {
        d_map = e.d_map;
        buffer = e.buffer;
        buffer_addr = e.buffer_addr;
        barrier = e.barrier;
        row_begin = e.row_begin;
        col = first_col;
        out_n = n;
        atoms = count;
    }

    __device__ __forceinline__ void write() {
        if (atoms == 0) return;
        const bool storer = threadIdx.x % 128 == 0;
        if (storer) ptx::tma_store_wait_read<0>();  // the buffer is free once earlier stores read it
        ptx::named_barrier_sync(barrier, 128);
#pragma unroll
        for (int a = 0; a < kAtoms; ++a) {
            if (a < atoms) write_fragments(buffer_addr + a * kAtomBytes, fragments[a], kAtomColumns / 16);
        }
        ptx::fence_proxy_async_shared();
        ptx::named_barrier_sync(barrier, 128);
        if (storer) {
#pragma unroll
            for (int a = 0; a < kAtoms; ++a) {
                if (a < atoms && col + a * kAtomColumns < out_n) {
                    ptx::tma_store_2d(d_map, buffer + a * kAtomBytes, col + a * kAtomColumns, row_begin);
                }
            }
            ptx::tma_store_commit();
        }
        atoms = 0;
    }
};
template <>
struct DeferredAtoms<0> {
    __device__ __forceinline__ void write() {}
};

// The whole epilogue of one warpgroup's share of a tile or piece kWidth columns wide, through a
// buffer of kBufferAtoms column atoms: the contract's kValue (bias of BiasT), or with a gated
// kActivation its M x N/2 output (kValue and BiasT unused). With kDeferAtoms (the whole buffer)
// the last pass is held back in `deferred` (written by the next tile's main loop, or by
// finish_tma_stores) where the warpgroup's rows are whole and the tile's output is whole atoms:
// then every atom leaves by a box and none by the masked copies, which read the buffer at once.
template <EpilogueValue kValue, class BiasT, int32_t kActivation, int kWidth, int kBufferAtoms, int kDeferAtoms>
__device__ __forceinline__ void store_passes(const TmaStoreEpilogue& e, const float (&acc)[kWidth / 2],
                                             DeferredAtoms<kDeferAtoms>& deferred) {
    static_assert(kDeferAtoms == 0 || kDeferAtoms == kBufferAtoms, "a whole pass is held, or none");
    constexpr bool kGlu = kActivation != kActivationNone;
    constexpr int kOutColumns = kGlu ? kWidth / 2 : kWidth;
    constexpr int kAtoms = (kOutColumns + kAtomColumns - 1) / kAtomColumns;
    constexpr int kPasses = (kAtoms + kBufferAtoms - 1) / kBufferAtoms;
    const int32_t out_n = kGlu ? e.t.n / 2 : e.t.n;
    const int32_t out_begin = kGlu ? e.n_begin / 2 : e.n_begin;
    const int32_t out_end = out_begin + kOutColumns < out_n ? out_begin + kOutColumns : out_n;
    // A last atom the tile fills only in part is boxed only where D ends inside it (TMA clips there).
    const bool last_atom_boxed = kOutColumns % kAtomColumns == 0 || out_begin + kOutColumns >= out_n;
    const bool storer = threadIdx.x % 128 == 0;
    const bool whole = e.rows == kSliceRows;  // else: masked copies instead of TMA boxes
    const int warp = (threadIdx.x % 128) / 32;
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int pass = 0; pass < kPasses; ++pass) {
        const int first_atom = pass * kBufferAtoms;
        if (out_begin + first_atom * kAtomColumns >= out_n) break;  // N tail: nothing left of the tile
        if constexpr (kDeferAtoms > 0 && kOutColumns % kAtomColumns == 0) {
            if (pass == kPasses - 1 && whole) {
#pragma unroll
                for (int a = 0; a < kBufferAtoms && first_atom + a < kAtoms; ++a) {
                    output_fragments<kValue, BiasT, kActivation, kWidth>(e, acc, first_atom + a,
                                                                         deferred.fragments[a]);
                }
                // The last pass: at most kBufferAtoms.
                deferred.hold(e, out_begin + first_atom * kAtomColumns, out_n, kAtoms - first_atom);
                break;
            }
        }
        // The buffer is free once the stores that last read it have done so.
        if (storer) ptx::tma_store_wait_read<0>();
        ptx::named_barrier_sync(e.barrier, 128);
#pragma unroll
        for (int a = 0; a < kBufferAtoms && first_atom + a < kAtoms; ++a) {
            write_output_atom<kValue, BiasT, kActivation, kWidth>(e, acc, first_atom + a,
                                                                  e.buffer_addr + a * kAtomBytes);
        }
        // Atoms that leave by masked copies: all of a partly valid warpgroup's, and a last atom
        // that no box may store. Each warp wrote, and now reads, only its own 16 rows of each
        // atom; the next pass (or tile) rewrites the buffer only after its barrier, when every
        // warp is done here.
        const bool last_pass_copies = !last_atom_boxed && first_atom + kBufferAtoms >= kAtoms;
        if (!whole || last_pass_copies) {
            ptx::warp_sync();
#pragma unroll
            for (int a = 0; a < kBufferAtoms && first_atom + a < kAtoms; ++a) {
                if (whole && first_atom + a != kAtoms - 1) continue;  // boxed below
                copy_slice<__nv_bfloat16>(e.buffer_addr + a * kAtomBytes, e.t.d, e.row_begin,
                                          out_begin + (first_atom + a) * kAtomColumns, out_end, out_n, warp, lane,
                                          e.rows);
            }
        }
        if (!whole) continue;
        ptx::fence_proxy_async_shared();  // this thread's stmatrix writes, before the TMA reads them
        ptx::named_barrier_sync(e.barrier, 128);
        if (storer) {
#pragma unroll
            for (int a = 0; a < kBufferAtoms && first_atom + a < kAtoms; ++a) {
                if (first_atom + a == kAtoms - 1 && !last_atom_boxed) continue;  // copied above
                const int32_t col = out_begin + (first_atom + a) * kAtomColumns;
                if (col < out_n) {
                    ptx::tma_store_2d(e.d_map, e.buffer + a * kAtomBytes, col, e.row_begin);
                }
            }
            ptx::tma_store_commit();
        }
    }
}

// kGlu: whether this kernel's TMA-store epilogue fuses the GLU forward (the planner sends an
// activation only to those that do).
template <int kWidth, int kBufferAtoms, bool kGlu, int kDeferAtoms>
__device__ __forceinline__ void store_tile_tma(const TmaStoreEpilogue& e, const float (&acc)[kWidth / 2],
                                               DeferredAtoms<kDeferAtoms>& deferred) {
    if constexpr (kGlu) {
        if (e.t.activation == kActivationSwiglu) {
            store_passes<EpilogueValue::kScaledByProb, float, kActivationSwiglu, kWidth, kBufferAtoms>(e, acc,
                                                                                                       deferred);
            return;
        }
        if (e.t.activation == kActivationClampedGeglu) {
            store_passes<EpilogueValue::kScaledByProb, float, kActivationClampedGeglu, kWidth, kBufferAtoms>(
                e, acc, deferred);
            return;
        }
    }
    if (e.t.bias == nullptr) {
        store_passes<EpilogueValue::kScaledByProb, float, kActivationNone, kWidth, kBufferAtoms>(e, acc, deferred);
        return;
    }
    switch (e.t.bias_dtype) {
        case kBF16:
            store_passes<EpilogueValue::kBiased, __nv_bfloat16, kActivationNone, kWidth, kBufferAtoms>(e, acc,
                                                                                                       deferred);
            break;
        case kFP16:
            store_passes<EpilogueValue::kBiased, __half, kActivationNone, kWidth, kBufferAtoms>(e, acc, deferred);
            break;
        default:
            store_passes<EpilogueValue::kBiased, float, kActivationNone, kWidth, kBufferAtoms>(e, acc, deferred);
            break;
    }
}

// Before the CTA exits: the held atoms are stored, its shared memory must outlive the reads, and
// D must be written.
template <int kDeferAtoms>
__device__ __forceinline__ void finish_tma_stores(DeferredAtoms<kDeferAtoms>& deferred) {
    deferred.write();
    if (threadIdx.x % 128 == 0) ptx::tma_store_wait<0>();
}

}  // namespace ggemm::sm90
