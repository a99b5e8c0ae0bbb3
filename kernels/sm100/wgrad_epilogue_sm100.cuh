// The SM100 weight gradient's stores: an epilogue warp stages 32 rows of P x 32 columns of Q of
// raw fp32 accumulators (one row per lane, from tcgen05.ld) in its shared buffer, and
// store_wgrad_slice reads them back four columns per thread and writes whole row segments.
//
// The arithmetic is the SM90 register path's (wgrad_epilogue_sm90.cuh; docs/API.md, "Weight
// gradient"): v = acc * alpha in fp32; overwrite stores cvt(v), accumulate stores
// cvt(float(old) + v), rounding to nearest even once. Explicit _rn intrinsics: no contraction.
#pragma once

#include <cstdint>

#include "kernels/sm100/epilogue_sm100.cuh"

namespace ggemm::sm100 {

// Where one epilogue warp's 32 rows of a tile go.
struct WgradRows {
    void* out;          // the expert's P x Q matrix, row-major, of out_dtype
    int32_t q;
    int32_t out_dtype;
    int64_t row_begin;  // the warp's first row of P
    int rows;           // of its 32 rows, those before P (the warp stores nothing past P)
    float alpha;
    bool accumulate;
};

// One staged 32 x 32 slice (row pitch kEpiloguePitch floats) whose left column is `col_begin`;
// columns at or past Q are not stored (Q is a multiple of 8: a quad is all in or all out).
__device__ __forceinline__ void store_wgrad_slice(const WgradRows& w, const float* staged, int32_t col_begin,
                                                  int lane) {
    const SliceQuad<32, 32> quad(lane);
    const int32_t col = col_begin + quad.column;
    if (col >= w.q) return;
#pragma unroll 1
    for (int r = quad.first_row; r < w.rows; r += quad.kRowsPerPass) {
        const float4 acc = *reinterpret_cast<const float4*>(staged + r * kEpiloguePitch + quad.column);
        float4 v = make_float4(__fmul_rn(acc.x, w.alpha), __fmul_rn(acc.y, w.alpha), __fmul_rn(acc.z, w.alpha),
                               __fmul_rn(acc.w, w.alpha));
        const int64_t index = (w.row_begin + r) * w.q + col;
        if (w.accumulate) {
            const float4 old = load_quad(w.out, w.out_dtype, index);
            v = make_float4(__fadd_rn(old.x, v.x), __fadd_rn(old.y, v.y), __fadd_rn(old.z, v.z), __fadd_rn(old.w, v.w));
        }
        store_quad(w.out, w.out_dtype, index, v);
    }
}

// Zeros over the warp's rows of a tile kTileQ columns wide from `q_begin` (an empty expert in
// overwrite mode): exact zeros whatever alpha holds, no accumulator involved.
template <int kTileQ>
__device__ __forceinline__ void store_wgrad_zero_rows(const WgradRows& w, int32_t q_begin, int lane) {
    const SliceQuad<32, 32> quad(lane);
#pragma unroll 1
    for (int chunk = 0; chunk < kTileQ / kEpilogueChunkCols; ++chunk) {
        const int32_t col = q_begin + chunk * kEpilogueChunkCols + quad.column;
        if (col >= w.q) break;
        for (int r = quad.first_row; r < w.rows; r += quad.kRowsPerPass) {
            store_quad(w.out, w.out_dtype, (w.row_begin + r) * w.q + col, make_float4(0.f, 0.f, 0.f, 0.f));
        }
    }
}

}  // namespace ggemm::sm100
