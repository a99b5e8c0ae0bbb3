// Compile-only: pairs of kernels ours_<name> / cccl_<name>, each calling one ggemm::ptx wrapper
// (mbarrier.h, tma.h, fence.h, cluster.h) and the cuda::ptx function of CCCL that emits the same
// PTX instruction, with the same arguments. cross_check_cccl.sh assembles this file for sm_90a and
// for sm_100a (the SM100 kernel uses the same mbarrier / TMA wrappers) and requires the
// synchronization, TMA and fence instructions of each pair's SASS to be the same sequence. The
// PTX spellings differ (CCCL writes .release.cta, returns the state, uses shared::cta where we
// write `_`), so equal machine code is the meaningful test. Never linked, never run.
//
// No cuda::ptx counterpart, so not cross-checked here (check_sass.sh still assembles them):
//   tma_prefetch_map (prefetch.tensormap), named_barrier_sync (bar.sync), stmatrix_x4
//   (ptx/stmatrix.cuh) and ldmatrix_x4 (ptx/ldmatrix.cuh). cluster_cta_rank / cluster_num_ctas
//   are plain special-register moves with no synchronization to compare.
#include <cuda.h>

#include <cstdint>
#include <cuda/ptx>

#include "ptx/cluster.cuh"
#include "ptx/fence.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"

namespace cp = cuda::ptx;
namespace ours = ggemm::ptx;

// The suspend-time hint our try_wait passes (10 ms in ns); CCCL takes it as an argument, by
// reference, hence a device variable.
__device__ constexpr uint32_t kSuspendHint = 0x989680u;

// ---- mbarrier -------------------------------------------------------------------------------------

extern "C" __global__ void ours_mbarrier_init(uint32_t arrivals) {
    __shared__ alignas(8) uint64_t bar;
    ours::mbarrier_init(&bar, arrivals);
}
extern "C" __global__ void cccl_mbarrier_init(uint32_t arrivals) {
    __shared__ alignas(8) uint64_t bar;
    cp::mbarrier_init(&bar, arrivals);
}

// Ours discards the state (`_`); CCCL's CTA-space form returns it. Left unused, it is not kept.
extern "C" __global__ void ours_mbarrier_arrive() {
    __shared__ alignas(8) uint64_t bar;
    ours::mbarrier_arrive(&bar);
}
extern "C" __global__ void cccl_mbarrier_arrive() {
    __shared__ alignas(8) uint64_t bar;
    cp::mbarrier_arrive(cp::sem_release, cp::scope_cta, cp::space_shared, &bar);
}

extern "C" __global__ void ours_mbarrier_arrive_count(uint32_t count) {
    __shared__ alignas(8) uint64_t bar;
    ours::mbarrier_arrive_count(&bar, count);
}
extern "C" __global__ void cccl_mbarrier_arrive_count(uint32_t count) {
    __shared__ alignas(8) uint64_t bar;
    cp::mbarrier_arrive(cp::sem_release, cp::scope_cta, cp::space_shared, &bar, count);
}

extern "C" __global__ void ours_mbarrier_arrive_expect_tx(uint32_t bytes) {
    __shared__ alignas(8) uint64_t bar;
    ours::mbarrier_arrive_expect_tx(&bar, bytes);
}
extern "C" __global__ void cccl_mbarrier_arrive_expect_tx(uint32_t bytes) {
    __shared__ alignas(8) uint64_t bar;
    cp::mbarrier_arrive_expect_tx(cp::sem_release, cp::scope_cta, cp::space_shared, &bar, bytes);
}

// CCCL has no mapa; __cluster_map_shared_rank gives it the peer CTA's barrier address instead.
extern "C" __global__ void ours_mbarrier_arrive_cluster(uint32_t cta_rank) {
    __shared__ alignas(8) uint64_t bar;
    ours::mbarrier_arrive_cluster(&bar, cta_rank);
}
extern "C" __global__ void cccl_mbarrier_arrive_cluster(uint32_t cta_rank) {
    __shared__ alignas(8) uint64_t bar;
    auto* peer_bar = static_cast<uint64_t*>(__cluster_map_shared_rank(&bar, cta_rank));
    cp::mbarrier_arrive(cp::sem_release, cp::scope_cluster, cp::space_cluster, peer_bar);
}

