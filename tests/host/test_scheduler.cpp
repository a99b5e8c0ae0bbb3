// The tile scheduler of kernels/common/scheduler.h, the same code the kernels run: every tile
// of every usable expert is visited exactly once, by both the static split and a dynamic order;
// unsafe offsets and weight pointers skip exactly the experts they touch.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <tuple>
#include <type_traits>
#include <vector>

#include "kernels/common/params.h"
#include "kernels/common/scheduler.h"
#include "tests/host/schedule_fixtures.h"

using ggemm::GroupedTileScheduler;
using ggemm::TileCoord;

namespace {

constexpr int kTileM = 128;
constexpr int kTileN = 256;

using TileKey = std::tuple<int32_t, int32_t, int32_t>;  // expert, row_begin, n_begin

// Visits every tile the static schedule hands to `grid` persistent CTAs.
std::multiset<TileKey> static_tiles(const std::vector<int32_t>& offsets, const uint32_t* weight_status, int64_t m,
                                    int32_t n, int grid, int group_m = 16) {
    std::multiset<TileKey> seen;
    for (int cta = 0; cta < grid; ++cta) {
        GroupedTileScheduler<kTileM, kTileN> s(offsets.data(), weight_status, m, static_cast<int32_t>(offsets.size()),
                                               n, group_m);
        for (int64_t index = cta;; index += grid) {
            const TileCoord t = s.tile(index);
            if (t.expert < 0) break;
            seen.insert({t.expert, t.row_begin, t.n_begin});
        }
    }
    return seen;
}

// Every tile the contract requires for usable experts, computed independently.
std::multiset<TileKey> expected_tiles(const std::vector<int32_t>& offsets, const std::set<int>& skipped,
                                      int32_t n) {
    std::multiset<TileKey> want;
    int64_t begin = 0;
    for (size_t g = 0; g < offsets.size(); ++g) {
        const int64_t end = offsets[g];
        if (!skipped.count(static_cast<int>(g)))
            for (int64_t r = begin; r < end; r += kTileM)
                for (int32_t c = 0; c < n; c += kTileN)
                    want.insert({static_cast<int32_t>(g), static_cast<int32_t>(r), c});
        begin = end;
    }
    return want;
}

}  // namespace

TEST_CASE("scheduler: offset_status names each broken rule") {
    CHECK(ggemm::offset_status(0, 256, 512) == 0u);
    CHECK(ggemm::offset_status(0, -256, 512) == (ggemm::kStatusOffsetNegative | ggemm::kStatusOffsetDecreasing));
    CHECK(ggemm::offset_status(0, 300, 512) == ggemm::kStatusOffsetMisaligned);
    CHECK(ggemm::offset_status(0, 768, 512) == ggemm::kStatusOffsetPastM);
    CHECK(ggemm::offset_status(512, 256, 512) == ggemm::kStatusOffsetDecreasing);
    CHECK(ggemm::weight_pointer_status(0) == ggemm::kStatusWeightPtrNull);
    CHECK(ggemm::weight_pointer_status(0x1008) == ggemm::kStatusWeightPtrMisaligned);
    CHECK(ggemm::weight_pointer_status(0x1000) == 0u);
}

TEST_CASE("scheduler: segment_computed in 32 bits against M clamped to int32 answers as in 64 bits") {
    // The tile walk runs the rule on int32 offsets with M clamped to int32 (GroupedTileScheduler's
    // m_rows); the weight gradient runs it in 64 bits. Every answer must agree, M past 2^31 included.
    const int32_t values[] = {INT32_MIN, -256, -1, 0, 1, 255, 256, 300, 512, 768, 1024, INT32_MAX - 255, INT32_MAX};
    for (int64_t m : {int64_t{0}, int64_t{512}, int64_t{1000}, int64_t{INT32_MAX}, int64_t{1} << 40}) {
        const int32_t m_rows = m > INT32_MAX ? INT32_MAX : static_cast<int32_t>(m);
        for (int32_t begin : values)
            for (int32_t end : values)
                for (int32_t high_water : {0, 256, 512, INT32_MAX - 255}) {
                    const bool wide = ggemm::segment_computed<int64_t>(begin, end, m, high_water);
                    CHECK(ggemm::segment_computed(begin, end, m_rows, high_water) == wide);
                    CHECK(wide == (begin >= 0 && begin % 256 == 0 && begin <= m && end % 256 == 0 && end <= m &&
                                   end >= begin && begin >= high_water));
                }
    }
    const auto raised = [](int64_t high_water, int64_t passed) {
        ggemm::raise_high_water(high_water, passed, int64_t{2048});
        return high_water;
    };
    CHECK(raised(256, 1024) == 1024);
    CHECK(raised(1024, 512) == 1024);  // not above
    CHECK(raised(256, 700) == 256);    // misaligned
    CHECK(raised(256, 4096) == 256);   // past M
}

