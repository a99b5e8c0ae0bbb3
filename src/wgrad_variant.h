// What the host knows of a compiled weight-gradient kernel: the parameters of one launch, and
// each variant's description as data for the wgrad planner (src/wgrad_plan.h).
#pragma once

#include <cuda.h>  // CUtensorMap (a type only: the library does not link libcuda)
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/common/wgrad_params.h"

namespace ggemm {

// Everything one launch needs; the maps are __grid_constant__ kernel parameters.
struct WgradLaunchParams {
    CUtensorMap x1_map;  // X1: dims {P, M}, box {64, 64}; unused (not encoded) when M = 0
    CUtensorMap x2_map;  // X2: dims {Q, M}, box {64, 64}
    CUtensorMap out_map; // dense output, TMA store path only: dims {Q, P, L}, box {128 bytes, 64, 1}
    WgradKernelArgs args;
    int32_t grid;        // persistent CTAs
};

using WgradLaunchFn = cudaError_t (*)(const WgradLaunchParams&, cudaStream_t);
using WgradPrepareFn = cudaError_t (*)();  // raises the kernel's dynamic shared-memory limit

struct WgradVariant {
    const char* name;     // e.g. "sm90_wgrad_tma_wgmma_128x256x64_s4"
    int32_t arch;         // 90 or 100
    int32_t tile_p;       // rows of P per tile
    int32_t tile_q;       // columns of Q per tile
    int32_t block_rows;   // rows r (the GEMM's K) per pipeline stage
    int32_t stages;
    int32_t box_columns;  // columns of X1 / X2 per TMA box (the 128-byte swizzle span)
    int32_t smem_bytes;
    int32_t threads;
    bool tma_store;       // has the TMA store path (kWgradStoreTma); else registers only
    int32_t max_experts;  // the most experts its shared copy of the offsets holds
    WgradPrepareFn prepare;
    WgradLaunchFn launch;
};

// Defined in src/wgrad_variants_sm90.cu (compiled for sm_90a only).
const WgradVariant* sm90_wgrad_variants(int* count);
// Defined in src/wgrad_variants_sm100.cu (compiled for sm_100a only).
const WgradVariant* sm100_wgrad_variants(int* count);

}  // namespace ggemm
