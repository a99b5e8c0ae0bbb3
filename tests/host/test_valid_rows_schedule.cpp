// Valid-row counts in the tile scheduler (kernels/common/scheduler.h, the code the kernels run):
// each expert contributes exactly the 128-row blocks that hold a valid row, every tile carries its
// expert's valid-row end, counts are clamped to the segment (and flagged exactly when outside
// it), the static split and any dynamic claim order visit the same tiles with the same item ->
// tile mapping, and the host's tail split, computed from M alone, still covers every valid cell
// once.
#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "kernels/common/scheduler.h"
#include "kernels/common/tail_split.h"
#include "tests/host/schedule_fixtures.h"

using ggemm::GroupedTileScheduler;
using ggemm::TileCoord;

namespace {

constexpr int kTileM = 128;
constexpr int kTileN = 256;

using TileKey = std::tuple<int32_t, int32_t, int32_t, int32_t>;  // expert, row_begin, n_begin, row_end

GroupedTileScheduler<kTileM, kTileN> make(const std::vector<int32_t>& offsets, const std::vector<int32_t>* counts,
                                          int64_t m, int32_t n) {
    return GroupedTileScheduler<kTileM, kTileN>(offsets.data(), nullptr, m, static_cast<int32_t>(offsets.size()), n,
                                                16, counts == nullptr ? nullptr : counts->data());
}

// Independently of the scheduler: the tiles of valid offsets with these counts.
std::multiset<TileKey> expected_tiles(const std::vector<int32_t>& offsets, const std::vector<int32_t>& counts,
                                      int32_t n) {
    std::multiset<TileKey> want;
    int64_t begin = 0;
    for (size_t g = 0; g < offsets.size(); ++g) {
        const int64_t size = offsets[g] - begin;
        const int64_t valid = counts[g] < 0 ? 0 : (counts[g] > size ? size : counts[g]);
        for (int64_t r = begin; r < begin + valid; r += kTileM)
            for (int32_t c = 0; c < n; c += kTileN)
                want.insert({static_cast<int32_t>(g), static_cast<int32_t>(r), c, static_cast<int32_t>(begin + valid)});
        begin = offsets[g];
    }
    return want;
}

// Counts drawn from the interesting values: empty, one row, around the 64-row warpgroup and the
// 128-row tile, a whole or overfull segment, negative.
std::vector<int32_t> random_counts(std::mt19937& rng, const std::vector<int32_t>& offsets) {
    static const int32_t kEdges[] = {0, 1, 63, 64, 65, 127, 128, 129, 191, 192, 255, 256, 257, 511, 512, 513};
    std::vector<int32_t> counts;
    int64_t begin = 0;
    for (const int32_t end : offsets) {
        const int32_t size = static_cast<int32_t>(end - begin);
        switch (rng() % 6) {
            case 0: counts.push_back(size); break;
            case 1: counts.push_back(size + 1 + static_cast<int32_t>(rng() % 300)); break;
            case 2: counts.push_back(-1 - static_cast<int32_t>(rng() % 300)); break;
            case 3: counts.push_back(size == 0 ? 0 : static_cast<int32_t>(rng() % (size + 1))); break;
            default: counts.push_back(kEdges[rng() % (sizeof kEdges / sizeof kEdges[0])]); break;
        }
        begin = end;
    }
    return counts;
}

}  // namespace

