// The host reference of the weight gradient (docs/API.md, "Weight gradient"), from the same raw
// bf16 inputs the GPU sees:
//
//   W_g[p,q] = alpha_g * sum over the expert's rows r of X1[r,p] * X2[r,q]      in double
//
// and which experts the contract computes, zeroes or leaves untouched, decided from the offsets
// by the contract's rule written out here on its own (not the kernel's cursor).
#pragma once

#include <cstdint>
#include <vector>

namespace ggemm_test {

enum class WgradExpertState {
    kSum,      // usable offsets with rows: W_g written (or added to, with accumulate)
    kZeros,    // usable offsets, no rows, overwrite mode: W_g is exact zeros
    kUntouched // bad offsets or output pointer, or no rows in accumulate mode: W_g keeps its bytes
};

struct WgradExpert {
    WgradExpertState state;
    int64_t begin;  // rows [begin, end) summed when state is kSum
    int64_t end;
};

// One entry per expert. output_ok: per expert, whether its output pointer is usable (nullptr:
// all are, as with a dense output).
std::vector<WgradExpert> wgrad_experts(const std::vector<int32_t>& offsets, int64_t m, bool accumulate,
                                       const std::vector<bool>* output_ok = nullptr);

// alpha * X1[begin:end]^T X2[begin:end] as P x Q doubles (X1: rows x P, X2: rows x Q bf16 bits,
// row-major). threads = 0: one per hardware thread; the result does not depend on it.
std::vector<double> wgrad_reference(const uint16_t* x1, const uint16_t* x2, int64_t p, int64_t q, int64_t begin,
                                    int64_t end, double alpha, int threads = 0);

}  // namespace ggemm_test
