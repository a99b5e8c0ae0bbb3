// The SM90 epilogue: from one math warpgroup's wgmma accumulators (64 rows x kTileN columns) to
// C and D in global memory, with the contract's arithmetic (kernels/common/epilogue.cuh).
//
// The accumulators leave in slices of 128 bytes per row: 64 columns of a 16-bit dtype, 32 of
// fp32. Each thread converts its fragment of a slice in registers and writes it, already in the
// output dtype, to the warpgroup's 64 x 128-byte shared buffer; then each warp copies out the 16
// rows it wrote itself, with 16-byte loads and stores, eight lanes per 128-byte row segment. A
// warp touches no other warp's rows, so the warps of a warpgroup never wait for each other here
// (bar.warp.sync orders a warp's lanes). The buffer uses the 128-byte swizzle, so the fragment
// writes (eight rows, four lanes each) and the row reads (one row, eight chunks) are both free of
// bank conflicts.
//
// The wgmma accumulator layout (PTX ISA 9.7.15.5.1, "Register fragment for D" of m64nNk16): in
// warp w of the warpgroup, lane l holds rows 16w + l/4 and 16w + l/4 + 8, and in each 8-column
// group j the columns 8j + 2(l%4) and +1, as acc[4j..4j+1] and acc[4j+2..4j+3].
//
// Everything per output element happens in registers; the dtype switches run once per tile and
// each output dtype has its own unrolled copy of the slice loop.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "kernels/common/epilogue.cuh"
#include "kernels/common/glu.h"
#include "kernels/sm90/epilogue_layout.h"
#include "ptx/barrier.cuh"
#include "ptx/prefetch.cuh"
#include "ptx/smem.cuh"