TEST_CASE("valid rows: a count is clamped to its segment and flagged exactly when outside it") {
    const int64_t m = 1024;
    CHECK(ggemm::valid_rows_status(0, 256, 0, m) == 0u);
    CHECK(ggemm::valid_rows_status(0, 256, 256, m) == 0u);
    CHECK(ggemm::valid_rows_status(256, 768, 300, m) == 0u);
    CHECK(ggemm::valid_rows_status(0, 256, 257, m) == ggemm::kStatusValidRowsClamped);
    CHECK(ggemm::valid_rows_status(0, 256, -1, m) == ggemm::kStatusValidRowsClamped);
    CHECK(ggemm::valid_rows_status(512, 512, 1, m) == ggemm::kStatusValidRowsClamped);  // an empty segment
    CHECK(ggemm::valid_rows_status(512, 512, 0, m) == 0u);
    // Unsound offsets are reported by their own bits; the count is then not judged, unless negative.
    CHECK(ggemm::valid_rows_status(512, 256, 100, m) == 0u);
    CHECK(ggemm::valid_rows_status(0, 2048, 4096, m) == 0u);
    CHECK(ggemm::valid_rows_status(0, 300, 4096, m) == 0u);
    CHECK(ggemm::valid_rows_status(512, 256, -5, m) == ggemm::kStatusValidRowsClamped);
    CHECK(ggemm::clamped_valid_rows(-7, 256) == 0);
    CHECK(ggemm::clamped_valid_rows(0, 256) == 0);
    CHECK(ggemm::clamped_valid_rows(65, 256) == 65);
    CHECK(ggemm::clamped_valid_rows(256, 256) == 256);
    CHECK(ggemm::clamped_valid_rows(2147483647, 256) == 256);
}

TEST_CASE("valid rows: the tiles of each count, in a hand-made layout") {
    // Seven experts of 256 rows and one of 512: counts 0, 1, 63, 64, 65, 255, 256 and 300.
    const std::vector<int32_t> offsets = {256, 512, 768, 1024, 1280, 1536, 1792, 2304};
    const std::vector<int32_t> counts = {0, 1, 63, 64, 65, 255, 256, 300};
    const int32_t n = 300;  // two column blocks
    auto s = make(offsets, &counts, 2304, n);
    std::vector<TileCoord> tiles;
    for (int64_t index = 0;; ++index) {
        const TileCoord t = s.tile(index);
        if (t.expert < 0) break;
        tiles.push_back(t);
    }
    // Row blocks: 0, 1, 1, 1, 1, 2, 2, 3 (expert 7: 300 of 512 rows).
    REQUIRE(tiles.size() == 2u * (0 + 1 + 1 + 1 + 1 + 2 + 2 + 3));
    CHECK(tiles[0].expert == 1);
    CHECK(tiles[0].row_begin == 256);
    CHECK(tiles[0].row_end == 257);
    CHECK(tiles[2].row_end == 512 + 63);
    CHECK(tiles[4].row_end == 768 + 64);
    CHECK(tiles[6].row_end == 1024 + 65);
    const TileCoord& last = tiles.back();
    CHECK(last.expert == 7);
    CHECK(last.row_begin == 1792 + 256);
    CHECK(last.row_end == 1792 + 300);
    CHECK(last.n_begin == 256);

    // Without counts (or with counts that fill every segment) the schedule is today's.
    std::vector<int32_t> full;
    int64_t begin = 0;
    for (const int32_t end : offsets) {
        full.push_back(static_cast<int32_t>(end - begin));
        begin = end;
    }
    auto plain = make(offsets, nullptr, 2304, n);
    auto whole = make(offsets, &full, 2304, n);
    for (int64_t index = 0;; ++index) {
        const TileCoord a = plain.tile(index);
        const TileCoord b = whole.tile(index);
        CHECK(a.expert == b.expert);
        CHECK(a.row_begin == b.row_begin);
        CHECK(a.n_begin == b.n_begin);
        CHECK(a.row_end == b.row_end);
        if (a.expert < 0) break;
        CHECK(a.row_end == offsets[a.expert]);
    }
}

