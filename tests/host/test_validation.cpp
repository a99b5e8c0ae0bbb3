// Every refusal of plan creation and execute, through the pure validation functions with a
// fake device and a fake pointer oracle: status code and message.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "src/validate.h"
#include "tests/host/test_fakes.h"

using namespace ggemm_fakes;

namespace {

struct DescRow {
    const char* what;
    std::function<void(ggemm_plan_desc&)> change;
    ggemm_status_t status;
    const char* message;
};

struct ArgsRow {
    const char* what;
    std::function<void(ggemm_args&)> change;
    ggemm_status_t status;
    const char* message;
};

const uintptr_t kSlice = uintptr_t{1} << 30;

}  // namespace

TEST_CASE("a valid descriptor passes validation") {
    auto variants = mixed_variants();
    CHECK(ggemm::validate_plan_desc(valid_desc(), sm90_device(), list_of(variants)) == GGEMM_SUCCESS);
    ggemm_plan_desc desc = valid_desc();
    desc.weight_mode = GGEMM_WEIGHTS_DISCRETE;
    desc.scheduler = GGEMM_SCHEDULER_DYNAMIC;
    desc.c_dtype = GGEMM_DTYPE_FP32;
    desc.d_dtype = GGEMM_DTYPE_FP16;
    desc.bias_dtype = GGEMM_DTYPE_FP32;
    desc.generate_c = 1;
    desc.tile_m = 256;
    desc.tile_n = 128;
    desc.cluster_m = 2;
    desc.sm_margin = 131;
    desc.num_experts = 1024;
    desc.m_capacity = ggemm::kMaxMCapacity;
    desc.n = 8;
    desc.k = 8;
    CHECK(ggemm::validate_plan_desc(desc, sm90_device(), list_of(variants)) == GGEMM_SUCCESS);
}

