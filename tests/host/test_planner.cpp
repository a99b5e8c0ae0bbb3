// The planner on fake devices and fake variants: which variant, which grid, which workspace,
// and the description that says why.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "src/heuristics.h"
#include "src/plan.h"
#include "tests/host/test_fakes.h"

using namespace ggemm_fakes;

namespace {

ggemm_plan plan_for(const ggemm_plan_desc& desc, const std::vector<ggemm::KernelVariant>& variants,
                    const ggemm::DeviceInfo& device = sm90_device()) {
    ggemm_plan plan;
    const ggemm_status_t status = ggemm::build_plan(desc, device, list_of(variants), &plan);
    CHECK_MESSAGE(status == GGEMM_SUCCESS, std::string(ggemm::last_error()));
    return plan;
}

bool describes(const ggemm_plan& plan, const char* text) {
    return plan.description.find(text) != std::string::npos;
}

}  // namespace

TEST_CASE("the persistent grid: SMs minus the margin, in whole clusters") {
    CHECK(ggemm::persistent_grid(132, 0, 1) == 132);
    CHECK(ggemm::persistent_grid(132, 0, 2) == 132);
    CHECK(ggemm::persistent_grid(132, 1, 2) == 130);
    CHECK(ggemm::persistent_grid(132, 4, 1) == 128);
    CHECK(ggemm::persistent_grid(132, 131, 1) == 1);
    CHECK(ggemm::persistent_grid(132, 131, 2) == 0);
    CHECK(ggemm::persistent_grid(132, 132, 1) == 0);
}

TEST_CASE("score: column use is N over the padded N") {
    const ggemm::KernelVariant wide = variant("w", 90, 128, 256, 1);
    const ggemm::VariantScore score = ggemm::score_variant(wide, 4096, 5760, 132, 0);
    CHECK(score.padded_n == 5888);
    CHECK(score.column_use == doctest::Approx(5760.0 / 5888.0));
    CHECK(score.width_in_table);
    CHECK(score.grid == 132);
    CHECK(score.total == doctest::Approx(score.width_efficiency * score.column_use * score.tile_m_factor *
                                         score.cluster_factor * score.grid_use * score.round_use *
                                         score.output_factor));
    // A width missing from the table is scored with the assumed efficiency, and said so.
    const ggemm::VariantScore odd = ggemm::score_variant(variant("odd", 90, 128, 96, 1), 4096, 5760, 132, 0);
    CHECK_FALSE(odd.width_in_table);
    CHECK(odd.width_efficiency == ggemm::kUnknownWidthEfficiency);
}

TEST_CASE("score: round use counts the idle part of the last round at M = m_capacity") {
    const ggemm::KernelVariant wide = variant("w", 90, 128, 256, 1);
    // 12 row blocks x 28 column blocks = 336 tiles on 132 CTAs: two rounds and 72 tiles, too
    // many to cut (halves would take 144 CTAs, kernels/common/tail_split.h), so a third whole
    // round.
    ggemm::VariantScore score = ggemm::score_variant(wide, 1536, 7168, 132, 0);
    CHECK(score.rounds == doctest::Approx(3.0));
    CHECK(score.round_use == doctest::Approx(336.0 / (3 * 132)));
    // 16 x 28 = 448 tiles: three rounds and 52 tiles, cut in halves (104 CTAs).
    score = ggemm::score_variant(wide, 2048, 7168, 132, 0);
    CHECK(score.rounds == doctest::Approx(3.5));
    CHECK(score.round_use == doctest::Approx(448.0 / (3.5 * 132)));
    // 34 x 16 = 544 tiles: four rounds and 16 tiles, cut into 4 pieces each (a quarter round).
    score = ggemm::score_variant(wide, 34 * 128, 4096, 132, 0);
    CHECK(score.rounds == doctest::Approx(4.25));
    CHECK(score.round_use == doctest::Approx(544.0 / (4.25 * 132)));
    // Whole rounds, and no rows at all: nothing idles.
    CHECK(ggemm::score_variant(wide, 33 * 128, 1024, 132, 0).round_use == doctest::Approx(1.0));
    CHECK(ggemm::score_variant(wide, 0, 4096, 132, 0).round_use == doctest::Approx(1.0));
    // A cluster deals tiles of its rows to the clusters (66 of them on 132 SMs).
    // 6 x 28 = 168 tiles = 2 x 66 + 36: halves would take 72 clusters.
    const ggemm::VariantScore pair = ggemm::score_variant(variant("c2", 90, 256, 256, 2), 1536, 7168, 132, 0);
    CHECK(pair.rounds == doctest::Approx(3.0));
    CHECK(pair.round_use == doctest::Approx(168.0 / (3 * 66)));
}

