// What the host hands a grouped-GEMM kernel for one call, and what a kernel variant tells the
// planner about itself. Shared by src/ (host) and kernels/ (device); plain data only.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda.h>  // CUtensorMap (a type only: the library does not link libcuda)
#include <cuda_runtime_api.h>

#include "kernels/common/contract.h"
#include "kernels/common/tail_split.h"

namespace ggemm {

// Per-call arguments of the kernel, by value. Pointers are device pointers.
struct KernelArgs {
    const int32_t* padded_offsets;  // L cumulative row ends (validated on the device)
    const float* alpha;             // L
    const float* prob;              // M
    const void* bias;               // L x N of bias_dtype, or nullptr
    void* c;                        // M x N of c_dtype, or nullptr when !generate_c
    void* d;                        // M x N of d_dtype
    const uint64_t* b_ptrs;         // discrete mode: L pointers to N x K bf16
    CUtensorMap* b_maps;            // discrete mode: L per-expert maps in the workspace
    uint32_t* tile_counter;         // dynamic scheduler: in the workspace, zeroed in-stream
    uint32_t* device_status;        // optional GGEMM_DEVICE_STATUS_* word
    int64_t m;                      // rows of A / prob / C / D this call
    int32_t n;
    int32_t k;
    int32_t num_experts;
    int32_t c_dtype;
    int32_t d_dtype;
    int32_t bias_dtype;
    int32_t generate_c;
    int32_t scheduler;
    int32_t weight_mode;
    TailSplit tail;                 // work items past tail.first_piece are pieces of tiles
};

// Everything one launch needs. The maps are passed to the kernel as __grid_constant__
// parameters; in discrete mode b_map is the template the kernel patches per expert.
struct LaunchParams {
    CUtensorMap a_map;  // A: dims {K, M}, box {block_k, tile_m / (consumer split)}
    CUtensorMap b_map;  // B dense: dims {K, N, L}; discrete: template dims {K, N}
    KernelArgs args;
    int32_t grid;       // persistent CTAs (a multiple of cluster_m)
};

using LaunchFn = cudaError_t (*)(const LaunchParams&, cudaStream_t);
// Called once at plan creation: raises the kernel's dynamic shared-memory limit.
using PrepareFn = cudaError_t (*)();

// One compiled kernel configuration, described as data for the planner.
struct KernelVariant {
    const char* name;       // e.g. "sm90_tma_wgmma_128x256x64_s4_c1"
    int32_t arch;           // 90 or 100
    int32_t tile_m;         // rows of C/D per tile (never straddles an expert: segments are 256-aligned)
    int32_t tile_n;         // columns per tile
    int32_t block_k;        // K per pipeline stage
    int32_t stages;         // shared-memory pipeline depth
    int32_t cluster_m;      // CTAs per cluster along M (TMA multicast of the weight tile)
    int32_t a_box_rows;     // rows per TMA box of A (the A map's box height)
    int32_t b_box_rows;     // rows per TMA box of B
    int32_t max_tail_pieces;  // pieces the kernel can cut a tile of the last round into (1: none)
    int32_t smem_bytes;     // dynamic shared memory per CTA
    int32_t threads;        // threads per CTA
    PrepareFn prepare;
    LaunchFn launch;
};

// Bytes of one device-side tensor map (PTX ISA: tensormap is 128 bytes, 64-byte aligned).
constexpr std::size_t kTensorMapBytes = 128;

}  // namespace ggemm
