// The fused GLU forward on the host: the descriptor fields and their defaults for new and
// older callers, the refusals, the planner's choice and description, the plan cache key, the
// [gate | up] row permutation, and the activation arithmetic the kernels run (kernels/common/
// glu.h) against the fp64 reference (tests/support/glu_reference.h).
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/common/glu.h"
#include "src/execute.h"
#include "src/plan.h"
#include "src/plan_cache.h"
#include "src/validate.h"
#include "src/workspace.h"
#include "tests/host/test_fakes.h"
#include "tests/support/glu_reference.h"

using namespace ggemm_fakes;

namespace {

ggemm_plan_desc glu_desc(int32_t activation) {
    ggemm_plan_desc desc = valid_desc();
    desc.activation = activation;
    return desc;
}

// SM90 warp-store and TMA-store variants (the latter serve a bf16 D without C only).
std::vector<ggemm::KernelVariant> output_variants() {
    ggemm::KernelVariant tma_store = variant("sm90_tmastore_256", 90, 128, 256, 1);
    tma_store.d_box_cols = 64;
    tma_store.d_box_rows = 64;
    return {variant("sm90_warps_256", 90, 128, 256, 1), tma_store, variant("sm100_256", 100, 128, 256, 1)};
}

}  // namespace

TEST_CASE("glu: the descriptor fields, their defaults, and an older caller's struct") {
    CHECK(sizeof(ggemm_plan_desc) == 120);
    CHECK(offsetof(ggemm_plan_desc, glu_backward) == 112);
    CHECK(offsetof(ggemm_plan_desc, glu_pre_dtype) == 116);
    CHECK(sizeof(ggemm_args) == 136);
    CHECK(offsetof(ggemm_args, glu_pre) == 120);
    CHECK(offsetof(ggemm_args, d_prob) == 128);
    CHECK(offsetof(ggemm_plan_desc, activation) == 96);
    CHECK(offsetof(ggemm_plan_desc, glu_scale) == 100);
    CHECK(offsetof(ggemm_plan_desc, glu_limit) == 104);
    CHECK(offsetof(ggemm_plan_desc, glu_offset) == 108);

    ggemm_plan_desc desc;
    std::memset(&desc, 0x5a, sizeof desc);
    REQUIRE(ggemm_plan_desc_init(&desc, sizeof desc) == GGEMM_SUCCESS);
    CHECK(desc.activation == GGEMM_ACTIVATION_NONE);
    CHECK(desc.glu_scale == 1.702f);
    CHECK(desc.glu_limit == 7.0f);
    CHECK(desc.glu_offset == 1.0f);
    CHECK(desc.glu_backward == 0);
    CHECK(desc.glu_pre_dtype == GGEMM_DTYPE_BF16);

    // A caller built before the activation: 96 bytes, followed by bytes that are not theirs.
    unsigned char bytes[sizeof(ggemm_plan_desc)];
    std::memset(bytes, 0x01, sizeof bytes);
    ggemm_plan_desc older = valid_desc();
    older.struct_size = offsetof(ggemm_plan_desc, activation);
    std::memcpy(bytes, &older, older.struct_size);
    ggemm_plan_desc read;
    REQUIRE(ggemm::read_plan_desc(reinterpret_cast<ggemm_plan_desc*>(bytes), "desc", &read) == GGEMM_SUCCESS);
    CHECK(read.activation == GGEMM_ACTIVATION_NONE);
    CHECK(read.glu_scale == 1.702f);
    CHECK(read.glu_limit == 7.0f);
    CHECK(read.glu_offset == 1.0f);
    CHECK(read.glu_backward == 0);
    CHECK(read.glu_pre_dtype == GGEMM_DTYPE_BF16);
    CHECK(ggemm::validate_desc_fields(read) == GGEMM_SUCCESS);

    // One built before dGLU: 112 bytes, its activation kept, the backward's fields defaulted.
    ggemm_plan_desc forward = glu_desc(GGEMM_ACTIVATION_CLAMPED_GEGLU);
    forward.glu_limit = 3.0f;
    forward.struct_size = offsetof(ggemm_plan_desc, glu_backward);
    std::memset(bytes, 0x01, sizeof bytes);
    std::memcpy(bytes, &forward, forward.struct_size);
    REQUIRE(ggemm::read_plan_desc(reinterpret_cast<ggemm_plan_desc*>(bytes), "desc", &read) == GGEMM_SUCCESS);
    CHECK(read.activation == GGEMM_ACTIVATION_CLAMPED_GEGLU);
    CHECK(read.glu_limit == 3.0f);
    CHECK(read.glu_backward == 0);
    CHECK(read.glu_pre_dtype == GGEMM_DTYPE_BF16);

    // Its init call writes nothing past its 88 bytes.
    std::memset(bytes, 0xab, sizeof bytes);
    REQUIRE(ggemm_plan_desc_init(reinterpret_cast<ggemm_plan_desc*>(bytes), 88) == GGEMM_SUCCESS);
    for (std::size_t i = 88; i < sizeof bytes; ++i) CHECK(bytes[i] == 0xab);
    // Sizes that end inside the split-K or activation blocks were never struct sizes.
    for (const uint32_t size : {92u, 100u, 104u, 108u, 116u}) {
        CHECK(ggemm_plan_desc_init(reinterpret_cast<ggemm_plan_desc*>(bytes), size) == GGEMM_ERROR_STRUCT_SIZE);
    }
}

