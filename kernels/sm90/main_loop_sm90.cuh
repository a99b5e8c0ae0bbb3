// The SM90 kernel's math warps over one tile's k-blocks: wgmma descriptors of a stage, the
// batches issued per k-block with one kept in flight, and each stage released once read.
#pragma once

#include <cstdint>

#include "kernels/sm90/config_sm90.cuh"
#include "kernels/sm90/operand_layout.h"
#include "ptx/common.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/wgmma.cuh"

namespace ggemm::sm90 {

// A math warp is done reading a stage: one lane arrives on the stage's empty barrier in every CTA
// that writes into it (its own, and in a cluster the other CTA, which multicasts part of B here).
// Its wgmma reads of the stage are complete (wgmma_wait) and it wrote nothing the producers need,
// so the arrival needs no release at cluster scope, nor the producer's wait an acquire there.
template <class Cfg>
__device__ __forceinline__ void release_stage(uint64_t* empty, int lane) {
    if constexpr (Cfg::kClusterM == 1) {
        if (lane == 0) ptx::mbarrier_arrive(empty);
    } else {
        if (lane < Cfg::kClusterM) ptx::mbarrier_arrive_peer(empty, static_cast<uint32_t>(lane));
    }
}

// The slice-0 descriptors of the first stage's A (a math warpgroup's rows) and B (from b_offset
// bytes into its B tile); every other stage's are a multiply-add away (stage_descriptor).
struct FirstStage {
    uint64_t a;
    uint64_t b;
};

template <class Cfg>
__device__ __forceinline__ FirstStage first_stage(SharedStorage<Cfg>& s, int warpgroup, uint32_t b_offset) {
    const uint32_t a_base = ptx::smem_addr(s.stages[0].a) + warpgroup * Cfg::kRowsPerWarpgroup * 128;
    const uint32_t b_base = ptx::smem_addr(s.stages[0].b) + b_offset;
    return {a_descriptor(a_base), b_slice_descriptor<Cfg::kWeightLayout>(b_base, 0)};
}

// first_stage's descriptors for a loop over k-blocks, made opaque to the compiler: without that
// it builds them again from the shared-memory base inside the loop (a chain of four dependent
// instructions between the full barrier's wait and the first wgmma of every k-block), and in
// the 32- and 64-wide kernels, whose wgmmas are short, that chain is part of every k-block's time.
template <class Cfg>
__device__ __forceinline__ FirstStage loop_first_stage(SharedStorage<Cfg>& s, int warpgroup, uint32_t b_offset) {
    FirstStage first = first_stage<Cfg>(s, warpgroup, b_offset);
    asm volatile("" : "+l"(first.a), "+l"(first.b));
    return first;
}

// Issues the four k16 slices of the k-block in `stage` as m64 n kWidth k16 wgmmas on `acc`, from
// the first stage's descriptors `first` stepped to `stage` and along K with adds (the stages are
// one array; operand_layout.h's stage_descriptor and slice steps). The first slice overwrites
// acc unless `accumulate`.
template <class Cfg, int kWidth>
__device__ __forceinline__ void issue_stage(const FirstStage& first, uint32_t stage, float (&acc)[kWidth / 2],
                                            bool accumulate) {
    using Mma = ptx::Wgmma<kWidth, Cfg::kTransposeB>;
    using Stage = typename SharedStorage<Cfg>::Stage;
    static_assert(sizeof(Stage) % 16 == 0, "stage_descriptor steps whole 16-byte units");
    const uint64_t desc_a0 = stage_descriptor(first.a, stage, sizeof(Stage));
    const uint64_t desc_b0 = stage_descriptor(first.b, stage, sizeof(Stage));
#pragma unroll
    for (int k = 0; k < Cfg::kBlockK / 16; ++k) {
        const uint64_t desc_a = ptx::wgmma_desc_advance(desc_a0, k * kKMajorSliceBytes);
        const uint64_t desc_b = ptx::wgmma_desc_advance(desc_b0, k * kBSliceBytes<Cfg::kWeightLayout>);
        Mma::mma(acc, desc_a, desc_b, (accumulate || k > 0) ? 1u : 0u);
    }
}

// issue_stage for the loops that do not keep first_stage's descriptors, B from b_offset bytes
// into the stage's B tile (K-major: b_offset / 128 rows of N further on).
template <class Cfg, int kWidth>
__device__ __forceinline__ void issue_k_block(SharedStorage<Cfg>& s, uint32_t stage, int warpgroup,
                                              float (&acc)[kWidth / 2], uint32_t b_offset, bool accumulate) {
    issue_stage<Cfg, kWidth>(first_stage<Cfg>(s, warpgroup, b_offset), stage, acc, accumulate);
}

template <int kCount>
__device__ __forceinline__ void fence_operands(float (&acc)[kCount]) {
#pragma unroll
    for (int r = 0; r < kCount; ++r) ptx::wgmma_fence_operand(acc[r]);
}

// One tile's (or piece's) main loop, kWidth columns wide: m64 n kWidth k16 wgmma over every
// k-block, keeping Cfg::kBatchesInFlight batches in flight and releasing each stage as soon as
// its batch is done. Once the first batch is issued, the atoms the previous tile held back are
// stored (DeferredAtoms) and the output may start its own loads (output.after_first_batch: dGLU
// through TMA loads the saved pre-activation then).
template <class Cfg, int kWidth, class Out>
__device__ __forceinline__ void main_loop(SharedStorage<Cfg>& s, const Out& output, int32_t k_blocks, int warpgroup,
                                          int lane, float (&acc)[kWidth / 2], uint32_t& stage, uint32_t& phase,
                                          DeferredAtoms<Cfg::kDeferAtoms>& deferred) {
    uint32_t previous_stage = 0;
    const FirstStage first = loop_first_stage<Cfg>(s, warpgroup, 0);
    for (int32_t kb = 0; kb < k_blocks; ++kb) {
        ptx::mbarrier_wait(&s.full[stage], phase);
        fence_operands(acc);
        ptx::wgmma_fence();
        issue_stage<Cfg, kWidth>(first, stage, acc, kb > 0);
        ptx::wgmma_commit();
        if (kb == 0) deferred.write();
        if constexpr (Out::kLoadsDuringMainLoop) {
            if (kb == 0) output.after_first_batch();
        }
        fence_operands(acc);
        if constexpr (Cfg::kBatchesInFlight == 0) {
            ptx::wgmma_wait<0>();
            release_stage<Cfg>(&s.empty[stage], lane);
        } else if (kb > 0) {
            // Keep this batch in flight; the previous one has finished reading its stage.
            ptx::wgmma_wait<1>();
            release_stage<Cfg>(&s.empty[previous_stage], lane);
        }
        previous_stage = stage;
        next_stage<Cfg>(stage, phase);
    }
    if constexpr (Cfg::kBatchesInFlight > 0) {
        ptx::wgmma_wait<0>();
        release_stage<Cfg>(&s.empty[previous_stage], lane);
    }
    fence_operands(acc);
}

// A tile's main loop for a warpgroup whose rows are all past the valid-row count: no wgmma, but
// the stages are waited for and released like main_loop's, since both math warpgroups share the
// ring (each stage's `empty` barrier counts every math warp).
template <class Cfg>
__device__ __forceinline__ void skip_main_loop(SharedStorage<Cfg>& s, int32_t k_blocks, int lane, uint32_t& stage,
                                               uint32_t& phase) {
    for (int32_t kb = 0; kb < k_blocks; ++kb) {
        ptx::mbarrier_wait(&s.full[stage], phase);
        release_stage<Cfg>(&s.empty[stage], lane);
        next_stage<Cfg>(stage, phase);
    }
}

}  // namespace ggemm::sm90