namespace ggemm::sm90 {

// The contract's value kValue for two accumulators of one row (a wgmma fragment's column pair);
// bias holds the two columns' bias as fp32 (used by kBiased only).
template <EpilogueValue kValue>
__device__ __forceinline__ float2 contract_pair(float alpha, float2 acc, float prob, float2 bias) {
    return make_float2(contract_value<kValue>(alpha, acc.x, prob, bias.x),
                       contract_value<kValue>(alpha, acc.y, prob, bias.y));
}

// Two adjacent output elements, converted to T (round to nearest even) and written to shared
// memory at `addr`.
template <class T>
__device__ __forceinline__ void stage_pair(uint32_t addr, float2 v) {
    if constexpr (std::is_same_v<T, float>) {
        ptx::st_shared_v2_b32(addr, __float_as_uint(v.x), __float_as_uint(v.y));
    } else if constexpr (std::is_same_v<T, __half>) {
        const __half2 h = __floats2half2_rn(v.x, v.y);
        ptx::st_shared_b32(addr, *reinterpret_cast<const uint32_t*>(&h));
    } else {
        const __nv_bfloat162 h = __floats2bfloat162_rn(v.x, v.y);
        ptx::st_shared_b32(addr, *reinterpret_cast<const uint32_t*>(&h));
    }
}

// Copies warp w's 16 rows of a staged slice (its first column col0) to rows row_begin + 16 w..
// of `out`, n columns wide: lane l moves chunk l % 8 of rows l / 8 + 4 i; chunks at or past
// col_end (N, the tile's tail; or the end of a slice staged only in part) and rows at or past
// `rows` (the warpgroup's valid rows, 64 without counts) stay.
template <class T>
__device__ __forceinline__ void copy_slice(uint32_t slice_addr, void* out, int64_t row_begin, int32_t col0,
                                           int32_t col_end, int32_t n, int warp, int lane, int32_t rows) {
    constexpr int kChunkCols = 16 / static_cast<int>(sizeof(T));
    constexpr int kPasses = 4;  // 16 rows, four per pass
    const int chunk = lane % 8;
    const int row = 16 * warp + lane / 8;
    const int32_t col = col0 + chunk * kChunkCols;
    if (col >= col_end) return;
    uint4 v[kPasses];
#pragma unroll
    for (int i = 0; i < kPasses; ++i) v[i] = ptx::ld_shared_v4_b32(slice_addr + slice_offset(row + 4 * i, chunk * 16));
    char* dst = static_cast<char*>(out) + ((row_begin + row) * n + col) * static_cast<int64_t>(sizeof(T));
    const int64_t step = int64_t{4} * n * static_cast<int64_t>(sizeof(T));
#pragma unroll
    for (int i = 0; i < kPasses; ++i) {
        if (row + 4 * i < rows) *reinterpret_cast<uint4*>(dst + i * step) = v[i];
    }
}

// What one thread's share of a tile's epilogue needs besides the accumulators.
struct FragmentEpilogue {
    EpilogueTile t;
    float2 prob;          // prob of the thread's rows r and r + 8
    uint32_t bias_addr;   // the tile's bias columns staged as fp32 (shared window), when t.bias
    uint32_t slice_addr;  // the warpgroup's slice buffer (shared window)
    uint32_t barrier;     // the warpgroup's named barrier (for the bias row)
    int64_t row_begin;    // the warpgroup's first row
    int32_t rows;         // of its 64 rows, how many are valid (1..64): only those are written
    int32_t n_begin;      // the tile's first column
};

// Stores one output tensor of dtype T, holding the contract's kValue, from the accumulators, up
// to column n_end (N; or the end of a piece, for the fused epilogues that serve every width).
template <class T, EpilogueValue kValue, int kTileN>
__device__ __forceinline__ void store_output(const FragmentEpilogue& e, void* out, const float (&acc)[kTileN / 2],
                                             int32_t n_end) {
    constexpr int kCols = kSliceRowBytes / static_cast<int>(sizeof(T));
    constexpr int kGroups = kCols / 8;
    constexpr int kTileGroups = kTileN / 8;  // a tile narrower than a slice fills part of one
    const int thread = threadIdx.x % 128;
    const int warp = thread / 32;
    const int lane = thread % 32;
    const int row = warp * 16 + lane / 4;  // and row + 8, which has the same swizzle
    const uint32_t top_row = e.slice_addr + row * kSliceRowBytes;
    const int pair_byte = 2 * (lane % 4) * static_cast<int>(sizeof(T));  // in an 8-column group
    const int32_t tile_end = e.n_begin + kTileN < n_end ? e.n_begin + kTileN : n_end;
#pragma unroll
    for (int slice = 0; slice < (kTileN + kCols - 1) / kCols; ++slice) {
        const int32_t col0 = e.n_begin + slice * kCols;
        if (col0 >= tile_end) break;  // N tail: nothing left of the tile
        // The slice's bias columns first: the loads then overlap instead of each waiting in turn.
        float2 bias[kGroups];
#pragma unroll
        for (int jj = 0; jj < kGroups; ++jj) {
            bias[jj] = make_float2(0.f, 0.f);
            if (slice * kGroups + jj >= kTileGroups) continue;
            if constexpr (kValue == EpilogueValue::kBiased || kValue == EpilogueValue::kBiasedPreActivation) {
                const uint2 raw =
                    ptx::ld_shared_v2_b32(e.bias_addr + ((slice * kGroups + jj) * 8 + 2 * (lane % 4)) * 4);
                bias[jj] = make_float2(__uint_as_float(raw.x), __uint_as_float(raw.y));
            }
        }
#pragma unroll
        for (int jj = 0; jj < kGroups; ++jj) {
            const int j = slice * kGroups + jj;
            if (j >= kTileGroups) continue;
            const float2 top =
                contract_pair<kValue>(e.t.alpha, make_float2(acc[4 * j], acc[4 * j + 1]), e.prob.x, bias[jj]);
            const float2 bottom = contract_pair<kValue>(e.t.alpha, make_float2(acc[4 * j + 2], acc[4 * j + 3]),
                                                        e.prob.y, bias[jj]);
            const int byte = jj * 8 * static_cast<int>(sizeof(T)) + pair_byte;
            const uint32_t at = top_row + swizzled_chunk(row, byte) + (byte & 15);
            stage_pair<T>(at, top);
            stage_pair<T>(at + 8 * kSliceRowBytes, bottom);
        }
        ptx::warp_sync();  // the warp's rows of the slice are staged
        copy_slice<T>(e.slice_addr, out, e.row_begin, col0, tile_end, e.t.n, warp, lane, e.rows);
        ptx::warp_sync();  // and read: the warp may write its rows of the next slice
    }
}

template <EpilogueValue kValue, int kTileN>
__device__ __forceinline__ void store_output_as(const FragmentEpilogue& e, void* out, int32_t dtype,
                                                const float (&acc)[kTileN / 2], int32_t n_end) {
    switch (dtype) {
        case kBF16: store_output<__nv_bfloat16, kValue, kTileN>(e, out, acc, n_end); break;
        case kFP16: store_output<__half, kValue, kTileN>(e, out, acc, n_end); break;
        default: store_output<float, kValue, kTileN>(e, out, acc, n_end); break;
    }
}

// The pre-activation of two accumulators: fma(acc, alpha, bias), bias kNoBias in a call without
// one (acc * alpha, bit for bit).
__device__ __forceinline__ float2 pre_activation_pair(float alpha, float2 acc, float2 bias_pair) {
    return contract_pair<EpilogueValue::kBiasedPreActivation>(alpha, acc, 0.f, bias_pair);
}

// The bias pair of a fused GLU's call without bias.
__device__ __forceinline__ float2 no_bias_pair() { return make_float2(kNoBias, kNoBias); }

// The accumulator group (8 columns) holding the gate columns of a fused GLU's output group; its
// up columns are kGluBlockColumns / 8 groups further on.
__device__ __forceinline__ int glu_gate_group(int out_group) {
    constexpr int kGroupsPerHalf = kGluBlockColumns / 8;
    return out_group / kGroupsPerHalf * 2 * kGroupsPerHalf + out_group % kGroupsPerHalf;
}

// A fused GLU's D at the thread's two columns of one output group in row r (half 0) or r + 8
// (half 1), in fp32: prob * act(gate, up) from the accumulator groups gate and
// gate + kGluBlockColumns / 8. Both output designs (store_glu_output, write_glu_atom) take it
// from here, so they give the same bits.
template <int32_t kActivation, int kTileN>
__device__ __forceinline__ float2 glu_output_pair(const EpilogueTile& t, float2 prob, const float (&acc)[kTileN / 2],
                                                  int gate, int half, float2 gate_bias, float2 up_bias) {
    const int up = gate + kGluBlockColumns / 8;
    const float2 gate_acc = make_float2(acc[4 * gate + 2 * half], acc[4 * gate + 2 * half + 1]);
    const float2 up_acc = make_float2(acc[4 * up + 2 * half], acc[4 * up + 2 * half + 1]);
    const float2 g = pre_activation_pair(t.alpha, gate_acc, gate_bias);
    const float2 u = pre_activation_pair(t.alpha, up_acc, up_bias);
    const float p = half == 0 ? prob.x : prob.y;
    return make_float2(__fmul_rn(p, glu_activation<kActivation>(g.x, u.x, t.glu)),
                       __fmul_rn(p, glu_activation<kActivation>(g.y, u.y, t.glu)));
}

// D of a fused GLU (kernels/common/glu.h), from a tile kTileN pre-activation columns wide whose
// first column is a multiple of 64: each 64-column block [gate 32 | up 32] gives 32 columns of
// the M x N/2 output. In the fragment, the thread holding gate column c of a block also holds
// its up column c + 32, four 8-column groups (16 accumulators) further on, so gate and up meet
// in registers. Output slices are staged and copied as store_output's; the last slice of a
// tile may be staged only in part (192-wide tiles, 64-wide pieces), and copy_slice stops there.
template <class T, int32_t kActivation, int kTileN>
__device__ __forceinline__ void store_glu_output(const FragmentEpilogue& e, const float (&acc)[kTileN / 2],
                                                 int32_t n_end) {
    static_assert(kTileN % (2 * kGluBlockColumns) == 0, "whole gate and up blocks");
    constexpr int kCols = kSliceRowBytes / static_cast<int>(sizeof(T));
    constexpr int kGroups = kCols / 8;
    constexpr int kOutCols = kTileN / 2;
    constexpr int kGroupsPerHalf = kGluBlockColumns / 8;
    const int thread = threadIdx.x % 128;
    const int warp = thread / 32;
    const int lane = thread % 32;
    const int row = warp * 16 + lane / 4;
    const uint32_t top_row = e.slice_addr + row * kSliceRowBytes;
    const int pair_byte = 2 * (lane % 4) * static_cast<int>(sizeof(T));
    const int32_t out_n = e.t.n / 2;
    const int32_t out_end = n_end / 2;
    const int32_t out_begin = e.n_begin / 2;
    const bool bias = e.t.bias != nullptr;
#pragma unroll
    for (int slice = 0; slice < (kOutCols + kCols - 1) / kCols; ++slice) {
        const int32_t col0 = out_begin + slice * kCols;
        if (col0 >= out_end) break;  // N tail, or the end of a piece
        constexpr int kLastGroups = (kOutCols % kCols == 0 ? kCols : kOutCols % kCols) / 8;
        const int groups = slice == kOutCols / kCols ? kLastGroups : kGroups;
        // The slice's gate and up bias pairs first, as store_output's: shared-memory asm keeps
        // program order, so a pair loaded after the previous group's staged stores would wait
        // its whole latency before the group's arithmetic.
        float2 gate_bias[kGroups], up_bias[kGroups];
#pragma unroll
        for (int jj = 0; jj < kGroups; ++jj) {
            gate_bias[jj] = up_bias[jj] = no_bias_pair();
            if (!bias || jj >= groups) continue;
            const int gate = glu_gate_group(slice * kGroups + jj);
            const uint2 g = ptx::ld_shared_v2_b32(e.bias_addr + (gate * 8 + 2 * (lane % 4)) * 4);
            const uint2 u = ptx::ld_shared_v2_b32(e.bias_addr + ((gate + kGroupsPerHalf) * 8 + 2 * (lane % 4)) * 4);
            gate_bias[jj] = make_float2(__uint_as_float(g.x), __uint_as_float(g.y));
            up_bias[jj] = make_float2(__uint_as_float(u.x), __uint_as_float(u.y));
        }
#pragma unroll
        for (int jj = 0; jj < kGroups; ++jj) {
            if (jj >= groups) break;
            const int gate = glu_gate_group(slice * kGroups + jj);
            float2 out[2];
#pragma unroll
            for (int half = 0; half < 2; ++half) {  // rows r and r + 8
                out[half] = glu_output_pair<kActivation, kTileN>(e.t, e.prob, acc, gate, half, gate_bias[jj],
                                                                 up_bias[jj]);
            }
            const int byte = jj * 8 * static_cast<int>(sizeof(T)) + pair_byte;
            const uint32_t at = top_row + swizzled_chunk(row, byte) + (byte & 15);
            stage_pair<T>(at, out[0]);
            stage_pair<T>(at + 8 * kSliceRowBytes, out[1]);
        }
        ptx::warp_sync();  // the warp's rows of the slice are staged
        const int32_t staged_end = col0 + groups * 8;
        copy_slice<T>(e.slice_addr, e.t.d, e.row_begin, col0, staged_end < out_end ? staged_end : out_end, out_n,
                      warp, lane, e.rows);
        ptx::warp_sync();  // and read: the warp may write its rows of the next slice
    }
}

template <int32_t kActivation, int kTileN>
__device__ __forceinline__ void store_glu_output_as(const FragmentEpilogue& e, const float (&acc)[kTileN / 2],
                                                    int32_t n_end) {
    switch (e.t.d_dtype) {
        case kBF16: store_glu_output<__nv_bfloat16, kActivation, kTileN>(e, acc, n_end); break;
        case kFP16: store_glu_output<__half, kActivation, kTileN>(e, acc, n_end); break;
        default: store_glu_output<float, kActivation, kTileN>(e, acc, n_end); break;
    }
}

// A fused GLU's epilogue: the pre-activation C (when generated), then D, up to column n_end.
template <int kTileN>
__device__ __forceinline__ void store_glu_tile(const FragmentEpilogue& e, const float (&acc)[kTileN / 2],
                                               int32_t n_end) {
    if (e.t.c != nullptr) {
        if (e.t.bias != nullptr) {
            store_output_as<EpilogueValue::kBiasedPreActivation, kTileN>(e, e.t.c, e.t.c_dtype, acc, n_end);
        } else {
            store_output_as<EpilogueValue::kScaled, kTileN>(e, e.t.c, e.t.c_dtype, acc, n_end);
        }
    }
    if (e.t.activation == kActivationSwiglu) {
        store_glu_output_as<kActivationSwiglu, kTileN>(e, acc, n_end);
    } else {
        store_glu_output_as<kActivationClampedGeglu, kTileN>(e, acc, n_end);
    }
}

// Two adjacent elements of the saved pre-activation (dGLU) of type T, widened to fp32.
template <class T>
__device__ __forceinline__ float2 load_pre_pair(const void* pre, int64_t index) {
    if constexpr (std::is_same_v<T, float>) {
        return *reinterpret_cast<const float2*>(static_cast<const float*>(pre) + index);
    } else if constexpr (std::is_same_v<T, __half>) {
        return __half22float2(*reinterpret_cast<const __half2*>(static_cast<const __half*>(pre) + index));
    } else {
        return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(static_cast<const __nv_bfloat16*>(pre) + index));
    }
}