// Our CTA form spells no .acquire.cta; that is the default, so CCCL's explicit form must match.
extern "C" __global__ void ours_mbarrier_try_wait_parity(uint32_t parity, uint32_t* done) {
    __shared__ alignas(8) uint64_t bar;
    *done = ours::mbarrier_try_wait_parity(&bar, parity);
}
extern "C" __global__ void cccl_mbarrier_try_wait_parity(uint32_t parity, uint32_t* done) {
    __shared__ alignas(8) uint64_t bar;
    *done = cp::mbarrier_try_wait_parity(cp::sem_acquire, cp::scope_cta, &bar, parity, kSuspendHint);
}

extern "C" __global__ void ours_mbarrier_try_wait_parity_cluster(uint32_t parity, uint32_t* done) {
    __shared__ alignas(8) uint64_t bar;
    *done = ours::mbarrier_try_wait_parity_cluster(&bar, parity);
}
extern "C" __global__ void cccl_mbarrier_try_wait_parity_cluster(uint32_t parity, uint32_t* done) {
    __shared__ alignas(8) uint64_t bar;
    *done = cp::mbarrier_try_wait_parity(cp::sem_acquire, cp::scope_cluster, &bar, parity, kSuspendHint);
}

// The blocking waits the kernels call: the same loops around the same try_wait.
extern "C" __global__ void ours_mbarrier_wait(uint32_t parity) {
    __shared__ alignas(8) uint64_t bar;
    ours::mbarrier_wait(&bar, parity);
}
extern "C" __global__ void cccl_mbarrier_wait(uint32_t parity) {
    __shared__ alignas(8) uint64_t bar;
    while (!cp::mbarrier_try_wait_parity(cp::sem_acquire, cp::scope_cta, &bar, parity, kSuspendHint)) {
    }
}

extern "C" __global__ void ours_mbarrier_wait_cluster(uint32_t parity) {
    __shared__ alignas(8) uint64_t bar;
    ours::mbarrier_wait_cluster(&bar, parity);
}
extern "C" __global__ void cccl_mbarrier_wait_cluster(uint32_t parity) {
    __shared__ alignas(8) uint64_t bar;
    while (!cp::mbarrier_try_wait_parity(cp::sem_acquire, cp::scope_cluster, &bar, parity, kSuspendHint)) {
    }
}

// ---- TMA loads and stores -------------------------------------------------------------------------

extern "C" __global__ void ours_tma_load_2d(const __grid_constant__ CUtensorMap map, int32_t c0, int32_t c1) {
    __shared__ alignas(1024) uint8_t tile[8192];
    __shared__ alignas(8) uint64_t bar;
    ours::tma_load_2d(tile, &map, &bar, c0, c1);
}
extern "C" __global__ void cccl_tma_load_2d(const __grid_constant__ CUtensorMap map, int32_t c0, int32_t c1) {
    __shared__ alignas(1024) uint8_t tile[8192];
    __shared__ alignas(8) uint64_t bar;
    const int32_t coords[2] = {c0, c1};
    cp::cp_async_bulk_tensor(cp::space_cluster, cp::space_global, tile, &map, coords, &bar);
}

extern "C" __global__ void ours_tma_load_3d(const __grid_constant__ CUtensorMap map, int32_t c0, int32_t c1,
                                            int32_t c2) {
    __shared__ alignas(1024) uint8_t tile[8192];
    __shared__ alignas(8) uint64_t bar;
    ours::tma_load_3d(tile, &map, &bar, c0, c1, c2);
}
extern "C" __global__ void cccl_tma_load_3d(const __grid_constant__ CUtensorMap map, int32_t c0, int32_t c1,
                                            int32_t c2) {
    __shared__ alignas(1024) uint8_t tile[8192];
    __shared__ alignas(8) uint64_t bar;
    const int32_t coords[3] = {c0, c1, c2};
    cp::cp_async_bulk_tensor(cp::space_cluster, cp::space_global, tile, &map, coords, &bar);
}

