// Tensor memory (TMEM): allocation and the data movement between TMEM and registers.
// PTX ISA 9.7.16 (tcgen05): tcgen05.alloc / dealloc / relinquish_alloc_permit, tcgen05.ld,
// tcgen05.wait; 9.7.16.2.3 (data movement shapes). sm_100a only: none of it exists on sm_90.
//
// A TMEM address is 32 bits: lane in [31:16], column in [15:0]. A CTA's TMEM is 128 lanes x 512
// columns of 32-bit cells. A warp may only touch the 32 lanes of its quarter, (warp id % 4) * 32.
#pragma once

#include <cstdint>

#include "ptx/common.cuh"

namespace ggemm::ptx {

// tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [dst], ncols;          PTX 8.6, sm_100a
// Whole warp. Allocates `num_columns` (a power of two in [32, 512]) columns of all 128 lanes and
// writes the base TMEM address to shared memory at `dst`. Blocks while the columns are taken.
__device__ __forceinline__ void tmem_alloc(uint32_t* dst, uint32_t num_columns) {
#if defined(GGEMM_PTX_SM100A)
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" ::"r"(
                     smem_addr(dst)),
                 "r"(num_columns)
                 : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 [dst], ncols;          PTX 8.6, sm_100a
// One warp in each CTA of the pair; allocates the same columns in both CTAs' TMEM.
__device__ __forceinline__ void tmem_alloc_pair(uint32_t* dst, uint32_t num_columns) {
#if defined(GGEMM_PTX_SM100A)
    asm volatile("tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 [%0], %1;" ::"r"(
                     smem_addr(dst)),
                 "r"(num_columns)
                 : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;                    PTX 8.6, sm_100a
// Whole warp. This CTA will allocate no more, so a CTA queued behind it on the SM need not wait
// for our exit to learn that.
__device__ __forceinline__ void tmem_relinquish_alloc_permit() {
#if defined(GGEMM_PTX_SM100A)
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// tcgen05.relinquish_alloc_permit.cta_group::2.sync.aligned;                    PTX 8.6, sm_100a
__device__ __forceinline__ void tmem_relinquish_alloc_permit_pair() {
#if defined(GGEMM_PTX_SM100A)
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::2.sync.aligned;" ::: "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// tcgen05.dealloc.cta_group::1.sync.aligned.b32 taddr, ncols;                   PTX 8.6, sm_100a
// Whole warp (the warp that allocated). Every allocation must be freed before the CTA exits.
__device__ __forceinline__ void tmem_dealloc(uint32_t tmem_base, uint32_t num_columns) {
#if defined(GGEMM_PTX_SM100A)
    asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" ::"r"(tmem_base),
                 "r"(num_columns)
                 : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// tcgen05.dealloc.cta_group::2.sync.aligned.b32 taddr, ncols;                   PTX 8.6, sm_100a
__device__ __forceinline__ void tmem_dealloc_pair(uint32_t tmem_base, uint32_t num_columns) {
#if defined(GGEMM_PTX_SM100A)
    asm volatile("tcgen05.dealloc.cta_group::2.sync.aligned.b32 %0, %1;" ::"r"(tmem_base),
                 "r"(num_columns)
                 : "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// tcgen05.ld.sync.aligned.32x32b.x32.b32 {r0..r31}, [taddr];                    PTX 8.6, sm_100a
// Whole warp, same taddr in every thread. Thread t receives lane (taddr.lane + t), columns
// [taddr.col, taddr.col + 32): one fp32 accumulator row segment per thread. Asynchronous: the
// registers are valid only after tmem_wait_load() (then pass them through tmem_hold_registers).
__device__ __forceinline__ void tmem_load_32x32b_x32(uint32_t taddr, uint32_t (&r)[32]) {
#if defined(GGEMM_PTX_SM100A)
    asm volatile(
        "tcgen05.ld.sync.aligned.32x32b.x32.b32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, [%32];"
        : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]),
          "=r"(r[7]), "=r"(r[8]), "=r"(r[9]), "=r"(r[10]), "=r"(r[11]), "=r"(r[12]), "=r"(r[13]),
          "=r"(r[14]), "=r"(r[15]), "=r"(r[16]), "=r"(r[17]), "=r"(r[18]), "=r"(r[19]),
          "=r"(r[20]), "=r"(r[21]), "=r"(r[22]), "=r"(r[23]), "=r"(r[24]), "=r"(r[25]),
          "=r"(r[26]), "=r"(r[27]), "=r"(r[28]), "=r"(r[29]), "=r"(r[30]), "=r"(r[31])
        : "r"(taddr)
        : "memory");
#else
    (void)taddr;
    for (uint32_t& v : r) v = 0;
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// tcgen05.ld.sync.aligned.32x32b.x16.b32 {r0..r15}, [taddr];                    PTX 8.6, sm_100a
// As the x32 form, 16 columns.
__device__ __forceinline__ void tmem_load_32x32b_x16(uint32_t taddr, uint32_t (&r)[16]) {
#if defined(GGEMM_PTX_SM100A)
    asm volatile(
        "tcgen05.ld.sync.aligned.32x32b.x16.b32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, [%16];"
        : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]),
          "=r"(r[7]), "=r"(r[8]), "=r"(r[9]), "=r"(r[10]), "=r"(r[11]), "=r"(r[12]), "=r"(r[13]),
          "=r"(r[14]), "=r"(r[15])
        : "r"(taddr)
        : "memory");
#else
    (void)taddr;
    for (uint32_t& v : r) v = 0;
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// tcgen05.ld.sync.aligned.32x32b.x8.b32 {r0..r7}, [taddr];                      PTX 8.6, sm_100a
// As the x16 form, 8 columns.
__device__ __forceinline__ void tmem_load_32x32b_x8(uint32_t taddr, uint32_t (&r)[8]) {
#if defined(GGEMM_PTX_SM100A)
    asm volatile("tcgen05.ld.sync.aligned.32x32b.x8.b32 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]),
                   "=r"(r[6]), "=r"(r[7])
                 : "r"(taddr)
                 : "memory");
#else
    (void)taddr;
    for (uint32_t& v : r) v = 0;
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// tcgen05.wait::ld.sync.aligned;                                                PTX 8.6, sm_100a
// Whole warp. Waits for all of this thread's prior tcgen05.ld.
__device__ __forceinline__ void tmem_wait_load() {
#if defined(GGEMM_PTX_SM100A)
    asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");
#else
    ggemm_ptx_instruction_not_supported_on_this_target();
#endif
}

// No instruction: ties `r` to this point of the program. The compiler sees tcgen05.ld as producing
// its registers at once, so without this it could move arithmetic on them above the wait.
// Call it right after tmem_wait_load(): both are volatile asm, so their order is kept, and every
// later use of r depends on this statement.
template <int N>
__device__ __forceinline__ void tmem_hold_registers(uint32_t (&r)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i])::"memory");
}

}  // namespace ggemm::ptx