// The gate and up pairs of both rows of one R group: [half][gate, up] at elements at[half] and
// at[half] + 32, of type T.
template <class T>
__device__ __forceinline__ void load_pre_group_of(const void* pre, const int64_t (&at)[2], float2 (&out)[2][2]) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
        out[half][0] = load_pre_pair<T>(pre, at[half]);
        out[half][1] = load_pre_pair<T>(pre, at[half] + kGluBlockColumns);
    }
}

// The same of the dtype given at run time: one dtype choice for the four loads, so they are
// issued together and wait once.
__device__ __forceinline__ void load_pre_group(const void* pre, int32_t dtype, const int64_t (&at)[2],
                                               float2 (&out)[2][2]) {
    switch (dtype) {
        case kBF16: load_pre_group_of<__nv_bfloat16>(pre, at, out); break;
        case kFP16: load_pre_group_of<__half>(pre, at, out); break;
        default: load_pre_group_of<float>(pre, at, out); break;
    }
}

// dGLU reads the saved pre-activation with plain loads whose results the next instructions need
// (four per R group, issued together: load_pre_group), so each group waits a load's latency. Two
// prefetches take that latency off the tile: the tile's rows of it into the L2 when the tile starts (its main
// loop hides the memory latency), and each 64-column block into the L1 one block ahead. A thread
// reads rows top and top + 8 of its warpgroup; the four lanes of a row share its lines.
__device__ __forceinline__ const char* pre_row(const void* pre, int32_t dtype, int64_t row, int64_t pitch,
                                               int64_t column) {
    return static_cast<const char*>(pre) + (row * pitch + column) * dtype_bytes(dtype);
}

