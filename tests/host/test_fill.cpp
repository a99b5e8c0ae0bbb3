// Filling the GPU on small calls: the fill model's tile and split-K choice (src/heuristics.h),
// pinned for every case of the shape suites; split-K's K ranges, scheduler walk, workspace and
// kernel arguments (kernels/common/split_k.h).
#include <doctest/doctest.h>

#include <cstddef>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ggemm.h"
#include "kernels/common/scheduler.h"
#include "kernels/common/split_k.h"
#include "src/execute.h"
#include "src/heuristics.h"
#include "src/plan.h"
#include "src/validate.h"
#include "src/workspace.h"
#include "tests/host/test_fakes.h"

using namespace ggemm_fakes;

namespace {

struct SuiteCase {
    std::string name;
    int32_t experts = 0;
    int64_t n = 0, k = 0, m = 0;  // m: the last padded offset
};

// The integer after `"key":` at or after `from` (and before `until`), or -1.
int64_t number_after(const std::string& text, const std::string& key, std::size_t from, std::size_t until) {
    const std::size_t at = text.find("\"" + key + "\"", from);
    if (at == std::string::npos || at >= until) return -1;
    std::size_t digit = text.find_first_of("0123456789", at + key.size() + 2);
    return std::stoll(text.substr(digit));
}

// The cases of a bench/*_shapes.json file: name, experts, n, k and the last padded offset.
std::vector<SuiteCase> read_suite(const char* file) {
    std::ifstream in(std::string(GGEMM_BENCH_DIR) + "/" + file);
    REQUIRE_MESSAGE(in.good(), file);
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string text = buffer.str();
    std::vector<SuiteCase> cases;
    std::size_t at = text.find("\"cases\"");
    while ((at = text.find("\"name\"", at + 1)) != std::string::npos) {
        const std::size_t next = std::min(text.find("\"name\"", at + 1), text.size());
        SuiteCase c;
        const std::size_t quote = text.find('"', text.find(':', at) + 1);
        c.name = text.substr(quote + 1, text.find('"', quote + 1) - quote - 1);
        c.experts = static_cast<int32_t>(number_after(text, "experts", at, next));
        c.n = number_after(text, "n", at, next);
        c.k = number_after(text, "k", at, next);
        const std::size_t offsets = text.find("\"padded_offsets\"", at);
        const std::size_t close = text.find(']', offsets);
        const std::size_t last = text.find_last_of("0123456789", close);
        const std::size_t first = text.find_last_not_of("0123456789", last) + 1;
        c.m = std::stoll(text.substr(first, last - first + 1));
        cases.push_back(c);
    }
    return cases;
}

ggemm_plan plan_on_h200(const ggemm_plan_desc& desc) {
    ggemm_plan plan;
    const ggemm_status_t status = ggemm::build_plan(desc, sm90_device(), ggemm::compiled_variants(90), &plan);
    REQUIRE_MESSAGE(status == GGEMM_SUCCESS, std::string(ggemm::last_error()));
    return plan;
}

ggemm_plan_desc suite_desc(const SuiteCase& c) {
    ggemm_plan_desc desc = valid_desc();  // bf16 D without C: what bench/peers.py times
    desc.m_capacity = c.m;
    desc.n = c.n;
    desc.k = c.k;
    desc.num_experts = c.experts;
    return desc;
}

struct Pin {
    const char* name;
    const char* kernel;
    int32_t splits;
};

void check_pins(const char* file, const std::vector<Pin>& pins) {
    const std::vector<SuiteCase> cases = read_suite(file);
    CHECK(cases.size() == pins.size());  // a case added to the suite needs its pin here
    for (const SuiteCase& c : cases) {
        CAPTURE(c.name);
        const ggemm_plan plan = plan_on_h200(suite_desc(c));
        const Pin* pin = nullptr;
        for (const Pin& p : pins)
            if (c.name == p.name) pin = &p;
        REQUIRE_MESSAGE(pin != nullptr, "no pin for this case");
        CAPTURE(plan.description);
        CHECK(std::string(plan.variant.name) == pin->kernel);
        CHECK(plan.k_splits == pin->splits);
    }
}

}  // namespace

