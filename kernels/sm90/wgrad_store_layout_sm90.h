// Where the weight gradient's TMA-store epilogue puts one accumulator pair in its staging atom.
// Pure and __host__ __device__, so the CPU tests check it against the TMA box layout.
//
// An atom is one TMA store box of the output: 64 rows of P x 128 bytes of Q (64 bf16 / fp16 or
// 32 fp32 columns), 128-byte swizzled (epilogue_layout.h: chunk c of row r is stored as chunk
// c ^ (r % 8)). The accumulator layout (PTX ISA 9.7.15.5.1, m64nNk16 D): thread t of the
// warpgroup, lane l = t % 32, warp w = t / 32, holds in 8-column group j the columns 8j + 2(l%4)
// and + 1 of rows 16w + l/4 (acc[4j], acc[4j+1]) and 16w + l/4 + 8 (acc[4j+2], acc[4j+3]).
#pragma once

#include <cstdint>

#include "kernels/common/hd.h"
#include "kernels/sm90/epilogue_layout.h"

namespace ggemm::sm90 {

constexpr int kWgradAtomRowBytes = kSliceRowBytes;  // 128: the swizzle span and the box's inner extent
constexpr int kWgradAtomRows = kSliceRows;          // 64: one math warpgroup's rows
constexpr int kWgradAtomBytes = kSliceBytes;        // 8 KB

// Columns of one atom for an output element of `element_bytes` (2 or 4).
GGEMM_HD constexpr int wgrad_atom_columns(int element_bytes) { return kWgradAtomRowBytes / element_bytes; }

// The row of the atom that thread `thread` (0..127) holds in half `half` (0: top, 1: bottom).
GGEMM_HD constexpr int wgrad_pair_row(int thread, int half) { return 16 * (thread / 32) + (thread % 32) / 4 + 8 * half; }

// The first column of the pair thread `thread` holds in the atom's 8-column group `group`.
GGEMM_HD constexpr int wgrad_pair_column(int thread, int group) { return 8 * group + 2 * (thread % 4); }

// Where the pair (row, column), column even, starts in the atom: the pair is 4 (2-byte elements)
// or 8 (fp32) contiguous bytes inside one 16-byte chunk.
GGEMM_HD uint32_t wgrad_pair_offset(int row, int column, int element_bytes) {
    return slice_offset(row, column * element_bytes);
}

}  // namespace ggemm::sm90