TEST_CASE("glu: refusals name the field, the value and the rule") {
    ggemm_plan_desc desc = glu_desc(3);
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_ERROR_INVALID_VALUE);
    CHECK(message_contains("desc->activation must be GGEMM_ACTIVATION_NONE (0)"));

    desc = glu_desc(GGEMM_ACTIVATION_SWIGLU);
    desc.n = 4096 + 32;
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_ERROR_INVALID_SHAPE);
    CHECK(message_contains("desc->n = 4128 must be a multiple of 64 with desc->activation = SwiGLU"));
    desc.n = 4096 + 64;
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_SUCCESS);

    // Without an activation N keeps its old rule (a multiple of 8).
    desc = glu_desc(GGEMM_ACTIVATION_NONE);
    desc.n = 4104;
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_SUCCESS);

    // The clamped GeGLU's constants: finite, limit > 0. SwiGLU ignores them, so a struct zeroed
    // by hand (constants 0) is valid with SwiGLU or no activation.
    desc = glu_desc(GGEMM_ACTIVATION_CLAMPED_GEGLU);
    desc.glu_limit = 0.0f;
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_ERROR_INVALID_VALUE);
    CHECK(message_contains("desc->glu_limit must be > 0, got 0"));
    desc.glu_limit = -1.0f;
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_ERROR_INVALID_VALUE);
    desc.glu_limit = 7.0f;
    desc.glu_scale = std::numeric_limits<float>::quiet_NaN();
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_ERROR_INVALID_VALUE);
    CHECK(message_contains("desc->glu_scale must be finite"));
    desc.glu_scale = 1.702f;
    desc.glu_offset = std::numeric_limits<float>::infinity();
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_ERROR_INVALID_VALUE);
    CHECK(message_contains("desc->glu_offset must be finite"));
    desc.glu_offset = -3.0f;
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_SUCCESS);
    desc = glu_desc(GGEMM_ACTIVATION_SWIGLU);
    desc.glu_scale = desc.glu_limit = desc.glu_offset = 0.0f;
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_SUCCESS);

    // SM100 fuses the GLU forward and dGLU (compiled, never run: docs/SM100.md).
    const std::vector<ggemm::KernelVariant> variants = output_variants();
    ggemm_plan plan;
    desc = glu_desc(GGEMM_ACTIVATION_SWIGLU);
    CHECK(ggemm::build_plan(desc, sm100_device(), list_of(variants), &plan) == GGEMM_SUCCESS);
    CHECK(plan.variant.arch == 100);
    desc.glu_backward = 1;
    REQUIRE_MESSAGE(ggemm::build_plan(desc, sm100_device(), list_of(variants), &plan) == GGEMM_SUCCESS,
                    std::string(ggemm::last_error()));
    CHECK(plan.variant.arch == 100);
    CHECK(plan.description.find("dGLU on SM100: each epilogue thread owns one row of R") != std::string::npos);
    // What dGLU refuses everywhere stays refused there: C, a bias, split-K.
    desc.generate_c = 1;
    CHECK(ggemm::build_plan(desc, sm100_device(), list_of(variants), &plan) == GGEMM_ERROR_INVALID_VALUE);
    CHECK(message_contains("desc->generate_c must be 0 with desc->glu_backward = 1"));
    desc.generate_c = 0;
    desc.split_k = 2;
    CHECK(ggemm::build_plan(desc, sm100_device(), list_of(variants), &plan) == GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK(message_contains("desc->split_k = 2 with desc->activation = SwiGLU"));
}

