// The fused gated activations of the forward (GGEMM_ACTIVATION_*), as include/ggemm.h states them:
//   SwiGLU:        act = (gate * sigmoid(gate)) * up
//   clamped GeGLU: g = min(gate, limit), u = clamp(up, -limit, limit),
//                  act = ((u + offset) * g) * sigmoid(scale * g)
//   sigmoid(x) = 1 / (1 + exp(-x))
// in fp32, in this order. The products and sums are written with explicit round-to-nearest
// intrinsics on the device, so the compiler cannot contract them into FMAs and every kernel and
// scheduler computes the same bits; where a product and a sum fuse, they are an explicit fma
// (glu_fma). The sigmoid's exponential and reciprocal are the special-function unit's
// approximations (glu_sigmoid says why and how close). Host builds (the CPU tests) evaluate the
// same expressions in plain fp32 (std::fmaf for the fma) with the precise expf and an IEEE
// division.
//
// Pure and __host__ __device__: the CPU tests check the code the kernels run.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/common/contract.h"
#include "kernels/common/hd.h"
#if defined(__CUDA_ARCH__)
#include "ptx/math.cuh"
#endif

namespace ggemm {

// The clamped GeGLU's constants (unused by SwiGLU).
struct GluConstants {
    float scale;   // s: sigmoid(s * g)
    float limit;   // gate clamped above, up clamped to [-limit, limit]
    float offset;  // added to the clamped up value
};

// The defaults: gpt-oss's activation.
constexpr GluConstants kGluDefaults = {1.702f, 7.0f, 1.0f};

GGEMM_HD float glu_mul(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}

GGEMM_HD float glu_add(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}

GGEMM_HD float glu_fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
    return __fmaf_rn(a, b, c);
#else
    return std::fmaf(a, b, c);
#endif
}

// 1 / (1 + exp(-x)). On the device: rcp.approx(1 + ex2.approx(-x log2 e)), four instructions
// (FMUL, MUFU.EX2, FADD, MUFU.RCP) where the precise expf and a division took about fifteen, and
// a fused GLU tile evaluates one per output element (64 per thread in a 256-wide tile). Within
// 3 ulp of the precise value, plus about |x| ulp from the rounding of x log2 e (CUDA documents
// 2 + 1.17 |x| ulp for __expf, the same two instructions);
// exp(-x) below 2^-126 flushes to 0 (the sigmoid is then 1 to fp32 precision), and 1 / inf = 0
// where exp(-x) overflows (x < -88.7; the true value is under 2^-127). The IEEE division would
// also call its slow path as a subroutine, whose call saves registers to the stack in kernels
// that hold a 256-wide accumulator.
GGEMM_HD float glu_sigmoid(float x) {
#if defined(__CUDA_ARCH__)
    constexpr float kLog2E = 1.4426950408889634f;
    return ptx::rcp_approx_ftz(__fadd_rn(1.0f, ptx::ex2_approx_ftz(__fmul_rn(-x, kLog2E))));
#else
    return 1.0f / (1.0f + expf(-x));
#endif
}

GGEMM_HD float swiglu(float gate, float up) { return glu_mul(glu_mul(gate, glu_sigmoid(gate)), up); }

GGEMM_HD float clamped_geglu(float gate, float up, GluConstants k) {
    const float g = fminf(gate, k.limit);
    const float u = fminf(fmaxf(up, -k.limit), k.limit);
    return glu_mul(glu_mul(glu_add(u, k.offset), g), glu_sigmoid(glu_mul(k.scale, g)));
}

// act(gate, up) for an activation other than kActivationNone.
template <int32_t kActivation>
GGEMM_HD float glu_activation(float gate, float up, GluConstants k) {
    static_assert(kActivation == kActivationSwiglu || kActivation == kActivationClampedGeglu, "a gated activation");
    if constexpr (kActivation == kActivationSwiglu) {
        return swiglu(gate, up);
    } else {
        return clamped_geglu(gate, up, k);
    }
}

// act and its derivatives with respect to gate and up, at one (gate, up): what the backward of
// the fused forward (dGLU) needs. act is the forward's value bit for bit (the same operations in
// the same order). The derivatives are those of the forward as written: SwiGLU
//   d_gate = up * (s + silu * (1 - s)),  d_up = silu,   s = sigmoid(gate), silu = gate * s
// and the clamped GeGLU, with the clamps' derivative 1 where the input passes unclamped (at the
// limit included, as torch.clamp's), else 0:
//   d_gate = [gate <= limit] * (u + offset) * (sg + scale * (g * sg) * (1 - sg)),  sg = sigmoid(scale * g)
//   d_up   = [-limit <= up <= limit] * g * sg
// The last product and sum of each d_gate's bracket are one fma.
struct GluGrad {
    float act;
    float d_gate;
    float d_up;
};

