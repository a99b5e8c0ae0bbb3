// tcgen05: the fifth-generation tensor core MMA (A and B from shared memory through descriptors,
// D accumulated in tensor memory), its completion tracking and its ordering fences.
// PTX ISA 9.7.16 (tcgen05): tcgen05.mma, tcgen05.commit, tcgen05.fence. sm_100a only.
//
// The descriptors these take are built by kernels/sm100/encodings.h (unit-tested on the host);
// TMEM allocation and loads are in tmem.h.
#pragma once

#include <cstdint>

#include "ptx/common.cuh"

namespace ggemm::ptx {

// tcgen05.mma.cta_group::1.kind::f16 [d_tmem], a_desc, b_desc, idesc, enable_input_d;
//                                                                              PTX 8.6, sm_100a
// Issued by ONE thread. D[M x N] (+)= A[M x 16] * B[N x 16]^T with M, N and the types in idesc.
// accumulate == false overwrites D (the first K step of a tile), true adds to it.
__device__ __forceinline__ void tcgen05_mma_f16_cta1(uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc,
                                                     uint32_t idesc, bool accumulate) {
#if defined(GGEMM_PTX_SM100A)
    asm volatile(
        "{\n\t.reg .pred accumulate;\n\t"
        "setp.ne.b32 accumulate, %4, 0;\n\t"
        "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, accumulate;\n\t}" ::"r"(d_tmem),
        "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(static_cast<uint32_t>(accumulate))
        : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// tcgen05.mma.cta_group::2.kind::f16 [d_tmem], a_desc, b_desc, idesc, enable_input_d;
//                                                                              PTX 8.6, sm_100a
// Issued by ONE thread of the even CTA of a pair: A rows come half from each CTA's shared memory
// (same offsets), D rows land half in each CTA's TMEM (same columns).
__device__ __forceinline__ void tcgen05_mma_f16_cta2(uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc,
                                                     uint32_t idesc, bool accumulate) {
#if defined(GGEMM_PTX_SM100A)
    asm volatile(
        "{\n\t.reg .pred accumulate;\n\t"
        "setp.ne.b32 accumulate, %4, 0;\n\t"
        "tcgen05.mma.cta_group::2.kind::f16 [%0], %1, %2, %3, accumulate;\n\t}" ::"r"(d_tmem),
        "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(static_cast<uint32_t>(accumulate))
        : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [bar];  PTX 8.6, sm_100a
// Issued by the thread that issued the MMAs: one arrival on `bar` (this CTA's shared memory) once
// all of this thread's earlier tcgen05 async operations have completed. Implies
// tcgen05.fence::before_thread_sync. This is what frees a smem stage and publishes an accumulator.
__device__ __forceinline__ void tcgen05_commit(uint64_t* bar) {
#if defined(GGEMM_PTX_SM100A)
    asm volatile(
        "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" ::"r"(
            smem_addr(bar))
        : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64
//     [bar], cta_mask;                                                        PTX 8.6, sm_100a
// As tcgen05_commit, for cta_group::2 MMAs: arrives on the barrier at the same offset in every
// CTA whose bit is set in cta_mask (both CTAs of the pair: their stages are both consumed).
__device__ __forceinline__ void tcgen05_commit_pair_multicast(uint64_t* bar, uint16_t cta_mask) {
#if defined(GGEMM_PTX_SM100A)
    asm volatile(
        "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64"
        " [%0], %1;" ::"r"(smem_addr(bar)),
        "h"(cta_mask)
        : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// tcgen05.fence::before_thread_sync;                                           PTX 8.6, sm_100a
// Orders this thread's earlier tcgen05 operations (e.g. tcgen05.ld of an accumulator) before a
// following synchronization (mbarrier arrive, bar.sync) that hands TMEM to another thread.
__device__ __forceinline__ void tcgen05_fence_before_thread_sync() {
#if defined(GGEMM_PTX_SM100A)
    asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// tcgen05.fence::after_thread_sync;                                            PTX 8.6, sm_100a
// Orders this thread's later tcgen05 operations after a preceding synchronization (an mbarrier
// wait, bar.sync) that received TMEM or shared-memory data from another thread.
__device__ __forceinline__ void tcgen05_fence_after_thread_sync() {
#if defined(GGEMM_PTX_SM100A)
    asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

}  // namespace ggemm::ptx
