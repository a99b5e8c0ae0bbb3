// A global atomic counter whose value is waited for only where it is read. PTX ISA 9.7.13.5 (atom).
#pragma once

#include <cstdint>

#include "ptx/common.cuh"

namespace ggemm::ptx {

// atom.relaxed.gpu.global.inc.u32 d, [addr], 0xfffffffe;                    PTX 6.0, sm_70
// Returns the counter and adds one to it (back to 0 after 2^32 - 2). An add from one lane of a
// warp (atomicAdd, atom.add in asm, or inc with the bound 2^32 - 1, which ptxas turns into an
// add) is aggregated by ptxas into a warp-wide pattern that shuffles the result to the warp right
// after the atomic, so the warp waits there for the atomic's round trip. This inc is issued as
// it stands, and its result is waited for where it is read.
__device__ __forceinline__ uint32_t atom_inc_relaxed_gpu(uint32_t* addr) {
    uint32_t old;
    asm volatile("atom.relaxed.gpu.global.inc.u32 %0, [%1], %2;" : "=r"(old) : "l"(addr), "r"(0xfffffffeu) : "memory");
    return old;
}

}  // namespace ggemm::ptx
