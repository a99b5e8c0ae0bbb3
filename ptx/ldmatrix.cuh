// Warp-wide matrix loads from shared memory: ldmatrix, PTX ISA 9.7.14.5.15 (part of the
// warp-level matrix instructions of mma), the load that mirrors stmatrix (ptx/stmatrix.cuh). No
// cuda::ptx counterpart exists.
//
// Each 8 x 8 matrix of 16-bit elements arrives as one 32-bit register per lane, in the layout of
// an mma / wgmma accumulator fragment: lane l receives row l / 4, columns 2 (l % 4) and + 1 (the
// lower half first). Lane l gives the shared address of row l % 8 of matrix l / 8: each row is
// 16 contiguous bytes, 16-byte aligned. One .x4 reads what sixteen ld.shared.b32 would.
#pragma once

#include <cstdint>

#include "ptx/common.cuh"

namespace ggemm::ptx {

// ldmatrix.sync.aligned.m8n8.x4.shared.b16 {r0, r1, r2, r3}, [addr];          PTX 6.5, sm_75
// Every lane of the warp takes part (.sync.aligned: no divergence). Volatile, as the
// shared-memory loads of ptx/smem.cuh: it stays in order with the other shared-memory accesses
// and barriers, which are volatile asm too.
__device__ __forceinline__ uint4 ldmatrix_x4(uint32_t addr) {
#if defined(GGEMM_PTX_TMA)
    uint4 v;
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(addr));
    return v;
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
    return {};
#endif
}

}  // namespace ggemm::ptx
