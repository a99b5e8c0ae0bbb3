// SM90 clusters of two CTAs along M (the _c2 variants): the planner offers them only when asked
// (desc->cluster_m = 2, tile_m = 256 or GGEMM_KERNEL) and never with the dynamic scheduler; the
// host deals the last round's pieces over clusters; and the schedule the kernel runs (the
// 256-row GroupedTileScheduler, one work item per cluster, cluster_share for each CTA's rows)
// gives both CTAs of a cluster the same items and covers every row of every usable expert once.
#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/common/contract.h"
#include "kernels/common/scheduler.h"
#include "kernels/common/tail_split.h"
#include "src/execute.h"
#include "src/heuristics.h"
#include "src/plan.h"
#include "tests/host/schedule_fixtures.h"
#include "tests/host/test_fakes.h"

using namespace ggemm_fakes;

namespace {

constexpr int32_t kCtaRows = 128;      // rows one CTA computes (the kernel's kTileM)
constexpr int32_t kClusterRows = 256;  // rows of a schedule tile (kScheduleTileM)
constexpr int32_t kGroupM = 8;         // the kernel's kScheduleGroupM: 16 row blocks of 128

ggemm_status_t plan_compiled(const ggemm_plan_desc& desc, ggemm_plan* plan, const char* kernel_prefix = nullptr) {
    return ggemm::build_plan(desc, sm90_device(), ggemm::compiled_variants(90), plan, kernel_prefix);
}

bool message_has(const char* text) { return std::string(ggemm::last_error()).find(text) != std::string::npos; }

// One CTA's view of a work item: what it loads and computes.
struct CtaTile {
    int32_t expert;
    int32_t row_begin;
    int32_t n_begin;
    int32_t n_width;
    bool operator==(const CtaTile& o) const {
        return expert == o.expert && row_begin == o.row_begin && n_begin == o.n_begin && n_width == o.n_width;
    }
};

// The static cluster schedule on `grid` CTAs (clusters of two), as the kernel's producers walk it.
std::vector<std::vector<CtaTile>> cluster_walk(const std::vector<int32_t>& offsets, const uint32_t* weight_status,
                                               int64_t m, int32_t n, int32_t tile_n, int32_t grid,
                                               ggemm::TailSplit split) {
    const int32_t clusters = grid / 2;
    std::vector<std::vector<CtaTile>> walked(static_cast<size_t>(grid));
    for (int32_t cta = 0; cta < grid; ++cta) {
        const uint32_t rank = static_cast<uint32_t>(cta % 2);
        const int32_t cluster = cta / 2;
        const int32_t experts = static_cast<int32_t>(offsets.size());
        auto walk = [&](auto scheduler) {
            for (int64_t item = cluster;; item += clusters) {
                const ggemm::TileCoord t = ggemm::cluster_share(scheduler.item(item, split), rank, kCtaRows);
                if (t.expert < 0) break;
                walked[static_cast<size_t>(cta)].push_back({t.expert, t.row_begin, t.n_begin, t.n_width});
            }
        };
        if (tile_n == 256) {
            walk(ggemm::GroupedTileScheduler<kClusterRows, 256>(offsets.data(), weight_status, m, experts, n, kGroupM));
        } else {
            walk(ggemm::GroupedTileScheduler<kClusterRows, 192>(offsets.data(), weight_status, m, experts, n, kGroupM));
        }
    }
    return walked;
}

// The host's split for a cluster plan: 256-row tiles dealt to grid / 2 clusters (execute.cpp).
ggemm::TailSplit cluster_split(int64_t m, int32_t n, int32_t tile_n, int32_t grid) {
    const int64_t tiles = m / kClusterRows * ((n + tile_n - 1) / tile_n);
    return ggemm::choose_tail_split(tiles, grid / 2, tile_n, ggemm::kMaxPieces);
}

// Checks that both CTAs of every cluster walk the same items (rank 1: 128 rows further) and that
// the rows x 64-column blocks computed are exactly those of the experts in `usable`, once each.
void check_cover(const std::vector<int32_t>& offsets, const std::set<int>& usable, const uint32_t* weight_status,
                 int64_t m, int32_t n, int32_t tile_n, int32_t grid) {
    CAPTURE(n);
    CAPTURE(tile_n);
    CAPTURE(grid);
    const ggemm::TailSplit split = cluster_split(m, n, tile_n, grid);
    const auto walked = cluster_walk(offsets, weight_status, m, n, tile_n, grid, split);
    std::multiset<std::pair<int32_t, int32_t>> cells;  // (first row of a 128-row block, 64-column block)
    for (int32_t cta = 0; cta < grid; cta += 2) {
        const auto& leader = walked[static_cast<size_t>(cta)];
        const auto& peer = walked[static_cast<size_t>(cta + 1)];
        REQUIRE(leader.size() == peer.size());  // same items: no CTA waits for a stage the other never fills
        for (size_t i = 0; i < leader.size(); ++i) {
            CtaTile shifted = leader[i];
            shifted.row_begin += kCtaRows;
            CHECK(peer[i] == shifted);
            CHECK(leader[i].row_begin % kClusterRows == 0);
        }
        for (const auto* side : {&leader, &peer}) {
            for (const CtaTile& t : *side) {
                CHECK(t.n_width % 64 == 0);
                if (t.n_begin >= n) continue;  // a piece wholly past N: both CTAs skip it
                for (int32_t c = t.n_begin; c < t.n_begin + t.n_width && c < n; c += 64) cells.insert({t.row_begin, c});
            }
        }
    }
    std::multiset<std::pair<int32_t, int32_t>> want;
    for (size_t g = 0; g < offsets.size(); ++g) {
        if (!usable.count(static_cast<int>(g))) continue;
        for (int64_t r = g == 0 ? 0 : offsets[g - 1]; r < offsets[g]; r += kCtaRows)
            for (int32_t c = 0; c < n; c += 64) want.insert({static_cast<int32_t>(r), c});
    }
    CHECK(cells == want);
}

std::set<int> all_experts(size_t count) {
    std::set<int> s;
    for (size_t g = 0; g < count; ++g) s.insert(static_cast<int>(g));
    return s;
}

// Which piece (first column, width) computes each 128-row x 64-column block: one CTA's schedule
// (128-row tiles over `grid` CTAs, raster groups of 16) against the cluster's.
using PieceOf = std::map<std::pair<int32_t, int32_t>, std::pair<int32_t, int32_t>>;

PieceOf one_cta_pieces(const std::vector<int32_t>& offsets, int64_t m, int32_t n, int32_t grid) {
    const int64_t tiles = m / kCtaRows * ((n + 255) / 256);
    const ggemm::TailSplit split = ggemm::choose_tail_split(tiles, grid, 256, ggemm::kMaxPieces);
    PieceOf pieces;
    for (int32_t cta = 0; cta < grid; ++cta) {
        ggemm::GroupedTileScheduler<kCtaRows, 256> s(offsets.data(), nullptr, m, static_cast<int32_t>(offsets.size()),
                                                     n, 16);
        for (int64_t item = cta;; item += grid) {
            const ggemm::TileCoord t = s.item(item, split);
            if (t.expert < 0) break;
            for (int32_t c = t.n_begin; c < t.n_begin + t.n_width && c < n; c += 64)
                pieces[{t.row_begin, c}] = {t.n_begin, t.n_width};
        }
    }
    return pieces;
}

PieceOf cluster_pieces(const std::vector<int32_t>& offsets, int64_t m, int32_t n, int32_t grid) {
    PieceOf pieces;
    for (const auto& cta : cluster_walk(offsets, nullptr, m, n, 256, grid, cluster_split(m, n, 256, grid)))
        for (const CtaTile& t : cta)
            for (int32_t c = t.n_begin; c < t.n_begin + t.n_width && c < n; c += 64)
                pieces[{t.row_begin, c}] = {t.n_begin, t.n_width};
    return pieces;
}

}  // namespace

