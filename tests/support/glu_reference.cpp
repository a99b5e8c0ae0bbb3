// The fused GLU forward's host reference.
#include "tests/support/glu_reference.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ggemm_test {

namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

}  // namespace

double glu_activation_reference(const GluParams& params, double gate, double up) {
    if (params.activation == kActivationSwiglu) return gate * sigmoid(gate) * up;
    if (params.activation != kActivationClampedGeglu) throw std::invalid_argument("not a gated activation");
    const double g = std::min(gate, params.limit);
    const double u = std::min(std::max(up, -params.limit), params.limit);
    return (u + params.offset) * g * sigmoid(params.scale * g);
}

GluDerivatives glu_derivatives_reference(const GluParams& params, double gate, double up) {
    if (params.activation == kActivationSwiglu) {
        const double s = sigmoid(gate);
        return {gate * s * up, up * (s + gate * s * (1.0 - s)), gate * s};
    }
    if (params.activation != kActivationClampedGeglu) throw std::invalid_argument("not a gated activation");
    const double g = std::min(gate, params.limit);
    const double u = std::min(std::max(up, -params.limit), params.limit);
    const double sg = sigmoid(params.scale * g);
    const double d_g = sg + params.scale * g * sg * (1.0 - sg);
    const bool gate_passes = gate <= params.limit;
    const bool up_passes = up >= -params.limit && up <= params.limit;
    return {(u + params.offset) * g * sg, gate_passes ? (u + params.offset) * d_g : 0.0, up_passes ? g * sg : 0.0};
}

int64_t glu_gate_column(int64_t out_col) { return out_col / 32 * 64 + out_col % 32; }

GluResult compute_glu_reference(const Problem& problem, const GluParams& params, const std::vector<int64_t>* rows) {
    if (problem.n % 64 != 0) throw std::invalid_argument("compute_glu_reference: N must be a multiple of 64");
    // The pre-activation: the grouped GEMM's C with prob = 1 (bias then enters unscaled) in fp32.
    Problem pre_problem = problem;
    const std::vector<float> ones(static_cast<std::size_t>(problem.m), 1.0f);
    pre_problem.prob = ones.data();
    pre_problem.c_dtype = kDTypeFP32;
    pre_problem.d_dtype = kDTypeFP32;
    const Result pre = compute_reference(pre_problem, rows);

    GluResult out;
    const int64_t n = problem.n;
    const int64_t half = n / 2;
    const std::size_t count = pre.rows.size();
    out.c.n = n;
    out.c.c_dtype = problem.c_dtype;
    out.c.d_dtype = problem.d_dtype;
    out.c.rows = pre.rows;
    out.c.experts = pre.experts;
    out.c.c.resize(count * static_cast<std::size_t>(n) * dtype_size(problem.c_dtype));
    out.d.n = half;
    out.d.c_dtype = problem.c_dtype;
    out.d.d_dtype = problem.d_dtype;
    out.d.rows = pre.rows;
    out.d.experts = pre.experts;
    out.d.d.resize(count * static_cast<std::size_t>(half) * dtype_size(problem.d_dtype));
    for (std::size_t i = 0; i < count; ++i) {
        for (int64_t col = 0; col < n; ++col) {
            store_element(out.c.c.data(), i * static_cast<std::size_t>(n) + static_cast<std::size_t>(col),
                          problem.c_dtype, pre.c_value(i, col));
        }
        const double prob = problem.prob[pre.rows[i]];
        for (int64_t col = 0; col < half; ++col) {
            const int64_t gate = glu_gate_column(col);
            const double act = glu_activation_reference(params, pre.c_value(i, gate), pre.c_value(i, gate + 32));
            store_element(out.d.d.data(), i * static_cast<std::size_t>(half) + static_cast<std::size_t>(col),
                          problem.d_dtype, static_cast<float>(prob * act));
        }
    }
    return out;
}

DgluResult compute_dglu_reference(const Problem& problem, const GluParams& params, const void* pre, int32_t pre_dtype,
                                  const std::vector<int64_t>* rows) {
    if (problem.n % 32 != 0) throw std::invalid_argument("compute_dglu_reference: N must be a multiple of 32");
    Problem r_problem = problem;
    const std::vector<float> ones(static_cast<std::size_t>(problem.m), 1.0f);
    r_problem.prob = ones.data();
    r_problem.bias = nullptr;
    r_problem.bias_dtype = kDTypeNone;
    r_problem.c_dtype = kDTypeFP32;
    r_problem.d_dtype = kDTypeFP32;
    const Result r = compute_reference(r_problem, rows);

    DgluResult out;
    const int64_t n = problem.n;
    const std::size_t count = r.rows.size();
    out.d_pre.n = 2 * n;
    out.d_pre.c_dtype = problem.c_dtype;
    out.d_pre.d_dtype = problem.d_dtype;
    out.d_pre.rows = r.rows;
    out.d_pre.experts = r.experts;
    out.d_pre.d.resize(count * static_cast<std::size_t>(2 * n) * dtype_size(problem.d_dtype));
    out.d_prob.assign(count, 0.0);
    for (std::size_t i = 0; i < count; ++i) {
        const int64_t row = r.rows[i];
        const double prob = problem.prob[row];
        double d_prob = 0.0;
        for (int64_t col = 0; col < n; ++col) {
            const int64_t gate_col = glu_gate_column(col);
            const std::size_t at = static_cast<std::size_t>(row * 2 * n + gate_col);
            const double gate = load_element(pre, at, pre_dtype);
            const double up = load_element(pre, at + 32, pre_dtype);
            const double grad = r.c_value(i, col);
            const GluDerivatives d = glu_derivatives_reference(params, gate, up);
            store_element(out.d_pre.d.data(), i * static_cast<std::size_t>(2 * n) + static_cast<std::size_t>(gate_col),
                          problem.d_dtype, static_cast<float>(grad * prob * d.d_gate));
            store_element(out.d_pre.d.data(),
                          i * static_cast<std::size_t>(2 * n) + static_cast<std::size_t>(gate_col + 32), problem.d_dtype,
                          static_cast<float>(grad * prob * d.d_up));
            d_prob += grad * d.act;
        }
        out.d_prob[i] = d_prob;
    }
    return out;
}

}  // namespace ggemm_test
