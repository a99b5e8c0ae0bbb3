// Where the SM90 kernel keeps a stage's B tile in shared memory, and the wgmma descriptors of its
// k16 slices, for either weight layout, and of the A tile's. Pure and __host__ __device__, so the
// CPU tests check the descriptors against the PTX ISA's canonical layouts
// (tests/host/test_wgmma_descriptor.cpp).
//
// Both layouts use the 128-byte swizzle that TMA writes (8 rows of 128 bytes repeat the pattern)
// on tiles aligned to 1024 bytes.
//   K-major (B_g is N x K): one box of tile_n rows x 64 K (128 bytes per row). A k16 slice starts
//     32 bytes further along every row; 8-row groups of N are 1024 bytes apart.
//   N-major (B_g is K x N): tile_n / 64 boxes, each 64 rows of K x 64 columns of N (128 bytes per
//     row), one after another. wgmma reads B MN-major (imm-trans-b = 1): in the canonical
//     MN-major 128-byte-swizzle layout (PTX ISA 9.7.15.5.1, "Shared Memory Matrix Layout"), an
//     atom is 64 N x 8 K; the leading-dimension byte offset steps between atoms along N (one
//     box, 64 x 64 x 2 bytes) and the stride-dimension byte offset between atoms along K (8 rows
//     of 128 bytes). A k16 slice starts 16 rows = 2048 bytes further.
#pragma once

#include <cstdint>

#include "kernels/common/contract.h"
#include "kernels/common/hd.h"
#include "ptx/wgmma_desc.h"

namespace ggemm::sm90 {

constexpr uint32_t kSwizzleRowBytes = 128;  // one 128-byte swizzle row
constexpr uint32_t kSwizzleAtomRows = 8;    // rows per repetition of the swizzle pattern
constexpr int kBlockK = 64;                 // K per stage: 64 bf16 = one swizzle row
constexpr int kNMajorBoxColumns = 64;       // N-major: columns of N per TMA box (one swizzle row)
constexpr uint32_t kNMajorBoxBytes = kNMajorBoxColumns * kBlockK * 2;  // 8 KB, a whole number of atoms

// How far one k16 slice of a stage's A tile, or of its B tile, starts from the previous one:
// K-major, 32 bytes along each 128-byte row; N-major, 16 rows of K further.
constexpr uint32_t kKMajorSliceBytes = 32;
template <int kWeightLayout>
constexpr uint32_t kBSliceBytes = kWeightLayout == kKMajor ? kKMajorSliceBytes : 16 * kSwizzleRowBytes;

// The descriptor of a K-major operand's k16 slice at shared address `address`: A's slice 0 at a
// stage's A tile, and K-major B's slices (the leading offset is unused for swizzled K-major
// layouts).
GGEMM_HD uint64_t a_descriptor(uint32_t address) {
    return ptx::wgmma_smem_desc(address, 0, kSwizzleAtomRows * kSwizzleRowBytes, ptx::WgmmaSwizzle::k128B);
}

// The descriptor of k16 slice `slice` (0-3) of a stage's B tile at shared address `b_base`.
template <int kWeightLayout>
GGEMM_HD uint64_t b_slice_descriptor(uint32_t b_base, int slice) {
    static_assert(kWeightLayout == kKMajor || kWeightLayout == kNMajor, "a weight layout");
    const uint32_t address = b_base + static_cast<uint32_t>(slice) * kBSliceBytes<kWeightLayout>;
    if constexpr (kWeightLayout == kKMajor) {
        return a_descriptor(address);
    } else {
        return ptx::wgmma_smem_desc(address, /*leading: next 64 columns of N*/ kNMajorBoxBytes,
                                    /*stride: next 8 rows of K*/ kSwizzleAtomRows * kSwizzleRowBytes,
                                    ptx::WgmmaSwizzle::k128B);
    }
}

// A descriptor of the first stage of a ring stepped to stage `stage`, the stages `stage_bytes`
// apart (a multiple of 16): the start-address field counts 16-byte units, so one multiply-add
// gives the descriptor built from the stage's own address, as long as that address stays below
// 2^18 (every SM90 shared address does).
GGEMM_HD uint64_t stage_descriptor(uint64_t first_stage, uint32_t stage, uint32_t stage_bytes) {
    const uint32_t low = static_cast<uint32_t>(first_stage) + stage * (stage_bytes / 16);
    return (first_stage & 0xFFFFFFFF00000000ull) | low;
}

// N-major: the byte offset, within a stage's B tile, where TMA puts element (column n, row k)
// of the tile before swizzling (the swizzle permutes 16-byte chunks within each 128-byte row).
GGEMM_HD uint32_t nmajor_tile_offset(int n, int k) {
    return static_cast<uint32_t>(n / kNMajorBoxColumns) * kNMajorBoxBytes +
           static_cast<uint32_t>(k) * kSwizzleRowBytes + static_cast<uint32_t>(n % kNMajorBoxColumns) * 2;
}

}  // namespace ggemm::sm90
