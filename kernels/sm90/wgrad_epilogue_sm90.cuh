// The weight gradient's epilogue on SM90: one math warpgroup's accumulators (64 rows of P x
// kTileQ columns of Q) scaled by alpha, optionally added to the output already there, rounded
// once to the output dtype and stored.
//
// The wgmma accumulator layout (PTX ISA 9.7.15.5.1, "Register fragment for D" of m64nNk16): in
// warp w of the warpgroup, lane l holds rows 16w + l/4 and 16w + l/4 + 8, and in each 8-column
// group j the columns 8j + 2(l%4) and +1, as acc[4j..4j+1] and acc[4j+2..4j+3]. Each thread
// stores its column pairs straight from registers: four lanes cover 8 adjacent columns of a row.
// With accumulate, a batch of pairs is loaded before any is stored, so the loads overlap.
//
// The arithmetic (docs/API.md, "Weight gradient"): v = acc * alpha in fp32; overwrite stores
// cvt(v), accumulate stores cvt(float(old) + v). Explicit _rn intrinsics: no contraction.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "kernels/common/contract.h"

namespace ggemm::sm90 {

template <class T>
__device__ __forceinline__ float2 load_out_pair(const T* at) {
    if constexpr (std::is_same_v<T, float>) {
        return *reinterpret_cast<const float2*>(at);
    } else if constexpr (std::is_same_v<T, __half>) {
        return __half22float2(*reinterpret_cast<const __half2*>(at));
    } else {
        return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(at));
    }
}

// Rounds to nearest even.
template <class T>
__device__ __forceinline__ void store_out_pair(T* at, float2 v) {
    if constexpr (std::is_same_v<T, float>) {
        *reinterpret_cast<float2*>(at) = v;
    } else if constexpr (std::is_same_v<T, __half>) {
        *reinterpret_cast<__half2*>(at) = __floats2half2_rn(v.x, v.y);
    } else {
        *reinterpret_cast<__nv_bfloat162*>(at) = __floats2bfloat162_rn(v.x, v.y);
    }
}

// Where one warpgroup's share of a tile goes.
struct WgradFragment {
    void* expert_out;  // the expert's P x Q matrix
    int32_t p;
    int32_t q;
    int32_t row;       // the thread's top row of P (its bottom row is row + 8)
    int32_t q_begin;   // the tile's first column
    float alpha;
};

template <class T, bool kAccumulate, int kTileQ>
__device__ __forceinline__ void store_wgrad_fragment(const WgradFragment& f, const float (&acc)[kTileQ / 2]) {
    constexpr int kGroups = kTileQ / 8;
    constexpr int kBatch = 8;  // column groups whose old values are loaded together
    static_assert(kGroups % kBatch == 0, "whole batches");
    const int lane = threadIdx.x % 32;
    const bool top_in = f.row < f.p;
    const bool bottom_in = f.row + 8 < f.p;
    T* top = static_cast<T*>(f.expert_out) + static_cast<int64_t>(f.row) * f.q;
    T* bottom = top + int64_t{8} * f.q;
    const int32_t first_col = f.q_begin + 2 * (lane % 4);
#pragma unroll
    for (int j0 = 0; j0 < kGroups; j0 += kBatch) {
        float2 old_top[kBatch], old_bottom[kBatch];
#pragma unroll
        for (int jj = 0; jj < kBatch; ++jj) {
            old_top[jj] = old_bottom[jj] = make_float2(0.f, 0.f);
            if constexpr (kAccumulate) {
                const int32_t col = first_col + 8 * (j0 + jj);
                if (col < f.q) {  // Q is a multiple of 8: the pair's second column is in too
                    if (top_in) old_top[jj] = load_out_pair(top + col);
                    if (bottom_in) old_bottom[jj] = load_out_pair(bottom + col);
                }
            }
        }
#pragma unroll
        for (int jj = 0; jj < kBatch; ++jj) {
            const int j = j0 + jj;
            const int32_t col = first_col + 8 * j;
            if (col >= f.q) continue;
            float2 v_top = make_float2(__fmul_rn(acc[4 * j], f.alpha), __fmul_rn(acc[4 * j + 1], f.alpha));
            float2 v_bottom = make_float2(__fmul_rn(acc[4 * j + 2], f.alpha), __fmul_rn(acc[4 * j + 3], f.alpha));
            if constexpr (kAccumulate) {
                v_top = make_float2(__fadd_rn(old_top[jj].x, v_top.x), __fadd_rn(old_top[jj].y, v_top.y));
                v_bottom = make_float2(__fadd_rn(old_bottom[jj].x, v_bottom.x), __fadd_rn(old_bottom[jj].y, v_bottom.y));
            }
            if (top_in) store_out_pair(top + col, v_top);
            if (bottom_in) store_out_pair(bottom + col, v_bottom);
        }
    }
}

// Zeros over the thread's share of a tile (an empty expert in overwrite mode).
template <class T, int kTileQ>
__device__ __forceinline__ void store_zero_fragment(const WgradFragment& f) {
    const int lane = threadIdx.x % 32;
    T* top = static_cast<T*>(f.expert_out) + static_cast<int64_t>(f.row) * f.q;
    T* bottom = top + int64_t{8} * f.q;
    const int32_t first_col = f.q_begin + 2 * (lane % 4);
#pragma unroll 4
    for (int j = 0; j < kTileQ / 8; ++j) {
        const int32_t col = first_col + 8 * j;
        if (col >= f.q) break;
        if (f.row < f.p) store_out_pair(top + col, make_float2(0.f, 0.f));
        if (f.row + 8 < f.p) store_out_pair(bottom + col, make_float2(0.f, 0.f));
    }
}

template <int kTileQ>
__device__ __forceinline__ void store_wgrad_zeros(const WgradFragment& f, int32_t dtype) {
    switch (dtype) {
        case kBF16: store_zero_fragment<__nv_bfloat16, kTileQ>(f); break;
        case kFP16: store_zero_fragment<__half, kTileQ>(f); break;
        default: store_zero_fragment<float, kTileQ>(f); break;
    }
}

// The dtype and the mode, chosen once per tile.
template <int kTileQ>
__device__ __forceinline__ void store_wgrad_tile(const WgradFragment& f, int32_t dtype, bool accumulate,
                                                 const float (&acc)[kTileQ / 2]) {
    switch (dtype * 2 + (accumulate ? 1 : 0)) {
        case kBF16 * 2: store_wgrad_fragment<__nv_bfloat16, false, kTileQ>(f, acc); break;
        case kBF16 * 2 + 1: store_wgrad_fragment<__nv_bfloat16, true, kTileQ>(f, acc); break;
        case kFP16 * 2: store_wgrad_fragment<__half, false, kTileQ>(f, acc); break;
        case kFP16 * 2 + 1: store_wgrad_fragment<__half, true, kTileQ>(f, acc); break;
        case kFP32 * 2: store_wgrad_fragment<float, false, kTileQ>(f, acc); break;
        default: store_wgrad_fragment<float, true, kTileQ>(f, acc); break;
    }
}

}  // namespace ggemm::sm90
