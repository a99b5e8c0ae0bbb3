// The epilogue of CONTRACT.md, shared by the SM90 and SM100 kernels: scale by alpha and prob,
// add bias, round to the C and D dtypes, store. The rounding order is the contract:
//   with bias:    v = fma(acc, alpha, prob * bias);  C = cvt(v);  D = cvt(v)
//   without bias: g = acc * alpha;  C = cvt(g);  D = cvt(g * prob)   (from fp32 g, not from C)
// Explicit _rn intrinsics keep the compiler from contracting or reassociating any of it, and the
// library builds without fast-math, so fp32 subnormals are kept (no flush-to-zero).
//
// Two ways to a store: contract_pair, for a kernel that converts its accumulator fragment in
// registers (SM90, kernels/sm90/epilogue_sm90.cuh); and store_chunk, for one that stages raw
// fp32 accumulators in shared memory, 32 columns at a time (kEpiloguePitch floats per row), and
// reads them back four columns per thread (SM100), so global stores are 8- or 16-byte vectors
// that cover whole row segments.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "params.h"

namespace ggemm {

constexpr int kEpilogueChunkCols = 32;
// 40 floats per staged row: float2 writes in the wgmma fragment layout (8 rows x 4 column pairs
// per half-warp) and float4 reads of one 128-byte row per quarter-warp are both free of bank
// conflicts.
constexpr int kEpiloguePitch = 40;

// Per-tile constants of the epilogue.
struct EpilogueTile {
    float alpha;          // alpha[expert]
    const void* bias;     // this expert's bias row (bias + expert * N), or nullptr
    void* c;              // nullptr when C is not generated
    void* d;
    int32_t bias_dtype;
    int32_t c_dtype;
    int32_t d_dtype;
    int32_t n;
};

__device__ __forceinline__ EpilogueTile epilogue_tile(const KernelArgs& args, int32_t expert) {
    EpilogueTile t;
    t.alpha = args.alpha[expert];
    t.bias = nullptr;
    if (args.bias != nullptr) {
        const int64_t elem = args.bias_dtype == kFP32 ? 4 : 2;
        t.bias = static_cast<const char*>(args.bias) + static_cast<int64_t>(expert) * args.n * elem;
    }
    t.c = args.generate_c ? args.c : nullptr;
    t.d = args.d;
    t.bias_dtype = args.bias_dtype;
    t.c_dtype = args.c_dtype;
    t.d_dtype = args.d_dtype;
    t.n = args.n;
    return t;
}

// Four consecutive elements starting at `index` (a multiple of 4: N % 8 == 0 and the column is
// a multiple of 4, so 8- and 16-byte accesses are aligned on 16-byte aligned tensors).
__device__ __forceinline__ float4 load_quad(const void* base, int32_t dtype, int64_t index) {
    switch (dtype) {
        case kBF16: {
            const uint2 raw = *reinterpret_cast<const uint2*>(static_cast<const __nv_bfloat16*>(base) + index);
            const float2 lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.x));
            const float2 hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.y));
            return make_float4(lo.x, lo.y, hi.x, hi.y);
        }
        case kFP16: {
            const uint2 raw = *reinterpret_cast<const uint2*>(static_cast<const __half*>(base) + index);
            const float2 lo = __half22float2(*reinterpret_cast<const __half2*>(&raw.x));
            const float2 hi = __half22float2(*reinterpret_cast<const __half2*>(&raw.y));
            return make_float4(lo.x, lo.y, hi.x, hi.y);
        }
        default:
            return *reinterpret_cast<const float4*>(static_cast<const float*>(base) + index);
    }
}

__device__ __forceinline__ void store_quad(void* base, int32_t dtype, int64_t index, float4 v) {
    switch (dtype) {
        case kBF16: {
            const __nv_bfloat162 lo = __floats2bfloat162_rn(v.x, v.y);
            const __nv_bfloat162 hi = __floats2bfloat162_rn(v.z, v.w);
            uint2 raw;
            raw.x = *reinterpret_cast<const uint32_t*>(&lo);
            raw.y = *reinterpret_cast<const uint32_t*>(&hi);
            *reinterpret_cast<uint2*>(static_cast<__nv_bfloat16*>(base) + index) = raw;
            break;
        }
        case kFP16: {
            const __half2 lo = __floats2half2_rn(v.x, v.y);
            const __half2 hi = __floats2half2_rn(v.z, v.w);
            uint2 raw;
            raw.x = *reinterpret_cast<const uint32_t*>(&lo);
            raw.y = *reinterpret_cast<const uint32_t*>(&hi);
            *reinterpret_cast<uint2*>(static_cast<__half*>(base) + index) = raw;
            break;
        }
        default:
            *reinterpret_cast<float4*>(static_cast<float*>(base) + index) = v;
            break;
    }
}

