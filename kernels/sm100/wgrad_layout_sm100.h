// The SM100 weight gradient's operand layout and MMA encodings. Pure constexpr, usable on the
// host: tests/host/test_sm100_wgrad.cpp checks every bit without a GPU.
//
// A tile is 128 columns of P x tile_q columns of Q of one expert's output. The GEMM's K is the
// row index r, so both operands arrive MN-major, as stored: a k-block is 64 rows r of X1 (the
// tile's 128 columns of P: the MMA's A, M = 128) and of X2 (its tile_q columns of Q: the MMA's B,
// N = tile_q). TMA writes each as boxes of 64 columns x 64 rows with the 128-byte swizzle, box b
// at b x 8 KB: the MN-major layout encodings.h describes for N-major weights (LBO 8 KB to the
// next 64 columns, SBO 1 KB to the next 8 rows), now for A as well as B. Both transpose bits of
// the instruction descriptor are set (Table 42: bit 15 A, bit 16 B), and the MMA's K step of 16
// rows moves both descriptors 2 KB.
#pragma once

#include <cstdint>

#include "kernels/sm100/encodings.h"

namespace ggemm::sm100 {

constexpr uint32_t kWgradTileP = kRowsPerCta;               // MMA M = TMEM lanes = columns of P
constexpr uint32_t kWgradBlockRows = kBlockK;               // rows r per stage = box height
constexpr uint32_t kWgradBoxColumns = kMnMajorBoxColumns;   // 64: one 128-byte swizzled line
constexpr uint32_t kWgradBoxBytes = kMnMajorBoxBytes;       // 8 KB
constexpr uint32_t kWgradKSteps = kWgradBlockRows / kMmaK;  // MMAs per k-block

// Boxes of `columns` (0 when not whole boxes: the MN-major layout needs 64-column blocks).
GGEMM_SM100_HD constexpr uint32_t wgrad_boxes(uint32_t columns) {
    return columns % kWgradBoxColumns == 0 ? columns / kWgradBoxColumns : 0;
}

// Bytes TMA lands in one stage: X1's and X2's boxes (those past P or Q arrive as zeros and count).
GGEMM_SM100_HD constexpr uint32_t wgrad_stage_bytes(uint32_t tile_q) {
    return (wgrad_boxes(kWgradTileP) + wgrad_boxes(tile_q)) * kWgradBoxBytes;
}

// BF16 x BF16 -> F32, M = 128, N = tile_q, cta_group::1, A and B MN-major (0 for an invalid N).
GGEMM_SM100_HD constexpr uint32_t wgrad_instr_desc(uint32_t tile_q) {
    return make_instr_desc_bf16_f32(kWgradTileP, tile_q, 1, /*a_mn_major=*/true, /*b_mn_major=*/true);
}

// The shared-memory descriptor of MMA step `k_step` (rows [16 k, 16 k + 16) of the k-block) of an
// operand whose first box starts at `first_box` (shared window, 1024-byte aligned). A and B alike.
GGEMM_SM100_HD constexpr uint64_t wgrad_operand_descriptor(uint32_t first_box, uint32_t k_step) {
    return advance_mn_k_step(mnmajor_sw128_descriptor(first_box), k_step);
}

}  // namespace ggemm::sm100
