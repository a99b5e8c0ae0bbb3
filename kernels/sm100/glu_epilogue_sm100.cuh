// The SM100 epilogue's fused GLU paths, for the warp's 32 rows (lane = row): the GLU forward
// (drain_glu: gate and up from TMEM, the pre-activation and D = prob * act(gate, up)) and dGLU
// (drain_dglu: R from TMEM, the saved pre-activation from global memory, d_pre and the row's d_prob
// partial), each storing 32 columns at a time through the warp's staging buffer (epilogue_sm100.cuh).
// NOT RUN ON HARDWARE, as the rest of the SM100 kernel (grouped_gemm_sm100.cuh).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/common/glu.h"
#include "kernels/common/params.h"
#include "kernels/sm100/epilogue_sm100.cuh"
#include "ptx/prefetch.cuh"
#include "ptx/tmem.cuh"

namespace ggemm::sm100 {

// Stages one value per lane for each of 32 columns (lane = row) and stores them with
// store_values_chunk; the warp's buffer is free again on return.
__device__ __forceinline__ void store_row_values(const float (&values)[kEpilogueChunkCols], float* staged, void* out,
                                                 int32_t dtype, int32_t n, int64_t row_begin, int rows,
                                                 int32_t col_begin, int lane) {
    float* my_row = staged + lane * kEpiloguePitch;
#pragma unroll
    for (int c = 0; c < kEpilogueChunkCols; c += 4) {
        *reinterpret_cast<float4*>(my_row + c) = make_float4(values[c], values[c + 1], values[c + 2], values[c + 3]);
    }
    __syncwarp();  // the slice is staged
    store_values_chunk<32, 32>(out, dtype, n, staged, row_begin, rows, col_begin, lane);
    __syncwarp();  // and read
}

// A fused GLU's epilogue for the warp's 32 rows (lane = row), one 64-column block [gate 32 | up
// 32] of the tile at a time: both halves come from TMEM into registers, the pre-activation
// (C, when generated: M x N) and D = prob * act(gate, up) (M x N/2) are staged and stored 32
// columns at a time. The arithmetic is the SM90 epilogue's (pre_activation_pair,
// glu_output_pair): the same values from the same accumulators.
template <class Cfg, int32_t kActivation>
__device__ __forceinline__ void drain_glu(const EpilogueTile& et, uint32_t taddr, float* staged, float prob,
                                          int64_t row_begin, int rows, int32_t n_begin, int lane) {
    constexpr int kBlock = 2 * kGluBlockColumns;
    static_assert(kGluBlockColumns == kEpilogueChunkCols, "a gate or up half is one tcgen05.ld chunk");
    const bool bias = et.bias != nullptr;
#pragma unroll 1
    for (int block = 0; block < Cfg::kTileN / kBlock; ++block) {
        const int32_t gate_col = n_begin + block * kBlock;
        if (gate_col >= et.n) break;  // N is a multiple of 64: the tail holds whole blocks only
        uint32_t gate_acc[kGluBlockColumns], up_acc[kGluBlockColumns];
        ptx::tmem_load_32x32b_x32(taddr + block * kBlock, gate_acc);
        ptx::tmem_load_32x32b_x32(taddr + block * kBlock + kGluBlockColumns, up_acc);
        ptx::tmem_wait_load();
        ptx::tmem_hold_registers(gate_acc);
        ptx::tmem_hold_registers(up_acc);
        float gate[kGluBlockColumns], up[kGluBlockColumns];
#pragma unroll
        for (int c = 0; c < kGluBlockColumns; c += 4) {
            const float4 none = make_float4(kNoBias, kNoBias, kNoBias, kNoBias);
            const float4 gate_bias = bias ? load_quad(et.bias, et.bias_dtype, gate_col + c) : none;
            const float4 up_bias = bias ? load_quad(et.bias, et.bias_dtype, gate_col + kGluBlockColumns + c) : none;
            const float gb[4] = {gate_bias.x, gate_bias.y, gate_bias.z, gate_bias.w};
            const float ub[4] = {up_bias.x, up_bias.y, up_bias.z, up_bias.w};
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const float g = __uint_as_float(gate_acc[c + q]), u = __uint_as_float(up_acc[c + q]);
                gate[c + q] = biased_pre_activation(et.alpha, g, gb[q]);
                up[c + q] = biased_pre_activation(et.alpha, u, ub[q]);
            }
        }
        if (et.c != nullptr) {
            store_row_values(gate, staged, et.c, et.c_dtype, et.n, row_begin, rows, gate_col, lane);
            store_row_values(up, staged, et.c, et.c_dtype, et.n, row_begin, rows, gate_col + kGluBlockColumns, lane);
        }
        float out[kGluBlockColumns];
#pragma unroll
        for (int c = 0; c < kGluBlockColumns; ++c) {
            out[c] = __fmul_rn(prob, glu_activation<kActivation>(gate[c], up[c], et.glu));
        }
        store_row_values(out, staged, et.d, et.d_dtype, et.n / 2, row_begin, rows, gate_col / 2, lane);
    }
}