TEST_CASE("sm90 cluster schedule: both CTAs take the same items, every row once (tails, pieces)") {
    std::mt19937 rng(19);
    for (int trial = 0; trial < 12; ++trial) {
        // 0..4 segments of 256 rows per expert: empty experts, odd segment counts.
        const int experts = 1 + static_cast<int>(rng() % 40);
        const std::vector<int32_t> offsets = ggemm_fixtures::random_offsets(rng, experts);
        const int64_t m = offsets.back() + 256 * static_cast<int64_t>(rng() % 3);  // rows past the last expert
        if (m == 0) continue;
        for (const int32_t n : {64, 264, 520, 1536, 2880}) {
            for (const int32_t tile_n : {256, 192}) {
                for (const int32_t grid : {2, 6, 22, 132}) {
                    check_cover(offsets, all_experts(offsets.size()), nullptr, m, n, tile_n, grid);
                }
            }
        }
    }
}


// The same wgmma width per output block is what makes a cluster's results the same bits as one
// CTA's: with an even grid, 128-row tiles 2j and 2j + 1 of one CTA's raster are the halves of the
// cluster's 256-row tile j, and the last round is cut the same way.
TEST_CASE("sm90 cluster schedule: every block is computed at the same piece width as by one CTA") {
    std::mt19937 rng(23);
    for (int trial = 0; trial < 20; ++trial) {
        const std::vector<int32_t> offsets = ggemm_fixtures::random_offsets(rng, 1 + static_cast<int>(rng() % 12));
        const int64_t m = offsets.back() + 256;
        for (const int32_t n : {264, 520, 2048}) {
            for (const int32_t grid : {132, 22}) {
                CAPTURE(n);
                CAPTURE(grid);
                CHECK(cluster_pieces(offsets, m, n, grid) == one_cta_pieces(offsets, m, n, grid));
            }
        }
    }
}