// Into the L2: columns [2 n_begin, 2 min(n_begin + kTileN, N)) of both rows (never past the
// row's end), the lines spread over the four lanes of the row.
template <int kTileN>
__device__ __forceinline__ void prefetch_pre_tile(const EpilogueTile& t, int64_t top, int32_t n_begin, int lane) {
    const int32_t line_bytes = 128;
    const int32_t columns = t.n - n_begin < kTileN ? t.n - n_begin : kTileN;
    const int32_t row_bytes = 2 * columns * dtype_bytes(t.glu_pre_dtype);
    for (int half = 0; half < 2; ++half) {
        const char* first = pre_row(t.glu_pre, t.glu_pre_dtype, top + 8 * half, 2 * int64_t{t.n}, 2 * int64_t{n_begin});
        for (int32_t byte = (lane % 4) * line_bytes; byte < row_bytes; byte += 4 * line_bytes) {
            ptx::prefetch_global_l2(first + byte);
        }
    }
}

// Into the L1: the 64 pre-activation columns of R's 32-column block at r_col0 (one line of a
// 16-bit dtype, two of fp32), both rows; lane l % 4 = 0 and 1 take the top and bottom row.
__device__ __forceinline__ void prefetch_pre_block(const EpilogueTile& t, int64_t top, int32_t r_col0, int lane) {
    if (lane % 4 >= 2) return;
    const char* first = pre_row(t.glu_pre, t.glu_pre_dtype, top + 8 * (lane % 4), 2 * int64_t{t.n}, 2 * int64_t{r_col0});
    ptx::prefetch_global_l1(first);
    if (t.glu_pre_dtype == kFP32) ptx::prefetch_global_l1(first + 128);
}

