// The SM90 bulk-copy epilogue: from the wgmma accumulators of a whole tile to C and D in global
// memory, with the contract's arithmetic (kernels/common/epilogue.h), without the math warps
// storing to global memory themselves.
//
// Each thread converts its fragment in registers and writes it, already in the output dtype, to
// the tile's output buffer in shared memory (output_tile_layout.h): stmatrix for 16-bit outputs,
// 8-byte st.shared for fp32. Then lane 0 of each warp issues one bulk copy
// (cp.async.bulk.global.shared::cta) per row of the 16 rows its warp wrote, and the warp goes on
// to the next tile: the copies run while its MMAs do. The buffer rows of a warp are rewritten
// only after that lane has waited for its previous copies to finish reading them
// (cp.async.bulk.wait_group.read), normally long done by then. Every warp touches only its own
// 16 rows, so no warp waits for another here (bar.warp.sync orders a warp's lanes; each lane's
// fence.proxy.async orders its generic writes before the copies read them).
//
// A 16-bit output of a whole tile fits the buffer in one pass. An fp32 one takes two (half the
// columns each), and C before D takes one pass per output: later passes of a tile wait for the
// previous pass's copies to read the buffer, so the planner prefers this epilogue where one pass
// suffices (src/heuristics.cpp).
//
// The wgmma accumulator layout (PTX ISA 9.7.15.5.1, "Register fragment for D" of m64nNk16): in
// warp w of the warpgroup, lane l holds rows 16w + l/4 and 16w + l/4 + 8, and in each 8-column
// group j the columns 8j + 2(l%4) and +1, as acc[4j..4j+1] and acc[4j+2..4j+3].
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "kernels/common/epilogue.h"
#include "kernels/sm90/epilogue_sm90.cuh"
#include "kernels/sm90/output_tile_layout.h"
#include "ptx/barrier.h"
#include "ptx/fence.h"
#include "ptx/smem.h"
#include "ptx/stmatrix.h"
#include "ptx/tma.h"

