// The SM100 epilogue's stores: a warp stages raw fp32 accumulators of its 32 rows in shared
// memory, 32 columns at a time (kEpiloguePitch floats per row), and store_chunk reads them back
// four columns per thread, applies the contract's arithmetic (kernels/common/epilogue.cuh) and
// writes C and D with 8- or 16-byte vector stores that cover whole row segments.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/common/epilogue.cuh"

namespace ggemm::sm100 {

constexpr int kEpilogueChunkCols = 32;
// 40 floats per staged row keeps every float4 access 16-byte aligned. store_chunk's reads (eight
// threads over one 128-byte row) are free of bank conflicts; the drain's writes (each lane its
// own row, float4) put rows r and r + 4 on the same banks, a two-way conflict.
constexpr int kEpiloguePitch = 40;

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

// Rounds four values to `dtype` (round to nearest even) and stores them at `index`.
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

// The contract's value kValue for four accumulators of one row.
template <EpilogueValue kValue>
__device__ __forceinline__ float4 contract_quad(float alpha, float4 acc, float prob, float4 bias) {
    return make_float4(contract_value<kValue>(alpha, acc.x, prob, bias.x),
                       contract_value<kValue>(alpha, acc.y, prob, bias.y),
                       contract_value<kValue>(alpha, acc.z, prob, bias.z),
                       contract_value<kValue>(alpha, acc.w, prob, bias.w));
}

// The contract's epilogue on four accumulators of one row, columns col..col+3.
__device__ __forceinline__ void epilogue_quad(const EpilogueTile& t, int64_t row, int32_t col, float4 acc,
                                              float prob, float4 bias) {
    const int64_t index = row * t.n + col;
    if (t.bias != nullptr) {
        const float4 v = contract_quad<EpilogueValue::kBiased>(t.alpha, acc, prob, bias);
        if (t.c != nullptr) store_quad(t.c, t.c_dtype, index, v);
        store_quad(t.d, t.d_dtype, index, v);
    } else {
        // D from the fp32 g that C is rounded from, not from the rounded C.
        const float4 g = contract_quad<EpilogueValue::kScaled>(t.alpha, acc, prob, bias);
        if (t.c != nullptr) store_quad(t.c, t.c_dtype, index, g);
        store_quad(t.d, t.d_dtype, index,
                   make_float4(scaled_by_prob(g.x, prob), scaled_by_prob(g.y, prob), scaled_by_prob(g.z, prob),
                               scaled_by_prob(g.w, prob)));
    }
}

// The column quad that thread `thread` of kThreads stores in every row pass over a staged slice
// kEpilogueChunkCols wide, and its first row (then every kRowsPerPass-th). A thread always
// stores the same quad, so a per-column operand (bias) is loaded once per slice.
template <int kRows, int kThreads>
struct SliceQuad {
    static constexpr int kQuadsPerRow = kEpilogueChunkCols / 4;
    static constexpr int kRowsPerPass = kThreads / kQuadsPerRow;
    static_assert(kThreads % kQuadsPerRow == 0 && kRows % kRowsPerPass == 0,
                  "every thread stores whole passes of the same column quad");
    int column;     // within the slice
    int first_row;
    __device__ __forceinline__ explicit SliceQuad(int thread)
        : column((thread % kQuadsPerRow) * 4), first_row(thread / kQuadsPerRow) {}
};

// Stores the first `rows` (at most kRows) of kRows x kEpilogueChunkCols staged accumulators (row
// pitch kEpiloguePitch floats) whose top-left element is (row_begin, col_begin); staged_prob[r]
// holds prob[row_begin + r] (staged once per tile by the caller, so this loop issues no dependent
// global loads). kThreads threads take part; `thread` is this thread's index among them. Columns
// at or past N (the tile's tail) and rows at or past `rows` (past a valid-row count) are not
// stored.
template <int kRows, int kThreads>
__device__ __forceinline__ void store_chunk(const EpilogueTile& t, const float* staged, const float* staged_prob,
                                            int64_t row_begin, int rows, int32_t col_begin, int thread) {
    const SliceQuad<kRows, kThreads> quad(thread);
    const int32_t col = col_begin + quad.column;
    if (col >= t.n) return;
    const float4 bias = t.bias != nullptr ? load_quad(t.bias, t.bias_dtype, col) : make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 1
    for (int r = quad.first_row; r < rows; r += quad.kRowsPerPass) {
        const float4 acc = *reinterpret_cast<const float4*>(staged + r * kEpiloguePitch + quad.column);
        epilogue_quad(t, row_begin + r, col, acc, staged_prob[r], bias);
    }
}

// Stores the first `rows` (at most kRows) of kRows x kEpilogueChunkCols staged values, already
// the contract's values in fp32 (a fused GLU's pre-activation or output), to `out`: row-major, n
// columns of `dtype`, the top-left element at (row_begin, col_begin). Columns at or past n are
// not stored. Threads as store_chunk's.
template <int kRows, int kThreads>
__device__ __forceinline__ void store_values_chunk(void* out, int32_t dtype, int32_t n, const float* staged,
                                                   int64_t row_begin, int rows, int32_t col_begin, int thread) {
    const SliceQuad<kRows, kThreads> quad(thread);
    const int32_t col = col_begin + quad.column;
    if (col >= n) return;
#pragma unroll 1
    for (int r = quad.first_row; r < rows; r += quad.kRowsPerPass) {
        const float4 v = *reinterpret_cast<const float4*>(staged + r * kEpiloguePitch + quad.column);
        store_quad(out, dtype, (row_begin + r) * n + col, v);
    }
}

}  // namespace ggemm::sm100
