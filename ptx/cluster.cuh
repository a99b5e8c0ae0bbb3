// Thread-block clusters: rank, size, the cluster's index and the cluster-wide barrier. PTX ISA
// 9.7.13.2 (barrier.cluster) and 10 (special registers %cluster_ctarank, %cluster_nctarank,
// %clusterid, %nclusterid).
#pragma once

#include <cstdint>

#include "ptx/common.cuh"

namespace ggemm::ptx {

// mov.u32 %0, %cluster_ctarank;                                               PTX 7.8, sm_90
__device__ __forceinline__ uint32_t cluster_cta_rank() {
#if defined(GGEMM_PTX_TMA)
    uint32_t rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    return rank;
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
    return 0;
#endif
}

// mov.u32 %0, %cluster_nctarank;                                              PTX 7.8, sm_90
__device__ __forceinline__ uint32_t cluster_num_ctas() {
#if defined(GGEMM_PTX_TMA)
    uint32_t n;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
    return n;
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
    return 1;
#endif
}

// mov.u32 %0, %clusterid.x;  mov.u32 %0, %nclusterid.x;                      PTX 7.8, sm_90
// The cluster's index in the grid and the number of clusters (1-D grids: x only).
__device__ __forceinline__ uint32_t cluster_id_x() {
#if defined(GGEMM_PTX_TMA)
    uint32_t id;
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(id));
    return id;
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
    return 0;
#endif
}

__device__ __forceinline__ uint32_t cluster_count_x() {
#if defined(GGEMM_PTX_TMA)
    uint32_t n;
    asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(n));
    return n;
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
    return 1;
#endif
}

// barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;  PTX 7.8, sm_90
// Every thread of every CTA in the cluster: used after barrier init (peers may signal our
// barriers) and before exit (peers may still signal or multicast into our shared memory).
__device__ __forceinline__ void cluster_sync() {
#if defined(GGEMM_PTX_TMA)
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::
                     : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

}  // namespace ggemm::ptx
