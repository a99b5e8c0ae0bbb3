// The weight gradient's output path through TMA stores, for a dense output overwritten, or
// accumulated into in fp32 (kWgradStoreTma): each math warpgroup scales and rounds its 64 rows of
// the tile in registers (the same arithmetic as wgrad_epilogue_sm90.cuh, so the results are
// bitwise the same), writes them one atom (128 bytes of Q, wgrad_store_layout_sm90.h) at a time
// into its own swizzled staging atoms in shared memory (one, or two used in turn), and one of its
// threads stores each atom with a 3-D TMA store into the output map {Q, P, L}, or, accumulating,
// a 3-D TMA reduce-add (old + staged, rounded once to nearest even, subnormals kept: the register
// path's __fadd_rn). TMA clips the box at P and Q of the expert's own matrix, so tails write
// nothing outside it; the warpgroup goes on to its next tile while the last store drains.
//
// Per atom: the storing thread waits until the store that last read the atom's slot has done so
// (with two slots, the store of the atom before may still be reading the other), a warpgroup
// barrier passes that on, every thread writes its pairs and fences them to the async proxy, a
// second barrier, and the storing thread issues the box and commits it as a bulk group of its
// own. Before the warpgroup exits, the storing thread waits for all its stores
// (finish_wgrad_tma_stores).
//
// With a 16-bit output, a tile's last atoms, one per slot, are held back in registers
// (WgradHeldAtoms) and written and stored behind the next tile's first wgmma batch instead: the
// tensor cores do not wait for them, and the 256-wide kernel's epilogue (four atoms, two slots)
// never waits for a slot.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "kernels/common/contract.h"
#include "kernels/sm90/wgrad_store_layout_sm90.h"
#include "ptx/barrier.cuh"
#include "ptx/fence.cuh"
#include "ptx/smem.cuh"
#include "ptx/tma.cuh"

namespace ggemm::sm90 {

// What one warpgroup's TMA-store epilogue needs besides the accumulators.
struct WgradTmaStore {
    const CUtensorMap* out_map;  // the dense output: dims {Q, P, L}, box {128 bytes of Q, 64, 1}
    const uint8_t* atom;         // the warpgroup's staging atom (1024-byte aligned)
    uint32_t atom_addr;          // the same, as a shared-window address
    uint32_t barrier;            // the warpgroup's named barrier
    int32_t p;
    int32_t q;
    int32_t row_begin;           // the warpgroup's first row of P
    int32_t q_begin;             // the tile's first column
    int32_t expert;
    float alpha;
    bool accumulate;             // add into the output (fp32 only) instead of overwriting it
};

// A pair of values rounded once (nearest even) to T and packed as the bytes T stores.
template <class T>
__device__ __forceinline__ uint32_t packed_pair(float x, float y) {
    if constexpr (std::is_same_v<T, __half>) {
        const __half2 h = __floats2half2_rn(x, y);
        return *reinterpret_cast<const uint32_t*>(&h);
    } else {
        const __nv_bfloat162 h = __floats2bfloat162_rn(x, y);
        return *reinterpret_cast<const uint32_t*>(&h);
    }
}

// Writes the thread's pairs of atom `a` (columns a * kAtomColumns ..) of the tile into the
// staging atom: acc * alpha in fp32 (explicit _rn: no contraction), then rounded to T.
template <class T, int kTileQ>
__device__ __forceinline__ void write_wgrad_atom(const WgradTmaStore& e, const float (&acc)[kTileQ / 2], int a) {
    constexpr int kBytes = static_cast<int>(sizeof(T));
    constexpr int kGroups = wgrad_atom_columns(kBytes) / 8;
    const int thread = threadIdx.x % 128;
    const int top = wgrad_pair_row(thread, 0), bottom = wgrad_pair_row(thread, 1);
#pragma unroll
    for (int g = 0; g < kGroups; ++g) {
        const int j = a * kGroups + g;  // the 8-column group of the tile
        const int column = wgrad_pair_column(thread, g);
        const float t0 = __fmul_rn(acc[4 * j], e.alpha), t1 = __fmul_rn(acc[4 * j + 1], e.alpha);
        const float b0 = __fmul_rn(acc[4 * j + 2], e.alpha), b1 = __fmul_rn(acc[4 * j + 3], e.alpha);
        const uint32_t top_at = e.atom_addr + wgrad_pair_offset(top, column, kBytes);
        const uint32_t bottom_at = e.atom_addr + wgrad_pair_offset(bottom, column, kBytes);
        if constexpr (std::is_same_v<T, float>) {
            ptx::st_shared_v2_b32(top_at, __float_as_uint(t0), __float_as_uint(t1));
            ptx::st_shared_v2_b32(bottom_at, __float_as_uint(b0), __float_as_uint(b1));
        } else {
            ptx::st_shared_b32(top_at, packed_pair<T>(t0, t1));
            ptx::st_shared_b32(bottom_at, packed_pair<T>(b0, b1));
        }
    }
}

// The last kHeld atoms of a tile of 16-bit output, as the pairs the thread would write (the same
// bits), and where they go; written into slots 0 .. kHeld - 1 and stored by write(), which the
// next tile's main loop calls once its first wgmma batch is issued (or finish_wgrad_tma_stores).
// kHeld = 0: nothing is held back.
template <int kHeld>
struct WgradHeldAtoms {
    static constexpr int kGroups = wgrad_atom_columns(2) / 8;  // 8-column groups per atom
    uint32_t pairs[kHeld][kGroups][2];                         // [atom][group][top, bottom]
    const CUtensorMap* out_map;
    const uint8_t* atom;  // slot 0
    uint32_t atom_addr;
    uint32_t barrier;
    int32_t row_begin;
    int32_t column;       // the first held atom's first column
    int32_t expert;
    int32_t atoms = 0;    // atoms held (0: none); the same in every thread of the warpgroup