// One row's saved pre-activation for one 32-column chunk of R: the gate half (kGluBlockColumns
// elements from `index`) and the up half (the next kGluBlockColumns), widened to fp32.
template <int32_t kDtype>
__device__ __forceinline__ void load_pre_halves_as(const void* pre, int64_t index, float (&gate)[kGluBlockColumns],
                                                   float (&up)[kGluBlockColumns]) {
#pragma unroll
    for (int c = 0; c < kGluBlockColumns; c += 4) {
        const float4 g = load_quad(pre, kDtype, index + c);
        const float4 u = load_quad(pre, kDtype, index + kGluBlockColumns + c);
        gate[c] = g.x, gate[c + 1] = g.y, gate[c + 2] = g.z, gate[c + 3] = g.w;
        up[c] = u.x, up[c + 1] = u.y, up[c + 2] = u.z, up[c + 3] = u.w;
    }
}

// The same of the dtype given at run time: one choice for the chunk's sixteen loads.
__device__ __forceinline__ void load_pre_halves(const void* pre, int32_t dtype, int64_t index,
                                                float (&gate)[kGluBlockColumns], float (&up)[kGluBlockColumns]) {
    switch (dtype) {
        case kBF16: load_pre_halves_as<kBF16>(pre, index, gate, up); break;
        case kFP16: load_pre_halves_as<kFP16>(pre, index, gate, up); break;
        default: load_pre_halves_as<kFP32>(pre, index, gate, up); break;
    }
}

// dGLU: the tile's saved pre-activation columns of one row into the L2 ([2 n_begin, 2 min(n_begin
// + tile_n, N)), the 128-byte lines that hold them), issued before the epilogue waits for the
// tile's accumulator so that the loads of drain_dglu find them there.
template <class Cfg>
__device__ __forceinline__ void prefetch_pre_row(const KernelArgs& args, int64_t row, int32_t n_begin) {
    constexpr uintptr_t kLineBytes = 128;
    const int32_t columns = args.n - n_begin < Cfg::kTileN ? args.n - n_begin : Cfg::kTileN;
    const int64_t element = dtype_bytes(args.glu_pre_dtype);
    const uintptr_t first = reinterpret_cast<uintptr_t>(args.glu_pre) +
                            static_cast<uintptr_t>((row * 2 * args.n + 2 * int64_t{n_begin}) * element);
    const uintptr_t end = first + static_cast<uintptr_t>(2 * columns * element);
    for (uintptr_t line = first & ~(kLineBytes - 1); line < end; line += kLineBytes) {
        ptx::prefetch_global_l2(reinterpret_cast<const void*>(line));
    }
}

