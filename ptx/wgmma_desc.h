// The wgmma shared-memory matrix descriptor: a pure function, usable on the host so tests can
// check its bits.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define GGEMM_PTX_HD __host__ __device__
#else
#define GGEMM_PTX_HD
#endif

namespace ggemm::ptx {

// The 64-bit wgmma matrix descriptor (PTX ISA 9.7.15.5.1, "Matrix Descriptor Format"):
//   bits  0-13  start address >> 4        bits 16-29  leading-dimension byte offset >> 4
//   bits 32-45  stride-dimension byte offset >> 4
//   bits 49-51  base offset (0: tiles are 1024-byte aligned)
//   bits 62-63  swizzle: 0 none, 1 128-byte, 2 64-byte, 3 32-byte
// For a K-major operand in the 128-byte swizzle, one row holds 64 bf16 of K and a core-matrix
// group is 8 rows = 1024 bytes apart (the stride offset); the leading offset is unused.
// Usable on the host so that tests can check the bits.
enum class WgmmaSwizzle : uint64_t { kNone = 0, k128B = 1, k64B = 2, k32B = 3 };

GGEMM_PTX_HD constexpr uint64_t wgmma_smem_desc(uint32_t smem_address, uint32_t leading_bytes,
                                                       uint32_t stride_bytes, WgmmaSwizzle swizzle) {
    return (static_cast<uint64_t>((smem_address & 0x3FFFFu) >> 4)) |
           (static_cast<uint64_t>((leading_bytes & 0x3FFFFu) >> 4) << 16) |
           (static_cast<uint64_t>((stride_bytes & 0x3FFFFu) >> 4) << 32) |
           (static_cast<uint64_t>(swizzle) << 62);
}

// The same descriptor for an operand `bytes` further on: the start-address field grows by
// bytes / 16 and nothing else changes, as long as the address stays below 2^18 (the field's 14
// bits). Every shared-memory address of a CTA is (at most 227 KB on SM90), so a kernel can make
// one descriptor per stage and step it along K with one add.
GGEMM_PTX_HD constexpr uint64_t wgmma_desc_advance(uint64_t desc, uint32_t bytes) {
    return desc + (bytes >> 4);
}

}  // namespace ggemm::ptx