extern "C" __global__ void ours_tma_load_2d_multicast(const __grid_constant__ CUtensorMap map, uint16_t cta_mask,
                                                      int32_t c0, int32_t c1) {
    __shared__ alignas(1024) uint8_t tile[8192];
    __shared__ alignas(8) uint64_t bar;
    ours::tma_load_2d_multicast(tile, &map, &bar, cta_mask, c0, c1);
}
extern "C" __global__ void cccl_tma_load_2d_multicast(const __grid_constant__ CUtensorMap map, uint16_t cta_mask,
                                                      int32_t c0, int32_t c1) {
    __shared__ alignas(1024) uint8_t tile[8192];
    __shared__ alignas(8) uint64_t bar;
    const int32_t coords[2] = {c0, c1};
    cp::cp_async_bulk_tensor(cp::space_cluster, cp::space_global, tile, &map, coords, &bar, cta_mask);
}

extern "C" __global__ void ours_tma_load_3d_multicast(const __grid_constant__ CUtensorMap map, uint16_t cta_mask,
                                                      int32_t c0, int32_t c1, int32_t c2) {
    __shared__ alignas(1024) uint8_t tile[8192];
    __shared__ alignas(8) uint64_t bar;
    ours::tma_load_3d_multicast(tile, &map, &bar, cta_mask, c0, c1, c2);
}
extern "C" __global__ void cccl_tma_load_3d_multicast(const __grid_constant__ CUtensorMap map, uint16_t cta_mask,
                                                      int32_t c0, int32_t c1, int32_t c2) {
    __shared__ alignas(1024) uint8_t tile[8192];
    __shared__ alignas(8) uint64_t bar;
    const int32_t coords[3] = {c0, c1, c2};
    cp::cp_async_bulk_tensor(cp::space_cluster, cp::space_global, tile, &map, coords, &bar, cta_mask);
}

// The epilogue's sequence: store a box, close the bulk group, wait until its source may be reused.
extern "C" __global__ void ours_tma_store_2d_commit_wait(const __grid_constant__ CUtensorMap map, int32_t c0,
                                                         int32_t c1) {
    __shared__ alignas(1024) uint8_t tile[8192];
    ours::tma_store_2d(&map, tile, c0, c1);
    ours::tma_store_commit();
    ours::tma_store_wait_read<0>();
}
extern "C" __global__ void cccl_tma_store_2d_commit_wait(const __grid_constant__ CUtensorMap map, int32_t c0,
                                                         int32_t c1) {
    __shared__ alignas(1024) uint8_t tile[8192];
    const int32_t coords[2] = {c0, c1};
    cp::cp_async_bulk_tensor(cp::space_global, cp::space_shared, &map, coords, tile);
    cp::cp_async_bulk_commit_group();
    cp::cp_async_bulk_wait_group_read(cp::n32_t<0>{});
}
extern "C" __global__ void ours_tma_store_3d_commit_wait(const __grid_constant__ CUtensorMap map, int32_t c0,
                                                         int32_t c1, int32_t c2) {
    __shared__ alignas(1024) uint8_t tile[8192];
    ours::tma_store_3d(&map, tile, c0, c1, c2);
    ours::tma_store_commit();
    ours::tma_store_wait_read<0>();
}
extern "C" __global__ void cccl_tma_store_3d_commit_wait(const __grid_constant__ CUtensorMap map, int32_t c0,
                                                         int32_t c1, int32_t c2) {
    __shared__ alignas(1024) uint8_t tile[8192];
    const int32_t coords[3] = {c0, c1, c2};
    cp::cp_async_bulk_tensor(cp::space_global, cp::space_shared, &map, coords, tile);
    cp::cp_async_bulk_commit_group();
    cp::cp_async_bulk_wait_group_read(cp::n32_t<0>{});
}