TEST_CASE("sm90 cluster schedule: the last round is cut into pieces over clusters") {
    // M = 8704 with 256-row tiles: 34 x 16 = 544 tiles on 66 clusters = 8 x 66 + 16: halves on
    // 32 clusters (quarters would take more than half of them).
    const ggemm::TailSplit split = cluster_split(8704, 4096, 256, 132);
    CHECK(split.first_piece == 528);
    CHECK(split.pieces == 2);
    const std::vector<int32_t> offsets = {2048, 2048, 8704};
    check_cover(offsets, all_experts(3), nullptr, 8704, 4096, 256, 132);
    // A piece that starts past N (N = 264: second column tile, its second half).
    check_cover({512, 768, 1536}, all_experts(3), nullptr, 1536, 264, 256, 10);
}

TEST_CASE("sm90 cluster schedule: unsafe offsets and weights skip the same experts in both CTAs") {
    // Expert 1 misaligned, expert 3 decreasing: 1 and 2 (which begins at 1's bad offset) are
    // skipped, 3 too, and 4 (begins below the high-water mark) as well; 5 and 6 run.
    const std::vector<int32_t> offsets = {512, 300, 1024, 768, 1280, 2048, 2560};
    check_cover(offsets, {0, 5, 6}, nullptr, 2560, 520, 256, 6);
    // Discrete weights: an expert whose pointer is unusable is skipped by both CTAs.
    const std::vector<int32_t> clean = {512, 1024, 1536, 2304};
    const uint32_t weight_status[] = {0, ggemm::kStatusWeightPtrNull, 0, 0};
    check_cover(clean, {0, 2, 3}, weight_status, 2304, 1536, 192, 22);
}

TEST_CASE("sm90 clusters: compiled variants, chosen only when asked for") {
    const ggemm::VariantList list = ggemm::compiled_variants(90);
    int clusters = 0;
    for (int i = 0; i < list.count; ++i) {
        const ggemm::KernelVariant& v = list.items[i];
        CAPTURE(v.name);
        const bool c2 = std::string(v.name).size() > 3 && std::string(v.name).substr(std::string(v.name).size() - 3) == "_c2";
        CHECK(c2 == (v.cluster_m == 2));
        if (!c2) {
            CHECK((v.tile_m == 128 || v.tile_m == 64));  // two math warpgroups, or one
            CHECK(v.dynamic_scheduler);
            continue;
        }
        ++clusters;
        CHECK(v.tile_m == 256);      // the cluster's rows
        CHECK(v.a_box_rows == 128);  // each CTA's own A
        if (v.weight_layout == ggemm::kKMajor) CHECK(v.b_box_rows * 2 == v.tile_n);  // half of B each
        CHECK_FALSE(v.dynamic_scheduler);
        CHECK(v.d_box_rows > 0);  // TMA-store output: a bf16 D without C
        CHECK(v.max_tail_pieces == ggemm::kMaxPieces);
    }
    CHECK(clusters == 4);

    // The default plan never takes a cluster, whatever the shape or margin.
    for (const int64_t n : {264, 1536, 2048, 4096, 5760, 7168, 28672}) {
        for (const int32_t margin : {0, 1, 3}) {
            for (const int32_t layout : {GGEMM_WEIGHT_LAYOUT_K_MAJOR, GGEMM_WEIGHT_LAYOUT_N_MAJOR}) {
                ggemm_plan_desc desc = valid_desc();
                desc.n = n;
                desc.sm_margin = margin;
                desc.weight_layout = layout;
                ggemm_plan plan;
                REQUIRE(plan_compiled(desc, &plan) == GGEMM_SUCCESS);
                CAPTURE(plan.variant.name);
                CHECK(plan.variant.cluster_m == 1);
            }
        }
    }

    // Asked for: desc->cluster_m = 2, with the widths and layouts compiled.
    ggemm_plan_desc desc = valid_desc();
    desc.cluster_m = 2;
    ggemm_plan plan;
    REQUIRE(plan_compiled(desc, &plan) == GGEMM_SUCCESS);
    CHECK(std::string(plan.variant.name) == "sm90_tmastore_halves_128x256x64_s4_c2");
    CHECK(plan.grid == 132);
    CHECK(plan.description.find("cluster 2 along M") != std::string::npos);
    CHECK(plan.description.find("rounded down to whole clusters of 2") != std::string::npos);
    desc.sm_margin = 1;  // 131 SMs: 65 clusters
    REQUIRE(plan_compiled(desc, &plan) == GGEMM_SUCCESS);
    CHECK(plan.grid == 130);
    desc.sm_margin = 0;
    desc.tile_n = 192;
    REQUIRE(plan_compiled(desc, &plan) == GGEMM_SUCCESS);
    CHECK(std::string(plan.variant.name) == "sm90_tmastore_whole_128x192x64_s4_c2");
    desc.tile_n = 0;
    desc.weight_layout = GGEMM_WEIGHT_LAYOUT_N_MAJOR;
    REQUIRE(plan_compiled(desc, &plan) == GGEMM_SUCCESS);
    CHECK(std::string(plan.variant.name) == "sm90_tmastore_halves_128x256x64_s4_nmajor_c2");
    // tile_m = 256 names the cluster's tile too.
    desc = valid_desc();
    desc.tile_m = 256;
    REQUIRE(plan_compiled(desc, &plan) == GGEMM_SUCCESS);
    CHECK(plan.variant.cluster_m == 2);

    // GGEMM_KERNEL names one: it alone is a candidate.
    desc = valid_desc();
    REQUIRE(plan_compiled(desc, &plan, "sm90_tmastore_whole_128x256x64_s3_c2") == GGEMM_SUCCESS);
    CHECK(std::string(plan.variant.name) == "sm90_tmastore_whole_128x256x64_s3_c2");
    CHECK(plan.grid % 2 == 0);
    // A prefix that also matches the one-CTA twin keeps the twin (ranked higher).
    REQUIRE(plan_compiled(desc, &plan, "sm90_tmastore_halves_128x256x64_s4") == GGEMM_SUCCESS);
    CHECK(std::string(plan.variant.name) == "sm90_tmastore_halves_128x256x64_s4");
}