// dGLU of one fragment pair (two columns of one row): d_pre's gate and up values, from the
// accumulators, the row's prob and the saved gate and up pairs; with `sum`, the pair's terms of
// d_prob are added to prob_sum (acc * act, one fma each, in column order). Both output designs
// take it from here, so they give the same bits.
struct DgluPair {
    float2 d_gate;
    float2 d_up;
};

template <int32_t kActivation>
__device__ __forceinline__ DgluPair dglu_pair(const EpilogueTile& t, float prob, float acc0, float acc1, float2 gate,
                                              float2 up, bool sum, float& prob_sum) {
    const float alpha_prob = dglu_alpha_prob(t.alpha, prob);
    const GluGrad d0 = glu_grad<kActivation>(gate.x, up.x, t.glu);
    const GluGrad d1 = glu_grad<kActivation>(gate.y, up.y, t.glu);
    const float rp0 = __fmul_rn(acc0, alpha_prob), rp1 = __fmul_rn(acc1, alpha_prob);
    if (sum) {
        prob_sum = glu_fma(acc0, d0.act, prob_sum);
        prob_sum = glu_fma(acc1, d1.act, prob_sum);
    }
    return {make_float2(__fmul_rn(rp0, d0.d_gate), __fmul_rn(rp1, d1.d_gate)),
            make_float2(__fmul_rn(rp0, d0.d_up), __fmul_rn(rp1, d1.d_up))};
}

