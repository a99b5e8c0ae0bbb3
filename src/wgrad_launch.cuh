// The host launch both weight-gradient kernels share (wgrad_sm90, wgrad_sm100: the same
// parameters): one persistent grid, through the driver's cuLaunchKernelEx where it can
// (src/driver_launch.h: less host time), else through cudaLaunchKernelEx; either returns that
// launch's own error.
//
// Host code, but a template over the kernels: only the translation units that instantiate them
// (src/wgrad_variants_sm90.cu, src/wgrad_variants_sm100.cu) include it, hence .cuh.
#pragma once

#include "src/launch.cuh"
#include "src/wgrad_variant.h"

namespace ggemm {

using WgradKernel = void (*)(CUtensorMap, CUtensorMap, CUtensorMap, WgradKernelArgs);

template <WgradKernel kKernel>
cudaError_t launch_wgrad(const WgradLaunchParams& p, int threads, int smem_bytes, cudaStream_t stream) {
    void* params[] = {const_cast<CUtensorMap*>(&p.x1_map), const_cast<CUtensorMap*>(&p.x2_map),
                      const_cast<CUtensorMap*>(&p.out_map), const_cast<WgradKernelArgs*>(&p.args)};
    const DriverLaunch fast = {kernel_handle<kKernel>(), dim3(static_cast<unsigned>(p.grid)),
                               dim3(static_cast<unsigned>(threads)), static_cast<unsigned>(smem_bytes), 1u, stream,
                               params};
    if (driver_launch(fast)) return cudaSuccess;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(static_cast<unsigned>(p.grid));
    config.blockDim = dim3(static_cast<unsigned>(threads));
    config.dynamicSmemBytes = static_cast<size_t>(smem_bytes);
    config.stream = stream;
    return cudaLaunchKernelEx(&config, kKernel, p.x1_map, p.x2_map, p.out_map, p.args);
}

}  // namespace ggemm