TEST_CASE("scheduler: raster_tile is a bijection with row blocks paired") {
    for (int32_t m_blocks : {2, 6, 16, 34, 40}) {
        for (int32_t n_blocks : {1, 3, 16}) {
            for (int32_t group_m : {2, 8, 16}) {
                std::set<std::pair<int32_t, int32_t>> seen;
                for (int64_t local = 0; local < int64_t{m_blocks} * n_blocks; ++local) {
                    const auto p = ggemm::raster_tile(local, m_blocks, n_blocks, group_m);
                    REQUIRE(p.m_block >= 0);
                    REQUIRE(p.m_block < m_blocks);
                    REQUIRE(p.n_block >= 0);
                    REQUIRE(p.n_block < n_blocks);
                    seen.insert({p.m_block, p.n_block});
                    if (local % 2 == 1) {  // tiles 2j and 2j+1: same columns, adjacent row blocks
                        const auto q = ggemm::raster_tile(local - 1, m_blocks, n_blocks, group_m);
                        CHECK(q.n_block == p.n_block);
                        CHECK(q.m_block + 1 == p.m_block);
                        CHECK(q.m_block % 2 == 0);
                    }
                }
                CHECK(seen.size() == static_cast<size_t>(m_blocks) * n_blocks);
            }
        }
    }
}

TEST_CASE("scheduler: raster_tile's shortcuts take the positions the divisions give") {
    // The first group skips one division, groups of a power-of-two number of row blocks divide
    // by shifts: every group size from 1 to group_m, first and later groups, against the
    // raster order written out.
    for (int32_t group_m : {2, 8, 16}) {
        for (int32_t m_blocks = 1; m_blocks <= 3 * group_m + 1; ++m_blocks) {
            for (int32_t n_blocks : {1, 3, 7, 16}) {
                const int64_t per_group = int64_t{group_m} * n_blocks;
                for (int64_t local = 0; local < int64_t{m_blocks} * n_blocks; ++local) {
                    const int64_t first_m = local / per_group * group_m;
                    const int64_t rows = std::min<int64_t>(group_m, m_blocks - first_m);
                    const int64_t within = local % per_group;
                    const auto p = ggemm::raster_tile(local, m_blocks, n_blocks, group_m);
                    CAPTURE(group_m);
                    CAPTURE(m_blocks);
                    CAPTURE(n_blocks);
                    CAPTURE(local);
                    REQUIRE(p.m_block == first_m + within % rows);
                    REQUIRE(p.n_block == within / rows);
                }
            }
        }
    }
    for (uint32_t shift = 0; shift < 32; ++shift) CHECK(ggemm::low_bit_index(1u << shift) == shift);
    CHECK(ggemm::low_bit_index(12u) == 2u);
}

TEST_CASE("scheduler: raster_tile takes the same positions past 32-bit tile indices") {
    // The largest schedules: 2^24 row blocks (M near 2^31) of 2^9 column blocks, 2^33 tiles. Below
    // 2^32 the mapping divides in 32 bits, above in 64; the raster order runs on across the seam.
    const int32_t m_blocks = 1 << 24, n_blocks = 1 << 9, group_m = 16;
    const auto expected = [&](int64_t local) {
        const int64_t per_group = int64_t{group_m} * n_blocks;
        const int64_t within = local % per_group;
        return std::pair<int64_t, int64_t>{local / per_group * group_m + within % group_m, within / group_m};
    };
    for (int64_t local : {int64_t{0}, int64_t{12345}, (int64_t{1} << 32) - 1, int64_t{1} << 32,
                          (int64_t{1} << 32) + 17, int64_t{m_blocks} * n_blocks - 1}) {
        const auto p = ggemm::raster_tile(local, m_blocks, n_blocks, group_m);
        CAPTURE(local);
        CHECK(std::pair<int64_t, int64_t>{p.m_block, p.n_block} == expected(local));
    }
}

TEST_CASE("scheduler: static split covers every tile once, empty experts cost nothing") {
    // Empty first expert, one large, empty middle, tail experts; N with a partial last tile.
    const std::vector<int32_t> offsets = {0, 4096, 4096, 4352, 5120, 5120};
    const int32_t n = 600;  // 3 column tiles, the last one partial
    for (int grid : {1, 7, 132}) {
        CHECK(static_tiles(offsets, nullptr, 8192, n, grid) == expected_tiles(offsets, {}, n));
    }
}