TEST_CASE("fill: the MoE suite keeps the score's choice (many waves), and describe says so") {
    // Every case has thousands of tiles: the fill model never runs.
    check_pins("moe_shapes.json", {
                                      {"dsv3_fc1_L8", "sm90_tmastore_whole_128x256x64_s3", 1},
                                      {"dsv3_fc2_L8", "sm90_tmastore_whole_128x256x64_s3", 1},
                                      {"dsv3_fc1_L4_m8192", "sm90_tmastore_whole_128x256x64_s3", 1},
                                      {"mixtral_fc1", "sm90_tmastore_whole_128x256x64_s3", 1},
                                      {"mixtral_fc2", "sm90_tmastore_whole_128x256x64_s3", 1},
                                      {"qwen3_fc1_L128", "sm90_tmastore_halves_128x256x64_s4", 1},
                                      {"qwen3_fc2_L128", "sm90_tmastore_halves_128x256x64_s4", 1},
                                      {"gptoss_fc1_L32", "sm90_tmastore_whole_128x192x64_s4", 1},
                                      {"decode_L64", "sm90_tmastore_halves_128x256x64_s4", 1},
                                  });
    for (const SuiteCase& c : read_suite("moe_shapes.json")) {
        const ggemm_plan plan = plan_on_h200(suite_desc(c));
        CAPTURE(plan.description);
        CHECK(plan.description.find("the score's choice stands") != std::string::npos);
        CHECK(plan.description.find("split-K: none") != std::string::npos);
    }
}

TEST_CASE("fill: the small-call suite's choices, with the estimates in describe") {
    // Up to two waves of 128 x 256 tiles the score's choice stands; below that the fill model
    // takes narrower tiles (N = 7168, K = 2048: 128 tiles of 128 x 112 beat 112 of 128 x 128 and
    // 56 of 128 x 256;
    // N = 1536 or 2048: 64 x 64 tiles, a fifth fewer operand bytes per k-block, beat as many of
    // 128 x 32 and half as many of 128 x 64; N = 4096, K = 7168: 64 x 128, the same bytes per
    // k-block as 128 x 64 drawn at one warpgroup's faster rate) and never splits K unasked.
    // Decode layers of K <= 2048 with four or more 128 x 128 tiles per CTA take the ping-pong
    // kernel (kPingPongRegime). Over a few rounds the score counts the last one's idle CTAs: 8
    // experts of 256 rows and N = 7168 would take 128 x 256 tiles (448: three rounds, then 52
    // tiles cut in halves) over 128 x 128 ones of both warpgroups (896, the seventh round 79 %
    // full and too full to cut); N = 2880 takes 128 x 256
    // (768 tiles, 94 % of the columns kept, the sixth round 82 % full) over 128 x 192 (960, the
    // eighth 27 %, too full for thirds).
    check_pins("small_shapes.json", {
                                        {"dsv3_fc1_decode_L8", "sm90_tmastore_halves_128x256x64_s4", 1},
                                        {"dsv3_fc2_decode_L8", "sm90_tmastore_pingpong_128x128x64_s6", 1},
                                        {"qwen3_fc1_decode_L32", "sm90_tmastore_pingpong_128x128x64_s6", 1},
                                        {"qwen3_fc2_decode_L32", "sm90_tmastore_pingpong_128x128x64_s6", 1},
                                        {"one_expert_m256", "sm90_tma_wgmma_64x128x64_s8", 1},
                                        {"one_expert_n2048_m256", "sm90_tma_wgmma_64x64x64_s12", 1},
                                        {"dsv3_fc2_one_expert_m256", "sm90_tma_wgmma_128x112x64_s6", 1},
                                        {"dsv3_fc1_two_experts_m512", "sm90_tma_wgmma_128x128x64_s6", 1},
                                        {"qwen3_fc1_one_expert_m256", "sm90_tma_wgmma_64x64x64_s12", 1},
                                        {"mixtral_fc1_decode_L8", "sm90_tmastore_halves_128x256x64_s4", 1},
                                        {"mixtral_fc2_decode_L8", "sm90_tmastore_halves_128x256x64_s4", 1},
                                        {"gptoss_fc1_decode_L32", "sm90_tmastore_whole_128x192x64_s4", 1},
                                        {"gptoss_fc2_decode_L32", "sm90_tmastore_halves_128x256x64_s4", 1},
                                        {"dsv3_fc1_decode_L32", "sm90_tmastore_halves_128x256x64_s4", 1},
                                    });
    for (const SuiteCase& c : read_suite("small_shapes.json")) {
        const ggemm_plan plan = plan_on_h200(suite_desc(c));
        CAPTURE(plan.description);
        const bool modelled = plan.description.find("so the fill model chooses") != std::string::npos;
        if (c.m <= 512) CHECK(modelled);       // at most 64 tiles of 128 x 256 on 132 SMs
        if (c.m >= 8192) CHECK_FALSE(modelled);  // 2 waves of them or more
        if (modelled) CHECK(plan.description.find("  chosen ") != std::string::npos);
        CHECK(plan.k_splits == 1);
        CHECK(plan.description.find("split-K: none") != std::string::npos);
    }
}

