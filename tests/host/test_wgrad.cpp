// The weight gradient's host side without a GPU: its size-first structs, every descriptor and
// argument refusal with its message, the planner and its description, the workspace, the operand
// maps, the kernel arguments, and the refusal of a plan of the other kind by each execute.
#include <doctest/doctest.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "src/execute.h"
#include "src/wgrad_execute.h"
#include "src/wgrad_plan.h"
#include "src/wgrad_validate.h"
#include "tests/host/test_fakes.h"

using namespace ggemm_fakes;

namespace {

const uintptr_t kSlice = uintptr_t{1} << 30;

cudaError_t fake_wgrad_launch(const ggemm::WgradLaunchParams&, cudaStream_t) { return cudaSuccess; }

ggemm::WgradVariant wgrad_variant(const char* name, int32_t arch, int32_t tile_q, int32_t smem_bytes = 200000) {
    ggemm::WgradVariant v{};
    v.name = name;
    v.arch = arch;
    v.tile_p = 128;
    v.tile_q = tile_q;
    v.block_rows = 64;
    v.stages = 4;
    v.box_columns = 64;
    v.smem_bytes = smem_bytes;
    v.threads = 384;
    v.tma_store = arch == 90;  // as the compiled variants: SM100's store from registers only
    v.max_experts = ggemm::kMaxExperts;
    v.launch = &fake_wgrad_launch;
    return v;
}

const std::vector<ggemm::WgradVariant>& wgrad_variants() {
    static const std::vector<ggemm::WgradVariant> variants = {wgrad_variant("wgrad_q256", 90, 256),
                                                              wgrad_variant("wgrad_q192", 90, 192),
                                                              wgrad_variant("wgrad_q128", 90, 128)};
    return variants;
}

ggemm::WgradVariantList wgrad_list(const std::vector<ggemm::WgradVariant>& variants) {
    ggemm::WgradVariantList list;
    list.items = variants.data();
    list.count = static_cast<int>(variants.size());
    return list;
}

ggemm_wgrad_desc valid_wgrad_desc() {
    ggemm_wgrad_desc desc;
    REQUIRE(ggemm_wgrad_desc_init(&desc, sizeof desc) == GGEMM_SUCCESS);
    desc.m_capacity = 8192;
    desc.p = 4096;
    desc.q = 7168;
    desc.num_experts = 8;
    return desc;
}

ggemm_plan wgrad_plan(const ggemm_wgrad_desc& desc = valid_wgrad_desc()) {
    ggemm_plan plan;
    const ggemm_status_t status = ggemm::build_wgrad_plan(desc, sm90_device(), wgrad_list(wgrad_variants()), &plan);
    REQUIRE_MESSAGE(status == GGEMM_SUCCESS, ggemm::last_error());
    return plan;
}

ggemm_wgrad_args valid_wgrad_args(int64_t m = 4096) {
    ggemm_wgrad_args args;
    REQUIRE(ggemm_wgrad_args_init(&args, sizeof args) == GGEMM_SUCCESS);
    args.m = m;
    args.x1 = at(kDevice0 + 1 * kSlice);
    args.x2 = at(kDevice0 + 2 * kSlice);
    args.padded_offsets = at<const int32_t>(kDevice0 + 3 * kSlice);
    args.alpha = at<const float>(kDevice0 + 4 * kSlice);
    args.out = at(kDevice0 + 5 * kSlice);
    args.workspace = at(kDevice0 + 6 * kSlice);
    args.workspace_size = 1 << 20;
    args.device_status = at<uint32_t>(kDevice0 + 7 * kSlice);
    return args;
}

struct DescRow {
    const char* what;
    std::function<void(ggemm_wgrad_desc&)> change;
    ggemm_status_t status;
    const char* message;
};

struct ArgsRow {
    const char* what;
    std::function<void(ggemm_wgrad_desc&)> plan_change;
    std::function<void(ggemm_wgrad_args&)> change;
    ggemm_status_t status;
    const char* message;
};

}  // namespace

