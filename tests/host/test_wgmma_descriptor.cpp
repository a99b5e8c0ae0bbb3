// The wgmma shared-memory matrix descriptor (ptx/wgmma_desc.h), checked bit by bit against
// PTX ISA 9.7.15.5.1 "Matrix Descriptor Format": start address >> 4 in bits 0-13, leading byte
// offset >> 4 in 16-29, stride byte offset >> 4 in 32-45, base offset in 49-51, swizzle mode in
// 62-63 (1 = 128-byte swizzle); and the rows ldmatrix reads for wgmma's A from registers
// (kernels/sm90/operand_layout.h).
#include <doctest/doctest.h>

#include <cstdint>

#include "kernels/sm90/operand_layout.h"
#include "ptx/wgmma_desc.h"

using ggemm::ptx::wgmma_smem_desc;
using ggemm::ptx::WgmmaSwizzle;

TEST_CASE("wgmma descriptor: fields land in their bits") {
    // A K-major 128-byte-swizzled tile at shared address 0x1000, 8-row groups 1024 bytes apart.
    const uint64_t d = wgmma_smem_desc(0x1000, 0, 1024, WgmmaSwizzle::k128B);
    CHECK((d & 0x3FFF) == 0x100);                 // 0x1000 >> 4
    CHECK(((d >> 16) & 0x3FFF) == 0);             // leading offset unused for swizzled K-major
    CHECK(((d >> 32) & 0x3FFF) == 64);            // 1024 >> 4
    CHECK(((d >> 49) & 0x7) == 0);                // tiles are 1024-byte aligned
    CHECK((d >> 62) == 1);                        // 128-byte swizzle
    CHECK(d == ((uint64_t{1} << 62) | (uint64_t{64} << 32) | 0x100));
}

TEST_CASE("wgmma descriptor: advancing K by 16 elements adds 32 bytes to the start address") {
    const uint64_t d0 = wgmma_smem_desc(0x8400, 0, 1024, WgmmaSwizzle::k128B);
    const uint64_t d1 = wgmma_smem_desc(0x8400 + 32, 0, 1024, WgmmaSwizzle::k128B);
    CHECK(d1 - d0 == 2);
}

TEST_CASE("wgmma descriptor: the address field keeps 18 bits of shared address") {
    // The shared window is 228 KB < 2^18: bits above 17 never reach the 14-bit field.
    const uint64_t d = wgmma_smem_desc(0x3FFF0, 16, 0, WgmmaSwizzle::kNone);
    CHECK((d & 0x3FFF) == 0x3FFF);
    CHECK(((d >> 16) & 0x3FFF) == 1);
    CHECK((d >> 62) == 0);
}

TEST_CASE("A from registers: ldmatrix's rows give each lane its mma.m16n8k16 A fragment") {
    // Lane l's register i of ldmatrix.x4 holds row l / 4 and columns 2 (l % 4), + 1 of matrix i,
    // whose rows are at the addresses lanes 8i .. 8i + 7 give. The A fragment wants in it row
    // 16 w + 8 (i % 2) + l / 4 of the warpgroup's 64 and K 16 s + 8 (i / 2) + 2 (l % 4) of the
    // k-block. TMA's 128-byte swizzle put chunk c of row r at chunk c ^ (r % 8).
    for (int warp = 0; warp < 4; ++warp) {
        for (int slice = 0; slice < 4; ++slice) {
            for (int lane = 0; lane < 32; ++lane) {
                for (int i = 0; i < 4; ++i) {
                    const uint32_t offset = ggemm::sm90::a_fragment_offset(warp, 8 * i + lane / 4, slice);
                    const int row = static_cast<int>(offset / 128);
                    const int chunk = static_cast<int>(offset % 128 / 16) ^ (row % 8);
                    CHECK(offset % 16 == 0);
                    CHECK(row == 16 * warp + 8 * (i % 2) + lane / 4);
                    CHECK(chunk * 8 + 2 * (lane % 4) == 16 * slice + 8 * (i / 2) + 2 * (lane % 4));
                    CHECK(offset == (ggemm::sm90::a_fragment_offset(warp, 8 * i + lane / 4, 0) ^
                                     ggemm::sm90::a_slice_flip(slice)));
                }
            }
        }
    }
}
