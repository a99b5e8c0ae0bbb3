// The launch both GEMM kernels share: with discrete weights, the per-expert tensor maps are built
// first (weight_maps.cuh); then one persistent grid, in clusters of `cluster_x` CTAs along x
// when that is more than one. The GEMM goes through the driver's cuLaunchKernelEx where it can
// (driver_launch.h: less host time), else through cudaLaunchKernelEx; either returns that
// launch's own error.
#pragma once

#include "kernels/common/driver_launch.h"
#include "kernels/common/params.h"
#include "kernels/common/weight_maps.cuh"

namespace ggemm {

// The context-free handle of `kernel`, looked up on first use (null if the runtime cannot give
// one: the runtime launch serves then).
template <class Kernel>
cudaKernel_t kernel_handle(Kernel kernel) {
    static const cudaKernel_t handle = [kernel] {
        cudaKernel_t h = nullptr;
        if (cudaGetKernel(&h, reinterpret_cast<const void*>(kernel)) != cudaSuccess) {
            cudaGetLastError();
            h = nullptr;
        }
        return h;
    }();
    return handle;
}

template <class Kernel>
cudaError_t launch_gemm(Kernel kernel, const LaunchParams& p, int threads, int smem_bytes, int cluster_x,
                        cudaStream_t stream) {
    if (p.args.weight_mode == kDiscrete) {
        const cudaError_t built = launch_build_weight_maps(p, stream);
        if (built != cudaSuccess) return built;
    }
    // The driver reads the parameters during the call: pointers into p serve.
    void* params[] = {const_cast<CUtensorMap*>(&p.a_map), const_cast<CUtensorMap*>(&p.b_map),
                      const_cast<KernelArgs*>(&p.args)};
    const DriverLaunch fast = {kernel_handle(kernel), dim3(static_cast<unsigned>(p.grid)),
                               dim3(static_cast<unsigned>(threads)), static_cast<unsigned>(smem_bytes),
                               static_cast<unsigned>(cluster_x), stream, params};
    if (driver_launch(fast)) return cudaSuccess;

    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(static_cast<unsigned>(p.grid));
    config.blockDim = dim3(static_cast<unsigned>(threads));
    config.dynamicSmemBytes = static_cast<size_t>(smem_bytes);
    config.stream = stream;
    cudaLaunchAttribute cluster = {};
    if (cluster_x > 1) {
        cluster.id = cudaLaunchAttributeClusterDimension;
        cluster.val.clusterDim.x = static_cast<unsigned>(cluster_x);
        cluster.val.clusterDim.y = 1;
        cluster.val.clusterDim.z = 1;
        config.attrs = &cluster;
        config.numAttrs = 1;
    }
    return cudaLaunchKernelEx(&config, kernel, p.a_map, p.b_map, p.args);
}

}  // namespace ggemm
