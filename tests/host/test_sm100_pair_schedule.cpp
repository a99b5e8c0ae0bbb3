// The SM100 CTA-pair kernel (cta_group::2) runs the shared scheduler of kernels/common/scheduler.h
// with 128-row tiles and gives cluster unit u the tiles 2u (leader, rank 0) and 2u + 1 (peer,
// rank 1). The kernel is only sound if those two are always the halves of one 256-row block: same
// expert, same columns, rows 128 apart, and if one of them is past the end so is the other (else
// the leader would wait forever for the peer's loads). These tests drive the scheduler the way the
// pair's leader does (static: units c, c + clusters, ...; dynamic: increasing claimed units) over
// valid, empty and unsafe offsets, and check both properties plus exact coverage.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "kernels/common/scheduler.h"
#include "tests/host/schedule_fixtures.h"

using ggemm::GroupedTileScheduler;
using ggemm::TileCoord;

namespace {

constexpr int kRowsPerCta = 128;  // the pair kernel's scheduler tile (one CTA's rows)

using TileKey = std::tuple<int32_t, int32_t, int32_t>;  // expert, row_begin, n_begin

struct PairWalk {
    std::multiset<TileKey> tiles;  // every tile either CTA of a pair computed
    int64_t units = 0;             // pairs handed out
};

// Checks that unit u's two tiles form one 256-row pair, and records them.
template <int kTileN>
bool take_unit(GroupedTileScheduler<kRowsPerCta, kTileN>& schedule, int64_t unit, PairWalk* walk) {
    const TileCoord leader = schedule.tile(2 * unit);
    const TileCoord peer = schedule.tile(2 * unit + 1);
    CAPTURE(unit);
    REQUIRE((leader.expert < 0) == (peer.expert < 0));  // both CTAs leave the loop together
    if (leader.expert < 0) return false;
    CHECK(peer.expert == leader.expert);
    CHECK(peer.n_begin == leader.n_begin);
    CHECK(peer.row_begin == leader.row_begin + kRowsPerCta);
    CHECK(leader.row_begin % 256 == 0);
    walk->tiles.insert({leader.expert, leader.row_begin, leader.n_begin});
    walk->tiles.insert({peer.expert, peer.row_begin, peer.n_begin});
    ++walk->units;
    return true;
}

template <int kTileN>
PairWalk static_pairs(const std::vector<int32_t>& offsets, const uint32_t* weight_status, int64_t m, int32_t n,
                      int clusters) {
    PairWalk walk;
    for (int cluster = 0; cluster < clusters; ++cluster) {
        GroupedTileScheduler<kRowsPerCta, kTileN> schedule(offsets.data(), weight_status, m,
                                                           static_cast<int32_t>(offsets.size()), n, 16);
        for (int64_t unit = cluster; take_unit(schedule, unit, &walk); unit += clusters) {
        }
    }
    return walk;
}

// What the one-CTA kernel (the same scheduler, units = single tiles) computes.
template <int kTileN>
std::multiset<TileKey> single_tiles(const std::vector<int32_t>& offsets, const uint32_t* weight_status, int64_t m,
                                    int32_t n) {
    std::multiset<TileKey> seen;
    GroupedTileScheduler<kRowsPerCta, kTileN> schedule(offsets.data(), weight_status, m,
                                                       static_cast<int32_t>(offsets.size()), n, 16);
    for (int64_t index = 0;; ++index) {
        const TileCoord t = schedule.tile(index);
        if (t.expert < 0) break;
        seen.insert({t.expert, t.row_begin, t.n_begin});
    }
    return seen;
}

template <int kTileN>
void check_static(const std::vector<int32_t>& offsets, const uint32_t* weight_status, int64_t m, int32_t n) {
    const std::multiset<TileKey> want = single_tiles<kTileN>(offsets, weight_status, m, n);
    for (int clusters : {1, 3, 74}) {
        CAPTURE(clusters);
        const PairWalk walk = static_pairs<kTileN>(offsets, weight_status, m, n, clusters);
        CHECK(walk.tiles == want);  // every tile once, none twice, none outside
        CHECK(walk.units * 2 == static_cast<int64_t>(want.size()));
    }
}

}  // namespace

TEST_CASE("sm100 pair schedule: units are 256-row pairs and cover every tile once (static)") {
    // Empty experts, a large one, partial last column tile (N = 600).
    const std::vector<int32_t> offsets = {0, 4096, 4096, 4352, 5120, 5120};
    check_static<256>(offsets, nullptr, 8192, 600);
    check_static<192>(offsets, nullptr, 8192, 600);
    check_static<128>(offsets, nullptr, 8192, 600);
    // A single 256-row expert (one pair per column tile) and no rows at all.
    check_static<256>({256}, nullptr, 256, 4096);
    const PairWalk none = static_pairs<256>({0, 0, 0}, nullptr, 2048, 4096, 74);
    CHECK(none.units == 0);
}

TEST_CASE("sm100 pair schedule: unsafe offsets and weight pointers never split a pair") {
    // Misaligned (128-aligned but not 256), decreasing, past M, negative: the scheduler skips the
    // experts they bound; the remaining experts still pair up.
    check_static<256>({256, 640, 1024, 1280}, nullptr, 2048, 512);
    check_static<256>({1024, 512, 1536, 1792}, nullptr, 2048, 512);
    check_static<256>({512, 4096, -256, 1024}, nullptr, 2048, 512);
    check_static<256>({128, 384, 768}, nullptr, 1024, 256);
    // The map builder's words for pointers {valid, NULL, misaligned, valid}.
    const uint32_t status_words[] = {0, ggemm::kStatusWeightPtrNull, ggemm::kStatusWeightPtrMisaligned, 0};
    check_static<256>({256, 512, 768, 1024}, status_words, 1024, 256);
    // Random garbage offsets, 128-granular so that misaligned ones are common.
    std::mt19937 rng(11);
    for (int trial = 0; trial < 200; ++trial) {
        std::vector<int32_t> offsets;
        for (int g = 0; g < 9; ++g) offsets.push_back(128 * static_cast<int32_t>(rng() % 40) - 256);
        CAPTURE(trial);
        check_static<256>(offsets, nullptr, 4096, 768);
    }
}

TEST_CASE("sm100 pair schedule: dynamic claims (one per pair) cover every tile once") {
    std::mt19937 rng(5);
    const std::vector<int32_t> offsets = ggemm_fixtures::random_offsets(rng, 64);
    const int64_t end = offsets.back();
    const int32_t n = 1536;
    // A counter hands out increasing units; each cluster's leader sees a sorted subset of them,
    // and stops at its first unit past the end.
    const int clusters = 13;
    const auto claimed = ggemm_fixtures::dynamic_claims(rng, clusters, 4096);
    PairWalk walk;
    for (int cluster = 0; cluster < clusters; ++cluster) {
        GroupedTileScheduler<kRowsPerCta, 256> schedule(offsets.data(), nullptr, end, 64, n, 16);
        for (int64_t unit : claimed[cluster]) {
            if (!take_unit(schedule, unit, &walk)) break;
        }
    }
    CHECK(walk.tiles == single_tiles<256>(offsets, nullptr, end, n));
}