TEST_CASE("sm90 clusters: refused with the dynamic scheduler and for outputs they cannot store") {
    ggemm_plan_desc desc = valid_desc();
    desc.cluster_m = 2;
    desc.scheduler = GGEMM_SCHEDULER_DYNAMIC;
    ggemm_plan plan;
    CHECK(plan_compiled(desc, &plan) == GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK(message_has("cluster_m = 2"));
    CHECK(message_has("excluded sm90_tmastore_halves_128x256x64_s4_c2: runs the static scheduler only"));
    CHECK(message_has("desc->scheduler = dynamic"));
    // Through GGEMM_KERNEL as well.
    desc.cluster_m = 0;
    CHECK(plan_compiled(desc, &plan, "sm90_tmastore_halves_128x256x64_s4_c2") == GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK(message_has("runs the static scheduler only"));
    // The one-CTA kernels still take the dynamic scheduler.
    REQUIRE(plan_compiled(desc, &plan) == GGEMM_SUCCESS);
    CHECK(plan.variant.cluster_m == 1);

    // Clusters store D with TMA only: C, or another D dtype, is refused with the reason.
    desc = valid_desc();
    desc.cluster_m = 2;
    desc.generate_c = 1;
    desc.c_dtype = GGEMM_DTYPE_FP32;
    CHECK(plan_compiled(desc, &plan) == GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK(message_has("stores D with TMA, which serves a bf16 D without C only"));
}

TEST_CASE("sm90 clusters: kernel arguments deal the last round over clusters") {
    ggemm_plan_desc desc = valid_desc();
    desc.m_capacity = 16384;
    desc.cluster_m = 2;
    ggemm_plan plan;
    REQUIRE(plan_compiled(desc, &plan) == GGEMM_SUCCESS);
    REQUIRE(plan.grid == 132);
    ggemm::KernelArgs kernel = ggemm::make_kernel_args(plan, valid_args(8704));
    CHECK(kernel.tail.first_piece == 528);  // 544 tiles of 256 rows, 66 clusters
    CHECK(kernel.tail.pieces == 2);
    CHECK(kernel.scheduler == GGEMM_SCHEDULER_STATIC);
    // 62 x 16 = 992 tiles = 15 x 66 + 2: quarters on 8 clusters.
    kernel = ggemm::make_kernel_args(plan, valid_args(16384 - 256 * 2));  // 62 x 16 = 992 = 15 x 66 + 2
    CHECK(kernel.tail.pieces == 4);
    CHECK(kernel.tail.first_piece == 990);
}
