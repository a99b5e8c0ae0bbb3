// The host launch both GEMM kernels share: with discrete weights, the per-expert tensor maps are
// built first (kernels/common/weight_maps.cuh); then one persistent grid, in clusters of
// `cluster_x` CTAs along x when that is more than one. The GEMM goes through the driver's
// cuLaunchKernelEx where it can (src/driver_launch.h: less host time), else through
// cudaLaunchKernelEx; either returns that launch's own error.
//
// Host code, but templates over the kernels: only the translation units that instantiate the
// kernels (src/variants_sm90_*.cu through src/variants_sm90.cuh, src/variants_sm100.cu) include
// it, hence .cuh.
#pragma once

#include "kernels/common/glu_reduce.cuh"
#include "kernels/common/params.h"
#include "kernels/common/weight_maps.cuh"
#include "src/driver_launch.h"
#include "src/kernel_variant.h"
#include "src/workspace.h"

namespace ggemm {

// Enqueues the map builder ahead of a discrete-mode GEMM launch.
static inline cudaError_t launch_build_weight_maps(const LaunchParams& p, cudaStream_t stream) {
    constexpr int kThreads = 128;
    const int blocks = (p.args.num_experts + kThreads - 1) / kThreads;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(static_cast<unsigned>(blocks));
    config.blockDim = dim3(kThreads);
    config.stream = stream;
    // The launch's own error, not the runtime's last one (which an earlier call could have left).
    return cudaLaunchKernelEx(&config, build_weight_maps, p.b_map, p.b_ptrs, p.args.b_maps,
                              const_cast<uint32_t*>(p.args.weight_status), p.args.num_experts,
                              p.args.device_status);
}

using GemmKernel = void (*)(CUtensorMap, CUtensorMap, KernelArgs);
// Kernels that also store D with TMA take its map after B's.
using GemmKernelWithOutputMap = void (*)(CUtensorMap, CUtensorMap, CUtensorMap, KernelArgs);
// dGLU through TMA takes the saved pre-activation's map after D's.
using GemmKernelWithPreMap = void (*)(CUtensorMap, CUtensorMap, CUtensorMap, CUtensorMap, KernelArgs);

// The context-free handle of kKernel, looked up on first use (null if the runtime cannot give
// one: the runtime launch serves then). The kernel is a template argument, not a function
// argument: every kernel instance needs its own static (they all share one type).
template <auto kKernel>
cudaKernel_t kernel_handle() {
    static const cudaKernel_t handle = [] {
        cudaKernel_t h = nullptr;
        if (cudaGetKernel(&h, reinterpret_cast<const void*>(kKernel)) != cudaSuccess) {
            cudaGetLastError();
            h = nullptr;
        }
        return h;
    }();
    return handle;
}

// Launches kKernel with `arguments` (references into p: the driver reads them during the call).
template <auto kKernel, class... Arguments>
cudaError_t launch_persistent(const LaunchParams& p, int threads, int smem_bytes, int cluster_x, cudaStream_t stream,
                              const Arguments&... arguments) {
    if (p.args.weight_mode == kDiscrete) {
        const cudaError_t built = launch_build_weight_maps(p, stream);
        if (built != cudaSuccess) return built;
    }
    void* params[] = {const_cast<void*>(static_cast<const void*>(&arguments))...};
    const DriverLaunch fast = {kernel_handle<kKernel>(), dim3(static_cast<unsigned>(p.grid)),
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
    return cudaLaunchKernelEx(&config, kKernel, arguments...);
}

template <GemmKernel kKernel>
cudaError_t launch_gemm(const LaunchParams& p, int threads, int smem_bytes, int cluster_x, cudaStream_t stream) {
    return launch_persistent<kKernel>(p, threads, smem_bytes, cluster_x, stream, p.a_map, p.b_map, p.args);
}

template <GemmKernelWithOutputMap kKernel>
cudaError_t launch_gemm_with_output_map(const LaunchParams& p, int threads, int smem_bytes, int cluster_x,
                                        cudaStream_t stream) {
    return launch_persistent<kKernel>(p, threads, smem_bytes, cluster_x, stream, p.a_map, p.b_map, p.d_map,
                                      p.args);
}

template <GemmKernelWithPreMap kKernel>
cudaError_t launch_gemm_with_pre_map(const LaunchParams& p, int threads, int smem_bytes, cudaStream_t stream) {
    return launch_persistent<kKernel>(p, threads, smem_bytes, 1, stream, p.a_map, p.b_map, p.d_map, p.pre_map,
                                      p.args);
}

using ReduceDProbKernel = void (*)(const float*, int64_t, int64_t, float*);

// dGLU: d_prob from the GEMM's partial sums by kReduce (the architecture's reduce_d_prob,
// kernels/common/glu_reduce.cuh), in stream order after the GEMM.
template <ReduceDProbKernel kReduce>
cudaError_t launch_reduce_d_prob(const KernelArgs& args, cudaStream_t stream) {
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(static_cast<unsigned>((args.m + kReduceDProbThreads - 1) / kReduceDProbThreads));
    config.blockDim = dim3(kReduceDProbThreads);
    config.stream = stream;
    return cudaLaunchKernelEx(&config, kReduce, static_cast<const float*>(args.d_prob_partials),
                              static_cast<int64_t>(glu_partial_blocks(args.n)), args.m, args.d_prob);
}

}  // namespace ggemm
