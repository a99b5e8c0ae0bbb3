// TMA: the bulk tensor copy engine, driven by tensor maps. PTX ISA 9.7.9.25
// (cp.async.bulk.tensor), 9.7.9.26 (cp.async.bulk.commit_group / wait_group), 9.7.9.27
// (prefetch.tensormap), 9.7.9.29 (tensormap.replace).
#pragma once

#include <cstdint>

#include "ptx/common.cuh"

namespace ggemm::ptx {

// prefetch.tensormap [addr];                                                 PTX 8.0, sm_90
// Pulls a tensor map (kernel parameter or global) into the TMA unit's cache ahead of first use.
__device__ __forceinline__ void tma_prefetch_map(const void* map) {
#if defined(GGEMM_PTX_TMA)
    asm volatile("prefetch.tensormap [%0];" ::"l"(map) : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
//     [dst], [map, {c0, c1}], [bar];                                         PTX 8.0, sm_90
// Copies one box into shared memory and completes its bytes on `bar`. c0 is the innermost
// (contiguous) coordinate. Out-of-bounds elements are zero-filled and still count as bytes.
__device__ __forceinline__ void tma_load_2d(void* dst, const void* map, uint64_t* bar, int32_t c0,
                                            int32_t c1) {
#if defined(GGEMM_PTX_TMA)
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_addr(dst)),
        "l"(map), "r"(c0), "r"(c1), "r"(smem_addr(bar))
        : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint
//     [dst], [map, {c0, c1}], [bar], policy;                                 PTX 8.0, sm_90
// tma_load_2d with an L2 cache policy (createpolicy, ptx/cache_policy.cuh) for the lines it reads.
__device__ __forceinline__ void tma_load_2d_hinted(void* dst, const void* map, uint64_t* bar, int32_t c0,
                                                   int32_t c1, uint64_t policy) {
#if defined(GGEMM_PTX_TMA)
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
        " [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(smem_addr(dst)),
        "l"(map), "r"(c0), "r"(c1), "r"(smem_addr(bar)), "l"(policy)
        : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
//     [dst], [map, {c0, c1, c2}], [bar];                                     PTX 8.0, sm_90
__device__ __forceinline__ void tma_load_3d(void* dst, const void* map, uint64_t* bar, int32_t c0,
                                            int32_t c1, int32_t c2) {
#if defined(GGEMM_PTX_TMA)
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(smem_addr(dst)),
        "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(smem_addr(bar))
        : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster
//     [dst], [map, {c0, c1}], [bar], cta_mask;                              PTX 8.0, sm_90a
// One load delivered to the same shared-memory offset (and barrier offset) of every CTA of the
// cluster whose bit is set in cta_mask.
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const void* map, uint64_t* bar,
                                                      uint16_t cta_mask, int32_t c0, int32_t c1) {
#if defined(GGEMM_PTX_TMA)
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(smem_addr(dst)),
        "l"(map), "r"(c0), "r"(c1), "r"(smem_addr(bar)), "h"(cta_mask)
        : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster
//     [dst], [map, {c0, c1, c2}], [bar], cta_mask;                          PTX 8.0, sm_90a
__device__ __forceinline__ void tma_load_3d_multicast(void* dst, const void* map, uint64_t* bar,
                                                      uint16_t cta_mask, int32_t c0, int32_t c1,
                                                      int32_t c2) {
#if defined(GGEMM_PTX_TMA)
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        ".multicast::cluster [%0], [%1, {%2, %3, %4}], [%5], %6;" ::"r"(smem_addr(dst)),
        "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(smem_addr(bar)), "h"(cta_mask)
        : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [map, {c0, c1}], [src];  PTX 8.0, sm_90
// Stores one box from shared memory; elements outside the tensor are not written. The caller
// makes its shared-memory writes visible first (fence_proxy_async_shared + a barrier).
__device__ __forceinline__ void tma_store_2d(const void* map, const void* src, int32_t c0, int32_t c1) {
#if defined(GGEMM_PTX_TMA)
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];" ::"l"(map),
                 "r"(c0), "r"(c1), "r"(smem_addr(src))
                 : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group.L2::cache_hint [map, {c0, c1}], [src], policy;
//                                                                            PTX 8.0, sm_90
// tma_store_2d with an L2 cache policy (createpolicy, ptx/cache_policy.cuh) for the lines it writes.
__device__ __forceinline__ void tma_store_2d_hinted(const void* map, const void* src, int32_t c0, int32_t c1,
                                                    uint64_t policy) {
#if defined(GGEMM_PTX_TMA)
    asm volatile(
        "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group.L2::cache_hint [%0, {%1, %2}], [%3], %4;" ::"l"(
            map),
        "r"(c0), "r"(c1), "r"(smem_addr(src)), "l"(policy)
        : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [map, {c0, c1, c2}], [src];
//                                                                            PTX 8.0, sm_90
// The 3-D form of tma_store_2d: elements outside the tensor (any of its three dims) are not
// written.
__device__ __forceinline__ void tma_store_3d(const void* map, const void* src, int32_t c0, int32_t c1,
                                             int32_t c2) {
#if defined(GGEMM_PTX_TMA)
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %3}], [%4];" ::"l"(map),
                 "r"(c0), "r"(c1), "r"(c2), "r"(smem_addr(src))
                 : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group [map, {c0, c1, c2}], [src];
//                                                                            PTX 8.0, sm_90
// tma_store_3d that adds instead of writing: each element of the box inside the tensor becomes
// its old value plus the staged one, performed in the memory system. For an f32 tensor the add
// rounds to nearest even and keeps subnormal inputs and results (PTX ISA: the default of the
// f32 add is that of .noftz), so it equals the thread's own add.rn.f32 of the same two values.
// Completion and buffer reuse as for the stores (commit_group / wait_group).
__device__ __forceinline__ void tma_reduce_add_3d(const void* map, const void* src, int32_t c0, int32_t c1,
                                                  int32_t c2) {
#if defined(GGEMM_PTX_TMA)
    asm volatile("cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group [%0, {%1, %2, %3}], [%4];" ::"l"(
                     map),
                 "r"(c0), "r"(c1), "r"(c2), "r"(smem_addr(src))
                 : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// cp.async.bulk.commit_group;                                                 PTX 8.0, sm_90
// Closes the group of bulk stores issued so far by this thread.
__device__ __forceinline__ void tma_store_commit() {
#if defined(GGEMM_PTX_TMA)
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// cp.async.bulk.wait_group.read N;                                            PTX 8.0, sm_90
// Waits until at most N bulk-store groups still read their shared-memory source, so the
// staging buffer may be rewritten.
template <int N>
__device__ __forceinline__ void tma_store_wait_read() {
    static_assert(N >= 0 && N <= 63, "wait_group takes a small immediate");
#if defined(GGEMM_PTX_TMA)
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// cp.async.bulk.wait_group N;                                                 PTX 8.0, sm_90
// Waits until at most N bulk-store groups of this thread are still pending, their writes to
// global memory included: the last wait before a CTA that stored through TMA exits.
template <int N>
__device__ __forceinline__ void tma_store_wait() {
    static_assert(N >= 0 && N <= 63, "wait_group takes a small immediate");
#if defined(GGEMM_PTX_TMA)
    asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// tensormap.replace.tile.global_address.global.b1024.b64 [map], address;    PTX 8.3, sm_90a / sm_100a
// Rewrites the base address of a 128-byte tensor map that lives in global memory.
__device__ __forceinline__ void tensormap_replace_global_address(void* global_map, uint64_t address) {
#if defined(GGEMM_PTX_SM90A) || defined(GGEMM_PTX_SM100A)
    // The .global operand takes a global-window address: convert, as cuda::ptx does (the SASS is
    // the same today, where generic and global addresses of global memory coincide).
    asm volatile("tensormap.replace.tile.global_address.global.b1024.b64 [%0], %1;" ::"l"(
                     __cvta_generic_to_global(global_map)),
                 "l"(address)
                 : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

}  // namespace ggemm::ptx