TEST_CASE("fill: one expert of 256 rows over K") {
    // N = 4096: 128 tiles of 64 x 128 or of 128 x 64, the same operand bytes per k-block; one
    // warpgroup draws them faster but costs more per item, so 64 x 128 from K = 2048 on.
    // N = 2048: 64 x 64 at every K, a fifth fewer bytes per k-block than as many 128 x 32 tiles.
    check_pins("k_scan_shapes.json", {
                                         {"kscan_n4096_k512", "sm90_tma_wgmma_128x64x64_s8", 1},
                                         {"kscan_n4096_k1024", "sm90_tma_wgmma_128x64x64_s8", 1},
                                         {"kscan_n4096_k2048", "sm90_tma_wgmma_64x128x64_s8", 1},
                                         {"kscan_n4096_k4096", "sm90_tma_wgmma_64x128x64_s8", 1},
                                         {"kscan_n4096_k7168", "sm90_tma_wgmma_64x128x64_s8", 1},
                                         {"kscan_n4096_k14336", "sm90_tma_wgmma_64x128x64_s8", 1},
                                         {"kscan_n2048_k512", "sm90_tma_wgmma_64x64x64_s12", 1},
                                         {"kscan_n2048_k1024", "sm90_tma_wgmma_64x64x64_s12", 1},
                                         {"kscan_n2048_k2048", "sm90_tma_wgmma_64x64x64_s12", 1},
                                         {"kscan_n2048_k4096", "sm90_tma_wgmma_64x64x64_s12", 1},
                                         {"kscan_n2048_k7168", "sm90_tma_wgmma_64x64x64_s12", 1},
                                         {"kscan_n2048_k14336", "sm90_tma_wgmma_64x64x64_s12", 1},
                                     });
}

TEST_CASE("split-K: the splits cover every k-block exactly once, in order, evenly") {
    for (int32_t k_blocks = 1; k_blocks <= 200; ++k_blocks) {
        for (int32_t splits = 1; splits <= ggemm::kMaxSplitK && splits <= k_blocks; ++splits) {
            CAPTURE(k_blocks);
            CAPTURE(splits);
            int32_t next = 0;
            for (int32_t s = 0; s < splits; ++s) {
                const ggemm::KBlockRange r = ggemm::split_k_range(k_blocks, splits, s);
                CHECK(r.begin == next);
                const int32_t size = r.end - r.begin;
                CHECK(size >= k_blocks / splits);
                CHECK(size <= (k_blocks + splits - 1) / splits);
                CHECK(size >= 1);
                next = r.end;
            }
            CHECK(next == k_blocks);
        }
    }
}