TEST_CASE("descriptor field refusals") {
    const std::vector<DescRow> rows = {
        {"reserved0", [](ggemm_plan_desc& d) { d.reserved0 = 3; }, GGEMM_ERROR_INVALID_VALUE,
         "desc->reserved0 must be 0, got 3"},
        {"L = 0", [](ggemm_plan_desc& d) { d.num_experts = 0; }, GGEMM_ERROR_INVALID_SHAPE,
         "desc->num_experts (L) must be in 1..1024, got 0"},
        {"L = 1025", [](ggemm_plan_desc& d) { d.num_experts = 1025; }, GGEMM_ERROR_INVALID_SHAPE,
         "got 1025"},
        {"L negative", [](ggemm_plan_desc& d) { d.num_experts = -4; }, GGEMM_ERROR_INVALID_SHAPE, "got -4"},
        {"m_capacity 0", [](ggemm_plan_desc& d) { d.m_capacity = 0; }, GGEMM_ERROR_INVALID_SHAPE,
         "desc->m_capacity must be >= 256, got 0"},
        {"m_capacity negative", [](ggemm_plan_desc& d) { d.m_capacity = -256; }, GGEMM_ERROR_INVALID_SHAPE,
         "got -256"},
        {"m_capacity not aligned", [](ggemm_plan_desc& d) { d.m_capacity = 1000; }, GGEMM_ERROR_INVALID_SHAPE,
         "desc->m_capacity must be a multiple of 256, got 1000"},
        {"m_capacity past int32", [](ggemm_plan_desc& d) { d.m_capacity = int64_t{1} << 31; },
         GGEMM_ERROR_INVALID_SHAPE, "must be <= 2147483392"},
        {"N small", [](ggemm_plan_desc& d) { d.n = 4; }, GGEMM_ERROR_INVALID_SHAPE, "desc->n must be >= 8, got 4"},
        {"N not multiple", [](ggemm_plan_desc& d) { d.n = 1001; }, GGEMM_ERROR_INVALID_SHAPE,
         "desc->n must be a multiple of 8"},
        {"N too big", [](ggemm_plan_desc& d) { d.n = int64_t{1} << 32; d.weight_mode = GGEMM_WEIGHTS_DISCRETE; },
         GGEMM_ERROR_INVALID_SHAPE, "desc->n must be <= 2147483392"},
        {"N just past the limit", [](ggemm_plan_desc& d) { d.n = 2147483400; d.weight_mode = GGEMM_WEIGHTS_DISCRETE; },
         GGEMM_ERROR_INVALID_SHAPE, "desc->n must be <= 2147483392, got 2147483400"},
        {"K small", [](ggemm_plan_desc& d) { d.k = 0; }, GGEMM_ERROR_INVALID_SHAPE, "desc->k must be >= 8, got 0"},
        {"K not multiple", [](ggemm_plan_desc& d) { d.k = 1001; }, GGEMM_ERROR_INVALID_SHAPE,
         "desc->k must be a multiple of 8 (16-byte rows of bf16), got 1001"},
        {"K too big", [](ggemm_plan_desc& d) { d.k = int64_t{1} << 31; }, GGEMM_ERROR_INVALID_SHAPE,
         "desc->k must be <= 2147483392"},
        {"dense expert past the TMA stride", [](ggemm_plan_desc& d) { d.n = 1 << 20; d.k = 1 << 20; },
         GGEMM_ERROR_INVALID_SHAPE, "2^40"},
        {"weight_mode", [](ggemm_plan_desc& d) { d.weight_mode = 2; }, GGEMM_ERROR_INVALID_VALUE,
         "desc->weight_mode must be GGEMM_WEIGHTS_DENSE (0) or GGEMM_WEIGHTS_DISCRETE (1), got 2"},
        {"scheduler", [](ggemm_plan_desc& d) { d.scheduler = -1; }, GGEMM_ERROR_INVALID_VALUE,
         "desc->scheduler must be"},
        {"generate_c", [](ggemm_plan_desc& d) { d.generate_c = 2; }, GGEMM_ERROR_INVALID_VALUE,
         "desc->generate_c must be 0 or 1, got 2"},
        {"c_dtype NONE", [](ggemm_plan_desc& d) { d.c_dtype = GGEMM_DTYPE_NONE; }, GGEMM_ERROR_INVALID_DTYPE,
         "desc->c_dtype must be"},
        {"d_dtype unknown", [](ggemm_plan_desc& d) { d.d_dtype = 7; }, GGEMM_ERROR_INVALID_DTYPE,
         "desc->d_dtype must be GGEMM_DTYPE_BF16 (1), GGEMM_DTYPE_FP16 (2) or GGEMM_DTYPE_FP32 (3), got 7"},
        {"bias_dtype unknown", [](ggemm_plan_desc& d) { d.bias_dtype = 4; }, GGEMM_ERROR_INVALID_DTYPE,
         "desc->bias_dtype must be"},
        {"sm_margin negative", [](ggemm_plan_desc& d) { d.sm_margin = -1; }, GGEMM_ERROR_UNSUPPORTED_CONFIG,
         "desc->sm_margin must be >= 0, got -1"},
    };
    auto variants = mixed_variants();
    for (const DescRow& row : rows) {
        CAPTURE(row.what);
        ggemm_plan_desc desc = valid_desc();
        row.change(desc);
        // Field rules need no device: refused the same with or without one.
        CHECK(ggemm::validate_desc_fields(desc) == row.status);
        CHECK_MESSAGE(message_contains(row.message), std::string(ggemm::last_error()));
        CHECK(ggemm::validate_plan_desc(desc, absent_device(), list_of(variants)) == row.status);
    }
}