TEST_CASE("a few rounds: the width whose last round idles less wins") {
    auto variants = width_variants();
    ggemm_plan_desc desc = valid_desc();
    desc.m_capacity = 1536;  // six 256-row segments
    desc.n = 7168;
    // 128 x 256: 336 tiles, the third round 55 % full and too full to cut (score 0.848);
    // 128 x 192: 456 tiles in 38 columns, the fourth round 45 % full and too full for thirds
    // (0.985 x 0.982 x 0.864 = 0.836); 128 x 128: 672 tiles, the sixth round's 12 cut in halves
    // (0.95 x 0.926 = 0.879).
    ggemm_plan plan = plan_for(desc, variants);
    CHECK(plan.variant.tile_n == 128);
    CHECK(describes(plan, "rounds 0.8485 (3.00)"));
    // Many rounds: the widest tile again.
    desc.m_capacity = 32768;
    plan = plan_for(desc, variants);
    CHECK(std::string(plan.variant.name) == "sm90_128x256_c1");
}

TEST_CASE("N = 5760 prefers the tile width that wastes no columns") {
    auto variants = width_variants();
    ggemm_plan_desc desc = valid_desc();
    desc.m_capacity = 32768;  // enough rounds that the last one hardly counts
    desc.n = 5760;  // 30 x 192 exactly; 23 x 256 = 5888 (2.2% padding)
    ggemm_plan plan = plan_for(desc, variants);
    CHECK(std::string(plan.variant.name) == "sm90_128x192_c1");
    CHECK(describes(plan, "5760 of 5760"));
    CHECK(describes(plan, "5760 of 5888"));

    desc.n = 4096;  // a multiple of 256: the widest tile wins
    plan = plan_for(desc, variants);
    CHECK(std::string(plan.variant.name) == "sm90_128x256_c1");

    desc.n = 2880;  // 15 x 192; 12 x 256 = 3072 (6.7% padding)
    plan = plan_for(desc, variants);
    CHECK(plan.variant.tile_n == 192);

    desc.n = 8;  // one narrow strip: the narrowest tile wastes least
    plan = plan_for(desc, variants);
    CHECK(plan.variant.tile_n == 128);
}

