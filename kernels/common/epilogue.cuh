// The epilogue's arithmetic, which both kernels share: scale by alpha and prob, add bias. Its
// rounding order is the contract (docs/API.md, "The operation"):
//   with bias:    v = fma(acc, alpha, prob * bias);  C = cvt(v);  D = cvt(v)
//   without bias: g = acc * alpha;  C = cvt(g);  D = cvt(g * prob)   (from fp32 g, not from C)
//   a gated activation (glu.h): pre = fma(acc, alpha, bias) or g;  C = cvt(pre);
//                  D = cvt(prob * act(pre of the gate column, pre of the up column))
// The functions below are the one place that writes it. Explicit _rn intrinsics keep the compiler from
// contracting or reassociating any of it, and the library builds without fast-math, so fp32
// subnormals are kept (no flush-to-zero). The conversion to the output dtype (cvt, round to
// nearest even) and the stores belong to each kernel's own epilogue:
// kernels/sm90/epilogue_sm90.cuh, kernels/sm100/epilogue_sm100.cuh.
#pragma once

#include <cstdint>

#include "kernels/common/params.h"
#include "ptx/load.cuh"

namespace ggemm {

// Per-tile constants of the epilogue.
struct EpilogueTile {
    float alpha;          // alpha[expert] (1 without alpha)
    const void* bias;     // this expert's bias row (bias + expert * N), or nullptr
    void* c;              // nullptr when C is not generated
    void* d;
    int32_t bias_dtype;
    int32_t c_dtype;
    int32_t d_dtype;
    int32_t n;
    int32_t activation;   // kActivation*: with a gated activation D is M x N/2
    GluConstants glu;
    // dGLU: D is the M x 2N d_pre, from the saved pre-activation; d_prob's partials (pitch m).
    int32_t glu_backward;
    int32_t glu_pre_dtype;
    const void* glu_pre;
    float* d_prob_partials;
    int64_t m;
};

__device__ __forceinline__ EpilogueTile epilogue_tile(const KernelArgs& args, int32_t expert) {
    EpilogueTile t;
    // alpha[expert] is loaded per thread where the tile starts, its latency hidden by the main
    // loop. A plain load of it went into a uniform register, and that move waited for the load
    // before the tile's first wgmma could issue; the volatile load's result stays in a per-thread
    // register, first read by the epilogue.
    t.alpha = args.alpha != nullptr ? ptx::ld_global_in_place(args.alpha + expert) : 1.f;
    t.bias = nullptr;
    if (args.bias != nullptr) {
        const int64_t elem = dtype_bytes(args.bias_dtype);
        t.bias = static_cast<const char*>(args.bias) + static_cast<int64_t>(expert) * args.n * elem;
    }
    t.c = args.generate_c ? args.c : nullptr;
    t.d = args.d;
    t.bias_dtype = args.bias_dtype;
    t.c_dtype = args.c_dtype;
    t.d_dtype = args.d_dtype;
    t.n = args.n;
    t.activation = args.activation;
    t.glu = args.glu;
    t.glu_backward = args.glu_backward;
    t.glu_pre_dtype = args.glu_pre_dtype;
    t.glu_pre = args.glu_pre;
    t.d_prob_partials = args.d_prob_partials;
    t.m = args.m;
    return t;
}

// prob[row]; 1 without prob (a NULL args.prob: every row's prob is 1).
__device__ __forceinline__ float prob_of(const float* prob, int64_t row) {
    return prob != nullptr ? prob[row] : 1.f;
}

// Which of the contract's values an output takes: with bias, C and D both take v; without, C
// takes g and D takes g * prob. With a gated activation C takes the pre-activation: g, or
// with bias pre = fma(acc, alpha, bias) (the bias not scaled by prob). kUnscaled: g * prob of a
// call without alpha and prob (both 1), which is acc itself: x * 1 is x exactly, so skipping the
// two multiplications gives the same bits.
enum class EpilogueValue { kBiased, kScaled, kScaledByProb, kBiasedPreActivation, kUnscaled };

// The contract's steps, one function each: v (with bias), g (without), and g * prob from g.
__device__ __forceinline__ float biased_value(float alpha, float acc, float prob, float bias) {
    return __fmaf_rn(acc, alpha, __fmul_rn(prob, bias));
}
__device__ __forceinline__ float scaled_value(float alpha, float acc) { return __fmul_rn(acc, alpha); }
__device__ __forceinline__ float scaled_by_prob(float g, float prob) { return __fmul_rn(g, prob); }
__device__ __forceinline__ float biased_pre_activation(float alpha, float acc, float bias) {
    return __fmaf_rn(acc, alpha, bias);
}

// The value kValue for one accumulator, before rounding to the output dtype; bias is the
// column's bias as fp32 (used by kBiased only).
template <EpilogueValue kValue>
__device__ __forceinline__ float contract_value(float alpha, float acc, float prob, float bias) {
    if constexpr (kValue == EpilogueValue::kBiased) {
        return biased_value(alpha, acc, prob, bias);
    }
    if constexpr (kValue == EpilogueValue::kBiasedPreActivation) {
        return biased_pre_activation(alpha, acc, bias);
    }
    if constexpr (kValue == EpilogueValue::kUnscaled) {
        return acc;
    }
    const float g = scaled_value(alpha, acc);
    if constexpr (kValue == EpilogueValue::kScaledByProb) {
        return scaled_by_prob(g, prob);
    }
    return g;
}

}  // namespace ggemm
