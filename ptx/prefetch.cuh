// Prefetches of global memory into the L1 or the L2 (prefetch). PTX ISA 9.7.9.15. A prefetch brings the
// line holding the address into the cache and returns nothing: no register waits on it, so a
// thread can ask for data long before it loads it.
#pragma once

#include "ptx/common.cuh"

namespace ggemm::ptx {

// prefetch.global.L2 [addr];                                                  PTX 2.0, sm_20
__device__ __forceinline__ void prefetch_global_l2(const void* addr) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(addr));
}

// prefetch.global.L1 [addr];                                                  PTX 2.0, sm_20
__device__ __forceinline__ void prefetch_global_l1(const void* addr) {
    asm volatile("prefetch.global.L1 [%0];" ::"l"(addr));
}

}  // namespace ggemm::ptx