// dGLU's partial sums of d_prob for R's 64-column block at column r_col0: the thread's sums of
// acc * act of rows top and top + 8 (prob_sum, reset here) are added over the four lanes of each
// row in a fixed butterfly (every lane gets the same bits), scaled by alpha, and lane 0 of the
// four stores the row's partial (GluRowPartial, kernels/common/glu.h). Both output designs end a
// block through here, so they give the same bits.
__device__ __forceinline__ void store_prob_partials(const EpilogueTile& t, int64_t top, int32_t r_col0, int lane,
                                                    float (&prob_sum)[2]) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
        float v = prob_sum[half];
        v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, 1));
        v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, 2));
        v = __fmul_rn(t.alpha, v);
        if (lane % 4 == 0) {
            const int64_t partial_block = r_col0 / (2 * kGluBlockColumns);
            t.d_prob_partials[partial_block * t.m + top + 8 * half] = v;
        }
        prob_sum[half] = 0.f;
    }
}

// dGLU (glu_backward): from R = alpha * acc, a tile kTileN columns of R wide whose first column
// is a multiple of 64, and the saved pre-activation, D = d_pre (M x 2N, the forward's
// interleaved layout) and the partial sums of d_prob. R's 32-column block b (R groups 4b .. 4b+3)
// pairs with the pre-activation's columns 64b .. 64b+63 of the tile (doubled column origin):
// gate at 8g + c, up at 32 + 8g + c for R's column 8g + c of the block, so each R block fills
// one 64-column block of d_pre: one slice of a 16-bit dtype, two of fp32 (each half computed
// once per slice it fills; d_prob is summed in the first).
//
// d_prob: each thread sums acc * act (one fma each) over its columns of one 64-column block of R
// (two R blocks, in column order), the four lanes of a row add theirs (a fixed butterfly: every
// lane gets the same bits) and scale the sum by alpha, and lane 0 of the four stores the row's
// partial for that block. The order depends only on the block, never on the tile width, the
// piece or the scheduler; a second kernel adds the blocks in order (kernels/common/glu_reduce.cuh).
template <class T, int32_t kActivation, int kTileN>
__device__ __forceinline__ void store_dglu_output(const FragmentEpilogue& e, const float (&acc)[kTileN / 2],
                                                  int32_t n_end) {
    constexpr int kCols = kSliceRowBytes / static_cast<int>(sizeof(T));
    constexpr int kSlicesPerBlock = 2 * kGluBlockColumns / kCols;  // 1 (16-bit) or 2 (fp32)
    constexpr int kGroupsPerBlock = kGluBlockColumns / 8;           // R groups of a 32-column block
    constexpr int kBlocks = kTileN / kGluBlockColumns;
    const int thread = threadIdx.x % 128;
    const int warp = thread / 32;
    const int lane = thread % 32;
    const int row = warp * 16 + lane / 4;
    const uint32_t top_row = e.slice_addr + row * kSliceRowBytes;
    const int pair_byte = 2 * (lane % 4) * static_cast<int>(sizeof(T));
    const int64_t pre_pitch = 2 * static_cast<int64_t>(e.t.n);
    const int64_t top = e.row_begin + row;  // and top + 8
    float prob_sum[2] = {0.f, 0.f};
    prefetch_pre_block(e.t, top, e.n_begin, lane);
#pragma unroll
    for (int block = 0; block < kBlocks; ++block) {
        const int32_t r_col0 = e.n_begin + block * kGluBlockColumns;
        if (r_col0 >= n_end) break;  // R's tail (N is a multiple of 32: blocks are whole), or a piece's end
        if (block + 1 < kBlocks && r_col0 + kGluBlockColumns < n_end) {
            prefetch_pre_block(e.t, top, r_col0 + kGluBlockColumns, lane);
        }
#pragma unroll
        for (int part = 0; part < kSlicesPerBlock; ++part) {
            const int32_t col0 = 2 * r_col0 + part * kCols;  // the slice's first column of d_pre
#pragma unroll
            for (int g = 0; g < kGroupsPerBlock; ++g) {
                const int j = block * kGroupsPerBlock + g;
                const int64_t gate_col = 2 * static_cast<int64_t>(r_col0) + 8 * g + 2 * (lane % 4);
                float2 out[2][2];  // [row half][gate, up]
                const int64_t at[2] = {top * pre_pitch + gate_col, (top + 8) * pre_pitch + gate_col};
                float2 pre[2][2];  // [row half][gate, up]
                load_pre_group(e.t.glu_pre, e.t.glu_pre_dtype, at, pre);
#pragma unroll
                for (int half = 0; half < 2; ++half) {
                    const DgluPair d = dglu_pair<kActivation>(e.t, half == 0 ? e.prob.x : e.prob.y,
                                                              acc[4 * j + 2 * half], acc[4 * j + 2 * half + 1],
                                                              pre[half][0], pre[half][1], part == 0, prob_sum[half]);
                    out[half][0] = d.d_gate;
                    out[half][1] = d.d_up;
                }
#pragma unroll
                for (int which = 0; which < 2; ++which) {  // gate, up
                    // 16-bit: gate at group g, up at g + 4 of the one slice; fp32: slice `which`.
                    if (kSlicesPerBlock == 2 && which != part) continue;
                    const int jj = kSlicesPerBlock == 1 ? g + which * kGroupsPerBlock : g;
                    const int byte = jj * 8 * static_cast<int>(sizeof(T)) + pair_byte;
                    const uint32_t addr = top_row + swizzled_chunk(row, byte) + (byte & 15);
                    stage_pair<T>(addr, out[0][which]);
                    stage_pair<T>(addr + 8 * kSliceRowBytes, out[1][which]);
                }
            }
            ptx::warp_sync();  // the warp's rows of the slice are staged
            copy_slice<T>(e.slice_addr, e.t.d, e.row_begin, col0, col0 + kCols, 2 * e.t.n, warp, lane, e.rows);
            ptx::warp_sync();  // and read: the warp may write its rows of the next slice
        }
        // A 64-column block of R ends here (or R does): the row's partial sum of d_prob.
        const bool block_ends = block % 2 == 1 || r_col0 + kGluBlockColumns >= n_end;
        if (block_ends) store_prob_partials(e.t, top, r_col0, lane, prob_sum);
    }
}

