// Compile-only: pairs of kernels ours_<name> / cccl_<name>, each calling one ggemm::ptx wrapper of
// tcgen05.h or tmem.h and the cuda::ptx function of CCCL that emits the same PTX instruction, with
// the same arguments. cross_check_cccl.sh assembles this file for sm_100a and requires the tcgen05,
// TMEM and synchronization instructions of each pair's SASS to be the same sequence. Never linked,
// never run.
//
// The tcgen05 fences and a lone tcgen05.wait::ld leave no SASS instruction of their own (they only
// constrain scheduling), so for those pairs the script compares the PTX the asm statements emit.
#include <cstdint>
#include <cuda/ptx>

#include "ptx/tcgen05.cuh"
#include "ptx/tmem.cuh"

namespace cp = cuda::ptx;
namespace ours = ggemm::ptx;

// ---- MMA and its completion -----------------------------------------------------------------------

extern "C" __global__ void ours_tcgen05_mma_f16_cta1(uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc,
                                                     uint32_t idesc, bool accumulate) {
    ours::tcgen05_mma_f16_cta1(d_tmem, a_desc, b_desc, idesc, accumulate);
}
extern "C" __global__ void cccl_tcgen05_mma_f16_cta1(uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc,
                                                     uint32_t idesc, bool accumulate) {
    cp::tcgen05_mma(cp::kind_f16, cp::cta_group_1, d_tmem, a_desc, b_desc, idesc, accumulate);
}

extern "C" __global__ void ours_tcgen05_mma_f16_cta2(uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc,
                                                     uint32_t idesc, bool accumulate) {
    ours::tcgen05_mma_f16_cta2(d_tmem, a_desc, b_desc, idesc, accumulate);
}
extern "C" __global__ void cccl_tcgen05_mma_f16_cta2(uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc,
                                                     uint32_t idesc, bool accumulate) {
    cp::tcgen05_mma(cp::kind_f16, cp::cta_group_2, d_tmem, a_desc, b_desc, idesc, accumulate);
}

extern "C" __global__ void ours_tcgen05_commit() {
    __shared__ alignas(8) uint64_t bar;
    ours::tcgen05_commit(&bar);
}
extern "C" __global__ void cccl_tcgen05_commit() {
    __shared__ alignas(8) uint64_t bar;
    cp::tcgen05_commit(cp::cta_group_1, &bar);
}

extern "C" __global__ void ours_tcgen05_commit_pair_multicast(uint16_t cta_mask) {
    __shared__ alignas(8) uint64_t bar;
    ours::tcgen05_commit_pair_multicast(&bar, cta_mask);
}
extern "C" __global__ void cccl_tcgen05_commit_pair_multicast(uint16_t cta_mask) {
    __shared__ alignas(8) uint64_t bar;
    cp::tcgen05_commit_multicast(cp::cta_group_2, &bar, cta_mask);
}

extern "C" __global__ void ours_tcgen05_fence_before_thread_sync() { ours::tcgen05_fence_before_thread_sync(); }
extern "C" __global__ void cccl_tcgen05_fence_before_thread_sync() { cp::tcgen05_fence_before_thread_sync(); }

extern "C" __global__ void ours_tcgen05_fence_after_thread_sync() { ours::tcgen05_fence_after_thread_sync(); }
extern "C" __global__ void cccl_tcgen05_fence_after_thread_sync() { cp::tcgen05_fence_after_thread_sync(); }

// ---- TMEM allocation --------------------------------------------------------------------------------

extern "C" __global__ void ours_tmem_alloc(uint32_t num_columns) {
    __shared__ alignas(4) uint32_t tmem_base;
    ours::tmem_alloc(&tmem_base, num_columns);
}
extern "C" __global__ void cccl_tmem_alloc(uint32_t num_columns) {
    __shared__ alignas(4) uint32_t tmem_base;
    cp::tcgen05_alloc(cp::cta_group_1, &tmem_base, num_columns);
}

