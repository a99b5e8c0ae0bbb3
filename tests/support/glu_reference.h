// The host reference of the fused GLU forward (include/ggemm.h, "Fused GLU forward"): the
// pre-activation from the grouped GEMM's reference, the activation in double.
//
//   pre  = acc * alpha[g] (+ bias[g][n])    the grouped GEMM's reference with prob = 1 and an fp32
//                                            C: the same fp32 value the contract defines
//   D[r, 32j + i] = prob[r] * act(pre[r, 64j + i], pre[r, 64j + 32 + i])    in double
#pragma once

#include <cstdint>
#include <vector>

#include "tests/support/reference.h"

namespace ggemm_test {

// GGEMM_ACTIVATION_* values.
constexpr int32_t kActivationNone = 0;
constexpr int32_t kActivationSwiglu = 1;
constexpr int32_t kActivationClampedGeglu = 2;

struct GluParams {
    int32_t activation = kActivationSwiglu;
    double scale = 1.702;   // clamped GeGLU only
    double limit = 7.0;
    double offset = 1.0;
};

// act(gate, up) in double: SwiGLU gate * sigmoid(gate) * up; clamped GeGLU
// (clamp(up, -limit, limit) + offset) * g * sigmoid(scale * g) with g = min(gate, limit).
double glu_activation_reference(const GluParams& params, double gate, double up);

// act and its exact derivatives with respect to gate and up, in double: the derivative of
// glu_activation_reference as written, the clamps passing the gradient where the input is within
// the limits (the limit included, as torch.clamp's backward does).
struct GluDerivatives {
    double act;
    double d_gate;
    double d_up;
};
GluDerivatives glu_derivatives_reference(const GluParams& params, double gate, double up);

// The pre-activation column of D's column `out_col` (gate, and gate + 32 for up).
int64_t glu_gate_column(int64_t out_col);

// The reference of a fused GLU forward: C (the pre-activation, N columns, c_dtype, in .c) and D
// (N/2 columns, d_dtype, in .d) over the requested rows (all defined rows when null).
struct GluResult {
    Result c;  // n = N; c holds the rounded pre-activation
    Result d;  // n = N / 2; d holds prob * act rounded to d_dtype
};
GluResult compute_glu_reference(const Problem& problem, const GluParams& params,
                                const std::vector<int64_t>* rows = nullptr);

// The reference of dGLU (include/ggemm.h): problem is the input-gradient GEMM (A the upstream
// gradient, n = N the activation's width), pre the saved M x 2N pre-activation of pre_dtype.
//   R      = acc * alpha[g]   (the grouped GEMM's reference with prob = 1, fp32)
//   d_pre  = R * prob * d act / d gate (gate columns), R * prob * d act / d up (up columns)
//   d_prob = sum over R's columns of R * act
// in double from R, prob and the saved values; d_pre rounded to problem.d_dtype (in .d).
struct DgluResult {
    Result d_pre;                // n = 2N
    std::vector<double> d_prob;  // one per row of d_pre.rows
};
DgluResult compute_dglu_reference(const Problem& problem, const GluParams& params, const void* pre, int32_t pre_dtype,
                                  const std::vector<int64_t>* rows = nullptr);

}  // namespace ggemm_test
