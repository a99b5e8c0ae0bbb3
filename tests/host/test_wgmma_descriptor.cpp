// The wgmma shared-memory matrix descriptor (ptx/wgmma_desc.h), checked bit by bit against
// PTX ISA 9.7.15.5.1 "Matrix Descriptor Format": start address >> 4 in bits 0-13, leading byte
// offset >> 4 in 16-29, stride byte offset >> 4 in 32-45, base offset in 49-51, swizzle mode in
// 62-63 (1 = 128-byte swizzle).
#include <doctest/doctest.h>

#include <cstdint>

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