template <int32_t kActivation, int kTileN>
__device__ __forceinline__ void store_dglu_output_as(const FragmentEpilogue& e, const float (&acc)[kTileN / 2],
                                                     int32_t n_end) {
    switch (e.t.d_dtype) {
        case kBF16: store_dglu_output<__nv_bfloat16, kActivation, kTileN>(e, acc, n_end); break;
        case kFP16: store_dglu_output<__half, kActivation, kTileN>(e, acc, n_end); break;
        default: store_dglu_output<float, kActivation, kTileN>(e, acc, n_end); break;
    }
}

// The fused epilogues (GLU forward, dGLU), instantiated once per kernel at its full tile width
// and bounded at run time by the piece's width: the accumulators past it are the previous tile's
// and are never stored. One copy of this code per kernel, not one per piece width.
template <int kTileN>
__device__ __forceinline__ void store_fused_tile(const FragmentEpilogue& e, const float (&acc)[kTileN / 2],
                                                 int32_t width) {
    const int32_t n_end = e.n_begin + width < e.t.n ? e.n_begin + width : e.t.n;
    if (!e.t.glu_backward) {
        store_glu_tile<kTileN>(e, acc, n_end);
    } else if (e.t.activation == kActivationSwiglu) {
        store_dglu_output_as<kActivationSwiglu, kTileN>(e, acc, n_end);
    } else {
        store_dglu_output_as<kActivationClampedGeglu, kTileN>(e, acc, n_end);
    }
}