    __device__ __forceinline__ void write() {
        if (atoms == 0) return;
        const bool storer = threadIdx.x % 128 == 0;
        if (storer) ptx::tma_store_wait_read<0>();  // the slots are free once earlier stores read them
        ptx::named_barrier_sync(barrier, 128);
        const int thread = threadIdx.x % 128;
        const int top = wgrad_pair_row(thread, 0), bottom = wgrad_pair_row(thread, 1);
#pragma unroll
        for (int a = 0; a < kHeld; ++a) {
            if (a >= atoms) break;
            const uint32_t slot_addr = atom_addr + static_cast<uint32_t>(a * kWgradAtomBytes);
#pragma unroll
            for (int g = 0; g < kGroups; ++g) {
                const int column_in_atom = wgrad_pair_column(thread, g);
                ptx::st_shared_b32(slot_addr + wgrad_pair_offset(top, column_in_atom, 2), pairs[a][g][0]);
                ptx::st_shared_b32(slot_addr + wgrad_pair_offset(bottom, column_in_atom, 2), pairs[a][g][1]);
            }
        }
        ptx::fence_proxy_async_shared();
        ptx::named_barrier_sync(barrier, 128);
        if (storer) {
#pragma unroll
            for (int a = 0; a < kHeld; ++a) {
                if (a >= atoms) break;
                ptx::tma_store_3d(out_map, atom + a * kWgradAtomBytes, column + a * wgrad_atom_columns(2), row_begin,
                                  expert);
                ptx::tma_store_commit();
            }
        }
        atoms = 0;
    }
};

template <>
struct WgradHeldAtoms<0> {
    __device__ __forceinline__ void write() {}
};

// The pairs write_wgrad_atom would write for atom `a` of a 16-bit tile, kept in registers.
template <class T, int kTileQ, int kHeld>
__device__ __forceinline__ void hold_wgrad_atom(const WgradTmaStore& e, const float (&acc)[kTileQ / 2], int a,
                                                uint32_t (&pairs)[WgradHeldAtoms<kHeld>::kGroups][2]) {
    constexpr int kGroups = WgradHeldAtoms<kHeld>::kGroups;
#pragma unroll
    for (int g = 0; g < kGroups; ++g) {
        const int j = a * kGroups + g;
        pairs[g][0] = packed_pair<T>(__fmul_rn(acc[4 * j], e.alpha), __fmul_rn(acc[4 * j + 1], e.alpha));
        pairs[g][1] = packed_pair<T>(__fmul_rn(acc[4 * j + 2], e.alpha), __fmul_rn(acc[4 * j + 3], e.alpha));
    }
}

template <class T, int kTileQ, int kSlots, int kHeld>
__device__ __forceinline__ void store_wgrad_atoms(const WgradTmaStore& e, const float (&acc)[kTileQ / 2],
                                                  WgradHeldAtoms<kHeld>& held) {
    constexpr int kAtomColumns = wgrad_atom_columns(static_cast<int>(sizeof(T)));
    constexpr int kAtoms = kTileQ / kAtomColumns;
    // Atoms from kFirstHeld on are held back (16-bit outputs only: the pairs are 32 bits).
    constexpr int kFirstHeld = sizeof(T) == 2 ? kAtoms - kHeld : kAtoms;
    static_assert(kTileQ % kAtomColumns == 0, "whole atoms");
    static_assert(kFirstHeld == kAtoms || (kHeld == kSlots && kAtoms > kSlots),
                  "a tile's last atoms are held, one per slot");
    const bool storer = threadIdx.x % 128 == 0;
    if (e.row_begin >= e.p) return;  // a P tail that leaves the warpgroup no rows: nothing to store
#pragma unroll
    for (int a = 0; a < kAtoms; ++a) {
        const int32_t column = e.q_begin + a * kAtomColumns;
        if (column >= e.q) break;  // Q tail: nothing left of the tile
        if constexpr (kFirstHeld < kAtoms && kHeld > 0) {
            if (a >= kFirstHeld) {
                if (a == kFirstHeld) {
                    held.out_map = e.out_map;
                    held.atom = e.atom;
                    held.atom_addr = e.atom_addr;
                    held.barrier = e.barrier;
                    held.row_begin = e.row_begin;
                    held.column = column;
                    held.expert = e.expert;
                }
                held.atoms = a - kFirstHeld + 1;
                hold_wgrad_atom<T, kTileQ, kHeld>(e, acc, a, held.pairs[a - kFirstHeld]);
                continue;
            }
        }
        // Atom a goes to slot a % kSlots, free once the store that last read it has done so: at
        // the tile's first atom every earlier store (the last tile's; its held atoms' were issued
        // after this tile's first wgmma batch), after that the store kSlots atoms back, with
        // kSlots - 1 younger ones left to read theirs. The first kSlots atoms but the first find
        // their slot free already.
        const int slot = a % kSlots;
        if (a == 0 || a >= kSlots) {
            if (storer) {
                if (a == 0) {
                    ptx::tma_store_wait_read<0>();
                } else {
                    ptx::tma_store_wait_read<kSlots - 1>();
                }
            }
            ptx::named_barrier_sync(e.barrier, 128);
        }
        WgradTmaStore at = e;
        at.atom = e.atom + slot * kWgradAtomBytes;
        at.atom_addr = e.atom_addr + static_cast<uint32_t>(slot * kWgradAtomBytes);
        write_wgrad_atom<T, kTileQ>(at, acc, a);
        ptx::fence_proxy_async_shared();  // this thread's st.shared, before the TMA reads them
        ptx::named_barrier_sync(e.barrier, 128);
        if (storer) {
            if constexpr (std::is_same_v<T, float>) {
                if (e.accumulate) {
                    ptx::tma_reduce_add_3d(e.out_map, at.atom, column, e.row_begin, e.expert);
                } else {
                    ptx::tma_store_3d(e.out_map, at.atom, column, e.row_begin, e.expert);
                }
            } else {
                ptx::tma_store_3d(e.out_map, at.atom, column, e.row_begin, e.expert);
            }
            ptx::tma_store_commit();
        }
    }
}

template <int kTileQ, int kSlots, int kHeld>
__device__ __forceinline__ void store_wgrad_tile_tma(const WgradTmaStore& e, int32_t dtype,
                                                     const float (&acc)[kTileQ / 2], WgradHeldAtoms<kHeld>& held) {
    switch (dtype) {
        case kBF16: store_wgrad_atoms<__nv_bfloat16, kTileQ, kSlots, kHeld>(e, acc, held); break;
        case kFP16: store_wgrad_atoms<__half, kTileQ, kSlots, kHeld>(e, acc, held); break;
        default: store_wgrad_atoms<float, kTileQ, kSlots, kHeld>(e, acc, held); break;
    }
}

// Before the warpgroup exits: the held atoms are stored, its shared memory must outlive the
// reads, and the output must be written when the kernel ends.
template <int kHeld>
__device__ __forceinline__ void finish_wgrad_tma_stores(WgradHeldAtoms<kHeld>& held) {
    held.write();
    if (threadIdx.x % 128 == 0) ptx::tma_store_wait<0>();
}

}  // namespace ggemm::sm90