TEST_CASE("split-K: the scheduler deals each split of each tile once, tiles in order") {
    // Two experts of 256 rows and an empty one between: 4 row blocks x 3 column blocks of 64.
    const int32_t offsets[] = {256, 256, 512};
    for (int32_t splits = 2; splits <= 4; ++splits) {
        ggemm::GroupedTileScheduler<128, 64> schedule(offsets, nullptr, 512, 3, 192, 16);
        std::vector<int> seen(4 * 3 * splits, 0);
        int64_t item = 0;
        for (;; ++item) {
            const ggemm::TileCoord t = schedule.item(item, ggemm::TailSplit{0, 1}, splits);
            if (t.expert < 0) break;
            CHECK(t.n_width == 64);
            CHECK(t.k_split == item % splits);
            CHECK(t.tile_index == item / splits);
            const int tile = t.row_begin / 128 * 3 + t.n_begin / 64;
            ++seen[tile * splits + t.k_split];
        }
        CHECK(item == 4 * 3 * splits);
        for (int count : seen) CHECK(count == 1);
    }
}

TEST_CASE("split-K: the workspace holds every partial and counter of every tile width") {
    for (int64_t n : {8, 64, 200, 2048, 4104, 7168}) {
        for (int64_t rows : {256, 512, 1024}) {
            for (int32_t splits = 2; splits <= ggemm::kMaxSplitK; ++splits) {
                for (int64_t tile_n : {64, 128, 192, 256}) {
                    const uint64_t tiles = static_cast<uint64_t>(rows / 128 * ((n + tile_n - 1) / tile_n));
                    CHECK(tiles * splits * 128 * tile_n * sizeof(float) <= ggemm::split_partial_bytes(splits, rows, n));
                    CHECK(tiles * ggemm::kSplitCountersPerTile * sizeof(uint32_t) <=
                          ggemm::split_counter_bytes(splits, rows, n));
                }
            }
        }
    }
    CHECK(ggemm::split_partial_bytes(1, 1024, 4096) == 0);
    CHECK(ggemm::split_counter_bytes(1, 1024, 4096) == 0);
    // 2 splits x 256 rows x (4096 + 192) columns x 4 bytes; 2 x 64 tiles x 2 counters x 4 bytes.
    CHECK(ggemm::split_partial_bytes(2, 256, 4096) == 2ull * 256 * 4288 * 4);
    CHECK(ggemm::split_counter_bytes(2, 256, 4096) == 1024);
    // Unsplit plans keep today's workspace; split ones start after the counter line or the maps.
    CHECK(ggemm::forward_workspace_bytes(GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_STATIC, 8, 1, 0, 4096) == 0);
    CHECK(ggemm::forward_workspace_bytes(GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_DYNAMIC, 8, 1, 0, 4096) == 128);
    CHECK(ggemm::forward_workspace_bytes(GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_STATIC, 8, 2, 256, 4096) ==
          128 + 1024 + 2ull * 256 * 4288 * 4);
    CHECK(ggemm::workspace_split_offset(GGEMM_WEIGHTS_DISCRETE, 8) ==
          ggemm::workspace_bytes(GGEMM_WEIGHTS_DISCRETE, GGEMM_SCHEDULER_STATIC, 8));
    CHECK(ggemm::split_rows(256) == 256);
    CHECK(ggemm::split_rows(1 << 20) == ggemm::kSplitRowLimit);
}

TEST_CASE("split-K: the descriptor field, its refusals and its struct size") {
    CHECK(sizeof(ggemm_plan_desc) == 120);
    CHECK(offsetof(ggemm_plan_desc, split_k) == 88);
    CHECK(offsetof(ggemm_plan_desc, reserved2) == 92);
    ggemm_plan_desc desc = valid_desc();
    CHECK(desc.split_k == 0);
    desc.split_k = ggemm::kMaxSplitK + 1;
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_ERROR_UNSUPPORTED_CONFIG);
    desc.split_k = -1;
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_ERROR_UNSUPPORTED_CONFIG);
    desc.split_k = 4;
    desc.k = 192;  // three k-blocks
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK(std::string(ggemm::last_error()).find("at most one split per block") != std::string::npos);
    desc.split_k = 3;
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_SUCCESS);
    desc.reserved2 = 1;
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_ERROR_INVALID_VALUE);
    // An older caller's struct, ending before split_k, reads as split_k = 0.
    ggemm_plan_desc old = valid_desc();
    old.struct_size = offsetof(ggemm_plan_desc, split_k);
    ggemm_plan_desc read;
    CHECK(ggemm::read_plan_desc(&old, "desc", &read) == GGEMM_SUCCESS);
    CHECK(read.split_k == 0);
}