extern "C" __global__ void ours_tmem_alloc_pair(uint32_t num_columns) {
    __shared__ alignas(4) uint32_t tmem_base;
    ours::tmem_alloc_pair(&tmem_base, num_columns);
}
extern "C" __global__ void cccl_tmem_alloc_pair(uint32_t num_columns) {
    __shared__ alignas(4) uint32_t tmem_base;
    cp::tcgen05_alloc(cp::cta_group_2, &tmem_base, num_columns);
}

extern "C" __global__ void ours_tmem_dealloc(uint32_t tmem_base, uint32_t num_columns) {
    ours::tmem_dealloc(tmem_base, num_columns);
}
extern "C" __global__ void cccl_tmem_dealloc(uint32_t tmem_base, uint32_t num_columns) {
    cp::tcgen05_dealloc(cp::cta_group_1, tmem_base, num_columns);
}

extern "C" __global__ void ours_tmem_dealloc_pair(uint32_t tmem_base, uint32_t num_columns) {
    ours::tmem_dealloc_pair(tmem_base, num_columns);
}
extern "C" __global__ void cccl_tmem_dealloc_pair(uint32_t tmem_base, uint32_t num_columns) {
    cp::tcgen05_dealloc(cp::cta_group_2, tmem_base, num_columns);
}

extern "C" __global__ void ours_tmem_relinquish_alloc_permit() { ours::tmem_relinquish_alloc_permit(); }
extern "C" __global__ void cccl_tmem_relinquish_alloc_permit() {
    cp::tcgen05_relinquish_alloc_permit(cp::cta_group_1);
}

extern "C" __global__ void ours_tmem_relinquish_alloc_permit_pair() { ours::tmem_relinquish_alloc_permit_pair(); }
extern "C" __global__ void cccl_tmem_relinquish_alloc_permit_pair() {
    cp::tcgen05_relinquish_alloc_permit(cp::cta_group_2);
}

// ---- TMEM loads -------------------------------------------------------------------------------------

// Load, wait, and store every register: CCCL's tcgen05.ld is not volatile, so an unused result
// would let the compiler drop it. The stores are the same on both sides.
template <int N>
__device__ __forceinline__ void store_columns(const uint32_t (&r)[N], uint32_t* out) {
#pragma unroll
    for (int i = 0; i < N; ++i) out[i * 32 + threadIdx.x] = r[i];
}

extern "C" __global__ void ours_tmem_load_32x32b_x32(uint32_t taddr, uint32_t* out) {
    uint32_t r[32];
    ours::tmem_load_32x32b_x32(taddr, r);
    ours::tmem_wait_load();
    ours::tmem_hold_registers(r);
    store_columns(r, out);
}
extern "C" __global__ void cccl_tmem_load_32x32b_x32(uint32_t taddr, uint32_t* out) {
    uint32_t r[32];
    cp::tcgen05_ld_32x32b(r, taddr);
    cp::tcgen05_wait_ld();
    store_columns(r, out);
}

extern "C" __global__ void ours_tmem_load_32x32b_x16(uint32_t taddr, uint32_t* out) {
    uint32_t r[16];
    ours::tmem_load_32x32b_x16(taddr, r);
    ours::tmem_wait_load();
    ours::tmem_hold_registers(r);
    store_columns(r, out);
}
extern "C" __global__ void cccl_tmem_load_32x32b_x16(uint32_t taddr, uint32_t* out) {
    uint32_t r[16];
    cp::tcgen05_ld_32x32b(r, taddr);
    cp::tcgen05_wait_ld();
    store_columns(r, out);
}

extern "C" __global__ void ours_tmem_load_32x32b_x8(uint32_t taddr, uint32_t* out) {
    uint32_t r[8];
    ours::tmem_load_32x32b_x8(taddr, r);
    ours::tmem_wait_load();
    ours::tmem_hold_registers(r);
    store_columns(r, out);
}
extern "C" __global__ void cccl_tmem_load_32x32b_x8(uint32_t taddr, uint32_t* out) {
    uint32_t r[8];
    cp::tcgen05_ld_32x32b(r, taddr);
    cp::tcgen05_wait_ld();
    store_columns(r, out);
}

extern "C" __global__ void ours_tmem_wait_load() { ours::tmem_wait_load(); }
extern "C" __global__ void cccl_tmem_wait_load() { cp::tcgen05_wait_ld(); }