TEST_CASE("glu: dGLU's row partial of d_prob (SM100, one thread per row) adds as SM90's four lanes do") {
    // Accumulators and activations of one row's 64-column block of R, of mixed magnitudes so
    // that the order shows.
    float acc[64], act[64];
    for (int c = 0; c < 64; ++c) {
        const float scale = (c % 3 == 0) ? 1.0e7f : (c % 3 == 1 ? 1.0f : 1.0e-3f);
        acc[c] = scale * static_cast<float>((c * 37) % 19 - 9) / 7.0f;
        act[c] = 1.0f + static_cast<float>((c * 11) % 13) / 9.0f;
    }
    const float alpha = 0.7f;
    // SM90 (store_dglu_output): lane q of a row's four holds columns 8g + 2q, 8g + 2q + 1 of
    // each R group g in column order, one fma each, then the butterfly adds lanes q ^ 1 and then
    // q ^ 2 and the sum is scaled by alpha (store_prob_partials).
    const auto lane_order = [&](int groups) {
        float lane_sums[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (int g = 0; g < groups; ++g) {
            for (int q = 0; q < 4; ++q) {
                lane_sums[q] = std::fmaf(acc[8 * g + 2 * q], act[8 * g + 2 * q], lane_sums[q]);
                lane_sums[q] = std::fmaf(acc[8 * g + 2 * q + 1], act[8 * g + 2 * q + 1], lane_sums[q]);
            }
        }
        return alpha * ((lane_sums[0] + lane_sums[1]) + (lane_sums[2] + lane_sums[3]));
    };
    const float sm90 = lane_order(8);
    ggemm::GluRowPartial partial;
    for (int c = 0; c < 64; ++c) partial.add(c, acc[c], act[c]);
    CHECK(partial.total(alpha) == sm90);
    float in_order = 0.0f;
    for (int c = 0; c < 64; ++c) in_order = std::fmaf(acc[c], act[c], in_order);
    CHECK(alpha * in_order != sm90);  // the terms tell the orders apart
    // R's last block may be 32 columns wide: its first half alone.
    ggemm::GluRowPartial half;
    for (int c = 0; c < 32; ++c) half.add(c, acc[c], act[c]);
    CHECK(half.total(alpha) == lane_order(4));
}

TEST_CASE("glu: the planner sends a bf16 D without C to a TMA-store kernel that fuses the GLU, and describes it") {
    std::vector<ggemm::KernelVariant> variants = output_variants();
    ggemm_plan_desc desc = glu_desc(GGEMM_ACTIVATION_NONE);  // bf16 D, no C: TMA stores win
    ggemm_plan plan;
    REQUIRE(ggemm::build_plan(desc, sm90_device(), list_of(variants), &plan) == GGEMM_SUCCESS);
    CHECK(std::string(plan.variant.name) == "sm90_tmastore_256");
    CHECK(plan.description.find("activation: none (D is M x N)") != std::string::npos);
    CHECK(plan.description.find("output: D stored by TMA from a tile buffer in shared memory") != std::string::npos);

    desc.activation = GGEMM_ACTIVATION_SWIGLU;
    REQUIRE(ggemm::build_plan(desc, sm90_device(), list_of(variants), &plan) == GGEMM_SUCCESS);
    CHECK(std::string(plan.variant.name) == "sm90_tmastore_256");
    INFO(plan.description);
    CHECK(plan.description.find("activation: SwiGLU fused in the epilogue: D = prob * act(gate, up) is M x 2048") !=
          std::string::npos);
    CHECK(plan.description.find("output: D (M x 2048, the activation's output) stored by TMA from a tile buffer") !=
          std::string::npos);
    CHECK(plan.description.find("activation constants") == std::string::npos);

    desc.activation = GGEMM_ACTIVATION_CLAMPED_GEGLU;
    desc.glu_limit = 2.5f;
    desc.bias_dtype = GGEMM_DTYPE_FP32;
    REQUIRE(ggemm::build_plan(desc, sm90_device(), list_of(variants), &plan) == GGEMM_SUCCESS);
    CHECK(std::string(plan.variant.name) == "sm90_tmastore_256");
    CHECK(plan.description.find("activation constants: s = 1.70200002, limit = 2.5, offset = 1") != std::string::npos);

    // C, or another D dtype: the math warps store.
    desc.generate_c = 1;
    REQUIRE(ggemm::build_plan(desc, sm90_device(), list_of(variants), &plan) == GGEMM_SUCCESS);
    CHECK(std::string(plan.variant.name) == "sm90_warps_256");
    CHECK(plan.description.find("excluded sm90_tmastore_256: stores D with TMA, which serves a bf16 D without C only") !=
          std::string::npos);
    desc.generate_c = 0;
    desc.d_dtype = GGEMM_DTYPE_FP32;
    REQUIRE(ggemm::build_plan(desc, sm90_device(), list_of(variants), &plan) == GGEMM_SUCCESS);
    CHECK(std::string(plan.variant.name) == "sm90_warps_256");
    desc.d_dtype = GGEMM_DTYPE_BF16;

    // A TMA-store kernel that fuses no GLU stays out, saying so.
    variants[1].fused_glu = false;
    REQUIRE(ggemm::build_plan(desc, sm90_device(), list_of(variants), &plan) == GGEMM_SUCCESS);
    CHECK(std::string(plan.variant.name) == "sm90_warps_256");
    CHECK(plan.description.find("excluded sm90_tmastore_256: stores D with TMA and fuses no GLU epilogue, "
                                "desc->activation = clamped GeGLU") != std::string::npos);
}

TEST_CASE("glu: dGLU never takes a TMA-store kernel") {
    const std::vector<ggemm::KernelVariant> variants = output_variants();
    ggemm_plan_desc desc = glu_desc(GGEMM_ACTIVATION_SWIGLU);
    desc.glu_backward = 1;
    desc.n = 2048;  // R's width: the saved pre-activation is M x 4096
    desc.glu_pre_dtype = GGEMM_DTYPE_BF16;
    ggemm_plan plan;
    REQUIRE_MESSAGE(ggemm::build_plan(desc, sm90_device(), list_of(variants), &plan) == GGEMM_SUCCESS,
                    std::string(ggemm::last_error()));
    CHECK(std::string(plan.variant.name) == "sm90_warps_256");
    CHECK(plan.description.find("excluded sm90_tmastore_256: stores D with TMA, which serves the GLU forward only") !=
          std::string::npos);
}

TEST_CASE("glu: the plan cache key holds the activation, and the constants only where they are used") {
    const ggemm_plan_desc none = glu_desc(GGEMM_ACTIVATION_NONE);
    ggemm_plan_desc swiglu = glu_desc(GGEMM_ACTIVATION_SWIGLU);
    CHECK(ggemm::plan_cache_key(none) != ggemm::plan_cache_key(swiglu));
    ggemm_plan_desc swiglu_other = swiglu;
    swiglu_other.glu_limit = 3.0f;
    CHECK(ggemm::plan_cache_key(swiglu) == ggemm::plan_cache_key(swiglu_other));
    ggemm_plan_desc geglu = glu_desc(GGEMM_ACTIVATION_CLAMPED_GEGLU);
    CHECK(ggemm::plan_cache_key(geglu) != ggemm::plan_cache_key(swiglu));
    for (float ggemm_plan_desc::*field :
         {&ggemm_plan_desc::glu_scale, &ggemm_plan_desc::glu_limit, &ggemm_plan_desc::glu_offset}) {
        ggemm_plan_desc changed = geglu;
        changed.*field += 0.5f;
        CHECK(ggemm::plan_cache_key(changed) != ggemm::plan_cache_key(geglu));
    }
}

TEST_CASE("glu: ggemm_glu_interleave_rows takes [gate | up] halves to 32-row gate and up blocks") {
    std::vector<int64_t> rows(128, -1);
    REQUIRE(ggemm_glu_interleave_rows(128, rows.data()) == GGEMM_SUCCESS);
    for (int64_t i = 0; i < 32; ++i) {
        CHECK(rows[i] == i);             // block 0: gate rows 0..31
        CHECK(rows[32 + i] == 64 + i);   // its up rows: the up half's first 32
        CHECK(rows[64 + i] == 32 + i);   // block 1: gate rows 32..63
        CHECK(rows[96 + i] == 96 + i);   // its up rows
    }
    // A permutation for every width, consistent with the kernel's column rule: interleaved row i
    // is a gate row exactly when glu_is_gate(i), and feeds output column glu_output_column(i).
    for (const int64_t n : {64, 192, 5760}) {
        std::vector<int64_t> source(static_cast<std::size_t>(n), -1);
        REQUIRE(ggemm_glu_interleave_rows(n, source.data()) == GGEMM_SUCCESS);
        std::vector<int> seen(static_cast<std::size_t>(n), 0);
        for (int64_t i = 0; i < n; ++i) {
            REQUIRE(source[i] >= 0);
            REQUIRE(source[i] < n);
            ++seen[static_cast<std::size_t>(source[i])];
            const bool gate = source[i] < n / 2;
            CHECK(ggemm::glu_is_gate(i) == gate);
            CHECK(ggemm::glu_output_column(i) == (gate ? source[i] : source[i] - n / 2));
        }
        for (const int count : seen) CHECK(count == 1);
    }
    CHECK(ggemm_glu_interleave_rows(96, rows.data()) == GGEMM_ERROR_INVALID_SHAPE);
    CHECK(message_contains("n must be a positive multiple of 64"));
    CHECK(ggemm_glu_interleave_rows(0, rows.data()) == GGEMM_ERROR_INVALID_SHAPE);
    CHECK(ggemm_glu_interleave_rows(128, nullptr) == GGEMM_ERROR_NULL_ARGUMENT);
}

TEST_CASE("glu: the fp64 reference activations at known points") {
    ggemm_test::GluParams swiglu;
    swiglu.activation = ggemm_test::kActivationSwiglu;
    CHECK(ggemm_test::glu_activation_reference(swiglu, 0.0, 5.0) == 0.0);
    // silu(1) * 2 = 2 / (1 + e^-1)
    CHECK(ggemm_test::glu_activation_reference(swiglu, 1.0, 2.0) == doctest::Approx(1.4621171572600098).epsilon(1e-15));
    CHECK(ggemm_test::glu_activation_reference(swiglu, -30.0, 1.0) == doctest::Approx(-30.0 * std::exp(-30.0)));

    ggemm_test::GluParams geglu;
    geglu.activation = ggemm_test::kActivationClampedGeglu;
    // Inside the limits: (u + 1) * g * sigmoid(1.702 g).
    const double inside = (0.5 + 1.0) * 2.0 / (1.0 + std::exp(-1.702 * 2.0));
    CHECK(ggemm_test::glu_activation_reference(geglu, 2.0, 0.5) == doctest::Approx(inside).epsilon(1e-15));
    // The gate is clamped above only, the up projection on both sides.
    CHECK(ggemm_test::glu_activation_reference(geglu, 9.0, 0.5) == ggemm_test::glu_activation_reference(geglu, 7.0, 0.5));
    CHECK(ggemm_test::glu_activation_reference(geglu, 2.0, 12.0) == ggemm_test::glu_activation_reference(geglu, 2.0, 7.0));
    CHECK(ggemm_test::glu_activation_reference(geglu, 2.0, -12.0) ==
          ggemm_test::glu_activation_reference(geglu, 2.0, -7.0));
    CHECK(ggemm_test::glu_activation_reference(geglu, -9.0, 0.5) != ggemm_test::glu_activation_reference(geglu, -7.0, 0.5));
    // Other constants.
    geglu.scale = 1.0;
    geglu.limit = 2.5;
    geglu.offset = 0.5;
    const double clamped = (2.5 + 0.5) * 2.5 / (1.0 + std::exp(-2.5));
    CHECK(ggemm_test::glu_activation_reference(geglu, 4.0, 3.0) == doctest::Approx(clamped).epsilon(1e-15));
}

TEST_CASE("glu: the kernels' fp32 activations agree with the fp64 reference") {
    const ggemm::GluConstants constants[] = {ggemm::kGluDefaults, {1.0f, 2.5f, 0.5f}, {0.5f, 30.0f, -1.0f}};
    for (const ggemm::GluConstants& k : constants) {
        ggemm_test::GluParams swiglu, geglu;
        swiglu.activation = ggemm_test::kActivationSwiglu;
        geglu.activation = ggemm_test::kActivationClampedGeglu;
        geglu.scale = k.scale;
        geglu.limit = k.limit;
        geglu.offset = k.offset;
        double worst_swiglu = 0.0, worst_geglu = 0.0;
        for (int i = -400; i <= 400; ++i) {
            for (int j = -40; j <= 40; ++j) {
                const float gate = static_cast<float>(i) * 0.0375f;
                const float up = static_cast<float>(j) * 0.37f;
                const double ref_s = ggemm_test::glu_activation_reference(swiglu, gate, up);
                const double ref_g = ggemm_test::glu_activation_reference(geglu, gate, up);
                const double got_s = ggemm::glu_activation<ggemm::kActivationSwiglu>(gate, up, k);
                const double got_g = ggemm::glu_activation<ggemm::kActivationClampedGeglu>(gate, up, k);
                // Relative to the size of the terms (|gate * up| bounds the magnitude).
                const double scale_s = std::fabs(static_cast<double>(gate) * up) + 1e-30;
                const double scale_g = (std::fabs(static_cast<double>(up)) + std::fabs(k.offset) + k.limit) *
                                           std::fabs(static_cast<double>(gate)) + 1e-30;
                worst_swiglu = std::fmax(worst_swiglu, std::fabs(got_s - ref_s) / scale_s);
                worst_geglu = std::fmax(worst_geglu, std::fabs(got_g - ref_g) / scale_g);
            }
        }
        CHECK(worst_swiglu < 1e-6);
        CHECK(worst_geglu < 1e-6);
    }
}

TEST_CASE("glu: the reference's D pairs gate column 64j + i with up column 64j + 32 + i") {
    CHECK(ggemm_test::glu_gate_column(0) == 0);
    CHECK(ggemm_test::glu_gate_column(31) == 31);
    CHECK(ggemm_test::glu_gate_column(32) == 64);
    CHECK(ggemm_test::glu_gate_column(95) == 159);
    for (int64_t col = 0; col < 512; ++col) {
        CHECK(ggemm::glu_is_gate(ggemm_test::glu_gate_column(col)));
        CHECK(ggemm::glu_output_column(ggemm_test::glu_gate_column(col)) == col);
        CHECK(ggemm::glu_output_column(ggemm_test::glu_gate_column(col) + 32) == col);
    }
}

TEST_CASE("glu: the fp64 derivatives are those of the fp64 forward (central differences)") {
    ggemm_test::Rng rng(2101);
    const ggemm_test::GluParams params[] = {
        {ggemm_test::kActivationSwiglu, 1.702, 7.0, 1.0},
        {ggemm_test::kActivationClampedGeglu, 1.702, 7.0, 1.0},
        {ggemm_test::kActivationClampedGeglu, 0.7, 2.5, -0.5},
    };
    for (const ggemm_test::GluParams& p : params) {
        int checked = 0, clamped_gate = 0, clamped_up = 0;
        for (int i = 0; i < 4000; ++i) {
            const double gate = rng.uniform(-10.0f, 10.0f);
            const double up = rng.uniform(-10.0f, 10.0f);
            // Central differences need both sides on one branch of each clamp.
            constexpr double h = 1e-5;
            if (std::fabs(gate - p.limit) < 2 * h || std::fabs(std::fabs(up) - p.limit) < 2 * h) continue;
            const ggemm_test::GluDerivatives d = ggemm_test::glu_derivatives_reference(p, gate, up);
            const double act = ggemm_test::glu_activation_reference(p, gate, up);
            const double fd_gate = (ggemm_test::glu_activation_reference(p, gate + h, up) -
                                    ggemm_test::glu_activation_reference(p, gate - h, up)) / (2 * h);
            const double fd_up = (ggemm_test::glu_activation_reference(p, gate, up + h) -
                                  ggemm_test::glu_activation_reference(p, gate, up - h)) / (2 * h);
            CHECK(d.act == act);
            CHECK(d.d_gate == doctest::Approx(fd_gate).epsilon(1e-6).scale(1.0));
            CHECK(d.d_up == doctest::Approx(fd_up).epsilon(1e-6).scale(1.0));
            if (p.activation == ggemm_test::kActivationClampedGeglu) {
                clamped_gate += gate > p.limit;
                clamped_up += std::fabs(up) > p.limit;
                if (gate > p.limit) CHECK(d.d_gate == 0.0);  // a 0/1 mask, not the gate's value
                if (std::fabs(up) > p.limit) CHECK(d.d_up == 0.0);
            }
            ++checked;
        }
        CHECK(checked > 3000);
        if (p.activation == ggemm_test::kActivationClampedGeglu) {
            CHECK(clamped_gate > 100);
            CHECK(clamped_up > 100);
        }
    }
}

TEST_CASE("glu: the kernels' fp32 derivatives agree with the fp64 reference, act bit for bit with the forward") {
    const ggemm::GluConstants constants[] = {ggemm::kGluDefaults, {0.7f, 2.5f, -0.5f}};
    for (const ggemm::GluConstants& k : constants) {
        ggemm_test::GluParams swiglu, geglu;
        swiglu.activation = ggemm_test::kActivationSwiglu;
        geglu.activation = ggemm_test::kActivationClampedGeglu;
        geglu.scale = k.scale;
        geglu.limit = k.limit;
        geglu.offset = k.offset;
        double worst = 0.0;
        for (int i = -400; i <= 400; ++i) {
            for (int j = -40; j <= 40; ++j) {
                const float gate = static_cast<float>(i) * 0.0375f;
                const float up = static_cast<float>(j) * 0.37f;
                const ggemm::GluGrad s = ggemm::glu_grad<ggemm::kActivationSwiglu>(gate, up, k);
                const ggemm::GluGrad g = ggemm::glu_grad<ggemm::kActivationClampedGeglu>(gate, up, k);
                CHECK(s.act == ggemm::glu_activation<ggemm::kActivationSwiglu>(gate, up, k));
                CHECK(g.act == ggemm::glu_activation<ggemm::kActivationClampedGeglu>(gate, up, k));
                const ggemm_test::GluDerivatives rs = ggemm_test::glu_derivatives_reference(swiglu, gate, up);
                const ggemm_test::GluDerivatives rg = ggemm_test::glu_derivatives_reference(geglu, gate, up);
                // Relative to the size of the terms of each derivative.
                const double us = std::fabs(static_cast<double>(up)) + 1.0;
                const double gs = std::fabs(static_cast<double>(gate)) + 1.0;
                const double ug = (std::fabs(static_cast<double>(up)) + std::fabs(k.offset) + k.limit) * gs;
                worst = std::fmax(worst, std::fabs(s.d_gate - rs.d_gate) / (us * gs));
                worst = std::fmax(worst, std::fabs(s.d_up - rs.d_up) / gs);
                worst = std::fmax(worst, std::fabs(g.d_gate - rg.d_gate) / ug);
                worst = std::fmax(worst, std::fabs(g.d_up - rg.d_up) / gs);
            }
        }
        CHECK(worst < 1e-6);
    }
}

TEST_CASE("dglu: refusals, the workspace that grows with M, and the description") {
    ggemm_plan_desc desc = glu_desc(GGEMM_ACTIVATION_SWIGLU);
    desc.glu_backward = 1;
    desc.n = 4096 + 32;  // the activation's width: whole 32-column blocks suffice
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_SUCCESS);
    desc.n = 4096 + 16;
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_ERROR_INVALID_SHAPE);
    CHECK(message_contains("desc->n = 4112 must be a multiple of 32 with desc->glu_backward = 1"));
    desc.n = 4096;
    desc.glu_backward = 2;
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_ERROR_INVALID_VALUE);
    CHECK(message_contains("desc->glu_backward must be 0 or 1, got 2"));
    desc.glu_backward = 1;
    desc.activation = GGEMM_ACTIVATION_NONE;
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_ERROR_INVALID_VALUE);
    CHECK(message_contains("desc->glu_backward = 1 needs the forward's activation"));
    desc.activation = GGEMM_ACTIVATION_CLAMPED_GEGLU;
    desc.generate_c = 1;
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_ERROR_INVALID_VALUE);
    CHECK(message_contains("desc->generate_c must be 0 with desc->glu_backward = 1"));
    desc.generate_c = 0;
    desc.bias_dtype = GGEMM_DTYPE_FP32;
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_ERROR_INVALID_VALUE);
    CHECK(message_contains("desc->bias_dtype must be GGEMM_DTYPE_NONE with desc->glu_backward = 1"));
    desc.bias_dtype = GGEMM_DTYPE_NONE;
    desc.glu_pre_dtype = 0;
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_ERROR_INVALID_DTYPE);
    CHECK(message_contains("desc->glu_pre_dtype must be GGEMM_DTYPE_BF16 (1), FP16 (2) or FP32 (3)"));
    desc.glu_pre_dtype = GGEMM_DTYPE_FP32;
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_SUCCESS);
    desc.glu_limit = 0.0f;  // the forward's constants are checked too
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_ERROR_INVALID_VALUE);
    desc.glu_limit = 7.0f;

    // N-major weights (the second layer's W as stored for its forward) are the usual case.
    desc.weight_layout = GGEMM_WEIGHT_LAYOUT_N_MAJOR;
    std::vector<ggemm::KernelVariant> variants = output_variants();
    for (ggemm::KernelVariant& v : variants) v.weight_layout = GGEMM_WEIGHT_LAYOUT_N_MAJOR;
    ggemm_plan plan;
    REQUIRE(ggemm::build_plan(desc, sm90_device(), list_of(variants), &plan) == GGEMM_SUCCESS);
    CHECK(std::string(plan.variant.name) == "sm90_warps_256");
    INFO(plan.description);
    CHECK(plan.description.find("activation: clamped GeGLU backward (dGLU) fused in the epilogue: R = alpha * A @ "
                                "B_g^T is M x 4096; d_pre (D, M x 8192) from the saved FP32 pre-activation") !=
          std::string::npos);
    // The partials: one fp32 per row and 64 columns of R, for m_capacity rows.
    CHECK(plan.workspace_bytes == 4096 / 64 * 4096 * 4);
    // A call zeroes its own M's partials before the launch, in the one clear of the workspace.
    CHECK(ggemm::cleared_workspace_bytes(plan, 1024) == 4096 / 64 * 1024 * 4);
    ggemm_plan_desc dynamic = desc;
    dynamic.scheduler = GGEMM_SCHEDULER_DYNAMIC;
    ggemm_plan dynamic_plan;
    REQUIRE(ggemm::build_plan(dynamic, sm90_device(), list_of(variants), &dynamic_plan) == GGEMM_SUCCESS);
    CHECK(ggemm::cleared_workspace_bytes(dynamic_plan, 1024) == 128 + 4096 / 64 * 1024 * 4);
    uint64_t bytes = 0;
    REQUIRE(ggemm_workspace_size(&desc, &bytes) == GGEMM_SUCCESS);
    CHECK(bytes == 4096 / 64 * 4096 * 4);
    desc.scheduler = GGEMM_SCHEDULER_DYNAMIC;  // the tile counter first
    REQUIRE(ggemm_workspace_size(&desc, &bytes) == GGEMM_SUCCESS);
    CHECK(bytes == 128 + 4096 / 64 * 4096 * 4);
    CHECK(ggemm::glu_partials_bytes(4096 + 32, 256) == 65 * 256 * 4);
    CHECK(ggemm::glu_partials_bytes(96, 256) == 2 * 256 * 4);
}