TEST_CASE("the choice does not depend on the order of the variant list") {
    auto variants = mixed_variants();
    ggemm_plan_desc desc = valid_desc();
    desc.n = 5760;
    const std::string first = plan_for(desc, variants).variant.name;
    std::reverse(variants.begin(), variants.end());
    CHECK(plan_for(desc, variants).variant.name == first);
    std::rotate(variants.begin(), variants.begin() + 2, variants.end());
    CHECK(plan_for(desc, variants).variant.name == first);

    // Equal scores: more stages first, then the name.
    std::vector<ggemm::KernelVariant> twins = {variant("b_s3", 90, 128, 256, 1, 3),
                                               variant("a_s4", 90, 128, 256, 1, 4),
                                               variant("c_s4", 90, 128, 256, 1, 4)};
    ggemm_plan_desc desc_twins = valid_desc();  // 8 experts, 4096 rows: 512 each
    ggemm_plan plan = plan_for(desc_twins, twins);
    CHECK(std::string(plan.variant.name) == "a_s4");
    CHECK(describes(plan, "ties: more stages first (experts of under 2048 rows on average)"));
    // Experts of 2048 rows or more on average: fewer stages first.
    desc_twins.m_capacity = ggemm::kLargeExpertRows * desc_twins.num_experts - 256;
    CHECK_FALSE(ggemm::large_experts(desc_twins.m_capacity, desc_twins.num_experts));
    CHECK(std::string(plan_for(desc_twins, twins).variant.name) == "a_s4");
    desc_twins.m_capacity += 256;
    plan = plan_for(desc_twins, twins);
    CHECK(std::string(plan.variant.name) == "b_s3");
    CHECK(describes(plan, "ties: fewer stages first (experts of at least 2048 rows on average: the shallower "
                          "pipeline leaves room for a whole-tile output buffer)"));
}

TEST_CASE("overrides are honoured even against the heuristic") {
    auto variants = mixed_variants();
    ggemm_plan_desc desc = valid_desc();  // N = 4096: 128x256 would win on its own
    CHECK(plan_for(desc, variants).variant.tile_n == 256);

    desc.tile_n = 128;
    ggemm_plan plan = plan_for(desc, variants);
    CHECK(plan.variant.tile_n == 128);
    CHECK(describes(plan, "overrides: tile_m 0, tile_n 128, cluster_m 0"));
    CHECK(describes(plan, "excluded sm90_128x256_c1: tile_n 256, desc->tile_n = 128"));

    desc.tile_n = 0;
    desc.tile_m = 256;
    CHECK(std::string(plan_for(desc, variants).variant.name) == "sm90_256x128_c2");

    desc.tile_m = 0;
    desc.cluster_m = 2;
    plan = plan_for(desc, variants);
    CHECK(plan.variant.cluster_m == 2);
    CHECK(plan.variant.arch == 90);
}

