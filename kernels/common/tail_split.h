// The last partial wave, split along N. A persistent grid of G CTAs deals T equal tiles: when
// T is not a multiple of G, the last R = T mod G tiles run on R CTAs while the other G - R wait
// for them (dsv3_fc1: 4 of 132 CTAs run the 32nd round alone, 3 % of the run). Cutting each of
// those R tiles into p pieces of tile_n / p columns (full K each) lets R x p CTAs share the round,
// which then lasts about 1 / p of a tile. Pieces need no reduction: each output element is still
// one full-K dot product, computed once.
//
// Work items replace tile indices: items below `first_piece` are whole tiles (item i = tile i),
// and from there on each tile comes as `pieces` consecutive items. The host chooses the split
// (choose_tail_split); the kernel maps items back to tiles and columns (split_item).
//
// Pure and __host__ __device__: the CPU tests check the same code the host and kernels run.
#pragma once

#include <cstdint>

#include "kernels/common/hd.h"

namespace ggemm {

struct TailSplit {
    int64_t first_piece;  // the first work item that is a piece
    int32_t pieces;       // pieces per tile from there on (1: no split)
};

// Pieces are whole 64-column blocks (every piece width is a wgmma N). A piece loads the same
// tile-wide box of B as a whole tile, from its own first column, and uses its first columns: a
// half fetches 2x the B it needs, a third or a quarter 3-4x. Halves may take the whole grid;
// thirds and quarters at most half of it, which leaves L2 bandwidth to spare for their
// over-fetch (docs/PERFORMANCE.md, what was tried: the last round cut in halves on up to the
// whole grid).
constexpr int32_t kPieceColumns = 64;
constexpr int32_t kMaxPieces = 4;

// How many CTAs the pieces of a last round cut into `pieces` may take.
GGEMM_HD int64_t piece_budget(int32_t grid, int32_t pieces) { return pieces == 2 ? grid : grid / 2; }

// The split of `tiles` whole tiles of tile_n columns over `grid` CTAs: the largest p (at most
// max_pieces and kMaxPieces, tile_n / p a multiple of kPieceColumns) whose pieces of the last
// partial round fit piece_budget; {tiles, 1} when no p > 1 does (the round is more than half
// full, or the tile cannot be cut). Only the last round is cut.
GGEMM_HD TailSplit choose_tail_split(int64_t tiles, int32_t grid, int32_t tile_n, int32_t max_pieces) {
    const TailSplit none{tiles, 1};
    if (tiles <= 0 || grid <= 0) return none;
    const int64_t last_round = tiles % grid;
    if (last_round == 0) return none;
    for (int32_t p = max_pieces < kMaxPieces ? max_pieces : kMaxPieces; p >= 2; --p) {
        if (tile_n % (p * kPieceColumns) == 0 && last_round * p <= piece_budget(grid, p)) return {tiles - last_round, p};
    }
    return none;
}

// Where work item `item` lies: its tile index, and its first column and width within the tile.
struct SplitItem {
    int64_t tile;
    int32_t column;  // from the tile's first column
    int32_t width;   // tile_n for a whole tile
};

GGEMM_HD SplitItem split_item(int64_t item, TailSplit split, int32_t tile_n) {
    if (split.pieces <= 1 || item < split.first_piece) return {item, 0, tile_n};
    const int64_t offset = item - split.first_piece;
    const int32_t width = tile_n / split.pieces;
    return {split.first_piece + offset / split.pieces, static_cast<int32_t>(offset % split.pieces) * width, width};
}

}  // namespace ggemm
