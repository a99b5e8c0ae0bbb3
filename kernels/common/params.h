// What the host hands a grouped-GEMM kernel for one call, and what a kernel variant tells the
// planner about itself. Shared by src/ (host) and kernels/ (device); plain data only.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda.h>  // CUtensorMap (a type only: the library does not link libcuda)
#include <cuda_runtime_api.h>

#include "tail_split.h"

namespace ggemm {

// Same values as GGEMM_DTYPE_* in include/ggemm.h (checked by a static_assert in src/).
enum DType : int32_t { kDTypeNone = 0, kBF16 = 1, kFP16 = 2, kFP32 = 3 };
enum WeightMode : int32_t { kDense = 0, kDiscrete = 1 };
enum Scheduler : int32_t { kStatic = 0, kDynamic = 1 };

// Per-call arguments of the kernel, by value. Pointers are device pointers.
struct KernelArgs {
    const int32_t* padded_offsets;  // L cumulative row ends (validated on the device)
    const float* alpha;             // L
    const float* prob;              // M
    const void* bias;               // L x N of bias_dtype, or nullptr
    void* c;                        // M x N of c_dtype, or nullptr when !generate_c
    void* d;                        // M x N of d_dtype
    CUtensorMap* b_maps;            // discrete mode: L per-expert maps in the workspace
    // Discrete mode: L status words in the workspace, written by the map builder from its one
    // read of b_ptrs (non-zero: the expert's pointer is unusable and the expert is skipped).
    // The GEMM never reads b_ptrs itself, so an entry changed between the two kernels cannot
    // make it load through a map that was never patched.
    const uint32_t* weight_status;
    // Dynamic scheduler: in the workspace, zeroed in-stream. 64-bit: work items plus grid can
    // pass 2^32 for large M x N, and a wrapped claim would map to an earlier tile.
    unsigned long long* tile_counter;
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
    const uint64_t* b_ptrs;  // discrete mode: L pointers to N x K bf16, read by the map builder only
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