GGEMM_HD GluGrad swiglu_grad(float gate, float up) {
    const float s = glu_sigmoid(gate);
    const float silu = glu_mul(gate, s);
    const float d_silu = glu_fma(silu, glu_add(1.0f, -s), s);
    return {glu_mul(silu, up), glu_mul(up, d_silu), silu};
}

GGEMM_HD GluGrad clamped_geglu_grad(float gate, float up, GluConstants k) {
    const float g = fminf(gate, k.limit);
    const float u = fminf(fmaxf(up, -k.limit), k.limit);
    const float sg = glu_sigmoid(glu_mul(k.scale, g));
    const float u_offset = glu_add(u, k.offset);
    const float g_sg = glu_mul(g, sg);
    const float d_g = glu_fma(glu_mul(k.scale, g_sg), glu_add(1.0f, -sg), sg);
    const bool gate_passes = gate <= k.limit;
    const bool up_passes = up >= -k.limit && up <= k.limit;
    return {glu_mul(glu_mul(u_offset, g), sg), gate_passes ? glu_mul(u_offset, d_g) : 0.0f,
            up_passes ? g_sg : 0.0f};
}

template <int32_t kActivation>
GGEMM_HD GluGrad glu_grad(float gate, float up, GluConstants k) {
    static_assert(kActivation == kActivationSwiglu || kActivation == kActivationClampedGeglu, "a gated activation");
    if constexpr (kActivation == kActivationSwiglu) {
        return swiglu_grad(gate, up);
    } else {
        return clamped_geglu_grad(gate, up, k);
    }
}

// R * prob of dGLU's d_pre is computed as acc * (alpha * prob): alpha * prob once per row, one
// multiply per element.
GGEMM_HD float dglu_alpha_prob(float alpha, float prob) { return glu_mul(alpha, prob); }

// dGLU's partial sum of d_prob over one 64-column block of R = alpha * acc for one row, as one
// thread that owns the whole row computes it (the SM100 epilogue), in the order of the SM90
// epilogue's four lanes per row (store_dglu_output, store_prob_partials): lane q sums acc * act
// over the block's columns c with (c % 8) / 2 = q, in column order from 0, each term one fma into
// its sum; a butterfly adds the four sums as (s0 + s1) + (s2 + s3), and the result is scaled by
// alpha once (alpha * sum(acc * act) instead of sum(alpha * acc * act): one multiply per block,
// not per column). Keeping the four sums and adding them the same way gives the same bits for
// the same terms.
struct GluRowPartial {
    float quarter[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    GGEMM_HD void add(int column, float acc, float act) {
        float& sum = quarter[(column % 8) / 2];
        sum = glu_fma(acc, act, sum);
    }
    GGEMM_HD float total(float alpha) const {
        return glu_mul(alpha, glu_add(glu_add(quarter[0], quarter[1]), glu_add(quarter[2], quarter[3])));
    }
};

// Where pre-activation column `column` goes: its 64-column block j = column / 64 is a gate half
// (columns 64j .. 64j+31) and an up half (64j+32 .. 64j+63); output column 32j + column % 32.
GGEMM_HD bool glu_is_gate(int64_t column) { return column % (2 * kGluBlockColumns) < kGluBlockColumns; }
GGEMM_HD int64_t glu_output_column(int64_t column) {
    return column / (2 * kGluBlockColumns) * kGluBlockColumns + column % kGluBlockColumns;
}

// The interleaved row that row `halves_row` of [gate | up] halves of n rows moves to (the
// inverse of ggemm_glu_interleave_rows' source_rows).
GGEMM_HD int64_t glu_interleaved_row(int64_t halves_row, int64_t n) {
    const int64_t half = n / 2;
    const bool up = halves_row >= half;
    const int64_t within = up ? halves_row - half : halves_row;
    return within / kGluBlockColumns * (2 * kGluBlockColumns) + (up ? kGluBlockColumns : 0) +
           within % kGluBlockColumns;
}

}  // namespace ggemm
