// The SM90 weight-gradient variants: one per tile width along Q. Stages fill the shared memory
// the tile leaves. Compiled for sm_90a only: this translation unit instantiates the kernels and
// their host-side prepare and launch.
#include "kernels/sm90/wgrad_sm90.cuh"
#include "src/driver_launch.h"
#include "src/wgrad_variant.h"

namespace ggemm {

namespace sm90 {

template <class Cfg>
cudaError_t wgrad_prepare() {
    return cudaFuncSetAttribute(wgrad_sm90<Cfg>, cudaFuncAttributeMaxDynamicSharedMemorySize, kWgradSmemBytes<Cfg>);
}

// The context-free handle of the kernel, looked up once (null: the runtime launch serves).
template <class Cfg>
cudaKernel_t wgrad_kernel_handle() {
    static const cudaKernel_t handle = [] {
        cudaKernel_t h = nullptr;
        if (cudaGetKernel(&h, reinterpret_cast<const void*>(wgrad_sm90<Cfg>)) != cudaSuccess) {
            cudaGetLastError();
            h = nullptr;
        }
        return h;
    }();
    return handle;
}

template <class Cfg>
cudaError_t wgrad_launch(const WgradLaunchParams& p, cudaStream_t stream) {
    void* params[] = {const_cast<CUtensorMap*>(&p.x1_map), const_cast<CUtensorMap*>(&p.x2_map),
                      const_cast<CUtensorMap*>(&p.out_map), const_cast<WgradKernelArgs*>(&p.args)};
    const DriverLaunch fast = {wgrad_kernel_handle<Cfg>(), dim3(static_cast<unsigned>(p.grid)),
                               dim3(static_cast<unsigned>(Cfg::kThreads)),
                               static_cast<unsigned>(kWgradSmemBytes<Cfg>), 1u, stream, params};
    if (driver_launch(fast)) return cudaSuccess;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(static_cast<unsigned>(p.grid));
    config.blockDim = dim3(static_cast<unsigned>(Cfg::kThreads));
    config.dynamicSmemBytes = static_cast<size_t>(kWgradSmemBytes<Cfg>);
    config.stream = stream;
    return cudaLaunchKernelEx(&config, wgrad_sm90<Cfg>, p.x1_map, p.x2_map, p.out_map, p.args);
}

}  // namespace sm90

namespace {

template <class Cfg>
constexpr WgradVariant sm90_wgrad_variant(const char* name) {
    return {name,
            90,
            Cfg::kTileP,
            Cfg::kTileQ,
            Cfg::kBlockRows,
            Cfg::kStages,
            sm90::kWgradBoxColumns,
            sm90::kWgradSmemBytes<Cfg>,
            Cfg::kThreads,
            &sm90::wgrad_prepare<Cfg>,
            &sm90::wgrad_launch<Cfg>};
}

using WgradTile256 = sm90::WgradConfig<256, 4>;
using WgradTile192 = sm90::WgradConfig<192, 5>;  // Q = 2880 (gpt-oss): 15 tiles, no padding column
using WgradTile128 = sm90::WgradConfig<128, 6>;

const WgradVariant kWgradVariants[] = {
    sm90_wgrad_variant<WgradTile256>("sm90_wgrad_tma_wgmma_128x256x64_s4"),
    sm90_wgrad_variant<WgradTile192>("sm90_wgrad_tma_wgmma_128x192x64_s5"),
    sm90_wgrad_variant<WgradTile128>("sm90_wgrad_tma_wgmma_128x128x64_s6"),
};

}  // namespace

const WgradVariant* sm90_wgrad_variants(int* count) {
    *count = static_cast<int>(sizeof(kWgradVariants) / sizeof(kWgradVariants[0]));
    return kWgradVariants;
}

}  // namespace ggemm