TEST_CASE("scheduler: one expert holding all rows; all experts empty") {
    const std::vector<int32_t> all_in_one = {0, 0, 2048, 2048};
    CHECK(static_tiles(all_in_one, nullptr, 2048, 4096, 132) == expected_tiles(all_in_one, {}, 4096));
    const std::vector<int32_t> none = {0, 0, 0};
    CHECK(static_tiles(none, nullptr, 2048, 4096, 132).empty());
}

TEST_CASE("scheduler: a dynamic claim order gives the same tile set") {
    std::mt19937 rng(7);
    const std::vector<int32_t> offsets = ggemm_fixtures::random_offsets(rng, 64);
    const int64_t end = offsets.back();
    const int32_t n = 1536;
    // Dynamic: a shared counter hands out increasing indices; each CTA sees a sorted subset.
    const int grid = 13;
    const auto claimed = ggemm_fixtures::dynamic_claims(rng, grid, 4096);
    std::multiset<TileKey> seen;
    for (int cta = 0; cta < grid; ++cta) {
        GroupedTileScheduler<kTileM, kTileN> s(offsets.data(), nullptr, end, 64, n, 16);
        for (int64_t index : claimed[cta]) {
            const TileCoord t = s.tile(index);
            if (t.expert < 0) break;
            seen.insert({t.expert, t.row_begin, t.n_begin});
        }
    }
    CHECK(seen == expected_tiles(offsets, {}, n));
}

TEST_CASE("scheduler: unsafe offsets skip exactly the experts they bound") {
    const int64_t m = 2048;
    SUBCASE("misaligned end skips its expert and the next") {
        const std::vector<int32_t> offsets = {256, 700, 1024, 1280};
        CHECK(static_tiles(offsets, nullptr, m, 512, 5) == expected_tiles(offsets, {1, 2}, 512));
    }
    SUBCASE("decreasing offsets skip the expert that would run backwards and the one after") {
        // Expert 2 (512..1536) is in order but would recompute rows 512..1024 of expert 0.
        const std::vector<int32_t> offsets = {1024, 512, 1536, 1792};
        CHECK(static_tiles(offsets, nullptr, m, 512, 5) == expected_tiles(offsets, {1, 2}, 512));
    }
    SUBCASE("a begin below an earlier offset is skipped, so no row is computed twice") {
        // Offset 2 falls back to 512; offset 3 (768) is in order with it but below offset 1 (1024):
        // expert 3 would recompute rows 512..768 of expert 1.
        const std::vector<int32_t> offsets = {256, 1024, 512, 768, 1280};
        CHECK(static_tiles(offsets, nullptr, m, 512, 5) == expected_tiles(offsets, {2, 3, 4}, 512));
    }
    SUBCASE("offsets past M and negative are never used") {
        const std::vector<int32_t> offsets = {512, 4096, -256, 1024};
        const auto seen = static_tiles(offsets, nullptr, m, 512, 5);
        CHECK(seen == expected_tiles(offsets, {1, 2, 3}, 512));
        for (const auto& t : seen) CHECK(std::get<1>(t) + kTileM <= m);
    }
}

TEST_CASE("scheduler: discrete mode skips experts with null or misaligned weight pointers") {
    const std::vector<int32_t> offsets = {256, 512, 768, 1024};
    // The map builder's words for pointers {valid, NULL, misaligned, valid}.
    const uint32_t status_words[] = {0, ggemm::kStatusWeightPtrNull, ggemm::kStatusWeightPtrMisaligned, 0};
    CHECK(static_tiles(offsets, status_words, 1024, 256, 3) == expected_tiles(offsets, {1, 2}, 256));
}