TEST_CASE("split-K: SM100's kernels cannot split K, and say so") {
    ggemm_plan_desc desc = valid_desc();
    desc.split_k = 2;
    ggemm_plan plan;
    CHECK(ggemm::build_plan(desc, sm100_device(), ggemm::compiled_variants(100), &plan) ==
          GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK(std::string(ggemm::last_error()).find("splits K at most 1 way, desc->split_k = 2") != std::string::npos);
    desc.split_k = 1;
    CHECK(ggemm::build_plan(desc, sm100_device(), ggemm::compiled_variants(100), &plan) == GGEMM_SUCCESS);
}

TEST_CASE("split-K: SM90's 32-wide kernel cannot split K, and says so") {
    ggemm_plan_desc desc = valid_desc();
    desc.tile_n = 32;
    desc.split_k = 2;
    ggemm_plan plan;
    CHECK(ggemm::build_plan(desc, sm90_device(), ggemm::compiled_variants(90), &plan) ==
          GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK(std::string(ggemm::last_error()).find("splits K at most 1 way, desc->split_k = 2") != std::string::npos);
    desc.split_k = 0;
    REQUIRE(ggemm::build_plan(desc, sm90_device(), ggemm::compiled_variants(90), &plan) == GGEMM_SUCCESS);
    CHECK(plan.variant.tile_n == 32);
    CHECK(plan.k_splits == 1);
}

TEST_CASE("split-K: a forced split, its kernel arguments and the counters each call clears") {
    ggemm_plan_desc desc = valid_desc();
    desc.m_capacity = 512;
    desc.n = 2048;
    desc.k = 7168;
    desc.num_experts = 2;
    desc.split_k = 3;
    const ggemm_plan plan = plan_on_h200(desc);
    CAPTURE(plan.description);
    REQUIRE(plan.k_splits == 3);
    CHECK(plan.split_rows == 512);
    CHECK(plan.description.find("split-K: K split 3 ways (112 k-blocks of 64, 37 to 38 per split) on calls of at "
                                "most 512 rows") != std::string::npos);
    CHECK(plan.workspace_bytes ==
          ggemm::forward_workspace_bytes(GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_STATIC, 2, 3, 512, 2048));

    ggemm_args args = valid_args(256);
    args.workspace_size = plan.workspace_bytes;
    const ggemm::KernelArgs kernel = ggemm::make_kernel_args(plan, args);
    CHECK(kernel.k_splits == 3);
    CHECK(kernel.tail.pieces == 1);  // a split plan never cuts the last round
    const auto base = reinterpret_cast<uintptr_t>(args.workspace);
    CHECK(reinterpret_cast<uintptr_t>(kernel.split_counters) == base + 128);
    const uint64_t tiles = 256 / 128 * ((2048 + plan.variant.tile_n - 1) / plan.variant.tile_n);
    const uintptr_t partials = reinterpret_cast<uintptr_t>(kernel.split_partials);
    CHECK(partials >= base + 128 + tiles * 2 * 4);
    CHECK(partials % 16 == 0);
    CHECK(partials + tiles * 3 * 128 * plan.variant.tile_n * 4 <= base + plan.workspace_bytes);
    // This call's counters, and no more, are cleared with the tile counter's line.
    CHECK(ggemm::cleared_workspace_bytes(plan, 256) == 128 + ggemm::split_counter_bytes(3, 256, 2048));
    // No call splits K without room for its partials: a plan of 512 rows has none for more.
    ggemm_plan_desc wide = desc;
    wide.m_capacity = 4096;
    const ggemm_plan wide_plan = plan_on_h200(wide);
    CHECK(wide_plan.split_rows == 1024);
    CHECK(ggemm::call_k_splits(wide_plan, 1024) == 3);
    CHECK(ggemm::call_k_splits(wide_plan, 1280) == 1);
    CHECK(ggemm::cleared_workspace_bytes(wide_plan, 1280) == 0);  // static scheduler, unsplit call
    const ggemm::KernelArgs unsplit = ggemm::make_kernel_args(wide_plan, valid_args(1280));
    CHECK(unsplit.k_splits == 1);
    // split_k = 1: never, whatever the model would say.
    desc.split_k = 1;
    CHECK(plan_on_h200(desc).k_splits == 1);
}

TEST_CASE("split-K: the one-shot workspace size matches the cached plan's, without a GPU") {
    ggemm_plan_desc desc = valid_desc();
    desc.split_k = 2;
    uint64_t bytes = 0;
    REQUIRE(ggemm_workspace_size(&desc, &bytes) == GGEMM_SUCCESS);
    // The cache creates its plan with the largest capacity (src/plan_cache.cpp).
    ggemm_plan_desc widest = desc;
    widest.m_capacity = ggemm::kMaxMCapacity;
    ggemm_plan built;
    REQUIRE(ggemm::build_plan(widest, sm90_device(), ggemm::compiled_variants(90), &built) == GGEMM_SUCCESS);
    CHECK(built.k_splits == 2);
    CHECK(built.split_rows == ggemm::kSplitRowLimit);
    CHECK(bytes == built.workspace_bytes);
    desc.split_k = 0;
    REQUIRE(ggemm_workspace_size(&desc, &bytes) == GGEMM_SUCCESS);
    CHECK(bytes == 0);
}

TEST_CASE("fill model: narrower tiles win only by cutting waves") {
    const ggemm::KernelVariant wide = variant("w", 90, 128, 256, 1);
    const ggemm::KernelVariant narrow = variant("n", 90, 128, 64, 1);
    // Many waves: the same work per SM, wide tiles load less per flop.
    const ggemm::FillEstimate many_wide = ggemm::estimate_fill(wide, 32768, 4096, 7168, 8, 1, 132);
    const ggemm::FillEstimate many_narrow = ggemm::estimate_fill(narrow, 32768, 4096, 7168, 8, 1, 132);
    CHECK(many_wide.total < many_narrow.total);
    // One 256-row expert: 32 wide tiles leave 100 SMs idle; 128 narrow ones fill the machine.
    const ggemm::FillEstimate few_wide = ggemm::estimate_fill(wide, 256, 4096, 7168, 1, 1, 132);
    const ggemm::FillEstimate few_narrow = ggemm::estimate_fill(narrow, 256, 4096, 7168, 1, 1, 132);
    CHECK(few_wide.tiles == 32);
    CHECK(few_narrow.tiles == 128);
    CHECK(few_wide.waves == 1);
    CHECK(few_narrow.waves == 1);
    CHECK(few_narrow.total < few_wide.total);
    // Splitting K in 2 puts 64 tiles on 128 SMs: each item is half as long, one wave still.
    const ggemm::FillEstimate split = ggemm::estimate_fill(narrow, 256, 2048, 7168, 1, 2, 132);
    CHECK(split.tiles == 64);
    CHECK(split.waves == 1);
    CHECK(split.item_cycles < ggemm::estimate_fill(narrow, 256, 2048, 7168, 1, 1, 132).item_cycles);
    // No model for SM100: the score alone chooses there.
    CHECK(ggemm::estimate_fill(variant("b", 100, 128, 256, 1), 256, 4096, 7168, 1, 1, 148).total == 0);
}

TEST_CASE("fill: the GPU test's one-expert decode plan narrows its tiles and keeps K whole") {
    // tests/gpu/test_split_k.cpp, "the planner's own choice": M = 256, m_capacity = M + 512.
    ggemm_plan_desc desc = valid_desc();
    desc.m_capacity = 768;
    desc.n = 2048;
    desc.k = 7168;
    desc.num_experts = 1;
    desc.c_dtype = GGEMM_DTYPE_FP32;
    const ggemm_plan plan = plan_on_h200(desc);
    CAPTURE(plan.description);
    CHECK(plan.description.find("so the fill model chooses") != std::string::npos);
    CHECK(plan.variant.tile_n < 256);
    CHECK(plan.k_splits == 1);
    CHECK(plan.split_rows == 0);
    // Asked for, the split is made, on the tile the model finds fastest with it.
    desc.split_k = 4;
    const ggemm_plan split = plan_on_h200(desc);
    CAPTURE(split.description);
    CHECK(split.k_splits == 4);
    CHECK(split.split_rows == 768);
}
