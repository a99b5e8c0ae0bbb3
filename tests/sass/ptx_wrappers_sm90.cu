// Compile-only: kernels that call every wrapper of ptx/mbarrier.cuh, tma.h, fence.h, cluster.h,
// barrier.h, cache_policy.cuh, prefetch.cuh, load.cuh, atomic.cuh, math.cuh and wgmma.h, including forms the SM90 kernel does not use yet
// (multicast loads, TMA stores, cluster arrive), so ptxas assembles each asm string for sm_90a and dead-code
// elimination cannot hide a wrong one. check_sass.sh builds it with nvcc -cubin and looks for
// the SASS each wrapper must produce. Never linked, never run.
#include <cuda.h>

#include <cstdint>

#include "ptx/atomic.cuh"
#include "ptx/barrier.cuh"
#include "ptx/cache_policy.cuh"
#include "ptx/cluster.cuh"
#include "ptx/fence.cuh"
#include "ptx/ldmatrix.cuh"
#include "ptx/load.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/math.cuh"
#include "ptx/prefetch.cuh"
#include "ptx/smem.cuh"
#include "ptx/stmatrix.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"

using namespace ggemm::ptx;

__global__ void ptx_wrappers_sm90_sync(const __grid_constant__ CUtensorMap map, CUtensorMap* global_map,
                                       uint32_t* out) {
    __shared__ alignas(1024) uint8_t tile[16384];
    __shared__ alignas(8) uint64_t bar;
    if (threadIdx.x == 0) {
        mbarrier_init(&bar, 1);
        fence_mbarrier_init();
    }
    cluster_sync();
    if (threadIdx.x == 0) {
        tma_prefetch_map(&map);
        mbarrier_arrive_expect_tx(&bar, 3 * 8192);
        tma_load_2d(tile, &map, &bar, 0, 0);
        tma_load_3d(tile + 8192, &map, &bar, 0, 0, 0);
        tma_load_2d_multicast(tile, &map, &bar, 0x3, 64, 0);
        tma_load_3d_multicast(tile, &map, &bar, 0x3, 64, 0, 1);
        const uint64_t evict_first = l2_policy_evict_first();
        tma_load_2d_hinted(tile, &map, &bar, 128, 0, evict_first);
        mbarrier_wait(&bar, 0);
        mbarrier_arrive(&bar);
        mbarrier_arrive_count(&bar, 4);
        mbarrier_arrive_cluster(&bar, cluster_cta_rank() ^ 1u);
        out[0] = mbarrier_try_wait_parity(&bar, 1) ? cluster_num_ctas() : 0u;
        out[1] = cluster_id_x() + cluster_count_x();
        fence_proxy_async_shared();
        tma_store_2d(&map, tile, 0, 0);
        tma_store_3d(&map, tile, 0, 0, 0);
        tma_store_2d_hinted(&map, tile, 64, 0, evict_first);
        tma_store_commit();
        tma_store_wait_read<0>();
        tma_store_wait<0>();
        tensormap_replace_global_address(global_map, reinterpret_cast<uint64_t>(out));
        fence_proxy_tensormap_release();
        fence_proxy_tensormap_acquire(global_map);
    }
    named_barrier_sync(1, 128);
    // ptx/barrier.cuh: one lane of each warp elected (ELECT).
    if (elect_one_sync()) out[2 + threadIdx.x / 32] = threadIdx.x;
    // ptx/smem.cuh: shared-window stores and loads (STS, STS.64, LDS.64, LDS.128).
    const uint32_t slot = smem_addr(tile) + 16 * threadIdx.x;
    st_shared_b32(slot, threadIdx.x);
    st_shared_v2_b32(slot + 8, threadIdx.x, out[1]);
    named_barrier_sync(1, 128);
    warp_sync();
    const uint2 pair = ld_shared_v2_b32(slot ^ 16);
    const uint4 quad = ld_shared_v4_b32(slot ^ 32);
    // ptx/stmatrix.cuh: one warp-wide store of four 8 x 8 matrices (STSM).
    stmatrix_x4(smem_addr(tile) + 16 * (threadIdx.x % 32), quad.x, quad.y, pair.x, pair.y);
    named_barrier_sync(1, 128);
    // ptx/ldmatrix.cuh: one warp-wide load of four 8 x 8 matrices (LDSM).
    const uint4 matrices = ldmatrix_x4(smem_addr(tile) + 16 * ((threadIdx.x + 3) % 32));
    out[2 + threadIdx.x] = pair.x + pair.y + quad.x + quad.y + quad.z + quad.w + matrices.x + matrices.w;
    // ptx/prefetch.cuh: a line of global memory into the L1 (CCTL.E.PF1) and the L2 (CCTL.E.PF2).
    prefetch_global_l1(out + 32 * threadIdx.x + 4096);
    prefetch_global_l2(out + 32 * threadIdx.x);
    // ptx/load.cuh: a global load in place (LDG.E).
    const float* floats = reinterpret_cast<const float*>(out);
    out[3 + threadIdx.x] = __float_as_uint(ld_global_in_place(floats + 64 * threadIdx.x + 8192));
    // ptx/math.cuh: the special-function unit's 2^x and 1 / x (MUFU.EX2, MUFU.RCP).
    const float x = __uint_as_float(out[4 + threadIdx.x]);
    out[5 + threadIdx.x] = __float_as_uint(rcp_approx_ftz(1.0f + ex2_approx_ftz(x)));
}

