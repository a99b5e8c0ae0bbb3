// Warp-wide matrix stores to shared memory: four 8 x 8 matrices of 16-bit elements, one 32-bit
// register per matrix per lane. PTX ISA 9.7.14.5 (mma's matrix load and store: stmatrix).
//
// The register fragment is the accumulator fragment of mma / wgmma: in each matrix, lane l holds
// row l / 4, columns 2 (l % 4) and + 1 (low half first). Lane l gives the shared address of row
// l % 8 of matrix l / 8; each row is 16 contiguous bytes (16-byte aligned). So one stmatrix.x4
// writes what sixteen st.shared.b32 would.
#pragma once

#include <cstdint>

#include "common.h"

namespace ggemm::ptx {

// stmatrix.sync.aligned.m8n8.x4.shared.b16 [addr], {r0, r1, r2, r3};       PTX 7.8, sm_90
// Every lane of the warp takes part (.sync.aligned: no divergence).
__device__ __forceinline__ void stmatrix_x4(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
#if defined(GGEMM_PTX_SM90A) || defined(GGEMM_PTX_SM100A)
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(r0), "r"(r1),
                 "r"(r2), "r"(r3)
                 : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

}  // namespace ggemm::ptx
