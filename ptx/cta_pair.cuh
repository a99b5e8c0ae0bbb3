// CTA pairs (cta_group::2 on SM100): the cluster-side PTX a pair kernel needs besides tcgen05.h,
// tmem.h, cluster.h and the cluster-scope waits of mbarrier.h: addressing the peer CTA's shared
// memory, and TMA loads that complete their bytes on the pair leader's barrier.
// PTX ISA 9.7.9.25 (cp.async.bulk.tensor, .cta_group), 9.7.9.21 (mapa). sm_100a only (the
// .cta_group TMA form needs it; the rest would also assemble for sm_90a, but only the pair
// kernel uses them).
#pragma once

#include <cstdint>

#include "ptx/common.cuh"

namespace ggemm::ptx {

// mapa.shared::cluster.u32 dst, addr, rank;                                   PTX 7.8, sm_90
// The shared::cluster address of the variable at the same offset as `ptr` in CTA `cta_rank`.
__device__ __forceinline__ uint32_t cluster_shared_address(const void* ptr, uint32_t cta_rank) {
#if defined(GGEMM_PTX_SM100A)
    uint32_t remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_addr(ptr)), "r"(cta_rank));
    return remote;
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
    return 0;
#endif
}

// st.shared::cluster.u32 [addr], value;                                       PTX 7.8, sm_90
// A weak store into another CTA's shared memory; publish it with a release arrive on a barrier
// of that CTA (mbarrier_arrive_cluster).
__device__ __forceinline__ void st_shared_cluster_u32(uint32_t cluster_address, uint32_t value) {
#if defined(GGEMM_PTX_SM100A)
    asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(cluster_address), "r"(value) : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.cta_group::2
//     [dst], [map, {c0, c1}], [bar];                                          PTX 8.6, sm_100a
// Copies one box into THIS CTA's shared memory at `dst` and completes its bytes on the mbarrier
// at shared::cluster address `bar`, which .cta_group::2 allows to lie in either CTA of the pair:
// both CTAs of a pair signal the leader's full barrier, the one the MMA thread waits on.
__device__ __forceinline__ void tma_load_2d_pair(void* dst, const void* map, uint32_t bar, int32_t c0,
                                                 int32_t c1) {
#if defined(GGEMM_PTX_SM100A)
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.cta_group::2"
        " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_addr(dst)),
        "l"(map), "r"(c0), "r"(c1), "r"(bar)
        : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.cta_group::2
//     [dst], [map, {c0, c1, c2}], [bar];                                      PTX 8.6, sm_100a
__device__ __forceinline__ void tma_load_3d_pair(void* dst, const void* map, uint32_t bar, int32_t c0,
                                                 int32_t c1, int32_t c2) {
#if defined(GGEMM_PTX_SM100A)
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.cta_group::2"
        " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(smem_addr(dst)),
        "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
        : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

}  // namespace ggemm::ptx
