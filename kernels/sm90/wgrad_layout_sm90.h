// Shared-memory layout of the weight gradient's operands on SM90, and their wgmma descriptors.
// Pure: the CPU tests check the descriptor bits against the PTX ISA's rules.
//
// Both operands arrive MN-major: a k-block is 64 rows r of X1 (the P columns of the tile) and of
// X2 (its Q columns), each row stored with P (or Q) contiguous, as in global memory. TMA writes
// them in boxes of 64 columns x 64 rows with the 128-byte swizzle: row r of a box is one 128-byte
// line (64 bf16), its 16-byte chunks permuted by r % 8, so a box is 8 KB. An operand of 128 (A)
// or up to 256 (B) columns is that many boxes back to back.
//
// The wgmma matrix descriptor of an MN-major operand in the 128-byte swizzle (PTX ISA 9.7.15.5.1,
// "Shared memory matrix layout", and the matrix-descriptor format): its canonical layout is, in
// 16-byte units, ((8, n), (8, k)) : ((1, LBO), (8, SBO)): 8 chunks of 8 elements along MN form
// one 128-byte line, a line per K index, 8 lines an atom; the leading-dimension byte offset (LBO)
// steps to the next 64 MN elements (the next box here: 8192 bytes) and the stride-dimension byte
// offset (SBO) to the next 8 K indices (8 lines: 1024 bytes). One k16 instruction covers 16 rows,
// so the k-th slice of a k-block starts 16 lines = 2048 bytes further.
#pragma once

#include <cstdint>

#include "ptx/wgmma_desc.h"

namespace ggemm::sm90 {

constexpr int kWgradBoxColumns = 64;  // bf16 per 128-byte swizzled line
constexpr int kWgradBlockRows = 64;   // rows r per k-block (and per box)
constexpr uint32_t kWgradBoxBytes = kWgradBoxColumns * kWgradBlockRows * 2;  // 8192
constexpr uint32_t kWgradLeadingBytes = kWgradBoxBytes;                      // next 64 of P or Q
constexpr uint32_t kWgradStrideBytes = 8 * 128;                              // next 8 rows r
constexpr uint32_t kWgradK16Bytes = 16 * 128;                                // next 16 rows r

// The descriptor of the k16 slice `k` (0..3) of an operand whose first box starts at
// `box_address` (shared window, 1024-byte aligned).
constexpr uint64_t wgrad_operand_desc(uint32_t box_address, int k) {
    return ptx::wgmma_smem_desc(box_address + static_cast<uint32_t>(k) * kWgradK16Bytes, kWgradLeadingBytes,
                                kWgradStrideBytes, ptx::WgmmaSwizzle::k128B);
}

}  // namespace ggemm::sm90