// The contract's epilogue on four accumulators of one row, columns col..col+3.
__device__ __forceinline__ void epilogue_quad(const EpilogueTile& t, int64_t row, int32_t col, float4 acc,
                                              float prob, float4 bias) {
    const int64_t index = row * t.n + col;
    if (t.bias != nullptr) {
        const float4 v = make_float4(__fmaf_rn(acc.x, t.alpha, __fmul_rn(prob, bias.x)),
                                     __fmaf_rn(acc.y, t.alpha, __fmul_rn(prob, bias.y)),
                                     __fmaf_rn(acc.z, t.alpha, __fmul_rn(prob, bias.z)),
                                     __fmaf_rn(acc.w, t.alpha, __fmul_rn(prob, bias.w)));
        if (t.c != nullptr) store_quad(t.c, t.c_dtype, index, v);
        store_quad(t.d, t.d_dtype, index, v);
    } else {
        const float4 g = make_float4(__fmul_rn(acc.x, t.alpha), __fmul_rn(acc.y, t.alpha),
                                     __fmul_rn(acc.z, t.alpha), __fmul_rn(acc.w, t.alpha));
        if (t.c != nullptr) store_quad(t.c, t.c_dtype, index, g);
        store_quad(t.d, t.d_dtype, index,
                   make_float4(__fmul_rn(g.x, prob), __fmul_rn(g.y, prob), __fmul_rn(g.z, prob),
                               __fmul_rn(g.w, prob)));
    }
}

// Which of the contract's values an output takes: with bias, C and D both take v; without, C
// takes g and D takes g * prob.
enum class EpilogueValue { kBiased, kScaled, kScaledByProb };

// That value for two accumulators of one row, before rounding to the output dtype; bias holds
// the two columns' bias as fp32 (used by kBiased only).
template <EpilogueValue kValue>
__device__ __forceinline__ float2 contract_pair(float alpha, float2 acc, float prob, float2 bias) {
    if constexpr (kValue == EpilogueValue::kBiased) {
        return make_float2(__fmaf_rn(acc.x, alpha, __fmul_rn(prob, bias.x)),
                           __fmaf_rn(acc.y, alpha, __fmul_rn(prob, bias.y)));
    }
    const float2 g = make_float2(__fmul_rn(acc.x, alpha), __fmul_rn(acc.y, alpha));
    if constexpr (kValue == EpilogueValue::kScaledByProb) {
        return make_float2(__fmul_rn(g.x, prob), __fmul_rn(g.y, prob));
    }
    return g;
}

// Stores kRows x kEpilogueChunkCols staged accumulators (row pitch kEpiloguePitch floats) whose
// top-left element is (row_begin, col_begin); staged_prob[r] holds prob[row_begin + r] (staged
// once per tile by the caller, so this loop issues no dependent global loads). kThreads threads
// take part; `thread` is this thread's index among them. A thread always stores the same
// four-column quad, so its bias quad is loaded once per slice. Columns at or past N (the tile's
// tail) are not stored.
template <int kRows, int kThreads>
__device__ __forceinline__ void store_chunk(const EpilogueTile& t, const float* staged, const float* staged_prob,
                                            int64_t row_begin, int32_t col_begin, int thread) {
    constexpr int kQuadsPerRow = kEpilogueChunkCols / 4;
    constexpr int kRowsPerPass = kThreads / kQuadsPerRow;
    static_assert(kThreads % kQuadsPerRow == 0 && kRows % kRowsPerPass == 0,
                  "every thread stores whole passes of the same column quad");
    const int c = (thread % kQuadsPerRow) * 4;
    const int32_t col = col_begin + c;
    if (col >= t.n) return;
    const float4 bias = t.bias != nullptr ? load_quad(t.bias, t.bias_dtype, col) : make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 1
    for (int r = thread / kQuadsPerRow; r < kRows; r += kRowsPerPass) {
        const float4 acc = *reinterpret_cast<const float4*>(staged + r * kEpiloguePitch + c);
        epilogue_quad(t, row_begin + r, col, acc, staged_prob[r], bias);
    }
}

}  // namespace ggemm