TEST_CASE("wgrad structs: init writes the defaults; sizes, older and newer structs") {
    ggemm_wgrad_desc desc;
    std::memset(&desc, 0xAB, sizeof desc);
    REQUIRE(ggemm_wgrad_desc_init(&desc, sizeof desc) == GGEMM_SUCCESS);
    CHECK(desc.struct_size == sizeof desc);
    CHECK(desc.out_dtype == GGEMM_DTYPE_FP32);
    CHECK(desc.output_mode == GGEMM_WGRAD_OUTPUT_DENSE);
    CHECK(desc.accumulate == 0);
    CHECK(desc.scheduler == GGEMM_SCHEDULER_STATIC);
    CHECK(desc.device == 0);
    CHECK(desc.reserved0 == 0);
    CHECK(desc.reserved1 == 0);

    CHECK(ggemm_wgrad_desc_init(nullptr, sizeof desc) == GGEMM_ERROR_NULL_ARGUMENT);
    CHECK(ggemm_wgrad_desc_init(&desc, 32) == GGEMM_ERROR_STRUCT_SIZE);
    CHECK(message_contains("struct_size must be in [64, 4096]"));
    ggemm_wgrad_args args;
    CHECK(ggemm_wgrad_args_init(&args, 40) == GGEMM_ERROR_STRUCT_SIZE);
    CHECK(message_contains("struct_size must be in [88, 4096]"));
    REQUIRE(ggemm_wgrad_args_init(&args, sizeof args) == GGEMM_SUCCESS);
    CHECK(args.struct_size == sizeof args);
    CHECK(args.x1 == nullptr);

    // A newer caller's larger struct: unknown trailing bytes must be zero.
    struct Newer {
        ggemm_wgrad_desc desc;
        uint64_t future;
    } newer{};
    newer.desc = valid_wgrad_desc();
    newer.desc.struct_size = sizeof newer;
    ggemm_wgrad_desc read;
    CHECK(ggemm::read_wgrad_desc(&newer.desc, "desc", &read) == GGEMM_SUCCESS);
    CHECK(read.q == 7168);
    newer.future = 1;
    CHECK(ggemm::read_wgrad_desc(&newer.desc, "desc", &read) == GGEMM_ERROR_STRUCT_SIZE);
    CHECK(message_contains("a newer field is set that this version of ggemm does not support"));
    // A struct smaller than the first version.
    ggemm_wgrad_desc small = valid_wgrad_desc();
    small.struct_size = 60;
    CHECK(ggemm::read_wgrad_desc(&small, "desc", &read) == GGEMM_ERROR_STRUCT_SIZE);
    CHECK(message_contains("desc->struct_size must be at least 64 (the first version of ggemm_wgrad_desc), got 60"));
    ggemm_wgrad_args short_args = valid_wgrad_args();
    short_args.struct_size = 80;
    ggemm_wgrad_args read_args;
    CHECK(ggemm::read_wgrad_args(&short_args, "args", &read_args) == GGEMM_ERROR_STRUCT_SIZE);
    CHECK(message_contains("args->struct_size must be at least 88"));
    CHECK(ggemm::read_wgrad_args(nullptr, "args", &read_args) == GGEMM_ERROR_NULL_ARGUMENT);
    CHECK(message_contains("args is NULL"));
}

