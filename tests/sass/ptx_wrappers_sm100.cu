// Compile-only: one kernel that calls every wrapper of ptx/tcgen05.cuh and ptx/tmem.cuh, including the
// forms the library's kernel does not use yet (cta_group::2, the x8 load), so ptxas assembles each
// asm string for sm_100a and dead-code elimination cannot hide a wrong one. check_sass.sh builds
// it with nvcc -cubin and looks for the SASS each wrapper must produce. Never linked, never run.
#include <cstdint>

#include "ptx/tcgen05.cuh"
#include "ptx/tmem.cuh"

// One kernel per CTA granularity: ptxas refuses a kernel that mixes cta_group::1 and ::2.
__global__ void ptx_wrappers_sm100_cta1(uint64_t a_desc, uint64_t b_desc, uint32_t idesc, uint32_t* out) {
    __shared__ uint32_t tmem_slot;
    __shared__ alignas(8) uint64_t bar;
    using namespace ggemm::ptx;
    if (threadIdx.x < 32) {
        tmem_alloc(&tmem_slot, 64);
        tmem_relinquish_alloc_permit();
    }
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    tcgen05_fence_after_thread_sync();
    const uint32_t tmem = tmem_slot;
    if (threadIdx.x == 0) {
        tcgen05_mma_f16_cta1(tmem, a_desc, b_desc, idesc, out[0] != 0);
        tcgen05_commit(&bar);
    }
    uint32_t r32[32];
    uint32_t r16[16];
    uint32_t r8[8];
    tmem_load_32x32b_x32(tmem + ((threadIdx.x / 32 % 4 * 32) << 16), r32);
    tmem_load_32x32b_x16(tmem + 32, r16);
    tmem_load_32x32b_x8(tmem + 48, r8);
    tmem_wait_load();
    tmem_hold_registers(r32);
    tmem_hold_registers(r16);
    tmem_hold_registers(r8);
    uint32_t sum = 0;
    for (uint32_t v : r32) sum += v;
    for (uint32_t v : r16) sum += v;
    for (uint32_t v : r8) sum += v;
    out[threadIdx.x] = sum;
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    if (threadIdx.x < 32) tmem_dealloc(tmem, 64);
}

__global__ void __cluster_dims__(2, 1, 1)
    ptx_wrappers_sm100_cta2(uint64_t a_desc, uint64_t b_desc, uint32_t idesc, uint32_t* out) {
    __shared__ uint32_t tmem_slot;
    __shared__ alignas(8) uint64_t bar;
    using namespace ggemm::ptx;
    if (threadIdx.x < 32) {
        tmem_alloc_pair(&tmem_slot, 64);
        tmem_relinquish_alloc_permit_pair();
    }
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    tcgen05_fence_after_thread_sync();
    const uint32_t tmem = tmem_slot;
    if (threadIdx.x == 0) {
        tcgen05_mma_f16_cta2(tmem, a_desc, b_desc, idesc, out[0] != 0);
        tcgen05_commit_pair_multicast(&bar, 0x3);
    }
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    if (threadIdx.x < 32) tmem_dealloc_pair(tmem, 64);
}
