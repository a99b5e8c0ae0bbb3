// Warp-wide matrix loads from shared memory: ldmatrix, PTX ISA 9.7.14.5.15 (part of the
// warp-level matrix instructions of mma). No cuda::ptx counterpart exists.
//
// Each 8 x 8 matrix of 16-bit elements lands in one 32-bit register per lane, in the layout of an
// mma A or B fragment: lane l gets row l / 4, columns 2 (l % 4) and + 1 (the lower half first).
// Lane l gives the shared address of row l % 8 of matrix l / 8: each row is 16 contiguous
// bytes, 16-byte aligned. stmatrix's (ptx/stmatrix.cuh) inverse.
#pragma once

#include <cstdint>

#include "ptx/common.cuh"

namespace ggemm::ptx {

// ldmatrix.sync.aligned.m8n8.x4.shared.b16 {r0, r1, r2, r3}, [addr];          PTX 6.5, sm_75
// Every lane of the warp takes part (.sync.aligned: no divergence).
__device__ __forceinline__ void ldmatrix_x4(uint32_t addr, uint32_t (&r)[4]) {
#if defined(GGEMM_PTX_TMA)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

}  // namespace ggemm::ptx
