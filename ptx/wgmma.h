// Warpgroup MMA control: fences, commit/wait groups, register reallocation, and the
// shared-memory matrix descriptor. PTX ISA 9.7.15 (warpgroup-level matrix instructions),
// 9.7.17.1 (setmaxnreg). sm_90a only. The MMA shapes themselves are in wgmma_mma.h.
#pragma once

#include <cstdint>

#include "common.h"
#include "wgmma_mma.h"

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

__host__ __device__ constexpr uint64_t wgmma_smem_desc(uint32_t smem_address, uint32_t leading_bytes,
                                                       uint32_t stride_bytes, WgmmaSwizzle swizzle) {
    return (static_cast<uint64_t>((smem_address & 0x3FFFFu) >> 4)) |
           (static_cast<uint64_t>((leading_bytes & 0x3FFFFu) >> 4) << 16) |
           (static_cast<uint64_t>((stride_bytes & 0x3FFFFu) >> 4) << 32) |
           (static_cast<uint64_t>(swizzle) << 62);
}

// wgmma.fence.sync.aligned;                                                   PTX 8.0, sm_90a
// Orders register accesses to the accumulators before the next wgmma.mma_async reads them.
__device__ __forceinline__ void wgmma_fence() {
#if defined(GGEMM_PTX_SM90A)
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// wgmma.commit_group.sync.aligned;                                            PTX 8.0, sm_90a
__device__ __forceinline__ void wgmma_commit() {
#if defined(GGEMM_PTX_SM90A)
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// wgmma.wait_group.sync.aligned N;                                            PTX 8.0, sm_90a
// Waits until at most N committed groups are pending: their shared-memory reads and
// accumulator writes are then complete.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
    static_assert(N >= 0 && N <= 7, "wgmma.wait_group takes a small immediate");
#if defined(GGEMM_PTX_SM90A)
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// Keeps the compiler from moving accesses to an accumulator register across wgmma issue/wait
// points: the asm pretends to read and write it.
__device__ __forceinline__ void wgmma_fence_operand(float& reg) {
    asm volatile("" : "+f"(reg)::"memory");
}

// setmaxnreg.inc.sync.aligned.u32 N; / setmaxnreg.dec.sync.aligned.u32 N;   PTX 8.0, sm_90a
// Moves registers between warpgroups: the TMA producer needs few, the MMA consumers many.
// Takes effect only under a launch-bounds register cap; N is a multiple of 8 in [24, 256].
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
    static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg range");
#if defined(GGEMM_PTX_SM90A) || defined(GGEMM_PTX_SM100A)
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
    static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg range");
#if defined(GGEMM_PTX_SM90A) || defined(GGEMM_PTX_SM100A)
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

}  // namespace ggemm::ptx
