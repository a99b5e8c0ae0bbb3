// Named CTA barriers (bar.sync with an id and a thread count), so that one warpgroup can
// synchronise without stopping the others. PTX ISA 9.7.13.1 (bar / barrier).
#pragma once

#include <cstdint>

#include "ptx/common.cuh"

namespace ggemm::ptx {

// bar.sync id, threads;                                                       PTX 2.0, sm_30
// `threads` counts every thread that takes part (a multiple of 32); id 0 is __syncthreads'.
__device__ __forceinline__ void named_barrier_sync(uint32_t id, uint32_t threads) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// bar.warp.sync 0xffffffff;                                                   PTX 6.0, sm_30
// Every lane of the warp; orders their shared-memory accesses (what __syncwarp does, as an asm
// statement so it stays ordered with the other ptx/ wrappers, which are asm statements too).
__device__ __forceinline__ void warp_sync() { asm volatile("bar.warp.sync 0xffffffff;" ::: "memory"); }

// elect.sync _|p, 0xffffffff;                                                  PTX 8.0, sm_90
// Every lane of the warp takes part; true in exactly one of them. Unlike a test of the lane
// index, it tells the compiler that one thread runs the code it guards: TMA instructions there
// take their operands straight from uniform registers, with no loop over the active lanes.
__device__ __forceinline__ bool elect_one_sync() {
#if defined(GGEMM_PTX_TMA)
    uint32_t elected = 0;
    asm volatile(
        "{\n\t.reg .pred p;\n\telect.sync _|p, 0xffffffff;\n\tselp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(elected));
    return elected != 0;
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
    return false;
#endif
}

}  // namespace ggemm::ptx
