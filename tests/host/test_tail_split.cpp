// The split of the last partial wave (kernels/common/tail_split.h, the code the host and the
// SM90 kernel run): which split the host picks for the suite's shapes, that the work items cover
// every column of every tile exactly once, and that a split never lengthens the modelled run.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "kernels/common/scheduler.h"
#include "kernels/common/tail_split.h"

using ggemm::choose_tail_split;
using ggemm::split_item;
using ggemm::SplitItem;
using ggemm::TailSplit;

namespace {

constexpr int32_t kGrid = 132;  // H200 SMs

// Round-robin time of the static schedule (CTA c takes items c, c + grid, ...), in tile times:
// a piece of width w costs w / tile_n of a tile, the most optimistic model.
double makespan(int64_t tiles, int32_t grid, int32_t tile_n, TailSplit split) {
    std::vector<double> busy(static_cast<size_t>(grid), 0.0);
    for (int64_t item = 0;; ++item) {
        const SplitItem at = split_item(item, split, tile_n);
        if (at.tile >= tiles) break;
        busy[static_cast<size_t>(item % grid)] += static_cast<double>(at.width) / tile_n;
    }
    return *std::max_element(busy.begin(), busy.end());
}

}  // namespace

TEST_CASE("tail split: the suite's shapes on 132 SMs") {
    struct Case {
        const char* name;
        int64_t tiles;
        int32_t tile_n;
        TailSplit want;
    };
    const Case cases[] = {
        // 32768 / 128 x 4096 / 256 = 4096 tiles = 31 x 132 + 4: four quarters each, on 16 CTAs.
        {"dsv3_fc1_L8", 4096, 256, {4092, 4}},
        // 138 x 112 = 15456 = 117 x 132 + 12: quarters on 48 CTAs.
        {"mixtral_fc1", 15456, 256, {15444, 4}},
        // 7168 = 54 x 132 + 40: halves on 80 CTAs (quarters would take more than half the grid).
        {"dsv3_fc2_L8", 7168, 256, {7128, 2}},
        // 2208 = 16 x 132 + 96: halves would take 192 CTAs.
        {"mixtral_fc2", 2208, 256, {2208, 1}},
        // 128 x 192 tiles, 494 x 30 = 14820 = 112 x 132 + 36: thirds would take 108 CTAs.
        {"gptoss_fc1_L32", 14820, 192, {14820, 1}},
        // 2048 = 15 x 132 + 68: halves would take 136 CTAs.
        {"decode_L64", 2048, 256, {2048, 1}},
        // dgrad of qwen3_fc2 (N' = 768): 1160 x 3 = 3480 = 26 x 132 + 48, halves on 96 CTAs.
        {"qwen3_fc2_L128 dgrad", 3480, 256, {3432, 2}},
    };
    for (const Case& c : cases) {
        CAPTURE(c.name);
        const TailSplit got = choose_tail_split(c.tiles, kGrid, c.tile_n, ggemm::kMaxPieces);
        CHECK(got.first_piece == c.want.first_piece);
        CHECK(got.pieces == c.want.pieces);
    }
}

TEST_CASE("tail split: no split without a partial round, a cuttable tile or a kernel that cuts") {
    CHECK(choose_tail_split(3 * kGrid, kGrid, 256, 4).pieces == 1);    // whole rounds
    CHECK(choose_tail_split(kGrid + 4, kGrid, 256, 1).pieces == 1);    // the kernel never cuts (SM100)
    CHECK(choose_tail_split(0, kGrid, 256, 4).pieces == 1);
    CHECK(choose_tail_split(5, 0, 256, 4).pieces == 1);
    // 128-wide tiles cut in two at most; 192-wide only in three.
    CHECK(choose_tail_split(kGrid + 4, kGrid, 128, 4).pieces == 2);
    CHECK(choose_tail_split(kGrid + 22, kGrid, 192, 4).pieces == 3);  // 66 CTAs: half the grid
    CHECK(choose_tail_split(kGrid + 23, kGrid, 192, 4).pieces == 1);  // 69: more than half
    // Quarters within half the grid, halves within the whole of it: 16 tiles in quarters take
    // 64 CTAs; 20 in quarters would take 80, in halves 40; 66 in halves take all 132.
    CHECK(choose_tail_split(kGrid + 16, kGrid, 256, 4).pieces == 4);
    CHECK(choose_tail_split(kGrid + 20, kGrid, 256, 4).pieces == 2);
    CHECK(choose_tail_split(kGrid + 66, kGrid, 256, 4).pieces == 2);
    CHECK(choose_tail_split(kGrid + 67, kGrid, 128, 4).pieces == 1);
    // Fewer tiles than CTAs: the only round is the partial one.
    const TailSplit small = choose_tail_split(10, kGrid, 256, 4);
    CHECK(small.first_piece == 0);
    CHECK(small.pieces == 4);
}

