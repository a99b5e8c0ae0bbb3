// Warp-wide matrix stores to shared memory: stmatrix, PTX ISA 9.7.14.5.16 (part of the
// warp-level matrix instructions of mma). No cuda::ptx counterpart exists.
//
// Each 8 x 8 matrix of 16-bit elements takes one 32-bit register per lane, in the layout of an
// mma / wgmma accumulator fragment: lane l holds row l / 4, columns 2 (l % 4) and + 1 (the lower
// half first). Lane l gives the shared address of row l % 8 of matrix l / 8: each row is 16
// contiguous bytes, 16-byte aligned. One .x4 writes what sixteen st.shared.b32 would.
#pragma once

#include <cstdint>

#include "ptx/common.cuh"

namespace ggemm::ptx {

// stmatrix.sync.aligned.m8n8.x4.shared.b16 [addr], {r0, r1, r2, r3};         PTX 7.8, sm_90
// Every lane of the warp takes part (.sync.aligned: no divergence).
__device__ __forceinline__ void stmatrix_x4(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
#if defined(GGEMM_PTX_TMA)
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(r0), "r"(r1),
                 "r"(r2), "r"(r3)
                 : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

}  // namespace ggemm::ptx