TEST_CASE("dglu: the call's arguments: the saved pre-activation and d_prob, and a workspace for its M") {
    ggemm_plan_desc desc = glu_desc(GGEMM_ACTIVATION_SWIGLU);
    desc.glu_backward = 1;
    desc.n = 1024;
    const std::vector<ggemm::KernelVariant> variants = output_variants();
    ggemm_plan plan;
    REQUIRE(ggemm::build_plan(desc, sm90_device(), list_of(variants), &plan) == GGEMM_SUCCESS);
    ggemm_args args = valid_args(1024);
    const uintptr_t slice = uintptr_t{1} << 30;
    args.workspace_size = 16 * 1024 * 4;  // 16 blocks of 64 columns x M = 1024 rows
    CHECK(ggemm::validate_args_fields(plan, args, desc.m_capacity) == GGEMM_ERROR_NULL_ARGUMENT);
    CHECK(message_contains("args->glu_pre is NULL but the plan is dGLU"));
    args.glu_pre = at<void>(kDevice0 + 9 * slice);
    CHECK(ggemm::validate_args_fields(plan, args, desc.m_capacity) == GGEMM_ERROR_NULL_ARGUMENT);
    CHECK(message_contains("args->d_prob is NULL but the plan is dGLU"));
    args.d_prob = at<float>(kDevice0 + 10 * slice + 8);
    CHECK(ggemm::validate_args_fields(plan, args, desc.m_capacity) == GGEMM_ERROR_MISALIGNED);
    CHECK(message_contains("args->d_prob"));
    args.d_prob = at<float>(kDevice0 + 10 * slice);
    CHECK(ggemm::validate_args_fields(plan, args, desc.m_capacity) == GGEMM_SUCCESS);
    // Smaller than the plan's (m_capacity = 4096) workspace, enough for this M.
    CHECK(args.workspace_size < plan.workspace_bytes);
    args.workspace_size -= 4;
    CHECK(ggemm::validate_args_fields(plan, args, desc.m_capacity) == GGEMM_ERROR_WORKSPACE);

    // A forward plan ignores both pointers.
    desc.glu_backward = 0;
    REQUIRE(ggemm::build_plan(desc, sm90_device(), list_of(variants), &plan) == GGEMM_SUCCESS);
    args.d_prob = at<float>(kDevice0 + 10 * slice + 4);
    CHECK(ggemm::validate_args_fields(plan, args, desc.m_capacity) == GGEMM_SUCCESS);
}

