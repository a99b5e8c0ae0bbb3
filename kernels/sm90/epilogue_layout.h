// The SM90 epilogue's staging slice: 64 rows (one math warpgroup's) x 128 bytes, 128-byte
// swizzled. Pure and __host__ __device__, so the CPU tests check the layout the kernel uses.
#pragma once

#include <cstdint>

#include "kernels/common/hd.h"

namespace ggemm::sm90 {

constexpr int kSliceRows = 64;        // one math warpgroup's rows
constexpr int kSliceRowBytes = 128;   // one 128-byte swizzle row
constexpr int kSliceBytes = kSliceRows * kSliceRowBytes;

// Where the 16-byte chunk holding byte `byte` (0-127) of row `row` starts within its row of the
// slice: chunk c of row r is stored as chunk c ^ (r % 8).
GGEMM_HD int swizzled_chunk(int row, int byte) { return (((byte >> 4) ^ row) & 7) << 4; }

// Where byte `byte` of row `row` lives in the slice.
GGEMM_HD uint32_t slice_offset(int row, int byte) {
    return static_cast<uint32_t>(row * kSliceRowBytes + swizzled_chunk(row, byte) + (byte & 15));
}

}  // namespace ggemm::sm90
