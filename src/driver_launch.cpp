// cuLaunchKernelEx with a context-free kernel handle (src/driver_launch.h).
#include "src/driver_launch.h"
#include "src/launch_test_hooks.h"

#include <atomic>

#include "src/driver_api.h"

namespace ggemm {
namespace {

std::atomic<unsigned long long> g_fallbacks{0};
std::atomic<bool> g_force_runtime{false};
std::atomic<bool> g_force_general{false};

bool try_driver_launch(const DriverLaunch& launch) noexcept {
    if (g_force_runtime.load(std::memory_order_relaxed)) return false;
    const DriverApi& api = driver_api();
    // A kernel handle launches in the current context, which execute has made sure of
    // (ensure_current_context); without one the launch fails and the caller falls back.
    if (launch.kernel == nullptr || api.launch_kernel_ex == nullptr) return false;

    CUlaunchConfig config = {};
    config.gridDimX = launch.grid.x;
    config.gridDimY = launch.grid.y;
    config.gridDimZ = launch.grid.z;
    config.blockDimX = launch.block.x;
    config.blockDimY = launch.block.y;
    config.blockDimZ = launch.block.z;
    config.sharedMemBytes = launch.smem_bytes;
    config.hStream = launch.stream;
    CUlaunchAttribute cluster = {};
    if (launch.cluster_x > 1) {
        cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        cluster.value.clusterDim.x = launch.cluster_x;
        cluster.value.clusterDim.y = 1;
        cluster.value.clusterDim.z = 1;
        config.attrs = &cluster;
        config.numAttrs = 1;
    }
    // A CUkernel is accepted where cuLaunchKernelEx takes a CUfunction.
    return api.launch_kernel_ex(&config, reinterpret_cast<CUfunction>(launch.kernel), launch.params, nullptr) ==
           CUDA_SUCCESS;
}

}  // namespace

bool driver_launch(const DriverLaunch& launch) noexcept {
    if (try_driver_launch(launch)) return true;
    g_fallbacks.fetch_add(1, std::memory_order_relaxed);
    return false;
}

unsigned long long driver_launch_fallbacks() noexcept { return g_fallbacks.load(std::memory_order_relaxed); }

void force_runtime_launch(bool force) noexcept { g_force_runtime.store(force, std::memory_order_relaxed); }

void force_general_instance(bool force) noexcept { g_force_general.store(force, std::memory_order_relaxed); }

bool general_instance_forced() noexcept { return g_force_general.load(std::memory_order_relaxed); }

}  // namespace ggemm