// ptx/atomic.cuh: one lane's add of one to a 64-bit counter, issued as it stands (ATOMG.E.ADD.64),
// not aggregated over the warp (no VOTEU.ANY / POPC around it). A kernel of its own, so that no
// other code's vote or population count hides in it.
__global__ void ptx_wrappers_sm90_atomic(unsigned long long* counter, unsigned long long* out) {
    unsigned long long claimed = 0;
    if (threadIdx.x % 32 == 0) claimed = atom_add_one_relaxed_gpu(counter);
    out[threadIdx.x] = __shfl_sync(0xffffffffu, claimed, 0);
}

// One kernel per wgmma width and B major-ness, each with the whole register file (the
// accumulators of N = 256 take 128 registers per thread). kTransposeB = 1 reads B MN-major:
// 64-column atoms 8 KB apart (leading offset), 8-row groups of K 1024 bytes apart (stride).
template <int N, int kTransposeB>
__global__ void __launch_bounds__(128, 1) ptx_wrappers_sm90_wgmma(float* out) {
    __shared__ alignas(1024) uint8_t a[64 * 128];
    __shared__ alignas(1024) uint8_t b[256 * 128];
    float acc[N / 2];
#pragma unroll
    for (int i = 0; i < N / 2; ++i) acc[i] = 0.f;
    wgmma_fence();
    const uint64_t desc_a = wgmma_smem_desc(smem_addr(a), 0, 1024, WgmmaSwizzle::k128B);
    const uint64_t desc_b = kTransposeB ? wgmma_smem_desc(smem_addr(b), 8192, 1024, WgmmaSwizzle::k128B)
                                        : wgmma_smem_desc(smem_addr(b), 0, 1024, WgmmaSwizzle::k128B);
    Wgmma<N, kTransposeB>::mma(acc, desc_a, desc_b, 0u);
    wgmma_commit();
    wgmma_wait<0>();
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
        wgmma_fence_operand(acc[i]);
        sum += acc[i];
    }
    out[threadIdx.x] = sum;
}

template __global__ void ptx_wrappers_sm90_wgmma<256, 0>(float*);
template __global__ void ptx_wrappers_sm90_wgmma<192, 0>(float*);
template __global__ void ptx_wrappers_sm90_wgmma<128, 0>(float*);
template __global__ void ptx_wrappers_sm90_wgmma<64, 0>(float*);
template __global__ void ptx_wrappers_sm90_wgmma<32, 0>(float*);
template __global__ void ptx_wrappers_sm90_wgmma<256, 1>(float*);
template __global__ void ptx_wrappers_sm90_wgmma<192, 1>(float*);
template __global__ void ptx_wrappers_sm90_wgmma<128, 1>(float*);
template __global__ void ptx_wrappers_sm90_wgmma<64, 1>(float*);

// setmaxnreg takes effect only under a launch-bounds register cap, one role per warpgroup.
__global__ void __launch_bounds__(384, 1) ptx_wrappers_sm90_setmaxnreg(float* out) {
    if (threadIdx.x < 128) {
        setmaxnreg_dec<56>();
    } else {
        setmaxnreg_inc<224>();
    }
    out[threadIdx.x] = 1.f;
}
