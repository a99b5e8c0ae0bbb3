// The launch both GEMM kernels share: with discrete weights, the per-expert tensor maps are built
// first (weight_maps.cuh); then one persistent grid, in clusters of `cluster_x` CTAs along x
// when that is more than one. Every launch goes through cudaLaunchKernelEx, whose return value
// is that launch's own error.
#pragma once

#include "kernels/common/params.h"
#include "kernels/common/weight_maps.cuh"

namespace ggemm {

template <class Kernel>
cudaError_t launch_gemm(Kernel kernel, const LaunchParams& p, int threads, int smem_bytes, int cluster_x,
                        cudaStream_t stream) {
    if (p.args.weight_mode == kDiscrete) {
        const cudaError_t built = launch_build_weight_maps(p, stream);
        if (built != cudaSuccess) return built;
    }
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
