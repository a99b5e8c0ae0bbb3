// The weight gradient's tiles as the scheduling thread publishes them to the other roles, the
// decision of what each tile does, and the status report: device code shared by the SM90 and
// SM100 kernels (wgrad_sm90.cuh, wgrad_sm100.cuh), over the pure schedule of wgrad_schedule.h.
#pragma once

#include <cstdint>

#include "kernels/common/contract.h"
#include "kernels/common/wgrad_params.h"
#include "kernels/common/wgrad_schedule.h"

namespace ggemm {

// One tile as the scheduling thread publishes it.
struct WgradTileSlot {
    uint64_t out;      // the expert's P x Q output (device address); unused when action is kSkip
    int32_t expert;    // -1: no more tiles
    int32_t action;    // WgradAction
    int32_t k_blocks;  // blocks of kBlockRows rows to sum (kSum)
    int32_t p_begin;
    int32_t q_begin;
    int32_t row_begin; // the expert's first row (kSum)
};

// What tile `position` of an expert whose rows are `rows` does: the scheduling thread decides
// once, the other roles follow. kBlockRows: rows r (the GEMM's K) per pipeline stage; segments
// hold whole blocks.
template <int kBlockRows>
__device__ __forceinline__ WgradTileSlot plan_tile(const WgradTilePosition& position, const WgradExpert& rows,
                                                   const WgradKernelArgs& args) {
    static_assert(kSegmentAlignment % kBlockRows == 0, "segments hold whole k-blocks: no row tails");
    WgradTileSlot slot{};
    slot.expert = position.expert;
    slot.action = static_cast<int32_t>(WgradAction::kSkip);
    if (position.expert < 0) return slot;
    bool out_ok = true;
    if (args.output_mode == kWgradOutputPointers) {
        slot.out = args.out_ptrs[position.expert];
        out_ok = output_pointer_status(slot.out) == 0;
    } else {
        slot.out = reinterpret_cast<uint64_t>(args.out) + static_cast<uint64_t>(position.expert) *
                                                              static_cast<uint64_t>(args.p) *
                                                              static_cast<uint64_t>(args.q) *
                                                              static_cast<uint64_t>(dtype_bytes(args.out_dtype));
    }
    slot.action = static_cast<int32_t>(
        wgrad_action(rows.usable, rows.row_end - rows.row_begin, out_ok, args.accumulate != 0));
    slot.k_blocks = static_cast<int32_t>((rows.row_end - rows.row_begin) / kBlockRows);
    slot.p_begin = position.p_begin;
    slot.q_begin = position.q_begin;
    slot.row_begin = static_cast<int32_t>(rows.row_begin);
    return slot;
}

// Lane 0 reads the slot, the warp shares it, and lane 0 releases it: every read of the slot is
// followed in its own thread by the arrive the scheduling thread waits for.
__device__ __forceinline__ WgradTileSlot read_wgrad_slot(const WgradTileSlot* slot, int lane) {
    WgradTileSlot tile{};
    if (lane == 0) tile = *slot;
    tile.out = __shfl_sync(0xffffffffu, tile.out, 0);
    tile.expert = __shfl_sync(0xffffffffu, tile.expert, 0);
    tile.action = __shfl_sync(0xffffffffu, tile.action, 0);
    tile.k_blocks = __shfl_sync(0xffffffffu, tile.k_blocks, 0);
    tile.p_begin = __shfl_sync(0xffffffffu, tile.p_begin, 0);
    tile.q_begin = __shfl_sync(0xffffffffu, tile.q_begin, 0);
    return tile;
}

// Block 0 checks every offset and output pointer and writes the status word whole, so the host
// need not clear it first. Every thread of block 0 (kThreads of them) calls this, once `offsets`
// (the shared copy of padded_offsets) is complete; `cta_status` is a shared word zeroed at init.
template <int kThreads>
__device__ __forceinline__ void report_wgrad_status(const int32_t* offsets, uint32_t* cta_status,
                                                    const WgradKernelArgs& args, int thread) {
    for (int g = thread; g < args.num_experts; g += kThreads) {
        uint32_t bits = offset_status(g == 0 ? 0 : offsets[g - 1], offsets[g], args.m);
        if (args.output_mode == kWgradOutputPointers) bits |= output_pointer_status(args.out_ptrs[g]);
        if (bits != 0) atomicOr(cta_status, bits);
    }
    __syncthreads();
    if (thread == 0) *args.device_status = *cta_status;
}

}  // namespace ggemm
