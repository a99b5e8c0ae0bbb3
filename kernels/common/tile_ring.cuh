// Reading a tile from the ring the scheduling thread publishes through shared memory.
//
// One lane of each warp reads the slot and broadcasts it with a shuffle, and that same lane then
// releases the slot (mbarrier arrive). Every read of the slot is so followed, in its own thread,
// by the arrive the writer waits for: the ordering is visible to compute-sanitizer's racecheck,
// which does not see a __syncwarp between other lanes' reads and one lane's arrive.
#pragma once

#include <cstdint>

#include "kernels/common/scheduler.h"

namespace ggemm {

__device__ __forceinline__ TileCoord read_tile_slot(const TileCoord* slot, int lane) {
    TileCoord tile{};
    if (lane == 0) tile = *slot;
    tile.expert = __shfl_sync(0xffffffffu, tile.expert, 0);
    tile.row_begin = __shfl_sync(0xffffffffu, tile.row_begin, 0);
    tile.n_begin = __shfl_sync(0xffffffffu, tile.n_begin, 0);
    tile.n_width = __shfl_sync(0xffffffffu, tile.n_width, 0);
    tile.row_end = __shfl_sync(0xffffffffu, tile.row_end, 0);
    tile.k_split = __shfl_sync(0xffffffffu, tile.k_split, 0);
    tile.tile_index = __shfl_sync(0xffffffffu, tile.tile_index, 0);
    return tile;
}

}  // namespace ggemm
