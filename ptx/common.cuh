// What every ptx/ header shares: the one place that turns generic addresses into shared-window
// addresses, and the link-time trap for a wrapper used on a target that lacks its instruction.
//
// Each wrapper's comment is the exact PTX it emits and the PTX ISA version / target it needs,
// so a reviewer can hold it against the PTX manual line by line.
#pragma once

#include <cstdint>

// True in the device pass for the arch-specific targets this library builds.
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define GGEMM_PTX_SM90A 1
#endif
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM100_ALL)
#define GGEMM_PTX_SM100A 1
#endif
// TMA, mbarrier transaction counts and clusters exist on both.
#if defined(GGEMM_PTX_SM90A) || defined(GGEMM_PTX_SM100A)
#define GGEMM_PTX_TMA 1
#endif

namespace ggemm::ptx {

// Declared, never defined: a wrapper compiled for a target without its instruction calls this,
// so the build fails to link instead of misbehaving at run time.
extern "C" __device__ void ggemm_ptx_instruction_not_supported_on_this_target();

// Shared-window address of a generic pointer into shared memory (cvta.to.shared).
__device__ __forceinline__ uint32_t smem_addr(const void* ptr) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(ptr));
}

}  // namespace ggemm::ptx
