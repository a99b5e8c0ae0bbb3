// The dynamic scheduler's claims of work items, for a producer run by every lane of one warp.
//
// The first round is dealt as the static scheduler deals it (CTA c takes item c), so that no CTA
// waits for the counter before its first loads; the counter hands out the items from the grid's
// size on. Each claim is asked for when an item's loads begin and read when the next item starts,
// so the atomic's round trip runs behind the loads: read at once, it held every item's first
// load for that round trip.
#pragma once

#include <cstdint>

#include "ptx/atomic.cuh"

namespace ggemm {

class ItemClaims {
  public:
    __device__ __forceinline__ ItemClaims(unsigned long long* counter, bool leader)
        : counter_(counter), leader_(leader) {}

    // This CTA's item of the first round.
    __device__ __forceinline__ int64_t first() const { return blockIdx.x; }

    // Claims the item after the current one: one lane asks the workspace's zeroed 64-bit counter
    // (ptx::atom_add_one_relaxed_gpu, whose result this lane waits for only in take()).
    __device__ __forceinline__ void request() {
        if (leader_) claimed_ = ptx::atom_add_one_relaxed_gpu(counter_);
    }

    // The item the last request claimed, in every lane, so the producer's loop state stays
    // warp-uniform.
    __device__ __forceinline__ int64_t take() const {
        return static_cast<int64_t>(gridDim.x) + static_cast<int64_t>(__shfl_sync(0xffffffffu, claimed_, 0));
    }

  private:
    unsigned long long* counter_;
    bool leader_;
    unsigned long long claimed_ = 0;
};

}  // namespace ggemm