TEST_CASE("tail split: the items cover every column of every tile exactly once, in tile order") {
    std::mt19937 rng(7);
    for (int trial = 0; trial < 300; ++trial) {
        const int32_t grid = 1 + static_cast<int32_t>(rng() % 200);
        const int64_t tiles = 1 + static_cast<int64_t>(rng() % 2000);
        const int32_t tile_n = 64 * (2 + static_cast<int32_t>(rng() % 3));  // 128, 192, 256
        const TailSplit split = choose_tail_split(tiles, grid, tile_n, ggemm::kMaxPieces);
        CAPTURE(grid);
        CAPTURE(tiles);
        CAPTURE(tile_n);
        std::vector<std::vector<int>> covered(static_cast<size_t>(tiles), std::vector<int>(tile_n / 64, 0));
        int64_t previous_tile = -1;
        for (int64_t item = 0;; ++item) {
            const SplitItem at = split_item(item, split, tile_n);
            if (at.tile >= tiles) break;
            REQUIRE(at.tile >= previous_tile);  // the scheduler's cursor only moves forward
            previous_tile = at.tile;
            REQUIRE(at.width % 64 == 0);
            REQUIRE(at.column % 64 == 0);
            REQUIRE(at.column + at.width <= tile_n);
            for (int32_t c = at.column; c < at.column + at.width; c += 64)
                ++covered[static_cast<size_t>(at.tile)][static_cast<size_t>(c / 64)];
        }
        for (const auto& tile : covered)
            for (int hits : tile) CHECK(hits == 1);
        // The pieces of the last round take at most the grid in halves, half of it in thirds or
        // quarters, and the split never costs time in the model.
        const int64_t pieces = (tiles - split.first_piece) * split.pieces;
        if (split.pieces > 1) CHECK(pieces <= grid);
        if (split.pieces > 2) CHECK(2 * pieces <= grid);
        const double whole = makespan(tiles, grid, tile_n, {tiles, 1});
        const double cut = makespan(tiles, grid, tile_n, split);
        CHECK(cut <= whole);
        if (split.pieces > 1) CHECK(cut == doctest::Approx(whole - 1.0 + 1.0 / split.pieces));
    }
}

TEST_CASE("tail split: through the grouped scheduler, every output column of every expert once") {
    // Three experts, N = 520 (two whole 256-wide blocks and a tail of 8 columns), 12 row blocks x
    // 3 column blocks = 36 tiles on 5 CTAs: one tile in the last round, cut in halves (quarters
    // would take more than half the grid). It is the last expert's last tile in raster order, in
    // the third column block, so its second half starts past N: the kernel skips it.
    const std::vector<int32_t> offsets = {512, 768, 1536};
    const int32_t n = 520;
    const int64_t m = 1536;
    const int32_t grid = 5;
    const int64_t tiles = m / 128 * 3;  // 12 row blocks x 3 column blocks
    const TailSplit split = choose_tail_split(tiles, grid, 256, ggemm::kMaxPieces);
    REQUIRE(split.pieces == 2);
    REQUIRE(split.first_piece == 35);
    std::set<std::tuple<int32_t, int32_t>> cells;  // (row block start, 64-column block)
    int pieces_past_n = 0;
    for (int cta = 0; cta < grid; ++cta) {
        ggemm::GroupedTileScheduler<128, 256> s(offsets.data(), nullptr, m, 3, n, 16);
        for (int64_t item = cta;; item += grid) {
            const ggemm::TileCoord t = s.item(item, split);
            if (t.expert < 0) break;
            if (t.n_begin >= n) {
                ++pieces_past_n;
                continue;
            }
            for (int32_t c = t.n_begin; c < t.n_begin + t.n_width && c < n; c += 64) {
                const bool fresh = cells.insert({t.row_begin, c}).second;
                CHECK(fresh);
            }
        }
    }
    CHECK(cells.size() == static_cast<size_t>(m / 128 * 9));  // 64-column blocks 0, 64, .., 512
    CHECK(pieces_past_n == 1);
}
