// The dynamic scheduler's next work item, for a producer run by every lane of one warp.
#pragma once

#include <cstdint>

namespace ggemm {

// One lane claims the item from the counter; every lane gets it, so the producer's loop state
// stays warp-uniform.
__device__ __forceinline__ int64_t claim_item(unsigned long long* tile_counter, bool leader) {
    unsigned long long item = 0;
    if (leader) item = atomicAdd(tile_counter, 1ull);
    return static_cast<int64_t>(__shfl_sync(0xffffffffu, item, 0));
}

}  // namespace ggemm