TEST_CASE("valid rows: static and dynamic walks visit exactly the valid row blocks, with one mapping") {
    std::mt19937 rng(2212);
    for (int trial = 0; trial < 300; ++trial) {
        const int num_experts = 1 + static_cast<int>(rng() % 24);
        const std::vector<int32_t> offsets = ggemm_fixtures::random_offsets(rng, num_experts);
        const std::vector<int32_t> counts = random_counts(rng, offsets);
        const int64_t m = offsets.back() + 256 * static_cast<int64_t>(rng() % 3);
        const int32_t n = 8 * (1 + static_cast<int32_t>(rng() % 160));
        const int grid = 1 + static_cast<int>(rng() % 140);
        CAPTURE(trial);
        const std::multiset<TileKey> want = expected_tiles(offsets, counts, n);

        // The item -> tile mapping of one walk over every item in order.
        std::map<int64_t, TileKey> by_item;
        auto walk = make(offsets, &counts, m, n);
        for (int64_t item = 0;; ++item) {
            const TileCoord t = walk.tile(item);
            if (t.expert < 0) break;
            by_item[item] = {t.expert, t.row_begin, t.n_begin, t.row_end};
        }
        std::multiset<TileKey> walked;
        for (const auto& entry : by_item) walked.insert(entry.second);
        CHECK(walked == want);

        // Static: CTA c takes items c, c + grid, ...
        std::multiset<TileKey> seen_static;
        for (int cta = 0; cta < grid; ++cta) {
            auto s = make(offsets, &counts, m, n);
            for (int64_t item = cta;; item += grid) {
                const TileCoord t = s.tile(item);
                if (t.expert < 0) break;
                const TileKey key{t.expert, t.row_begin, t.n_begin, t.row_end};
                CHECK(by_item.at(item) == key);
                seen_static.insert(key);
            }
        }
        CHECK(seen_static == want);

        // Dynamic: items dealt at random to CTAs, each sees its own in increasing order.
        const int64_t items = static_cast<int64_t>(by_item.size()) + grid;  // every CTA claims one past the end
        std::multiset<TileKey> seen_dynamic;
        for (const auto& claims : ggemm_fixtures::dynamic_claims(rng, grid, items)) {
            auto s = make(offsets, &counts, m, n);
            for (const int64_t item : claims) {
                const TileCoord t = s.tile(item);
                if (t.expert < 0) break;
                const TileKey key{t.expert, t.row_begin, t.n_begin, t.row_end};
                CHECK(by_item.at(item) == key);
                seen_dynamic.insert(key);
            }
        }
        CHECK(seen_dynamic == want);
    }
}

TEST_CASE("valid rows: the host's tail split (from M alone) still covers every valid cell once") {
    std::mt19937 rng(2213);
    for (int trial = 0; trial < 200; ++trial) {
        const int num_experts = 1 + static_cast<int>(rng() % 12);
        const std::vector<int32_t> offsets = ggemm_fixtures::random_offsets(rng, num_experts);
        std::vector<int32_t> counts = random_counts(rng, offsets);
        if (trial % 4 == 0) {  // mostly full segments: the pieces of the split are then reached
            int64_t begin = 0;
            for (size_t g = 0; g < offsets.size(); ++g) {
                counts[g] = static_cast<int32_t>(offsets[g] - begin);
                begin = offsets[g];
            }
            counts[rng() % counts.size()] = 1;
        }
        const int64_t m = offsets.back();
        const int32_t n = 8 * (1 + static_cast<int32_t>(rng() % 200));
        const int grid = 1 + static_cast<int>(rng() % 40);
        CAPTURE(trial);
        const int64_t tiles = m / kTileM * ((n + kTileN - 1) / kTileN);  // what execute assumes
        const ggemm::TailSplit split = ggemm::choose_tail_split(tiles, grid, kTileN, ggemm::kMaxPieces);
        std::multiset<std::tuple<int32_t, int32_t>> cells;  // (row block, 64-column block)
        for (int cta = 0; cta < grid; ++cta) {
            auto s = make(offsets, &counts, m, n);
            for (int64_t item = cta;; item += grid) {
                const TileCoord t = s.item(item, split);
                if (t.expert < 0) break;
                for (int32_t c = t.n_begin; c < t.n_begin + t.n_width && c < n; c += 64) cells.insert({t.row_begin, c});
            }
        }
        std::multiset<std::tuple<int32_t, int32_t>> want;
        for (const TileKey& key : expected_tiles(offsets, counts, n)) {
            for (int32_t c = std::get<2>(key); c < std::get<2>(key) + kTileN && c < n; c += 64)
                want.insert({std::get<1>(key), c});
        }
        CHECK(cells == want);
    }
}