TEST_CASE("scheduler: work items past 2^32 map to their own tiles, and the dynamic counter is 64-bit") {
    // The dynamic scheduler claims items with an atomic add on this counter: a 32-bit one would
    // wrap after 2^32 claims and hand out tiles that were already computed (or, read as a
    // negative item, rows before D).
    using Counter = std::remove_pointer_t<decltype(ggemm::KernelArgs::tile_counter)>;
    static_assert(sizeof(Counter) == 8, "the tile counter must not wrap inside one launch");

    // One expert of the largest M and 512 column tiles: nearly 2^33 tiles.
    const std::vector<int32_t> offsets = {2147483392};
    const int64_t m = offsets[0];
    const int32_t n = 512 * kTileN;
    const int64_t tiles = m / kTileM * (n / kTileN);
    REQUIRE(tiles > (int64_t{1} << 32) + 12345);
    for (int64_t index : {(int64_t{1} << 32) - 1, int64_t{1} << 32, (int64_t{1} << 32) + 12345, tiles - 1}) {
        CAPTURE(index);
        GroupedTileScheduler<kTileM, kTileN> s(offsets.data(), nullptr, m, 1, n, 16);
        const TileCoord t = s.tile(index);
        const auto p = ggemm::raster_tile(index, static_cast<int32_t>(m / kTileM), n / kTileN, 16);
        CHECK(t.expert == 0);
        CHECK(t.row_begin == int64_t{p.m_block} * kTileM);
        CHECK(t.n_begin == p.n_block * kTileN);
        CHECK(t.row_begin >= 0);
        CHECK(int64_t{t.row_begin} + kTileM <= m);
        // The item 2^32 below maps elsewhere: a wrapped claim would recompute that tile instead.
        if (index >= (int64_t{1} << 32)) {
            GroupedTileScheduler<kTileM, kTileN> low(offsets.data(), nullptr, m, 1, n, 16);
            const TileCoord wrapped = low.tile(index & 0xffffffffLL);
            CHECK((wrapped.row_begin != t.row_begin || wrapped.n_begin != t.n_begin));
        }
    }
    GroupedTileScheduler<kTileM, kTileN> s(offsets.data(), nullptr, m, 1, n, 16);
    CHECK(s.tile(tiles).expert == -1);
}

TEST_CASE("scheduler: a cursor walked toward the next item between loads maps every item as a direct walk does") {
    // The SM90 producer steps its cursor one expert after each load toward the next item's tile;
    // the item it then maps must be the one a walk made all at once maps, on sound and broken
    // offsets, with valid-row counts, cut last rounds and split K.
    std::mt19937 rng(11);
    int64_t steps = 0;  // steps that moved the cursor: the walk between loads is exercised
    for (int trial = 0; trial < 200; ++trial) {
        CAPTURE(trial);
        const int experts = 1 + static_cast<int>(rng() % 40);
        std::vector<int32_t> offsets = ggemm_fixtures::random_offsets(rng, experts);
        if (trial % 3 == 1) offsets[rng() % experts] = static_cast<int32_t>(rng() % 4096);  // maybe misaligned
        std::vector<int32_t> counts(offsets.size());
        for (auto& c : counts) c = static_cast<int32_t>(rng() % 600) - 50;
        const int32_t* valid = trial % 2 ? counts.data() : nullptr;
        const int64_t m = offsets.back() + 256;
        const int32_t n = 64 * (1 + static_cast<int32_t>(rng() % 12));
        const int grid = 1 + static_cast<int>(rng() % 20);
        const int32_t k_splits = trial % 4 == 3 ? 1 + static_cast<int32_t>(rng() % 4) : 1;
        GroupedTileScheduler<kTileM, kTileN> count_tiles(offsets.data(), nullptr, m, experts, n, 16, valid);
        int64_t tiles = 0;
        while (count_tiles.tile(tiles).expert >= 0) ++tiles;
        const ggemm::TailSplit tail =
            k_splits > 1 ? ggemm::TailSplit{tiles, 1} : ggemm::choose_tail_split(tiles, grid, kTileN, 4);
        for (int cta = 0; cta < grid; ++cta) {
            GroupedTileScheduler<kTileM, kTileN> direct(offsets.data(), nullptr, m, experts, n, 16, valid);
            GroupedTileScheduler<kTileM, kTileN> stepped(offsets.data(), nullptr, m, experts, n, 16, valid);
            for (int64_t item = cta;; item += grid) {
                const TileCoord want = direct.item(item, tail, k_splits);
                const TileCoord got = stepped.item(item, tail, k_splits);
                CHECK(got.expert == want.expert);
                CHECK(got.row_begin == want.row_begin);
                CHECK(got.n_begin == want.n_begin);
                CHECK(got.n_width == want.n_width);
                CHECK(got.row_end == want.row_end);
                CHECK(got.k_split == want.k_split);
                CHECK(got.tile_index == want.tile_index);
                if (want.expert < 0) break;
                // This item's loads: each followed by one step toward the next item's tile.
                const int64_t next_tile = GroupedTileScheduler<kTileM, kTileN>::item_tile(item + grid, tail, k_splits);
                for (int load = static_cast<int>(rng() % 6); load > 0; --load) steps += stepped.step_toward(next_tile);
            }
        }
    }
    CHECK(steps > 1000);
}
