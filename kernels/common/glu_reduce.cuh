// dGLU's second kernel: d_prob from the GEMM epilogue's partial sums, one per row and 64-column
// block of R (kernels/sm90/epilogue_sm90.cuh, store_dglu_output; kernels/sm100/
// glu_epilogue_sm100.cuh, drain_dglu), added in block order. No atomics: every d_prob is the same
// sum in the same order on every run, whichever tiles, pieces or scheduler produced the partials.
// Partials of rows no expert computes stay at the zero the host wrote before the GEMM, so those
// rows get 0.
//
// The body is here; each architecture defines its own __global__ around it (src/variants_sm90.cuh,
// src/variants_sm100.cu): one kernel of external linkage defined in a header that both include
// would be defined twice in the library.
#pragma once

#include <cstdint>

namespace ggemm {

constexpr int kReduceDProbThreads = 256;

__device__ __forceinline__ void reduce_d_prob_row(const float* partials, int64_t blocks, int64_t m, float* d_prob) {
    const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (row >= m) return;
    float sum = partials[row];
    for (int64_t block = 1; block < blocks; ++block) sum = __fadd_rn(sum, partials[block * m + row]);
    d_prob[row] = sum;
}

}  // namespace ggemm