TEST_CASE("wgrad descriptor refusals: status and message") {
    auto variants = wgrad_list(wgrad_variants());
    REQUIRE(ggemm::validate_wgrad_desc_fields(valid_wgrad_desc()) == GGEMM_SUCCESS);
    const std::vector<DescRow> rows = {
        {"reserved0", [](ggemm_wgrad_desc& d) { d.reserved0 = 2; }, GGEMM_ERROR_INVALID_VALUE,
         "desc->reserved0 must be 0, got 2"},
        {"reserved1", [](ggemm_wgrad_desc& d) { d.reserved1 = -1; }, GGEMM_ERROR_INVALID_VALUE,
         "desc->reserved1 must be 0, got -1"},
        {"L = 0", [](ggemm_wgrad_desc& d) { d.num_experts = 0; }, GGEMM_ERROR_INVALID_SHAPE,
         "desc->num_experts (L) must be in 1..1024, got 0"},
        {"L = 1025", [](ggemm_wgrad_desc& d) { d.num_experts = 1025; }, GGEMM_ERROR_INVALID_SHAPE,
         "desc->num_experts (L) must be in 1..1024, got 1025"},
        {"m_capacity 0", [](ggemm_wgrad_desc& d) { d.m_capacity = 0; }, GGEMM_ERROR_INVALID_SHAPE,
         "desc->m_capacity must be >= 256, got 0"},
        {"m_capacity 300", [](ggemm_wgrad_desc& d) { d.m_capacity = 300; }, GGEMM_ERROR_INVALID_SHAPE,
         "desc->m_capacity must be a multiple of 256, got 300"},
        {"m_capacity 2^31", [](ggemm_wgrad_desc& d) { d.m_capacity = int64_t{1} << 31; }, GGEMM_ERROR_INVALID_SHAPE,
         "desc->m_capacity must be <= 2147483392 (row offsets are int32), got 2147483648"},
        {"p 0", [](ggemm_wgrad_desc& d) { d.p = 0; }, GGEMM_ERROR_INVALID_SHAPE, "desc->p must be >= 8, got 0"},
        {"p 100", [](ggemm_wgrad_desc& d) { d.p = 100; }, GGEMM_ERROR_INVALID_SHAPE,
         "desc->p must be a multiple of 8 (16-byte rows of bf16), got 100"},
        {"p huge", [](ggemm_wgrad_desc& d) { d.p = int64_t{1} << 32; }, GGEMM_ERROR_INVALID_SHAPE,
         "desc->p must be <= 2147483392, got 4294967296"},
        {"q 4", [](ggemm_wgrad_desc& d) { d.q = 4; }, GGEMM_ERROR_INVALID_SHAPE, "desc->q must be >= 8, got 4"},
        {"q 1001", [](ggemm_wgrad_desc& d) { d.q = 1001; }, GGEMM_ERROR_INVALID_SHAPE,
         "desc->q must be a multiple of 8 (16-byte rows of bf16), got 1001"},
        {"out dtype NONE", [](ggemm_wgrad_desc& d) { d.out_dtype = GGEMM_DTYPE_NONE; }, GGEMM_ERROR_INVALID_DTYPE,
         "desc->out_dtype must be GGEMM_DTYPE_BF16 (1), GGEMM_DTYPE_FP16 (2) or GGEMM_DTYPE_FP32 (3), got 0"},
        {"out dtype 9", [](ggemm_wgrad_desc& d) { d.out_dtype = 9; }, GGEMM_ERROR_INVALID_DTYPE, "got 9"},
        {"output mode", [](ggemm_wgrad_desc& d) { d.output_mode = 2; }, GGEMM_ERROR_INVALID_VALUE,
         "desc->output_mode must be GGEMM_WGRAD_OUTPUT_DENSE (0) or GGEMM_WGRAD_OUTPUT_POINTERS (1), got 2"},
        {"accumulate", [](ggemm_wgrad_desc& d) { d.accumulate = 2; }, GGEMM_ERROR_INVALID_VALUE,
         "desc->accumulate must be 0 or 1, got 2"},
        {"scheduler", [](ggemm_wgrad_desc& d) { d.scheduler = 5; }, GGEMM_ERROR_INVALID_VALUE,
         "desc->scheduler must be GGEMM_SCHEDULER_STATIC (0) or GGEMM_SCHEDULER_DYNAMIC (1), got 5"},
        {"sm_margin", [](ggemm_wgrad_desc& d) { d.sm_margin = -1; }, GGEMM_ERROR_UNSUPPORTED_CONFIG,
         "desc->sm_margin must be >= 0, got -1"},
    };
    for (const DescRow& row : rows) {
        CAPTURE(std::string(row.what));
        ggemm_wgrad_desc desc = valid_wgrad_desc();
        row.change(desc);
        ggemm_plan plan;
        CHECK(ggemm::build_wgrad_plan(desc, sm90_device(), variants, &plan) == row.status);
        CHECK_MESSAGE(message_contains(row.message), "got: " << std::string(ggemm::last_error()));
    }
}