TEST_CASE("overrides whose combination is not compiled are refused, naming the candidates") {
    auto variants = mixed_variants();
    ggemm_plan_desc desc = valid_desc();
    desc.tile_m = 256;
    desc.tile_n = 256;  // both values exist on SM90, never together
    ggemm_plan plan;
    CHECK(ggemm::build_plan(desc, sm90_device(), list_of(variants), &plan) == GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK(message_contains("no compiled SM90 kernel variant can serve tile_m = 256, tile_n = 256"));
    CHECK(message_contains("excluded sm90_128x256_c1: tile_m 128, desc->tile_m = 256"));
}

TEST_CASE("variants needing more shared memory than the device allows are never chosen") {
    std::vector<ggemm::KernelVariant> variants = {variant("big", 90, 128, 256, 1, 6, 240000),
                                                  variant("fits", 90, 128, 128, 1, 4, 160000)};
    ggemm_plan plan = plan_for(valid_desc(), variants);
    CHECK(std::string(plan.variant.name) == "fits");
    CHECK(describes(plan, "excluded big: needs 240000 B of shared memory, the device allows 232448 B"));

    ggemm_plan_desc desc = valid_desc();
    desc.tile_n = 256;
    CHECK(ggemm::build_plan(desc, sm90_device(), list_of(variants), &plan) == GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK(message_contains("big: needs 240000 B"));
}

TEST_CASE("sm_margin shrinks the grid, rounded down to whole clusters") {
    std::vector<ggemm::KernelVariant> one = {variant("c1", 90, 128, 256, 1)};
    std::vector<ggemm::KernelVariant> two = {variant("c2", 90, 128, 256, 2)};
    ggemm_plan_desc desc = valid_desc();
    CHECK(plan_for(desc, one).grid == 132);
    CHECK(plan_for(desc, two).grid == 132);
    desc.sm_margin = 4;
    CHECK(plan_for(desc, one).grid == 128);
    desc.sm_margin = 1;
    ggemm_plan plan = plan_for(desc, two);
    CHECK(plan.grid == 130);
    CHECK(describes(plan, "grid: 130 persistent CTAs (132 SMs - margin 1, rounded down to whole clusters of 2)"));
    CHECK(describes(plan, "last round: when M leaves a partial last round of tiles small enough, its tiles run as "
                          "up to 4 pieces along N"));
    // A margin that leaves less than one cluster excludes the clustered variant.
    desc.sm_margin = 131;
    CHECK(plan_for(desc, one).grid == 1);
    CHECK(ggemm::build_plan(desc, sm90_device(), list_of(two), &plan) == GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK(message_contains("leave no whole cluster of 2"));
}

TEST_CASE("the grid-use factor penalizes a cluster that idles SMs") {
    std::vector<ggemm::KernelVariant> variants = {variant("c1", 90, 128, 256, 1), variant("c2", 90, 128, 256, 2)};
    ggemm_plan_desc desc = valid_desc();
    // Single-CTA tiles are preferred until the pair kernels have run on hardware (heuristics.cpp).
    CHECK(std::string(plan_for(desc, variants).variant.name) == "c1");
    // 131 SMs: a cluster of 2 idles one.
    desc.sm_margin = 1;
    const ggemm::VariantScore c2 = ggemm::score_variant(variants[1], desc.m_capacity, desc.n, 132, 1);
    CHECK(c2.grid_use == doctest::Approx(130.0 / 131.0));
    CHECK(c2.grid == 130);
    const ggemm::VariantScore c1 = ggemm::score_variant(variants[0], desc.m_capacity, desc.n, 132, 1);
    CHECK(c1.grid_use == doctest::Approx(1.0));
    CHECK(c2.total < c1.total);
    // 3 SMs: a cluster of 2 idles a third of the device.
    CHECK(ggemm::score_variant(variants[1], desc.m_capacity, desc.n, 3, 0).grid_use == doctest::Approx(2.0 / 3.0));
    ggemm::DeviceInfo small = sm90_device();
    small.sm_count = 3;
    desc.sm_margin = 0;
    const ggemm_plan plan = plan_for(desc, variants, small);
    CHECK(std::string(plan.variant.name) == "c1");
    CHECK(plan.grid == 3);
    // Asked for explicitly, the pair is honoured and its grid is whole clusters.
    desc.cluster_m = 2;
    const ggemm_plan pair = plan_for(desc, variants, small);
    CHECK(std::string(pair.variant.name) == "c2");
    CHECK(pair.grid == 2);
}

TEST_CASE("only the device's architecture is considered") {
    auto variants = width_variants();
    ggemm_plan plan = plan_for(valid_desc(), variants, sm100_device());
    CHECK(std::string(plan.variant.name) == "sm100_128x256_c1");
    CHECK(plan.grid == 148);
    CHECK(describes(plan, "SM100"));
    CHECK(describes(plan, "last round: tiles are never cut"));
}

TEST_CASE("no variants at all: a clear error") {
    ggemm_plan plan;
    CHECK(ggemm::build_plan(valid_desc(), sm90_device(), ggemm::VariantList{}, &plan) ==
          GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK(message_contains("no compiled kernel variant for SM90"));
    CHECK(ggemm::compiled_variants(0).count == 0);
    CHECK(ggemm::compiled_variants(80).count == 0);
}

TEST_CASE("malformed variants are excluded, not launched") {
    std::vector<ggemm::KernelVariant> variants = {variant("no_launch", 90, 128, 256, 1),
                                                  variant("ok", 90, 128, 128, 1)};
    variants[0].launch = nullptr;
    ggemm_plan plan = plan_for(valid_desc(), variants);
    CHECK(std::string(plan.variant.name) == "ok");
    CHECK(describes(plan, "excluded no_launch: malformed"));
}

TEST_CASE("workspace size follows weight mode and scheduler") {
    auto variants = width_variants();
    ggemm_plan_desc desc = valid_desc();
    CHECK(plan_for(desc, variants).workspace_bytes == 0);
    desc.scheduler = GGEMM_SCHEDULER_DYNAMIC;
    CHECK(plan_for(desc, variants).workspace_bytes == 128);
    desc.weight_mode = GGEMM_WEIGHTS_DISCRETE;
    desc.num_experts = 64;
    // Counter, one tensor map per expert, one status word per expert (rounded up to 128 bytes).
    CHECK(plan_for(desc, variants).workspace_bytes == 128 + 64 * 128 + 256);
    desc.scheduler = GGEMM_SCHEDULER_STATIC;
    CHECK(plan_for(desc, variants).workspace_bytes == 128 + 64 * 128 + 256);
    desc.num_experts = 33;
    CHECK(plan_for(desc, variants).workspace_bytes == 128 + 33 * 128 + 256);
}

TEST_CASE("the description says what was chosen and why") {
    auto variants = mixed_variants();
    ggemm_plan_desc desc = valid_desc();
    desc.n = 5760;
    desc.scheduler = GGEMM_SCHEDULER_DYNAMIC;
    desc.generate_c = 1;
    desc.c_dtype = GGEMM_DTYPE_FP32;
    const ggemm_plan plan = plan_for(desc, variants);
    INFO(plan.description);
    CHECK(describes(plan, "device 0 (Fake H100, SM90"));
    CHECK(describes(plan, "132 SMs"));
    CHECK(describes(plan, "N = 5760, K = 2048"));
    CHECK(describes(plan, "C FP32 (written)"));
    CHECK(describes(plan, (std::string("kernel: ") + plan.variant.name).c_str()));
    CHECK(describes(plan, "stages"));
    CHECK(describes(plan, "cluster"));
    CHECK(describes(plan, "scheduler: dynamic"));
    CHECK(describes(plan, "grid: 132 persistent CTAs"));
    CHECK(describes(plan, "workspace: 128 bytes"));
    CHECK(describes(plan, "4 candidates"));
    CHECK(describes(plan, "chosen"));
    CHECK(describes(plan, "sm90_256x128_c2"));  // a losing candidate, with its score
    CHECK_FALSE(describes(plan, "sm100_256x256_c2"));  // another arch: not a candidate
}

TEST_CASE("planner: every plan gets its own serial, never 0 (it keys execute's weight-map cache)") {
    const std::vector<ggemm::KernelVariant> variants = width_variants();
    ggemm_plan first, second;
    REQUIRE(ggemm::build_plan(valid_desc(), sm90_device(), list_of(variants), &first) == GGEMM_SUCCESS);
    REQUIRE(ggemm::build_plan(valid_desc(), sm90_device(), list_of(variants), &second) == GGEMM_SUCCESS);
    CHECK(first.serial != 0);
    CHECK(second.serial != 0);
    CHECK(first.serial != second.serial);
}

namespace {

// A variant that stores D with TMA ({64, 64} boxes) and holds the offsets of `max_experts`.
ggemm::KernelVariant tma_store_variant(const char* name, int32_t tile_n, int32_t stages, int32_t max_experts) {
    ggemm::KernelVariant v = variant(name, 90, 128, tile_n, 1, stages);
    v.d_box_cols = 64;
    v.d_box_rows = 64;
    v.max_experts = max_experts;
    return v;
}

}  // namespace

TEST_CASE("the fused GLU forward runs the variant's GLU instance where it has one, and the plan says so") {
    ggemm::KernelVariant with_instance = tma_store_variant("tma_glu", 256, 4, 448);
    with_instance.glu_instance = true;
    ggemm_plan_desc desc = valid_desc();
    desc.activation = GGEMM_ACTIVATION_SWIGLU;
    ggemm_plan plan = plan_for(desc, {with_instance});
    CHECK(describes(plan, "kernel instance: the GLU instance"));
    CHECK_FALSE(describes(plan, "the general one"));
    plan = plan_for(desc, {tma_store_variant("tma_s4", 256, 4, 448)});
    CHECK(describes(plan, "kernel instance: the general one (every epilogue)"));
    desc.activation = GGEMM_ACTIVATION_NONE;  // a plain call: the plain instance
    plan = plan_for(desc, {with_instance});
    CHECK(describes(plan, "kernel instance: calls without bias run the plain-epilogue instance"));
}

TEST_CASE("TMA-store variants: preferred for a bf16 D without C, excluded for any other output") {
    const std::vector<ggemm::KernelVariant> variants = {variant("warp_s4", 90, 128, 256, 1, 4),
                                                        tma_store_variant("tma_s4", 256, 4, 448)};
    ggemm_plan_desc desc = valid_desc();  // bf16 D, no C
    ggemm_plan plan = plan_for(desc, variants);
    CHECK(std::string(plan.variant.name) == "tma_s4");
    CHECK(describes(plan, "output: D stored by TMA"));
    CHECK(describes(plan, "kernel instance: calls without bias run the plain-epilogue instance"));
    const ggemm::VariantScore tma = ggemm::score_variant(variants[1], desc.m_capacity, desc.n, 132, 0);
    const ggemm::VariantScore warp = ggemm::score_variant(variants[0], desc.m_capacity, desc.n, 132, 0);
    CHECK(tma.output_factor == ggemm::kOutputPreference.tma_store);
    CHECK(warp.output_factor == ggemm::kOutputPreference.warp_stores);
    CHECK(tma.total > warp.total);

    desc.generate_c = 1;
    plan = plan_for(desc, variants);
    CHECK(std::string(plan.variant.name) == "warp_s4");
    CHECK(describes(plan, "excluded tma_s4: stores D with TMA, which serves a bf16 D without C only"));
    CHECK(describes(plan, "output: C and D stored by the math warps"));
    CHECK(describes(plan, "kernel instance: the general one (every epilogue)"));

    for (const int32_t d_dtype : {GGEMM_DTYPE_FP16, GGEMM_DTYPE_FP32}) {
        desc = valid_desc();
        desc.d_dtype = d_dtype;
        CHECK(std::string(plan_for(desc, variants).variant.name) == "warp_s4");
    }
    // Bias does not matter: the TMA-store epilogue applies it.
    desc = valid_desc();
    desc.bias_dtype = GGEMM_DTYPE_FP32;
    CHECK(std::string(plan_for(desc, variants).variant.name) == "tma_s4");
}

TEST_CASE("TMA-store variants: more experts than the offsets copy holds go to another variant") {
    const std::vector<ggemm::KernelVariant> variants = {variant("warp_s4", 90, 128, 256, 1, 4),
                                                        tma_store_variant("tma_s4", 256, 4, 448)};
    ggemm_plan_desc desc = valid_desc();
    desc.num_experts = 448;
    CHECK(std::string(plan_for(desc, variants).variant.name) == "tma_s4");
    desc.num_experts = 449;
    const ggemm_plan plan = plan_for(desc, variants);
    CHECK(std::string(plan.variant.name) == "warp_s4");
    CHECK(describes(plan, "excluded tma_s4: holds the offsets of at most 448 experts, L = 449"));
}

TEST_CASE("a kernel-name prefix (GGEMM_KERNEL) keeps only the variants it names") {
    const std::vector<ggemm::KernelVariant> variants = {
        variant("warp_256_s4", 90, 128, 256, 1, 4), tma_store_variant("tma_halves_256_s4", 256, 4, 448),
        tma_store_variant("tma_whole_256_s3", 256, 3, 1024)};
    ggemm_plan_desc desc = valid_desc();
    CHECK(std::string(plan_for(desc, variants).variant.name) == "tma_halves_256_s4");  // more stages, tie
    ggemm_plan plan;
    REQUIRE(ggemm::build_plan(desc, sm90_device(), list_of(variants), &plan, "tma_whole_") == GGEMM_SUCCESS);
    CHECK(std::string(plan.variant.name) == "tma_whole_256_s3");
    CHECK(describes(plan, "kernels restricted to names starting with GGEMM_KERNEL=tma_whole_"));
    // The variants the prefix leaves out are counted in one line, not listed.
    CHECK(describes(plan, "excluded 2 variants whose names do not start with GGEMM_KERNEL=tma_whole_"));
    CHECK_FALSE(describes(plan, "excluded tma_halves_256_s4"));
    REQUIRE(ggemm::build_plan(desc, sm90_device(), list_of(variants), &plan, "warp_") == GGEMM_SUCCESS);
    CHECK(std::string(plan.variant.name) == "warp_256_s4");
    CHECK(ggemm::build_plan(desc, sm90_device(), list_of(variants), &plan, "none_") ==
          GGEMM_ERROR_UNSUPPORTED_CONFIG);
}

TEST_CASE("a kernel-name prefix that leaves nothing: the named variant's own reason survives many others") {
    // Sixty variants the prefix leaves out, then the one it names, too narrow for the tile_n asked
    // for: the refusal's message (at most 2048 bytes) gives that variant's reason and one line
    // counting the rest, not sixty lines that would cut it off.
    std::vector<std::string> names;
    for (int i = 0; i < 60; ++i) names.push_back("sm90_other_kernel_design_128x128x64_s6_" + std::to_string(i));
    std::vector<ggemm::KernelVariant> variants;
    for (const std::string& name : names) variants.push_back(variant(name.c_str(), 90, 128, 128, 1, 6));
    variants.push_back(variant("sm90_named_128x64x64_s8", 90, 128, 64, 1, 8));
    ggemm_plan_desc desc = valid_desc();
    desc.tile_n = 128;
    ggemm_plan plan;
    CHECK(ggemm::build_plan(desc, sm90_device(), list_of(variants), &plan, "sm90_named_") ==
          GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK(message_contains("excluded sm90_named_128x64x64_s8: tile_n 64, desc->tile_n = 128"));
    CHECK(message_contains("excluded 60 variants whose names do not start with GGEMM_KERNEL=sm90_named_"));
    CHECK(std::strlen(ggemm::last_error()) + 1 < ggemm::kMaxMessageBytes);
}

TEST_CASE("a variant never run on a GPU ranks below every proven one, whatever its score") {
    // The unproven 256-wide tile scores above the proven 128-wide one at N = 4096 (width 1.00
    // against 0.95), in the score and in the fill model alike.
    std::vector<ggemm::KernelVariant> variants = {variant("proven_128", 90, 128, 128, 1, 6),
                                                  variant("unproven_256", 90, 128, 256, 1, 4)};
    variants[1].proven = false;
    for (const int64_t m : {int64_t{32768}, int64_t{1024}}) {  // many waves, and the fill model's few
        ggemm_plan_desc desc = valid_desc();
        desc.m_capacity = m;
        CAPTURE(m);
        ggemm_plan plan = plan_for(desc, variants);
        CHECK(std::string(plan.variant.name) == "proven_128");
        CHECK(describes(plan, "unproven_256 (never run on a GPU: ranked below proven ones)"));
        CHECK_FALSE(describes(plan, "proven_128 (never run"));
        // Asked for by name or by width, it serves the plan.
        REQUIRE(ggemm::build_plan(desc, sm90_device(), list_of(variants), &plan, "unproven_") == GGEMM_SUCCESS);
        CHECK(std::string(plan.variant.name) == "unproven_256");
        desc.tile_n = 256;
        CHECK(std::string(plan_for(desc, variants).variant.name) == "unproven_256");
    }
}
