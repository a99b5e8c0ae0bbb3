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
#include "ptx/prefetch.cuh"

namespace ggemm {

// Where a tile's alpha[expert] is loaded. kAtTileStart: per thread, by a volatile load where the
// tile starts, its latency hidden by the main loop (a plain load there went into a uniform
// register, and that move held the tile's first wgmma). kAfterMainLoop: prefetched to L1 where the
// tile starts and loaded once the main loop is done (after_main_loop). On an H200 loading at the
// tile's start made calls of one expert of 256 rows up to 9 % faster and the MoE suite, of many
// tiles per SM, 0.5 % slower (docs/PERFORMANCE.md): the SM90 kernels choose by tile width.
enum class AlphaLoad { kAtTileStart, kAfterMainLoop };

// Per-tile constants of the epilogue.
struct EpilogueTile {
    float alpha;          // alpha[expert] (1 without alpha); with kAfterMainLoop, 1 until after_main_loop
    const float* alpha_at;  // &alpha[expert], or nullptr without alpha
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

template <AlphaLoad kAlphaLoad = AlphaLoad::kAtTileStart>
__device__ __forceinline__ EpilogueTile epilogue_tile(const KernelArgs& args, int32_t expert) {
    EpilogueTile t;
    t.alpha_at = args.alpha != nullptr ? args.alpha + expert : nullptr;
    if constexpr (kAlphaLoad == AlphaLoad::kAtTileStart) {
        t.alpha = t.alpha_at != nullptr ? ptx::ld_global_in_place(t.alpha_at) : 1.f;
    } else {
        t.alpha = 1.f;
        if (t.alpha_at != nullptr) ptx::prefetch_global_l1(t.alpha_at);
    }
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

// The epilogue's copy of a tile's constants, taken once the main loop is done: with
// kAfterMainLoop, alpha[expert] loaded there (from the L1, where the tile's start prefetched it).
template <AlphaLoad kAlphaLoad, class Epilogue>
__device__ __forceinline__ Epilogue after_main_loop(Epilogue e) {
    if constexpr (kAlphaLoad == AlphaLoad::kAfterMainLoop) {
        if (e.t.alpha_at != nullptr) e.t.alpha = ptx::ld_global_in_place(e.t.alpha_at);
    }
    return e;
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
// The bias a fused GLU's pre-activation adds in a call without bias: fma(acc, alpha, -0) is
// acc * alpha bit for bit (a product of -0 stays -0, where adding +0 would give +0), so one
// FFMA serves both kinds of call (a run-time choice per element between an FMUL and an FFMA
// makes ptxas issue both, predicated).
constexpr float kNoBias = -0.0f;

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