TEST_CASE("dglu: the reference is the gradient of the forward reference (central differences)") {
    // L = sum over the GLU output of R * D(pre, prob), D = prob * act(gate, up): its derivative
    // with respect to each pre-activation element is d_pre, with respect to prob[r] d_prob[r].
    const int64_t m = 256, n = 64, k = 16;  // R is m x n, pre m x 2n
    ggemm_test::Rng rng(2102);
    std::vector<uint16_t> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(n * k));
    for (auto& x : a) x = ggemm_test::float_to_bf16(rng.uniform(-1.0f, 1.0f));
    for (auto& x : b) x = ggemm_test::float_to_bf16(rng.uniform(-1.0f, 1.0f));
    std::vector<float> pre(static_cast<std::size_t>(m * 2 * n)), prob(static_cast<std::size_t>(m));
    for (auto& x : pre) x = rng.uniform(-9.0f, 9.0f);
    for (auto& x : prob) x = rng.uniform(0.1f, 1.0f);
    const int32_t offsets[] = {static_cast<int32_t>(m)};
    const float alpha[] = {0.75f};
    ggemm_test::Problem problem;
    problem.m = m;
    problem.n = n;
    problem.k = k;
    problem.num_experts = 1;
    problem.a = a.data();
    problem.b = b.data();
    problem.padded_offsets = offsets;
    problem.alpha = alpha;
    problem.prob = prob.data();
    problem.d_dtype = ggemm_test::kDTypeFP32;
    const std::vector<int64_t> rows = {0, 77, 255};
    for (const int32_t activation : {ggemm_test::kActivationSwiglu, ggemm_test::kActivationClampedGeglu}) {
        ggemm_test::GluParams params;
        params.activation = activation;
        const ggemm_test::DgluResult dglu =
            ggemm_test::compute_dglu_reference(problem, params, pre.data(), ggemm_test::kDTypeFP32, &rows);
        REQUIRE(dglu.d_pre.rows == rows);
        // R of each row, from the plain reference (prob = 1, fp32 C).
        ggemm_test::Problem plain = problem;
        const std::vector<float> ones(static_cast<std::size_t>(m), 1.0f);
        plain.prob = ones.data();
        plain.c_dtype = ggemm_test::kDTypeFP32;
        const ggemm_test::Result r = ggemm_test::compute_reference(plain, &rows);
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const int64_t row = rows[i];
            const auto loss = [&](const std::vector<double>& values, double p) {  // sum of R * D of the row
                double sum = 0.0;
                for (int64_t col = 0; col < n; ++col) {
                    const int64_t gate = ggemm_test::glu_gate_column(col);
                    sum += r.c_value(i, col) * p *
                           ggemm_test::glu_activation_reference(params, values[gate], values[gate + 32]);
                }
                return sum;
            };
            std::vector<double> values(pre.begin() + row * 2 * n, pre.begin() + (row + 1) * 2 * n);
            constexpr double h = 1e-5;
            for (int64_t col = 0; col < 2 * n; ++col) {
                const double saved = values[col];
                if (activation == ggemm_test::kActivationClampedGeglu && std::fabs(std::fabs(saved) - 7.0) < 2 * h) continue;
                values[col] = saved + h;
                const double plus = loss(values, prob[row]);
                values[col] = saved - h;
                const double minus = loss(values, prob[row]);
                values[col] = saved;
                CHECK(dglu.d_pre.d_value(i, col) == doctest::Approx((plus - minus) / (2 * h)).epsilon(1e-5).scale(1.0));
            }
            const double fd_prob = (loss(values, prob[row] + h) - loss(values, prob[row] - h)) / (2 * h);
            CHECK(dglu.d_prob[i] == doctest::Approx(fd_prob).epsilon(1e-7));
        }
    }
}
