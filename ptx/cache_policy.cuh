// L2 cache policies for the .L2::cache_hint forms of the loads and stores (createpolicy). PTX ISA
// 9.7.9.18. A policy is a 64-bit value the instruction carries; it tells the L2 how long to keep
// the lines it touches, next to everything else the L2 holds.
#pragma once

#include <cstdint>

#include "ptx/common.cuh"

namespace ggemm::ptx {

// createpolicy.fractional.L2::evict_first.b64 policy, 1.0;                   PTX 7.4, sm_80
// Every line the hinted access touches is among the first the L2 evicts: for data read or
// written once, which would otherwise push out lines that are read again.
__device__ __forceinline__ uint64_t l2_policy_evict_first() {
    uint64_t policy;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    return policy;
}

}  // namespace ggemm::ptx