// The whole epilogue of one warpgroup's share of a tile: C (when generated), then D. Starts
// after begin_epilogue.
template <int kTileN>
__device__ __forceinline__ void store_tile(const FragmentEpilogue& e, const float (&acc)[kTileN / 2]) {
    const int32_t n = e.t.n;
    if (e.t.bias != nullptr) {
        if (e.t.c != nullptr) store_output_as<EpilogueValue::kBiased, kTileN>(e, e.t.c, e.t.c_dtype, acc, n);
        store_output_as<EpilogueValue::kBiased, kTileN>(e, e.t.d, e.t.d_dtype, acc, n);
    } else {
        if (e.t.c != nullptr) store_output_as<EpilogueValue::kScaled, kTileN>(e, e.t.c, e.t.c_dtype, acc, n);
        store_output_as<EpilogueValue::kScaledByProb, kTileN>(e, e.t.d, e.t.d_dtype, acc, n);
    }
}

// The bias of columns n_begin + 2 t and + 1 for thread t of a warpgroup (zeros past N or the
// tile, or without bias). Loaded when a tile starts, so the latency hides behind the main loop;
// staged by begin_epilogue.
template <int kTileN>
__device__ __forceinline__ float2 load_bias_pair(const EpilogueTile& t, int32_t n_begin) {
    const int c = 2 * (threadIdx.x % 128);
    const int32_t col = n_begin + c;
    if (t.bias == nullptr || c >= kTileN || col >= t.n) return make_float2(0.f, 0.f);
    switch (t.bias_dtype) {
        case kBF16: return __bfloat1622float2(*(static_cast<const __nv_bfloat162*>(t.bias) + col / 2));
        case kFP16: return __half22float2(*(static_cast<const __half2*>(t.bias) + col / 2));
        default: return *reinterpret_cast<const float2*>(static_cast<const float*>(t.bias) + col);
    }
}

// With bias: waits until every warp of the warpgroup is done with the previous tile's bias row,
// writes the thread's pair of this tile's, and waits until the whole row is staged. The bias row
// is the only shared-memory data the warps of a warpgroup exchange.
__device__ __forceinline__ void begin_epilogue(const FragmentEpilogue& e, float2 bias_pair) {
    if (e.t.bias == nullptr) return;
    ptx::named_barrier_sync(e.barrier, 128);
    ptx::st_shared_v2_b32(e.bias_addr + 8 * (threadIdx.x % 128), __float_as_uint(bias_pair.x),
                          __float_as_uint(bias_pair.y));
    ptx::named_barrier_sync(e.barrier, 128);
}

}  // namespace ggemm::sm90