TEST_CASE("device refusals") {
    auto variants = mixed_variants();
    ggemm_plan_desc desc = valid_desc();

    CHECK(ggemm::validate_plan_desc(desc, absent_device(), list_of(variants)) == GGEMM_ERROR_NO_DEVICE);
    CHECK(message_contains("no CUDA device is available: no CUDA-capable device is detected"));

    desc.device = 1;
    CHECK(ggemm::validate_plan_desc(desc, sm90_device(1), list_of(variants)) == GGEMM_ERROR_INVALID_VALUE);
    CHECK(message_contains("desc->device = 1 is not a CUDA device ordinal: 1 device is visible (0..0)"));
    desc.device = -1;
    CHECK(ggemm::validate_plan_desc(desc, sm90_device(2), list_of(variants)) == GGEMM_ERROR_INVALID_VALUE);
    CHECK(message_contains("desc->device = -1"));
    desc.device = 0;

    struct Arch {
        int major, minor;
        const char* text;
    };
    for (const Arch arch : {Arch{8, 0, "8.0"}, Arch{8, 9, "8.9"}, Arch{10, 3, "10.3"}, Arch{12, 0, "12.0"},
                            Arch{9, 1, "9.1"}}) {
        CAPTURE(arch.text);
        ggemm::DeviceInfo device = sm90_device();
        device.cc_major = arch.major;
        device.cc_minor = arch.minor;
        CHECK(ggemm::validate_plan_desc(desc, device, list_of(variants)) == GGEMM_ERROR_UNSUPPORTED_ARCH);
        CHECK(message_contains(arch.text));
        CHECK(message_contains("SM90"));
    }

    desc.sm_margin = 132;
    CHECK(ggemm::validate_plan_desc(desc, sm90_device(), list_of(variants)) == GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK(message_contains("desc->sm_margin must be in [0, 132)"));
    CHECK(message_contains("got 132"));
}

TEST_CASE("no compiled variant for the device's arch is a clear refusal") {
    CHECK(ggemm::validate_plan_desc(valid_desc(), sm90_device(), ggemm::VariantList{}) ==
          GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK(message_contains("no compiled kernel variant for SM90"));
    // Variants of the other architecture do not count.
    std::vector<ggemm::KernelVariant> sm100_only = {variant("sm100_only", 100, 128, 256, 1)};
    CHECK(ggemm::validate_plan_desc(valid_desc(), sm90_device(), list_of(sm100_only)) ==
          GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK(message_contains("no compiled kernel variant for SM90"));
    CHECK(ggemm::validate_plan_desc(valid_desc(), sm100_device(), list_of(sm100_only)) == GGEMM_SUCCESS);
}

TEST_CASE("tile and cluster overrides must name a compiled value") {
    auto variants = mixed_variants();  // SM90: tile_m {128, 256}, tile_n {128, 192, 256}, cluster {1, 2}
    const std::vector<DescRow> rows = {
        {"tile_m 64", [](ggemm_plan_desc& d) { d.tile_m = 64; }, GGEMM_ERROR_UNSUPPORTED_CONFIG,
         "desc->tile_m = 64 is not supported on SM90: use 0 (let the planner choose) or one of the compiled values 128, 256"},
        {"tile_n 96", [](ggemm_plan_desc& d) { d.tile_n = 96; }, GGEMM_ERROR_UNSUPPORTED_CONFIG,
         "desc->tile_n = 96 is not supported on SM90: use 0 (let the planner choose) or one of the compiled values 128, 192, 256"},
        {"tile_n negative", [](ggemm_plan_desc& d) { d.tile_n = -128; }, GGEMM_ERROR_UNSUPPORTED_CONFIG,
         "desc->tile_n = -128"},
        {"cluster 4", [](ggemm_plan_desc& d) { d.cluster_m = 4; }, GGEMM_ERROR_UNSUPPORTED_CONFIG,
         "desc->cluster_m = 4 is not supported on SM90: use 0 (let the planner choose) or one of the compiled values 1, 2"},
    };
    for (const DescRow& row : rows) {
        CAPTURE(row.what);
        ggemm_plan_desc desc = valid_desc();
        row.change(desc);
        CHECK(ggemm::validate_plan_desc(desc, sm90_device(), list_of(variants)) == row.status);
        CHECK_MESSAGE(message_contains(row.message), std::string(ggemm::last_error()));
    }
    // 256 is an SM100 tile_m in this list, and an SM90 one too; SM100 has no cluster 1 here.
    ggemm_plan_desc desc = valid_desc();
    desc.cluster_m = 1;
    CHECK(ggemm::validate_plan_desc(desc, sm100_device(), list_of(variants)) == GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK(message_contains("on SM100"));
    CHECK(message_contains("compiled values 2"));
}

// ------------------------------------------------------------------------------------------------
// Execute.

namespace {

struct ExecuteFixture {
    std::vector<ggemm::KernelVariant> variants = width_variants();
    FakeOracle oracle = standard_oracle();

    ggemm_plan make_plan(std::function<void(ggemm_plan_desc&)> change = {}) {
        ggemm_plan_desc desc = valid_desc();
        if (change) change(desc);
        ggemm_plan plan;
        REQUIRE(ggemm::build_plan(desc, sm90_device(2), list_of(variants), &plan) == GGEMM_SUCCESS);
        return plan;
    }
};

// Valid arguments for a plan with bias, C and the plan's weight mode.
ggemm_args args_for(const ggemm_plan& plan) {
    ggemm_args args = valid_args();
    if (plan.desc.weight_mode == GGEMM_WEIGHTS_DISCRETE) {
        args.b = nullptr;
        args.b_ptrs = at<const uint64_t>(kDevice0 + 9 * kSlice);
    }
    if (plan.desc.bias_dtype != GGEMM_DTYPE_NONE) args.bias = at(kDevice0 + 10 * kSlice);
    if (plan.desc.generate_c) args.c = at(kDevice0 + 11 * kSlice);
    return args;
}

}  // namespace

TEST_CASE_FIXTURE(ExecuteFixture,
                  "valid-row counts: any 4-byte aligned device array on SM90 and the one-CTA SM100 kernels, "
                  "refused with an SM100 CTA pair") {
    const ggemm_plan plan = make_plan();
    REQUIRE(plan.variant.arch == 90);
    ggemm_args args = args_for(plan);
    args.valid_rows = at<const int32_t>(kDevice0 + 12 * kSlice + 4);  // a slice of a larger array
    CHECK(ggemm::validate_args(plan, args, plan.desc.m_capacity, 0, oracle) == GGEMM_SUCCESS);
    args.valid_rows = at<const int32_t>(kManaged + 12);
    CHECK(ggemm::validate_args(plan, args, plan.desc.m_capacity, 0, oracle) == GGEMM_SUCCESS);

    ggemm_plan sm100;
    REQUIRE(ggemm::build_plan(valid_desc(), sm100_device(), list_of(variants), &sm100) == GGEMM_SUCCESS);
    REQUIRE(sm100.variant.arch == 100);
    REQUIRE(sm100.variant.cluster_m == 1);
    args = args_for(sm100);
    CHECK(ggemm::validate_args(sm100, args, sm100.desc.m_capacity, 0, oracle) == GGEMM_SUCCESS);
    args.valid_rows = at<const int32_t>(kDevice0 + 12 * kSlice);
    CHECK(ggemm::validate_args(sm100, args, sm100.desc.m_capacity, 0, oracle) == GGEMM_SUCCESS);

    // A pair's work unit is two 128-row blocks of one expert: counts would leave odd ones.
    std::vector<ggemm::KernelVariant> with_pair = variants;
    with_pair.push_back(variant("sm100_256x256_c2", 100, 256, 256, 2));
    ggemm_plan_desc pair_desc = valid_desc();
    pair_desc.tile_m = 256;
    ggemm_plan pair;
    REQUIRE(ggemm::build_plan(pair_desc, sm100_device(), list_of(with_pair), &pair) == GGEMM_SUCCESS);
    REQUIRE(pair.variant.cluster_m == 2);
    args = args_for(pair);
    CHECK(ggemm::validate_args(pair, args, pair.desc.m_capacity, 0, oracle) == GGEMM_SUCCESS);
    args.valid_rows = at<const int32_t>(kDevice0 + 12 * kSlice);
    CHECK(ggemm::validate_args(pair, args, pair.desc.m_capacity, 0, oracle) == GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK_MESSAGE(message_contains("args->valid_rows is set but the plan runs an SM100 CTA-pair kernel"),
                  std::string(ggemm::last_error()));
}

TEST_CASE_FIXTURE(ExecuteFixture, "valid-row counts: refused with dGLU, which writes d_prob for every row") {
    const ggemm_plan plan = make_plan([](ggemm_plan_desc& d) {
        d.activation = GGEMM_ACTIVATION_SWIGLU;
        d.glu_backward = 1;
        d.generate_c = 0;
        d.bias_dtype = GGEMM_DTYPE_NONE;
    });
    ggemm_args args = args_for(plan);
    args.glu_pre = at(kDevice0 + 13 * kSlice);
    args.d_prob = at<float>(kDevice0 + 14 * kSlice);
    args.valid_rows = at<const int32_t>(kDevice0 + 12 * kSlice);
    CHECK(ggemm::validate_args(plan, args, plan.desc.m_capacity, 0, oracle) == GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK_MESSAGE(message_contains("args->valid_rows is set but the plan is dGLU"), std::string(ggemm::last_error()));

    // The same on SM100, whose one-CTA kernels take counts otherwise.
    ggemm_plan_desc desc = plan.desc;
    ggemm_plan sm100;
    REQUIRE(ggemm::build_plan(desc, sm100_device(), list_of(variants), &sm100) == GGEMM_SUCCESS);
    REQUIRE(sm100.variant.arch == 100);
    REQUIRE(sm100.variant.cluster_m == 1);
    args = args_for(sm100);
    args.glu_pre = at(kDevice0 + 13 * kSlice);
    args.d_prob = at<float>(kDevice0 + 14 * kSlice);
    CHECK(ggemm::validate_args(sm100, args, sm100.desc.m_capacity, 0, oracle) == GGEMM_SUCCESS);
    args.valid_rows = at<const int32_t>(kDevice0 + 12 * kSlice);
    CHECK(ggemm::validate_args(sm100, args, sm100.desc.m_capacity, 0, oracle) == GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK_MESSAGE(message_contains("args->valid_rows is set but the plan is dGLU"), std::string(ggemm::last_error()));
}

TEST_CASE("split-K: refused with a fused activation, which needs whole sums of K") {
    ggemm_plan_desc desc = valid_desc();
    desc.activation = GGEMM_ACTIVATION_SWIGLU;
    desc.split_k = 2;
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK_MESSAGE(message_contains("desc->split_k = 2 with desc->activation = SwiGLU"), std::string(ggemm::last_error()));
    desc.split_k = 1;
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_SUCCESS);
}

TEST_CASE_FIXTURE(ExecuteFixture, "valid arguments pass, M = 0 included") {
    for (int mode = 0; mode < 4; ++mode) {
        CAPTURE(mode);
        const ggemm_plan plan = make_plan([mode](ggemm_plan_desc& d) {
            d.weight_mode = mode & 1 ? GGEMM_WEIGHTS_DISCRETE : GGEMM_WEIGHTS_DENSE;
            d.scheduler = mode & 2 ? GGEMM_SCHEDULER_DYNAMIC : GGEMM_SCHEDULER_STATIC;
            d.bias_dtype = mode & 1 ? GGEMM_DTYPE_BF16 : GGEMM_DTYPE_NONE;
            d.generate_c = mode >> 1;
        });
        ggemm_args args = args_for(plan);
        CHECK(ggemm::validate_args(plan, args, plan.desc.m_capacity, 0, oracle) == GGEMM_SUCCESS);
        args.m = 0;
        CHECK(ggemm::validate_args(plan, args, plan.desc.m_capacity, 0, oracle) == GGEMM_SUCCESS);
        args.m = plan.desc.m_capacity;
        CHECK(ggemm::validate_args(plan, args, plan.desc.m_capacity, 0, oracle) == GGEMM_SUCCESS);
    }
    // Managed memory is usable from the plan's device; b_ptrs needs 8 bytes, device_status 4.
    const ggemm_plan plan = make_plan([](ggemm_plan_desc& d) { d.weight_mode = GGEMM_WEIGHTS_DISCRETE; });
    ggemm_args args = valid_args();
    args.b = nullptr;
    args.b_ptrs = at<const uint64_t>(kManaged + 8);
    args.device_status = at<uint32_t>(kDevice0 + 9 * kSlice + 4);
    args.a = at(kManaged + 4096);
    CHECK(ggemm::validate_args(plan, args, plan.desc.m_capacity, 0, oracle) == GGEMM_SUCCESS);
    // With no workspace needed, NULL and a zero size are fine.
    const ggemm_plan dense = make_plan();
    REQUIRE(dense.workspace_bytes == 0);
    args = valid_args();
    args.workspace = nullptr;
    args.workspace_size = 0;
    CHECK(ggemm::validate_args(dense, args, dense.desc.m_capacity, 0, oracle) == GGEMM_SUCCESS);
    // Without generate_c, C is ignored whatever it holds.
    args.c = at(kPageable + 3);
    CHECK(ggemm::validate_args(dense, args, dense.desc.m_capacity, 0, oracle) == GGEMM_SUCCESS);
    // alpha and prob may be NULL (every alpha, every prob 1), each alone or both.
    args.alpha = nullptr;
    CHECK(ggemm::validate_args(dense, args, dense.desc.m_capacity, 0, oracle) == GGEMM_SUCCESS);
    args.prob = nullptr;
    CHECK(ggemm::validate_args(dense, args, dense.desc.m_capacity, 0, oracle) == GGEMM_SUCCESS);
    args = valid_args();
    args.prob = nullptr;
    CHECK(ggemm::validate_args(dense, args, dense.desc.m_capacity, 0, oracle) == GGEMM_SUCCESS);
}

TEST_CASE_FIXTURE(ExecuteFixture, "execute refusals, dense plan with a dynamic scheduler") {
    const ggemm_plan plan = make_plan([](ggemm_plan_desc& d) { d.scheduler = GGEMM_SCHEDULER_DYNAMIC; });
    REQUIRE(plan.workspace_bytes == 128);
    const std::vector<ArgsRow> rows = {
        {"reserved0", [](ggemm_args& a) { a.reserved0 = 1; }, GGEMM_ERROR_INVALID_VALUE,
         "args->reserved0 must be 0, got 1"},
        {"m negative", [](ggemm_args& a) { a.m = -256; }, GGEMM_ERROR_INVALID_SHAPE, "args->m must be >= 0, got -256"},
        {"m not aligned", [](ggemm_args& a) { a.m = 300; }, GGEMM_ERROR_INVALID_SHAPE,
         "args->m must be a multiple of 256, got 300"},
        {"m past capacity", [](ggemm_args& a) { a.m = 4352; }, GGEMM_ERROR_INVALID_SHAPE,
         "args->m = 4352 is larger than m_capacity = 4096"},
        {"a NULL", [](ggemm_args& a) { a.a = nullptr; }, GGEMM_ERROR_NULL_ARGUMENT, "args->a is NULL"},
        {"offsets NULL", [](ggemm_args& a) { a.padded_offsets = nullptr; }, GGEMM_ERROR_NULL_ARGUMENT,
         "args->padded_offsets is NULL"},
        {"d NULL", [](ggemm_args& a) { a.d = nullptr; }, GGEMM_ERROR_NULL_ARGUMENT, "args->d is NULL"},
        {"d NULL at M = 0", [](ggemm_args& a) { a.m = 0; a.d = nullptr; }, GGEMM_ERROR_NULL_ARGUMENT,
         "args->d is NULL"},
        {"bias without a bias plan", [](ggemm_args& a) { a.bias = at(kDevice0 + 10 * kSlice); },
         GGEMM_ERROR_BIAS_MISMATCH, "args->bias is set but the plan has bias_dtype = NONE"},
        {"both weight sources", [](ggemm_args& a) { a.b_ptrs = at<const uint64_t>(kDevice0 + 9 * kSlice); },
         GGEMM_ERROR_WEIGHT_SOURCE, "both args->b and args->b_ptrs are set"},
        {"neither weight source", [](ggemm_args& a) { a.b = nullptr; }, GGEMM_ERROR_WEIGHT_SOURCE,
         "neither args->b nor args->b_ptrs is set: the plan uses dense weights"},
        {"the wrong weight source", [](ggemm_args& a) { a.b = nullptr; a.b_ptrs = at<const uint64_t>(kDevice0 + 9 * kSlice); },
         GGEMM_ERROR_WEIGHT_SOURCE, "args->b_ptrs is set but the plan uses dense weights"},
        {"a misaligned", [](ggemm_args& a) { a.a = at(kDevice0 + kSlice + 8); }, GGEMM_ERROR_MISALIGNED,
         "args->a = 0x7f0040000008 is not 16-byte aligned"},
        {"b misaligned", [](ggemm_args& a) { a.b = at(kDevice0 + 2 * kSlice + 2); }, GGEMM_ERROR_MISALIGNED,
         "args->b = "},
        {"offsets misaligned", [](ggemm_args& a) { a.padded_offsets = at<const int32_t>(kDevice0 + 3 * kSlice + 4); },
         GGEMM_ERROR_MISALIGNED, "args->padded_offsets = "},
        {"alpha misaligned", [](ggemm_args& a) { a.alpha = at<const float>(kDevice0 + 4 * kSlice + 4); },
         GGEMM_ERROR_MISALIGNED, "args->alpha = "},
        {"prob misaligned", [](ggemm_args& a) { a.prob = at<const float>(kDevice0 + 5 * kSlice + 12); },
         GGEMM_ERROR_MISALIGNED, "args->prob = "},
        {"d misaligned", [](ggemm_args& a) { a.d = at(kDevice0 + 6 * kSlice + 1); }, GGEMM_ERROR_MISALIGNED,
         "args->d = "},
        {"device_status misaligned", [](ggemm_args& a) { a.device_status = at<uint32_t>(kDevice0 + 8 * kSlice + 2); },
         GGEMM_ERROR_MISALIGNED, "args->device_status = 0x7f0200000002 is not 4-byte aligned"},
        {"workspace NULL", [](ggemm_args& a) { a.workspace = nullptr; }, GGEMM_ERROR_WORKSPACE,
         "args->workspace is NULL but the plan needs 128 bytes"},
        {"workspace misaligned", [](ggemm_args& a) { a.workspace = at(kDevice0 + 7 * kSlice + 64); },
         GGEMM_ERROR_WORKSPACE, "is not 128-byte aligned"},
        {"workspace small", [](ggemm_args& a) { a.workspace_size = 127; }, GGEMM_ERROR_WORKSPACE,
         "args->workspace_size = 127 is smaller than the 128 bytes the plan needs"},
        {"a in pageable host memory", [](ggemm_args& a) { a.a = at(kPageable); }, GGEMM_ERROR_NOT_DEVICE_MEMORY,
         "args->a = 0x100000 is host memory unknown to CUDA"},
        {"prob in pinned host memory", [](ggemm_args& a) { a.prob = at<const float>(kPinned); },
         GGEMM_ERROR_NOT_DEVICE_MEMORY, "args->prob = 0x7d0000000000 is pinned host memory; it must be device memory of the plan's device 0"},
        {"d on another device", [](ggemm_args& a) { a.d = at(kDevice1); }, GGEMM_ERROR_NOT_DEVICE_MEMORY,
         "args->d = 0x7e0000000000 is device memory of device 1"},
        {"alpha unknown to the runtime", [](ggemm_args& a) { a.alpha = at<const float>(kUnknown); },
         GGEMM_ERROR_NOT_DEVICE_MEMORY, "memory the CUDA runtime cannot identify (invalid argument)"},
        {"device_status on the host", [](ggemm_args& a) { a.device_status = at<uint32_t>(kPageable + 4); },
         GGEMM_ERROR_NOT_DEVICE_MEMORY, "args->device_status"},
        {"workspace on the host", [](ggemm_args& a) { a.workspace = at(kPinned + 256); },
         GGEMM_ERROR_NOT_DEVICE_MEMORY, "args->workspace = 0x7d0000000100 is pinned host memory"},
        {"valid_rows misaligned", [](ggemm_args& a) { a.valid_rows = at<const int32_t>(kDevice0 + 12 * kSlice + 2); },
         GGEMM_ERROR_MISALIGNED, "args->valid_rows = 0x7f0300000002 is not 4-byte aligned"},
        {"valid_rows on the host", [](ggemm_args& a) { a.valid_rows = at<const int32_t>(kPageable + 4); },
         GGEMM_ERROR_NOT_DEVICE_MEMORY, "args->valid_rows = 0x100004 is host memory unknown to CUDA"},
        {"valid_rows on another device", [](ggemm_args& a) { a.valid_rows = at<const int32_t>(kDevice1 + 4); },
         GGEMM_ERROR_NOT_DEVICE_MEMORY, "args->valid_rows = 0x7e0000000004 is device memory of device 1"},
    };
    for (const ArgsRow& row : rows) {
        CAPTURE(row.what);
        ggemm_args args = args_for(plan);
        row.change(args);
        CHECK(ggemm::validate_args(plan, args, plan.desc.m_capacity, 0, oracle) == row.status);
        CHECK_MESSAGE(message_contains(row.message), std::string(ggemm::last_error()));
    }
}

TEST_CASE_FIXTURE(ExecuteFixture, "execute refusals that depend on the plan") {
    const ggemm_plan with_c_and_bias = make_plan([](ggemm_plan_desc& d) {
        d.generate_c = 1;
        d.bias_dtype = GGEMM_DTYPE_FP16;
    });
    ggemm_args args = args_for(with_c_and_bias);
    args.c = nullptr;
    CHECK(ggemm::validate_args(with_c_and_bias, args, 4096, 0, oracle) == GGEMM_ERROR_NULL_ARGUMENT);
    CHECK(message_contains("args->c is NULL but the plan has generate_c = 1"));
    args = args_for(with_c_and_bias);
    args.bias = nullptr;
    CHECK(ggemm::validate_args(with_c_and_bias, args, 4096, 0, oracle) == GGEMM_ERROR_BIAS_MISMATCH);
    CHECK(message_contains("args->bias is NULL but the plan has bias_dtype = FP16"));
    args = args_for(with_c_and_bias);
    args.c = at(kDevice0 + 11 * kSlice + 8);
    CHECK(ggemm::validate_args(with_c_and_bias, args, 4096, 0, oracle) == GGEMM_ERROR_MISALIGNED);
    CHECK(message_contains("args->c = "));
    args = args_for(with_c_and_bias);
    args.bias = at(kDevice0 + 10 * kSlice + 2);
    CHECK(ggemm::validate_args(with_c_and_bias, args, 4096, 0, oracle) == GGEMM_ERROR_MISALIGNED);
    CHECK(message_contains("args->bias = "));
    args = args_for(with_c_and_bias);
    args.c = at(kDevice1);
    CHECK(ggemm::validate_args(with_c_and_bias, args, 4096, 0, oracle) == GGEMM_ERROR_NOT_DEVICE_MEMORY);
    CHECK(message_contains("args->c = "));

    const ggemm_plan discrete = make_plan([](ggemm_plan_desc& d) { d.weight_mode = GGEMM_WEIGHTS_DISCRETE; });
    REQUIRE(discrete.workspace_bytes == 128 + 128 * 8 + 128);
    args = args_for(discrete);
    args.b_ptrs = nullptr;
    args.b = at(kDevice0 + 2 * kSlice);
    CHECK(ggemm::validate_args(discrete, args, 4096, 0, oracle) == GGEMM_ERROR_WEIGHT_SOURCE);
    CHECK(message_contains("args->b is set but the plan uses discrete weights"));
    args.b = nullptr;
    CHECK(ggemm::validate_args(discrete, args, 4096, 0, oracle) == GGEMM_ERROR_WEIGHT_SOURCE);
    CHECK(message_contains("neither args->b nor args->b_ptrs is set: the plan uses discrete weights"));
    args = args_for(discrete);
    args.b_ptrs = at<const uint64_t>(kDevice0 + 9 * kSlice + 4);
    CHECK(ggemm::validate_args(discrete, args, 4096, 0, oracle) == GGEMM_ERROR_MISALIGNED);
    CHECK(message_contains("is not 8-byte aligned"));
    args = args_for(discrete);
    args.workspace_size = 128 + 128 * 8;  // the maps fit, the experts' status words do not
    CHECK(ggemm::validate_args(discrete, args, 4096, 0, oracle) == GGEMM_ERROR_WORKSPACE);
    CHECK(message_contains("smaller than the 1280 bytes"));
    args = args_for(discrete);
    args.b_ptrs = at<const uint64_t>(kPageable + 8);
    CHECK(ggemm::validate_args(discrete, args, 4096, 0, oracle) == GGEMM_ERROR_NOT_DEVICE_MEMORY);
    CHECK(message_contains("args->b_ptrs"));
}

TEST_CASE_FIXTURE(ExecuteFixture, "the current device must be the plan's device") {
    const ggemm_plan plan = make_plan();
    ggemm_args args = args_for(plan);
    CHECK(ggemm::validate_args(plan, args, 4096, 1, oracle) == GGEMM_ERROR_WRONG_DEVICE);
    CHECK(message_contains("the current CUDA device is 1 but the plan runs on device 0"));

    const ggemm_plan on_device_1 = make_plan([](ggemm_plan_desc& d) { d.device = 1; });
    CHECK(ggemm::validate_args(on_device_1, args, 4096, 1, oracle) == GGEMM_ERROR_NOT_DEVICE_MEMORY);
    CHECK(message_contains("is device memory of device 0; it must be device memory of the plan's device 1"));
}

TEST_CASE_FIXTURE(ExecuteFixture, "M is checked against the capacity given, and cheap rules run before pointer queries") {
    const ggemm_plan plan = make_plan();
    ggemm_args args = args_for(plan);
    args.m = 2048;
    CHECK(ggemm::validate_args(plan, args, 1024, 0, oracle) == GGEMM_ERROR_INVALID_SHAPE);
    CHECK(message_contains("args->m = 2048 is larger than m_capacity = 1024"));
    CHECK(oracle.queries == 0);
    args.m = 1024;
    CHECK(ggemm::validate_args(plan, args, 1024, 0, oracle) == GGEMM_SUCCESS);
    CHECK(oracle.queries > 0);
}

TEST_CASE_FIXTURE(ExecuteFixture, "pointers in a mapping found resident earlier in the call are not asked about again") {
    const ggemm_plan plan = make_plan();
    const ggemm_args args = args_for(plan);
    REQUIRE(ggemm::validate_args(plan, args, 4096, 0, oracle) == GGEMM_SUCCESS);
    const int each_asked = oracle.queries;

    // padded_offsets, alpha and prob (slices 3, 4 and 5) in one mapping: asked about once.
    FakeOracle shared;
    shared.add(kDevice0 + 3 * kSlice, 3 * kSlice, ggemm::PointerFacts::kDevice, 0, true);
    shared.add(kDevice0, kRegionBytes, ggemm::PointerFacts::kDevice, 0);
    CHECK(ggemm::validate_args(plan, args, 4096, 0, shared) == GGEMM_SUCCESS);
    CHECK(shared.queries == each_asked - 2);
    // Nothing is kept from one call to the next.
    CHECK(ggemm::validate_args(plan, args, 4096, 0, shared) == GGEMM_SUCCESS);
    CHECK(shared.queries == 2 * (each_asked - 2));

    // A mapping that is not the device's shares nothing: the first pointer in it is refused.
    FakeOracle pinned;
    pinned.add(kDevice0 + 3 * kSlice, 3 * kSlice, ggemm::PointerFacts::kPinnedHost, 0, true);
    pinned.add(kDevice0, kRegionBytes, ggemm::PointerFacts::kDevice, 0);
    CHECK(ggemm::validate_args(plan, args, 4096, 0, pinned) == GGEMM_ERROR_NOT_DEVICE_MEMORY);
    CHECK(message_contains("args->padded_offsets"));
    CHECK(message_contains("pinned host memory"));

    // A pointer past the mapping's end is asked about: here it is host memory and refused.
    FakeOracle edge;
    edge.add(kDevice0 + 3 * kSlice, 2 * kSlice, ggemm::PointerFacts::kDevice, 0, true);
    edge.add(kDevice0 + 5 * kSlice, kSlice, ggemm::PointerFacts::kPinnedHost, 0);
    edge.add(kDevice0, kRegionBytes, ggemm::PointerFacts::kDevice, 0);
    CHECK(ggemm::validate_args(plan, args, 4096, 0, edge) == GGEMM_ERROR_NOT_DEVICE_MEMORY);
    CHECK(message_contains("args->prob"));
}