// A non-zero group count, so a wrong immediate in wait_group.read shows as a different DEPBAR.
extern "C" __global__ void ours_tma_store_wait_read_1() {
    ours::tma_store_commit();
    ours::tma_store_wait_read<1>();
}
extern "C" __global__ void cccl_tma_store_wait_read_1() {
    cp::cp_async_bulk_commit_group();
    cp::cp_async_bulk_wait_group_read(cp::n32_t<1>{});
}

// The wait before a CTA that stored through TMA exits: writes done, not only the reads.
extern "C" __global__ void ours_tma_store_wait_0() {
    ours::tma_store_commit();
    ours::tma_store_wait<0>();
}
extern "C" __global__ void cccl_tma_store_wait_0() {
    cp::cp_async_bulk_commit_group();
    cp::cp_async_bulk_wait_group(cp::n32_t<0>{});
}

extern "C" __global__ void ours_tensormap_replace_global_address(CUtensorMap* global_map, uint64_t address) {
    ours::tensormap_replace_global_address(global_map, address);
}
extern "C" __global__ void cccl_tensormap_replace_global_address(CUtensorMap* global_map, uint64_t address) {
    cp::tensormap_replace_global_address(cp::space_global, global_map, address);
}

// ---- fences ---------------------------------------------------------------------------------------

extern "C" __global__ void ours_fence_proxy_async_shared() { ours::fence_proxy_async_shared(); }
extern "C" __global__ void cccl_fence_proxy_async_shared() { cp::fence_proxy_async(cp::space_shared); }

extern "C" __global__ void ours_fence_proxy_tensormap_release() { ours::fence_proxy_tensormap_release(); }
extern "C" __global__ void cccl_fence_proxy_tensormap_release() {
    cp::fence_proxy_tensormap_generic(cp::sem_release, cp::scope_gpu);
}

extern "C" __global__ void ours_fence_proxy_tensormap_acquire(const CUtensorMap* global_map) {
    ours::fence_proxy_tensormap_acquire(global_map);
}
extern "C" __global__ void cccl_fence_proxy_tensormap_acquire(const CUtensorMap* global_map) {
    cp::fence_proxy_tensormap_generic(cp::sem_acquire, cp::scope_gpu, global_map, cp::n32_t<128>{});
}

// fence.mbarrier_init leaves no SASS instruction of its own (the cluster barrier that must follow
// it carries the ordering), so the script compares this pair's PTX instead.
extern "C" __global__ void ours_fence_mbarrier_init() { ours::fence_mbarrier_init(); }
extern "C" __global__ void cccl_fence_mbarrier_init() { cp::fence_mbarrier_init(cp::sem_release, cp::scope_cluster); }

// ---- cluster --------------------------------------------------------------------------------------

// Ours uses the .aligned forms (every thread of the warp arrives together); CCCL offers only the
// unaligned ones. ptxas emits the same barrier for both, which this pair keeps true.
extern "C" __global__ void ours_cluster_sync() { ours::cluster_sync(); }
extern "C" __global__ void cccl_cluster_sync() {
    cp::barrier_cluster_arrive(cp::sem_release);
    cp::barrier_cluster_wait(cp::sem_acquire);
}

// Barrier setup as the kernels do it: init, publish to the async proxy and the cluster, sync.
extern "C" __global__ void ours_mbarrier_setup(uint32_t arrivals) {
    __shared__ alignas(8) uint64_t bar;
    ours::mbarrier_init(&bar, arrivals);
    ours::fence_mbarrier_init();
    ours::cluster_sync();
}
extern "C" __global__ void cccl_mbarrier_setup(uint32_t arrivals) {
    __shared__ alignas(8) uint64_t bar;
    cp::mbarrier_init(&bar, arrivals);
    cp::fence_mbarrier_init(cp::sem_release, cp::scope_cluster);
    cp::barrier_cluster_arrive(cp::sem_release);
    cp::barrier_cluster_wait(cp::sem_acquire);
}
