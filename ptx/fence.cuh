// Fences between the generic proxy (ordinary loads/stores) and the async proxy (TMA, wgmma,
// tcgen05) or the tensor-map proxy. PTX ISA 9.7.13.4 (membar / fence).
#pragma once

#include <cstdint>

#include "ptx/common.cuh"

namespace ggemm::ptx {

// fence.mbarrier_init.release.cluster;                                        PTX 8.0, sm_90
// Makes mbarrier.init visible to the async proxy and to the other CTAs of the cluster.
__device__ __forceinline__ void fence_mbarrier_init() {
#if defined(GGEMM_PTX_TMA)
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// fence.proxy.async.shared::cta;                                              PTX 8.0, sm_90
// Orders this thread's generic shared-memory writes before later async-proxy reads of them
// (a TMA store or an MMA reading what st.shared / stmatrix wrote).
__device__ __forceinline__ void fence_proxy_async_shared() {
#if defined(GGEMM_PTX_TMA)
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// fence.proxy.tensormap::generic.release.gpu;                                PTX 8.3, sm_90
// Publishes a tensor map written through the generic proxy to later tensor-map-proxy users.
__device__ __forceinline__ void fence_proxy_tensormap_release() {
#if defined(GGEMM_PTX_TMA)
    asm volatile("fence.proxy.tensormap::generic.release.gpu;" ::: "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// fence.proxy.tensormap::generic.acquire.gpu [addr], 128;                     PTX 8.3, sm_90
// Required before a TMA uses a tensor map in global memory that was written by generic stores
// (PTX ISA 9.7.13.4, "tensormap proxy"): the 128 bytes at addr are the map.
__device__ __forceinline__ void fence_proxy_tensormap_acquire(const void* global_map) {
#if defined(GGEMM_PTX_TMA)
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(global_map) : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

}  // namespace ggemm::ptx