// dGLU's epilogue for the warp's 32 rows (lane = row), one 32-column chunk of R at a time. R's
// column 32j + i pairs with the saved pre-activation's gate at 64j + i and up at 64j + 32 + i
// (the forward's interleaved blocks), so chunk j of R reads and writes the 64-column block j of
// the pre-activation and of d_pre (M x 2N): each thread loads its row's 64 pre-activation values
// (whole 128-byte lines of a 16-bit dtype), and d_pre's gate and up halves are staged and stored
// 32 columns at a time. The arithmetic is the SM90 epilogue's (store_dglu_output): with R = alpha
// * acc, d_pre = (acc * (alpha * prob)) * d act and d_prob's partial = alpha * sum of acc * act per
// 64-column block of R (GluRowPartial), one per row and block into the workspace (glu_reduce.cuh
// adds the blocks in order).
template <class Cfg, int32_t kActivation>
__device__ __forceinline__ void drain_dglu(const EpilogueTile& et, uint32_t taddr, float* staged, float prob,
                                           int64_t row_begin, int rows, int32_t n_begin, int lane) {
    constexpr int kBlock = 2 * kGluBlockColumns;  // columns of R per partial sum
    static_assert(kGluBlockColumns == kEpilogueChunkCols, "a chunk of R is one gate or up half");
    static_assert(Cfg::kTileN % kBlock == 0, "a tile holds whole 64-column blocks of R");
    const int64_t row = row_begin + lane;
    const bool own_row = lane < rows;  // past a valid-row end: nothing loaded or stored
    const int32_t pre_n = 2 * et.n;    // columns of the pre-activation and of d_pre
    const float alpha_prob = dglu_alpha_prob(et.alpha, prob);
    GluRowPartial partial;
#pragma unroll 1
    for (int chunk = 0; chunk < Cfg::kTileN / kGluBlockColumns; ++chunk) {
        const int32_t r_col = n_begin + chunk * kGluBlockColumns;
        if (r_col >= et.n) break;  // N is a multiple of 32: the tail holds whole chunks only
        float gate[kGluBlockColumns] = {}, up[kGluBlockColumns] = {};
        if (own_row) load_pre_halves(et.glu_pre, et.glu_pre_dtype, row * pre_n + 2 * int64_t{r_col}, gate, up);
        uint32_t acc[kGluBlockColumns];
        ptx::tmem_load_32x32b_x32(taddr + chunk * kGluBlockColumns, acc);
        ptx::tmem_wait_load();
        ptx::tmem_hold_registers(acc);
        float d_gate[kGluBlockColumns], d_up[kGluBlockColumns];
#pragma unroll
        for (int c = 0; c < kGluBlockColumns; ++c) {
            const float a = __uint_as_float(acc[c]);
            const GluGrad d = glu_grad<kActivation>(gate[c], up[c], et.glu);
            const float rp = __fmul_rn(a, alpha_prob);
            d_gate[c] = __fmul_rn(rp, d.d_gate);
            d_up[c] = __fmul_rn(rp, d.d_up);
            partial.add(c, a, d.act);
        }
        store_row_values(d_gate, staged, et.d, et.d_dtype, pre_n, row_begin, rows, 2 * r_col, lane);
        store_row_values(d_up, staged, et.d, et.d_dtype, pre_n, row_begin, rows, 2 * r_col + kGluBlockColumns,
                         lane);
        // A 64-column block of R ends here (or R does): the row's partial sum of d_prob.
        if ((r_col + kGluBlockColumns) % kBlock == 0 || r_col + kGluBlockColumns >= et.n) {
            if (own_row) et.d_prob_partials[r_col / kBlock * et.m + row] = partial.total(et.alpha);
            partial = GluRowPartial{};
        }
    }
}

// The fused epilogues of a warp with valid rows: dGLU, or the GLU forward.
template <class Cfg>
__device__ __forceinline__ void drain_fused(const EpilogueTile& et, uint32_t taddr, float* staged, float prob,
                                            int64_t row_begin, int rows, int32_t n_begin, int lane) {
    if (et.glu_backward) {
        if (et.activation == kActivationSwiglu) {
            drain_dglu<Cfg, kActivationSwiglu>(et, taddr, staged, prob, row_begin, rows, n_begin, lane);
        } else {
            drain_dglu<Cfg, kActivationClampedGeglu>(et, taddr, staged, prob, row_begin, rows, n_begin, lane);
        }
    } else if (et.activation == kActivationSwiglu) {
        drain_glu<Cfg, kActivationSwiglu>(et, taddr, staged, prob, row_begin, rows, n_begin, lane);
    } else {
        drain_glu<Cfg, kActivationClampedGeglu>(et, taddr, staged, prob, row_begin, rows, n_begin, lane);
    }
}

}  // namespace ggemm::sm100
