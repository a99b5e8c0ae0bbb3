// The whole-tile output buffer of the SM90 bulk-copy epilogue (bulk_epilogue_sm90.cuh): 128 rows,
// each row one contiguous run of output elements that a single bulk copy moves to its row of C
// or D. Pure and __host__ __device__, so the CPU tests check the layout the kernel uses.
//
// A row holds kTileN 16-bit elements, or half as many fp32 ones: an fp32 output leaves in two
// passes over the buffer. Rows are padded, not swizzled (a bulk copy reads plain contiguous
// bytes): 16 bytes past a multiple of 128 for 16-bit outputs, so the eight 16-byte rows of an
// stmatrix 8 x 8 matrix fall in eight different bank groups; 32 bytes for fp32, so the 8-byte
// pair writes of a half-warp (four rows x 32 bytes) cover the 32 banks once.
#pragma once

#include <cstdint>

#include "kernels/common/hd.h"

namespace ggemm::sm90 {

constexpr int kOutputRows = 128;       // one tile's rows: both math warpgroups
constexpr int kOutputRowPadding = 32;  // the larger of the two paddings, reserved for every row

// Bytes of output data per buffer row for a kTileN-wide tile: one row of a 16-bit tile.
GGEMM_HD constexpr int output_row_bytes(int tile_n) { return tile_n * 2; }

// The buffer's size in shared memory.
GGEMM_HD constexpr int output_buffer_bytes(int tile_n) {
    return kOutputRows * (output_row_bytes(tile_n) + kOutputRowPadding);
}

// Distance between buffer rows for an output of elem_bytes per element.
GGEMM_HD constexpr int output_pitch(int tile_n, int elem_bytes) {
    return output_row_bytes(tile_n) + (elem_bytes == 4 ? 32 : 16);
}

// Columns one pass over the buffer carries, and the passes a `width`-column tile or piece takes.
GGEMM_HD constexpr int pass_columns(int tile_n, int elem_bytes) { return output_row_bytes(tile_n) / elem_bytes; }
GGEMM_HD constexpr int passes(int tile_n, int width, int elem_bytes) {
    return (width + pass_columns(tile_n, elem_bytes) - 1) / pass_columns(tile_n, elem_bytes);
}

// Where lane `lane` of warp `warp` (of the tile's 8 math warps) points for stmatrix.x4 number i of
// a pass: row 16 warp + lane % 8 (+ 8 for matrices 1 and 3, the fragment's bottom rows) and column
// 16 i (+ 8 for matrices 2 and 3, the next 8-column group), from the pass's first column.
struct ElementAt {
    int row;
    int column;
};

GGEMM_HD ElementAt stmatrix_row_start(int warp, int lane, int i) {
    const int matrix = lane / 8;
    return {16 * warp + lane % 8 + 8 * (matrix % 2), 16 * i + 8 * (matrix / 2)};
}

// The first of the two columns, and the row, that accumulator pair `pair` (acc[2 pair], acc[2 pair
// + 1]) of lane `lane` in warp `warp` holds (wgmma m64nNk16 "Register fragment for D": 8-column group
// j = pair / 2 in rows 16 w + lane / 4, then + 8).
GGEMM_HD ElementAt fragment_pair(int warp, int lane, int pair) {
    return {16 * warp + lane / 4 + 8 * (pair % 2), 8 * (pair / 2) + 2 * (lane % 4)};
}

// Byte offset of element (row, column) of a pass in the buffer.
GGEMM_HD uint32_t output_offset(int tile_n, int elem_bytes, int row, int column) {
    return static_cast<uint32_t>(row * output_pitch(tile_n, elem_bytes) + column * elem_bytes);
}

}  // namespace ggemm::sm90
