// mbarrier: the shared-memory barriers that order TMA arrivals and stage reuse.
// PTX ISA 9.7.13.15 (Parallel Synchronization and Communication: mbarrier).
#pragma once

#include <cstdint>

#include "ptx/common.cuh"

#if defined(GGEMM_DEBUG_BARRIERS)
#include <cstdio>
#endif

namespace ggemm::ptx {

// mbarrier.init.shared::cta.b64 [addr], count;                                PTX 7.0, sm_80
__device__ __forceinline__ void mbarrier_init(uint64_t* bar, uint32_t arrival_count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(arrival_count)
                 : "memory");
}

// mbarrier.arrive.shared::cta.b64 _, [addr];                                  PTX 7.8, sm_90
// Release semantics at CTA scope: shared-memory writes before it are visible to waiters.
__device__ __forceinline__ void mbarrier_arrive(uint64_t* bar) {
#if defined(GGEMM_PTX_TMA)
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// mbarrier.arrive.shared::cta.b64 _, [addr], count;                          PTX 7.8, sm_90
// `count` arrivals at once, with mbarrier_arrive's release semantics: one thread arriving for
// others whose work it has seen complete.
__device__ __forceinline__ void mbarrier_arrive_count(uint64_t* bar, uint32_t count) {
#if defined(GGEMM_PTX_TMA)
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// mbarrier.arrive.expect_tx.shared::cta.b64 _, [addr], tx_count;              PTX 8.0, sm_90
// One arrival plus the bytes the TMA copies that complete this phase will deliver.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
#if defined(GGEMM_PTX_TMA)
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)),
                 "r"(bytes)
                 : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// mbarrier.arrive.shared::cluster.b64 _, [addr];                              PTX 8.0, sm_90
// Arrives on the barrier at the same offset in CTA `cta_rank` of the cluster (via mapa), with the
// default release at CTA scope: for "done reading" signals, where the arriving thread's reads
// are complete and nothing it wrote needs publishing to the other CTA.
__device__ __forceinline__ void mbarrier_arrive_peer(uint64_t* bar, uint32_t cta_rank) {
#if defined(GGEMM_PTX_TMA)
    asm volatile(
        "{\n\t.reg .b32 remote;\n\t"
        "mapa.shared::cluster.u32 remote, %0, %1;\n\t"
        "mbarrier.arrive.shared::cluster.b64 _, [remote];\n\t}" ::"r"(smem_addr(bar)),
        "r"(cta_rank)
        : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// mbarrier.arrive.release.cluster.shared::cluster.b64 _, [addr];              PTX 8.0, sm_90
// Arrives on the barrier at the same offset in CTA `cta_rank` of the cluster (via mapa).
__device__ __forceinline__ void mbarrier_arrive_cluster(uint64_t* bar, uint32_t cta_rank) {
#if defined(GGEMM_PTX_TMA)
    asm volatile(
        "{\n\t.reg .b32 remote;\n\t"
        "mapa.shared::cluster.u32 remote, %0, %1;\n\t"
        "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n\t}" ::"r"(smem_addr(bar)),
        "r"(cta_rank)
        : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// mbarrier.try_wait.parity.shared::cta.b64 p, [addr], parity, 0x989680;       PTX 7.8, sm_90
// True once the phase with the given parity has completed. The suspend-time hint (10 ms in ns)
// lets the hardware park the thread instead of spinning on the issue slot.
__device__ __forceinline__ bool mbarrier_try_wait_parity(uint64_t* bar, uint32_t parity) {
#if defined(GGEMM_PTX_TMA)
    uint32_t done;
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, 0x989680;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(smem_addr(bar)), "r"(parity)
        : "memory");
    return done != 0;
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
    return false;
#endif
}

// mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [addr], parity, 0x989680;
//                                                                             PTX 8.0, sm_90
// As mbarrier_try_wait_parity, with acquire at cluster scope: for barriers that threads of the
// other CTA of a cluster arrive on with release.cluster, so that what they wrote before arriving
// is ordered before what this thread does next.
__device__ __forceinline__ bool mbarrier_try_wait_parity_cluster(uint64_t* bar, uint32_t parity) {
#if defined(GGEMM_PTX_TMA)
    uint32_t done;
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2, 0x989680;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(smem_addr(bar)), "r"(parity)
        : "memory");
    return done != 0;
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
    return false;
#endif
}

// Blocks until the phase with `parity` completes, acquiring at CTA or cluster scope. Debug builds
// (GGEMM_DEBUG_BARRIERS) bound the wait and trap, printing the barrier and phase, so a hang is
// diagnosable from one run.
template <bool kClusterScope>
__device__ __forceinline__ void mbarrier_wait_scoped(uint64_t* bar, uint32_t parity) {
    const auto done = [&] {
        return kClusterScope ? mbarrier_try_wait_parity_cluster(bar, parity)
                             : mbarrier_try_wait_parity(bar, parity);
    };
#if defined(GGEMM_DEBUG_BARRIERS)
    const long long start = clock64();
    while (!done()) {
        if (clock64() - start > (1ll << 32)) {  // about 2 s at 2 GHz
            printf("ggemm: mbarrier wait timed out: block %d thread %d barrier smem 0x%x parity %u%s\n",
                   blockIdx.x, threadIdx.x, smem_addr(bar), parity, kClusterScope ? " (cluster)" : "");
            __trap();
        }
    }
#else
    while (!done()) {
    }
#endif
}

__device__ __forceinline__ void mbarrier_wait(uint64_t* bar, uint32_t parity) {
    mbarrier_wait_scoped<false>(bar, parity);
}

__device__ __forceinline__ void mbarrier_wait_cluster(uint64_t* bar, uint32_t parity) {
    mbarrier_wait_scoped<true>(bar, parity);
}

}  // namespace ggemm::ptx
