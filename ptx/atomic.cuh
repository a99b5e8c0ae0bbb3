// A global atomic counter whose value is waited for only where it is read. PTX ISA 9.7.13.5 (atom).
#pragma once

#include <cstdint>

#include "ptx/common.cuh"

namespace ggemm::ptx {

// atom.relaxed.gpu.global.add.u64 d, [addr], 1;                              PTX 6.0, sm_70
// Returns the 64-bit counter and adds one to it. An add of a value ptxas knows to be the same in
// every lane (a constant, a parameter) is aggregated by ptxas into a warp-wide pattern that
// shuffles the result to the warp right after the atomic, so the warp waits there for the
// atomic's round trip even when one lane calls it. The one here is (laneid >> 5) + 1, which is 1
// in every lane but not known to ptxas as such: the add is issued as it stands, and its result is
// waited for where it is read.
__device__ __forceinline__ unsigned long long atom_add_one_relaxed_gpu(unsigned long long* addr) {
    uint32_t lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    const unsigned long long one = (lane >> 5) + 1;
    unsigned long long old;
    asm volatile("atom.relaxed.gpu.global.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(addr), "l"(one) : "memory");
    return old;
}

}  // namespace ggemm::ptx