TEST_CASE("wgrad descriptor refusals about the device") {
    auto variants = wgrad_list(wgrad_variants());
    ggemm_plan plan;
    const ggemm_wgrad_desc desc = valid_wgrad_desc();
    CHECK(ggemm::build_wgrad_plan(desc, sm100_device(), variants, &plan) == GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK(message_contains("no compiled weight-gradient kernel variant for SM100 (device 0, Fake B200)"));
    CHECK(ggemm::build_wgrad_plan(desc, absent_device(), variants, &plan) == GGEMM_ERROR_NO_DEVICE);
    CHECK(message_contains("no CUDA device is available: no CUDA-capable device is detected"));
    ggemm::DeviceInfo old_gpu = sm90_device();
    old_gpu.cc_major = 8;
    CHECK(ggemm::build_wgrad_plan(desc, old_gpu, variants, &plan) == GGEMM_ERROR_UNSUPPORTED_ARCH);
    CHECK(message_contains("has compute capability 8.0"));
    ggemm_wgrad_desc other = desc;
    other.device = 3;
    CHECK(ggemm::build_wgrad_plan(other, sm90_device(2), variants, &plan) == GGEMM_ERROR_INVALID_VALUE);
    CHECK(message_contains("desc->device = 3 is not a CUDA device ordinal: 2 devices are visible (0..1)"));
    other = desc;
    other.sm_margin = 132;
    CHECK(ggemm::build_wgrad_plan(other, sm90_device(), variants, &plan) == GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK(message_contains("desc->sm_margin must be in [0, 132) (device 0 has 132 SMs), got 132"));
    CHECK(ggemm::build_wgrad_plan(desc, sm90_device(), ggemm::WgradVariantList{}, &plan) ==
          GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK(message_contains("no compiled weight-gradient kernel variant for SM90"));
    const std::vector<ggemm::WgradVariant> too_big = {wgrad_variant("huge", 90, 256, 300000)};
    CHECK(ggemm::build_wgrad_plan(desc, sm90_device(), wgrad_list(too_big), &plan) == GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK(message_contains("no compiled SM90 weight-gradient kernel variant fits device 0"));
}

TEST_CASE("wgrad planner: tile along Q, grid, workspace, description") {
    ggemm_plan plan = wgrad_plan();
    CHECK(plan.kind == ggemm::PlanKind::kWgrad);
    CHECK(std::string(plan.wgrad.variant.name) == "wgrad_q256");  // 7168 = 28 x 256: nothing wasted
    CHECK(plan.grid == 132);
    CHECK(plan.workspace_bytes == 0);
    CHECK(plan.serial > 0);
    CHECK(plan.description.find("weight-gradient plan on device 0") != std::string::npos);
    CHECK(plan.description.find("P = 4096, Q = 7168") != std::string::npos);
    CHECK(plan.description.find("output FP32, dense L x P x Q, overwritten (empty experts get zeros)") !=
          std::string::npos);
    CHECK(plan.description.find("tiles: 7168 (8 experts") != std::string::npos);  // 8 x 32 x 28
    CHECK(plan.description.find("chosen   column use 1.0000  wgrad_q256") != std::string::npos);
    // 896 tiles an expert on 132 CTAs: the static deal stays round-robin in expert order.
    CHECK(plan.description.find("static (tiles dealt round-robin over the persistent grid in expert order") !=
          std::string::npos);

    ggemm_wgrad_desc desc = valid_wgrad_desc();
    desc.p = 2048;  // qwen3's fc2: 16 x 3 = 48 tiles an expert, fewer than the 132 CTAs
    desc.q = 768;
    desc.num_experts = 128;
    plan = wgrad_plan(desc);
    CHECK(plan.description.find("static (where the experts' rows differ, each CTA sorts the experts by rows") !=
          std::string::npos);

    desc = valid_wgrad_desc();
    desc.q = 640;  // 256- and 192-wide tiles would compute 768 columns, 128-wide exactly 640
    desc.scheduler = GGEMM_SCHEDULER_DYNAMIC;
    desc.accumulate = 1;
    desc.output_mode = GGEMM_WGRAD_OUTPUT_POINTERS;
    desc.out_dtype = GGEMM_DTYPE_BF16;
    plan = wgrad_plan(desc);
    CHECK(std::string(plan.wgrad.variant.name) == "wgrad_q128");
    CHECK(plan.workspace_bytes == 128);
    CHECK(plan.description.find("output BF16, through L pointers (out_ptrs), accumulated into (empty experts untouched)") !=
          std::string::npos);
    CHECK(plan.description.find("dynamic (tiles claimed") != std::string::npos);

    desc = valid_wgrad_desc();
    desc.q = 2880;  // gpt-oss: 15 x 192 exactly; 256 would compute 3072 columns, 128 2944
    CHECK(std::string(wgrad_plan(desc).wgrad.variant.name) == "wgrad_q192");
    desc.q = 768;  // 3 x 256 and 4 x 192 both exact: the wider tile
    CHECK(std::string(wgrad_plan(desc).wgrad.variant.name) == "wgrad_q256");

    desc = valid_wgrad_desc();
    desc.num_experts = 1;
    desc.p = 128;
    desc.q = 256;
    desc.sm_margin = 4;
    plan = wgrad_plan(desc);
    CHECK(plan.grid == 1);  // one tile: one CTA
    desc.num_experts = 1024;
    plan = wgrad_plan(desc);
    CHECK(plan.grid == 128);  // 132 SMs - margin 4
    CHECK(ggemm::wgrad_workspace_bytes(GGEMM_SCHEDULER_STATIC) == 0);
    CHECK(ggemm::wgrad_workspace_bytes(GGEMM_SCHEDULER_DYNAMIC) == 128);
}

TEST_CASE("wgrad planner: a variant whose shared copy of the offsets is too small is excluded, and said so") {
    std::vector<ggemm::WgradVariant> variants = wgrad_variants();
    variants[0].max_experts = 256;  // wgrad_q256, as SM90's 256-wide kernel with two staging atoms
    ggemm_wgrad_desc desc = valid_wgrad_desc();
    desc.num_experts = 256;
    ggemm_plan plan;
    REQUIRE(ggemm::build_wgrad_plan(desc, sm90_device(), wgrad_list(variants), &plan) == GGEMM_SUCCESS);
    CHECK(std::string(plan.wgrad.variant.name) == "wgrad_q256");
    CHECK(plan.description.find("excluded") == std::string::npos);
    desc.num_experts = 257;
    REQUIRE(ggemm::build_wgrad_plan(desc, sm90_device(), wgrad_list(variants), &plan) == GGEMM_SUCCESS);
    CHECK(std::string(plan.wgrad.variant.name) == "wgrad_q128");  // 7168 = 56 x 128; 192 wastes columns
    CHECK(plan.description.find("wgrad_q256 (excluded: its shared copy of the offsets holds at most 256 experts)") !=
          std::string::npos);
}

TEST_CASE("wgrad argument refusals: status and message") {
    const FakeOracle oracle = standard_oracle();
    {
        const ggemm_plan plan = wgrad_plan();
        REQUIRE(ggemm::validate_wgrad_args_fields(plan, valid_wgrad_args()) == GGEMM_SUCCESS);
        REQUIRE(ggemm::validate_wgrad_args_for_device(plan, valid_wgrad_args(), 0, oracle) == GGEMM_SUCCESS);
    }
    const auto none = [](ggemm_wgrad_desc&) {};
    const auto pointers = [](ggemm_wgrad_desc& d) { d.output_mode = GGEMM_WGRAD_OUTPUT_POINTERS; };
    const auto dynamic = [](ggemm_wgrad_desc& d) { d.scheduler = GGEMM_SCHEDULER_DYNAMIC; };
    const std::vector<ArgsRow> rows = {
        {"reserved0", none, [](ggemm_wgrad_args& a) { a.reserved0 = 1; }, GGEMM_ERROR_INVALID_VALUE,
         "args->reserved0 must be 0, got 1"},
        {"m < 0", none, [](ggemm_wgrad_args& a) { a.m = -256; }, GGEMM_ERROR_INVALID_SHAPE,
         "args->m must be >= 0, got -256"},
        {"m misaligned", none, [](ggemm_wgrad_args& a) { a.m = 100; }, GGEMM_ERROR_INVALID_SHAPE,
         "args->m must be a multiple of 256, got 100"},
        {"m past capacity", none, [](ggemm_wgrad_args& a) { a.m = 8448; }, GGEMM_ERROR_INVALID_SHAPE,
         "args->m = 8448 is larger than m_capacity = 8192"},
        {"offsets NULL", none, [](ggemm_wgrad_args& a) { a.padded_offsets = nullptr; }, GGEMM_ERROR_NULL_ARGUMENT,
         "args->padded_offsets is NULL; it is required"},
        {"x1 NULL", none, [](ggemm_wgrad_args& a) { a.x1 = nullptr; }, GGEMM_ERROR_NULL_ARGUMENT,
         "args->x1 is NULL; it is required when args->m > 0 (m = 4096)"},
        {"x2 NULL", none, [](ggemm_wgrad_args& a) { a.x2 = nullptr; }, GGEMM_ERROR_NULL_ARGUMENT,
         "args->x2 is NULL; it is required when args->m > 0 (m = 4096)"},
        {"dense: out NULL", none, [](ggemm_wgrad_args& a) { a.out = nullptr; }, GGEMM_ERROR_NULL_ARGUMENT,
         "args->out is NULL; the plan writes a dense L x P x Q output (GGEMM_WGRAD_OUTPUT_DENSE)"},
        {"dense: out_ptrs set", none,
         [](ggemm_wgrad_args& a) { a.out_ptrs = at<const uint64_t>(kDevice0 + 8 * kSlice); }, GGEMM_ERROR_INVALID_VALUE,
         "args->out_ptrs is set but the plan writes a dense output (GGEMM_WGRAD_OUTPUT_DENSE)"},
        {"pointers: out set", pointers, [](ggemm_wgrad_args& a) { a.out = at(kDevice0 + 5 * kSlice); },
         GGEMM_ERROR_INVALID_VALUE,
         "args->out is set but the plan writes through pointers (GGEMM_WGRAD_OUTPUT_POINTERS)"},
        {"pointers: out_ptrs NULL", pointers, [](ggemm_wgrad_args& a) { a.out_ptrs = nullptr; }, GGEMM_ERROR_NULL_ARGUMENT,
         "args->out_ptrs is NULL; the plan writes through a device array of L pointers"},
        {"x1 misaligned", none, [](ggemm_wgrad_args& a) { a.x1 = at(kDevice0 + kSlice + 8); }, GGEMM_ERROR_MISALIGNED,
         "args->x1 = 0x7f0040000008 is not 16-byte aligned"},
        {"x2 misaligned", none, [](ggemm_wgrad_args& a) { a.x2 = at(kDevice0 + 2 * kSlice + 2); }, GGEMM_ERROR_MISALIGNED,
         "args->x2 = 0x7f0080000002 is not 16-byte aligned"},
        {"alpha misaligned", none, [](ggemm_wgrad_args& a) { a.alpha = at<const float>(kDevice0 + 4 * kSlice + 4); },
         GGEMM_ERROR_MISALIGNED, "args->alpha = 0x7f0100000004 is not 16-byte aligned"},
        {"out misaligned", none, [](ggemm_wgrad_args& a) { a.out = at(kDevice0 + 5 * kSlice + 8); },
         GGEMM_ERROR_MISALIGNED, "args->out = 0x7f0140000008 is not 16-byte aligned"},
        {"out_ptrs misaligned", pointers,
         [](ggemm_wgrad_args& a) {
             a.out = nullptr;
             a.out_ptrs = at<const uint64_t>(kDevice0 + 8 * kSlice + 4);
         },
         GGEMM_ERROR_MISALIGNED, "args->out_ptrs = 0x7f0200000004 is not 8-byte aligned"},
        {"status misaligned", none, [](ggemm_wgrad_args& a) { a.device_status = at<uint32_t>(kDevice0 + 7 * kSlice + 2); },
         GGEMM_ERROR_MISALIGNED, "args->device_status = 0x7f01c0000002 is not 4-byte aligned"},
        {"workspace NULL", dynamic, [](ggemm_wgrad_args& a) { a.workspace = nullptr; }, GGEMM_ERROR_WORKSPACE,
         "args->workspace is NULL but the plan needs 128 bytes"},
        {"workspace misaligned", dynamic, [](ggemm_wgrad_args& a) { a.workspace = at(kDevice0 + 6 * kSlice + 64); },
         GGEMM_ERROR_WORKSPACE, "args->workspace = 0x7f0180000040 is not 128-byte aligned"},
        {"workspace small", dynamic, [](ggemm_wgrad_args& a) { a.workspace_size = 64; }, GGEMM_ERROR_WORKSPACE,
         "args->workspace_size = 64 is smaller than the 128 bytes the plan needs"},
    };
    for (const ArgsRow& row : rows) {
        CAPTURE(std::string(row.what));
        ggemm_wgrad_desc desc = valid_wgrad_desc();
        row.plan_change(desc);
        const ggemm_plan plan = wgrad_plan(desc);
        ggemm_wgrad_args args = valid_wgrad_args();
        if (desc.output_mode == GGEMM_WGRAD_OUTPUT_POINTERS) {
            args.out_ptrs = at<const uint64_t>(kDevice0 + 8 * kSlice);
            args.out = nullptr;
        }
        row.change(args);
        CHECK(ggemm::validate_wgrad_args_fields(plan, args) == row.status);
        CHECK_MESSAGE(message_contains(row.message), "got: " << std::string(ggemm::last_error()));
    }
}

TEST_CASE("wgrad arguments: M = 0 needs no X1 or X2; alpha may be NULL; residency and device") {
    const FakeOracle oracle = standard_oracle();
    const ggemm_plan plan = wgrad_plan();
    ggemm_wgrad_args args = valid_wgrad_args(0);
    args.x1 = nullptr;
    args.x2 = nullptr;
    args.alpha = nullptr;
    CHECK(ggemm::validate_wgrad_args_fields(plan, args) == GGEMM_SUCCESS);
    CHECK(ggemm::validate_wgrad_args_for_device(plan, args, 0, oracle) == GGEMM_SUCCESS);

    args = valid_wgrad_args();
    CHECK(ggemm::validate_wgrad_args_for_device(plan, args, 1, oracle) == GGEMM_ERROR_WRONG_DEVICE);
    CHECK(message_contains("the current CUDA device is 1 but the plan runs on device 0"));
    args.x2 = at(kPinned);
    CHECK(ggemm::validate_wgrad_args_for_device(plan, args, 0, oracle) == GGEMM_ERROR_NOT_DEVICE_MEMORY);
    CHECK(message_contains("args->x2 = 0x7d0000000000 is pinned host memory"));
    args = valid_wgrad_args();
    args.out = at(kDevice1);
    CHECK(ggemm::validate_wgrad_args_for_device(plan, args, 0, oracle) == GGEMM_ERROR_NOT_DEVICE_MEMORY);
    CHECK(message_contains("args->out = 0x7e0000000000 is device memory of device 1"));
    args = valid_wgrad_args();
    args.out = at(kManaged);
    CHECK(ggemm::validate_wgrad_args_for_device(plan, args, 0, oracle) == GGEMM_SUCCESS);
}

TEST_CASE("wgrad operand maps and kernel arguments") {
    ggemm_wgrad_desc desc = valid_wgrad_desc();
    desc.p = 1032;  // a P tail: 8 columns into the last 64-column box
    desc.q = 392;
    desc.out_dtype = GGEMM_DTYPE_BF16;
    desc.accumulate = 1;
    desc.scheduler = GGEMM_SCHEDULER_DYNAMIC;
    const ggemm_plan plan = wgrad_plan(desc);
    const ggemm_wgrad_args args = valid_wgrad_args(2048);
    const ggemm::TensorMapShape x1 = ggemm::wgrad_operand_map_shape(args.x1, args.m, desc.p, plan.wgrad.variant);
    CHECK(x1.rank == 2);
    CHECK(x1.address == args.x1);
    CHECK(x1.dims[0] == 1032);  // P is the contiguous (innermost) dimension
    CHECK(x1.dims[1] == 2048);
    CHECK(x1.strides[0] == 1032 * 2);
    CHECK(x1.box[0] == 64);  // 128 bytes: the swizzle span
    CHECK(x1.box[1] == 64);  // one k-block of rows
    CHECK(x1.element_strides[0] == 1);
    CHECK(x1.element_strides[1] == 1);
    const ggemm::TensorMapShape x2 = ggemm::wgrad_operand_map_shape(args.x2, args.m, desc.q, plan.wgrad.variant);
    CHECK(x2.dims[0] == 392);
    CHECK(x2.strides[0] == 392 * 2);

    const ggemm::WgradKernelArgs kernel = ggemm::make_wgrad_kernel_args(plan, args);
    CHECK(kernel.padded_offsets == args.padded_offsets);
    CHECK(kernel.alpha == args.alpha);
    CHECK(kernel.out == args.out);
    CHECK(kernel.out_ptrs == nullptr);
    CHECK(kernel.tile_counter == static_cast<unsigned long long*>(args.workspace));
    CHECK(kernel.device_status == args.device_status);
    CHECK(kernel.m == 2048);
    CHECK(kernel.p == 1032);
    CHECK(kernel.q == 392);
    CHECK(kernel.num_experts == 8);
    CHECK(kernel.out_dtype == GGEMM_DTYPE_BF16);
    CHECK(kernel.output_mode == GGEMM_WGRAD_OUTPUT_DENSE);
    CHECK(kernel.accumulate == 1);
    CHECK(kernel.scheduler == GGEMM_SCHEDULER_DYNAMIC);
}

TEST_CASE("each execute refuses a plan of the other kind; describe and workspace serve both") {
    ggemm_plan wgrad = wgrad_plan();
    ggemm_args forward_args = valid_args();
    CHECK(ggemm_execute(&wgrad, &forward_args, nullptr) == GGEMM_ERROR_INVALID_VALUE);
    CHECK(message_contains("plan is a weight-gradient plan (ggemm_wgrad_plan_create): run it with ggemm_wgrad_execute"));

    auto variants = width_variants();
    ggemm_plan forward;
    REQUIRE(ggemm::build_plan(valid_desc(), sm90_device(), list_of(variants), &forward) == GGEMM_SUCCESS);
    CHECK(forward.kind == ggemm::PlanKind::kForward);
    ggemm_wgrad_args args = valid_wgrad_args();
    CHECK(ggemm_wgrad_execute(&forward, &args, nullptr) == GGEMM_ERROR_INVALID_VALUE);
    CHECK(message_contains("plan is a forward grouped-GEMM plan (ggemm_plan_create): run it with ggemm_execute"));
    CHECK(ggemm_wgrad_execute(nullptr, &args, nullptr) == GGEMM_ERROR_NULL_ARGUMENT);
    CHECK(message_contains("create one with ggemm_wgrad_plan_create"));

    uint64_t bytes = 99;
    CHECK(ggemm_plan_workspace_size(&wgrad, &bytes) == GGEMM_SUCCESS);
    CHECK(bytes == 0);
    char text[4096];
    CHECK(ggemm_plan_describe(&wgrad, text, sizeof text, nullptr) == GGEMM_SUCCESS);
    CHECK(std::string(text).find("wgrad_q256") != std::string::npos);
    // An argument error is reported before anything else (no GPU is needed to see it).
    args.m = 100;
    CHECK(ggemm_wgrad_execute(&wgrad, &args, nullptr) == GGEMM_ERROR_INVALID_SHAPE);
    CHECK(message_contains("args->m must be a multiple of 256, got 100"));
    CHECK(ggemm_wgrad_plan_create(nullptr, nullptr) == GGEMM_ERROR_NULL_ARGUMENT);
    ggemm_plan_t created = reinterpret_cast<ggemm_plan_t>(&wgrad);
    CHECK(ggemm_wgrad_plan_create(&created, nullptr) == GGEMM_ERROR_NULL_ARGUMENT);
    CHECK(created == nullptr);
    CHECK(message_contains("desc is NULL"));
}

TEST_CASE("wgrad store path: TMA for a dense output overwritten or fp32-accumulated, registers otherwise or when asked") {
    ggemm_wgrad_desc desc = valid_wgrad_desc();
    for (int32_t dtype : {GGEMM_DTYPE_FP32, GGEMM_DTYPE_BF16, GGEMM_DTYPE_FP16}) {
        desc.out_dtype = dtype;
        CHECK(ggemm::choose_wgrad_store_path(desc, nullptr) == ggemm::kWgradStoreTma);
        CHECK(ggemm::choose_wgrad_store_path(desc, "tma") == ggemm::kWgradStoreTma);
        CHECK(ggemm::choose_wgrad_store_path(desc, "") == ggemm::kWgradStoreTma);
        CHECK(ggemm::choose_wgrad_store_path(desc, "registers") == ggemm::kWgradStoreRegisters);
    }
    desc.accumulate = 1;
    desc.out_dtype = GGEMM_DTYPE_FP32;
    CHECK(ggemm::choose_wgrad_store_path(desc, nullptr) == ggemm::kWgradStoreTma);
    CHECK(ggemm::choose_wgrad_store_path(desc, "registers") == ggemm::kWgradStoreRegisters);
    for (int32_t dtype : {GGEMM_DTYPE_BF16, GGEMM_DTYPE_FP16}) {
        desc.out_dtype = dtype;
        CHECK(ggemm::choose_wgrad_store_path(desc, nullptr) == ggemm::kWgradStoreRegisters);
        CHECK(ggemm::choose_wgrad_store_path(desc, "tma") == ggemm::kWgradStoreRegisters);
    }
    desc.accumulate = 0;
    desc.output_mode = GGEMM_WGRAD_OUTPUT_POINTERS;
    CHECK(ggemm::choose_wgrad_store_path(desc, nullptr) == ggemm::kWgradStoreRegisters);

    // The planner records the choice, the description names it, the kernel arguments carry it.
    desc = valid_wgrad_desc();
    ggemm_plan plan = wgrad_plan(desc);
    CHECK(plan.wgrad.store_path == ggemm::kWgradStoreTma);
    CHECK(plan.description.find("\nstore: TMA (") != std::string::npos);
    CHECK(ggemm::make_wgrad_kernel_args(plan, valid_wgrad_args()).store_path == ggemm::kWgradStoreTma);
    ggemm_plan registers;
    REQUIRE(ggemm::build_wgrad_plan(desc, sm90_device(), wgrad_list(wgrad_variants()), &registers, "registers") ==
            GGEMM_SUCCESS);
    CHECK(registers.wgrad.store_path == ggemm::kWgradStoreRegisters);
    CHECK(registers.description.find("\nstore: registers (GGEMM_WGRAD_STORE=registers") != std::string::npos);
    CHECK(ggemm::make_wgrad_kernel_args(registers, valid_wgrad_args()).store_path == ggemm::kWgradStoreRegisters);
    desc.accumulate = 1;
    plan = wgrad_plan(desc);
    CHECK(plan.wgrad.store_path == ggemm::kWgradStoreTma);
    CHECK(plan.description.find("\nstore: TMA (") != std::string::npos);
    CHECK(plan.description.find("reduce-adds") != std::string::npos);
    desc.out_dtype = GGEMM_DTYPE_BF16;
    plan = wgrad_plan(desc);
    CHECK(plan.wgrad.store_path == ggemm::kWgradStoreRegisters);
    CHECK(plan.description.find("\nstore: registers (pairs stored straight") != std::string::npos);
}

TEST_CASE("wgrad output map: dims {Q, P, L}, one 128-byte x 64-row box per expert, the output's dtype") {
    ggemm_wgrad_desc desc = valid_wgrad_desc();
    desc.p = 200;  // P and Q tails: the box clips at each expert's own P, so P is a dim of its own
    desc.q = 392;
    desc.num_experts = 5;
    void* out = reinterpret_cast<void*>(uintptr_t{0x7f0000000000});
    for (int32_t dtype : {GGEMM_DTYPE_FP32, GGEMM_DTYPE_BF16, GGEMM_DTYPE_FP16}) {
        desc.out_dtype = dtype;
        const uint64_t element = dtype == GGEMM_DTYPE_FP32 ? 4 : 2;
        const ggemm::TensorMapShape shape = ggemm::wgrad_output_map_shape(out, desc);
        CHECK(shape.rank == 3);
        CHECK(shape.address == out);
        CHECK(shape.dtype == dtype);
        CHECK(shape.dims[0] == 392);
        CHECK(shape.dims[1] == 200);
        CHECK(shape.dims[2] == 5);
        CHECK(shape.strides[0] == 392 * element);
        CHECK(shape.strides[1] == 200 * 392 * element);
        CHECK(shape.strides[0] % 16 == 0);  // TMA: global strides are multiples of 16 bytes
        CHECK(shape.box[0] * element == 128);  // the staging atom's row: the 128-byte swizzle span
        CHECK(shape.box[1] == 64);             // one math warpgroup's rows
        CHECK(shape.box[2] == 1);
        CHECK(shape.element_strides[0] == 1);
        CHECK(shape.element_strides[1] == 1);
        CHECK(shape.element_strides[2] == 1);
    }
    CHECK(ggemm::tensor_map_data_type(GGEMM_DTYPE_BF16) == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
    CHECK(ggemm::tensor_map_data_type(GGEMM_DTYPE_FP16) == CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
    CHECK(ggemm::tensor_map_data_type(GGEMM_DTYPE_FP32) == CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
    // The operand maps keep bf16.
    const ggemm_plan plan = wgrad_plan();
    CHECK(ggemm::wgrad_operand_map_shape(out, 256, 64, plan.wgrad.variant).dtype == GGEMM_DTYPE_BF16);
}
