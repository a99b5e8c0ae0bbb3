// What the host hands a grouped-GEMM kernel for one call: the kernel's by-value argument.
// Shared by src/ (host) and kernels/ (device); plain data only.
#pragma once

#include <cstdint>

#include <cuda.h>  // CUtensorMap (a type only: the library does not link libcuda)

#include "kernels/common/contract.h"
#include "kernels/common/split_k.h"
#include "kernels/common/glu.h"
#include "kernels/common/hd.h"
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
    // Optional: L counts of valid rows per expert (validated on the device, scheduler.h); rows of
    // a segment at or past its count are neither computed nor written. nullptr: every row.
    const int32_t* valid_rows;
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
    // Split-K (split_k.h): splits of each tile's K range (1: none); when more, the fp32 partial
    // tiles and the per-tile arrival counters in the workspace (zeroed in-stream every call).
    int32_t k_splits;
    float* split_partials;
    uint32_t* split_counters;
    // Fused GLU (kernels/common/glu.h): D is M x N/2, C the M x N pre-activation.
    int32_t activation;             // kActivation*
    GluConstants glu;
    // dGLU (glu_backward): R is the M x N GEMM, glu_pre the saved M x 2N pre-activation, D the
    // M x 2N d_pre; d_prob's partial sums (one per row and 64-column block of R, pitch M) in the
    // workspace, reduced into d_prob by a second kernel.
    int32_t glu_backward;
    int32_t glu_pre_dtype;
    const void* glu_pre;
    float* d_prob_partials;
    float* d_prob;
};

// Whether an output is the plain epilogue's, bias aside: no C or activation (nor dGLU), a bf16 D
// (a TMA-store kernel stores nothing else). What a plan's description says of its calls.
GGEMM_HD bool plain_output(bool c, int32_t d_dtype, int32_t activation, int32_t glu_backward, bool tma_store) {
    return activation == kActivationNone && glu_backward == 0 && (tma_store || (!c && d_dtype == kBF16));
}

// Whether a call's epilogue is the plain one: D = alpha * acc * prob, or acc itself without alpha
// and prob, no bias, a plain output. The kernels run it through a copy of their tile loop of its
// own, and the host launches kernel instances that compile only that copy
// (kernels/sm90/config_sm90.cuh, PlainEpilogue). plain_output's test written out: called
// from here, it compiled the general kernel instances into other code.
GGEMM_HD bool plain_epilogue(const KernelArgs& args, bool tma_store) {
    return args.bias == nullptr && args.activation == kActivationNone && args.glu_backward == 0 &&
           (tma_store || (args.c == nullptr && args.d_dtype == kBF16));
}

}  // namespace ggemm