namespace ggemm::sm90 {

// Two adjacent output elements as one 32-bit word of T (round to nearest even).
template <class T>
__device__ __forceinline__ uint32_t pack_pair(float2 v) {
    if constexpr (std::is_same_v<T, __half>) {
        const __half2 h = __floats2half2_rn(v.x, v.y);
        return *reinterpret_cast<const uint32_t*>(&h);
    } else {
        const __nv_bfloat162 h = __floats2bfloat162_rn(v.x, v.y);
        return *reinterpret_cast<const uint32_t*>(&h);
    }
}

// The bias (fp32, staged by begin_epilogue) of columns 8j + 2(l%4) and + 1; zeros without bias.
template <EpilogueValue kValue>
__device__ __forceinline__ float2 staged_bias(const FragmentEpilogue& e, int group, int lane) {
    if constexpr (kValue == EpilogueValue::kBiased) {
        const uint2 raw = ptx::ld_shared_v2_b32(e.bias_addr + (group * 8 + 2 * (lane % 4)) * 4);
        return make_float2(__uint_as_float(raw.x), __uint_as_float(raw.y));
    }
    return make_float2(0.f, 0.f);
}

// The contract's value of accumulator pair `pair` (8-column group pair / 2; top rows for an even
// pair, bottom rows for an odd one).
template <EpilogueValue kValue, int kWidth>
__device__ __forceinline__ float2 pair_value(const FragmentEpilogue& e, const float (&acc)[kWidth / 2], int pair,
                                             float2 bias) {
    return contract_pair<kValue>(e.t.alpha, make_float2(acc[2 * pair], acc[2 * pair + 1]),
                                 pair % 2 == 0 ? e.prob.x : e.prob.y, bias);
}

// Writes this thread's share of columns [first, first + kColumns) of the tile (or piece), in
// dtype T, to the output buffer at `buffer` (the pass's first column at buffer column 0).
template <class T, EpilogueValue kValue, int kTileN, int kWidth, int kFirst, int kColumns>
__device__ __forceinline__ void stage_pass(const FragmentEpilogue& e, const float (&acc)[kWidth / 2], uint32_t buffer,
                                           int warp, int lane) {
    constexpr int kElem = static_cast<int>(sizeof(T));
    if constexpr (kElem == 2) {
        static_assert(kFirst % 16 == 0 && kColumns % 16 == 0, "stmatrix.x4 covers 16 columns");
#pragma unroll
        for (int i = 0; i < kColumns / 16; ++i) {
            const int group = (kFirst + 16 * i) / 8;  // and group + 1
            const float2 bias_left = staged_bias<kValue>(e, group, lane);
            const float2 bias_right = staged_bias<kValue>(e, group + 1, lane);
            const int pair = 2 * group;  // matrices 0-3: pairs pair .. pair + 3
            const ElementAt at = stmatrix_row_start(warp, lane, i);
            ptx::stmatrix_x4(buffer + output_offset(kTileN, kElem, at.row, at.column),
                             pack_pair<T>(pair_value<kValue, kWidth>(e, acc, pair, bias_left)),
                             pack_pair<T>(pair_value<kValue, kWidth>(e, acc, pair + 1, bias_left)),
                             pack_pair<T>(pair_value<kValue, kWidth>(e, acc, pair + 2, bias_right)),
                             pack_pair<T>(pair_value<kValue, kWidth>(e, acc, pair + 3, bias_right)));
        }
    } else {
        static_assert(kFirst % 8 == 0 && kColumns % 8 == 0, "whole 8-column groups");
#pragma unroll
        for (int g = 0; g < kColumns / 8; ++g) {
            const int group = kFirst / 8 + g;
            const float2 bias = staged_bias<kValue>(e, group, lane);
#pragma unroll
            for (int half = 0; half < 2; ++half) {
                const float2 v = pair_value<kValue, kWidth>(e, acc, 2 * group + half, bias);
                const ElementAt at = fragment_pair(warp, lane, 2 * g + half);
                ptx::st_shared_v2_b32(buffer + output_offset(kTileN, kElem, at.row, at.column), __float_as_uint(v.x),
                                      __float_as_uint(v.y));
            }
        }
    }
}

// One pass of one output: columns [kFirst, kFirst + kColumns) of a kWidth-wide tile or piece,
// staged by the whole warp, then copied out row by row by lane 0. `warp` is the thread's warp
// among the tile's eight math warps; warp_row is the first of the warp's 16 rows in C / D.
template <class T, EpilogueValue kValue, int kTileN, int kWidth, int kFirst, int kColumns>
__device__ __forceinline__ void bulk_store_pass(const FragmentEpilogue& e, void* out, const float (&acc)[kWidth / 2],
                                                int warp, int lane, int64_t warp_row) {
    constexpr int kElem = static_cast<int>(sizeof(T));
    constexpr int kPitch = output_pitch(kTileN, kElem);
    // The warp's rows of the buffer are free once its previous copies have read them.
    if (lane == 0) ptx::tma_store_wait_read<0>();
    ptx::warp_sync();
    stage_pass<T, kValue, kTileN, kWidth, kFirst, kColumns>(e, acc, e.staging_addr, warp, lane);
    ptx::fence_proxy_async_shared();  // this lane's writes, before the copies read them
    ptx::warp_sync();
    if (lane == 0) {
        const int32_t column = e.n_begin + kFirst;
        const int32_t left = e.t.n - column;  // > 0: the caller skips passes past N
        const uint32_t bytes = static_cast<uint32_t>(left < kColumns ? left : kColumns) * kElem;
        const int64_t stride = int64_t{e.t.n} * kElem;
        char* dst = static_cast<char*>(out) + (warp_row * e.t.n + column) * kElem;
        const uint32_t src = e.staging_addr + 16 * warp * kPitch;
#pragma unroll
        for (int r = 0; r < 16; ++r) ptx::bulk_copy_shared_to_global(dst + r * stride, src + r * kPitch, bytes);
        ptx::tma_store_commit();
    }
}

// Stores one output tensor of dtype T, holding the contract's kValue, from the accumulators of a
// kWidth-wide tile or piece: one pass, or two for fp32 (the second only if it starts before N).
template <class T, EpilogueValue kValue, int kTileN, int kWidth>
__device__ __forceinline__ void bulk_store_output(const FragmentEpilogue& e, void* out, const float (&acc)[kWidth / 2],
                                                  int warp) {
    constexpr int kPassColumns = pass_columns(kTileN, static_cast<int>(sizeof(T)));
    constexpr int kPasses = passes(kTileN, kWidth, static_cast<int>(sizeof(T)));
    static_assert(kPasses == 1 || kPasses == 2, "a row of fp32 is at most two buffer rows");
    const int lane = threadIdx.x % 32;
    const int64_t warp_row = e.row_begin + 16 * (warp % 4);  // e.row_begin: the warpgroup's first row
    constexpr int kFirstColumns = kWidth < kPassColumns ? kWidth : kPassColumns;
    bulk_store_pass<T, kValue, kTileN, kWidth, 0, kFirstColumns>(e, out, acc, warp, lane, warp_row);
    if constexpr (kPasses == 2) {
        if (e.n_begin + kPassColumns < e.t.n) {
            bulk_store_pass<T, kValue, kTileN, kWidth, kPassColumns, kWidth - kPassColumns>(e, out, acc, warp, lane,
                                                                                          warp_row);
        }
    }
}

template <EpilogueValue kValue, int kTileN, int kWidth>
__device__ __forceinline__ void bulk_store_output_as(const FragmentEpilogue& e, void* out, int32_t dtype,
                                                     const float (&acc)[kWidth / 2], int warp) {
    switch (dtype) {
        case kBF16: bulk_store_output<__nv_bfloat16, kValue, kTileN, kWidth>(e, out, acc, warp); break;
        case kFP16: bulk_store_output<__half, kValue, kTileN, kWidth>(e, out, acc, warp); break;
        default: bulk_store_output<float, kValue, kTileN, kWidth>(e, out, acc, warp); break;
    }
}

// The whole bulk epilogue of one warp's share of a tile: C (when generated), then D. Starts after
// begin_epilogue; e.staging_addr is the output buffer.
template <int kTileN, int kWidth>
__device__ __forceinline__ void bulk_store_tile(const FragmentEpilogue& e, const float (&acc)[kWidth / 2], int warp) {
    using V = EpilogueValue;
    if (e.t.bias != nullptr) {
        if (e.t.c != nullptr) bulk_store_output_as<V::kBiased, kTileN, kWidth>(e, e.t.c, e.t.c_dtype, acc, warp);
        bulk_store_output_as<V::kBiased, kTileN, kWidth>(e, e.t.d, e.t.d_dtype, acc, warp);
    } else {
        if (e.t.c != nullptr) bulk_store_output_as<V::kScaled, kTileN, kWidth>(e, e.t.c, e.t.c_dtype, acc, warp);
        bulk_store_output_as<V::kScaledByProb, kTileN, kWidth>(e, e.t.d, e.t.d_dtype, acc, warp);
    }
}

// Before the warp's threads exit: the shared memory its copies read must outlive them.
__device__ __forceinline__ void bulk_store_drain(int lane) {
    if (lane == 0) ptx::bulk_wait<0>();
}

}  // namespace ggemm::sm90
