// Warpgroup MMA control: fences, commit/wait groups, register reallocation, and the
// shared-memory matrix descriptor. PTX ISA 9.7.15 (warpgroup-level matrix instructions),
// 9.7.17.1 (setmaxnreg). sm_90a only. The MMA shapes are in wgmma_mma.h, the matrix
// descriptor in wgmma_desc.h.
#pragma once

#include <cstdint>

#include "ptx/common.cuh"
#include "ptx/wgmma_desc.h"
#include "ptx/wgmma_mma.cuh"

namespace ggemm::ptx {

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
