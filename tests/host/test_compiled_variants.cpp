// The planner over the variants actually compiled into the library (not fakes): an SM90 device
// gets an sm_90a kernel, an SM100 device an sm_100a one, and on SM90 the suite's shapes get the
// tile widths measured best on an H200 (docs/PERFORMANCE.md, tile-width sweep). SM100's
// tile-width table (src/heuristics.cpp) is an estimate never measured on SM100; no test pins it.
#include <doctest/doctest.h>

#include <string>

#include "src/plan.h"
#include "tests/host/test_fakes.h"

using namespace ggemm_fakes;

namespace {

std::string chosen(const ggemm_plan_desc& desc, const ggemm::DeviceInfo& device, int32_t arch) {
    ggemm_plan plan;
    const ggemm_status_t status = ggemm::build_plan(desc, device, ggemm::compiled_variants(arch), &plan);
    REQUIRE_MESSAGE(status == GGEMM_SUCCESS, std::string(ggemm::last_error()));
    CHECK(plan.variant.arch == arch);
    CHECK((plan.variant.launch != nullptr));
    CHECK(plan.grid % plan.variant.cluster_m == 0);
    return plan.variant.name;
}

}  // namespace

TEST_CASE("compiled variants: each architecture plans with its own kernels") {
    CHECK(ggemm::compiled_variants(90).count >= 1);
    CHECK(ggemm::compiled_variants(100).count >= 1);
    CHECK(chosen(valid_desc(), sm90_device(), 90).rfind("sm90_", 0) == 0);
    CHECK(chosen(valid_desc(), sm100_device(), 100).rfind("sm100_", 0) == 0);
}

TEST_CASE("compiled variants: SM100 CTA pairs (never run) only when asked for") {
    ggemm_plan_desc desc = valid_desc();
    const std::string single = chosen(desc, sm100_device(), 100);
    CHECK(single.find("_c2") == std::string::npos);
    desc.tile_m = 256;
    const std::string pair = chosen(desc, sm100_device(), 100);
    CHECK(pair.find("_c2") != std::string::npos);
}

TEST_CASE("compiled variants: on SM90 the suite's shapes get the widths measured best") {
    struct Shape {
        int64_t n, k;
        const char* variant;
    };
    const Shape shapes[] = {
        {4096, 7168, "sm90_tma_wgmma_128x256x64_s4"},   // dsv3_fc1, decode
        {7168, 2048, "sm90_tma_wgmma_128x256x64_s4"},   // dsv3_fc2
        {28672, 4096, "sm90_tma_wgmma_128x256x64_s4"},  // mixtral_fc1
        {1536, 2048, "sm90_tma_wgmma_128x256x64_s4"},   // qwen3_fc1
        {2048, 768, "sm90_tma_wgmma_128x256x64_s4"},    // qwen3_fc2
        {5760, 2880, "sm90_tma_wgmma_128x192x64_s5"},   // gptoss_fc1: 5760 = 30 x 192
    };
    for (const Shape& shape : shapes) {
        ggemm_plan_desc desc = valid_desc();
        desc.n = shape.n;
        desc.k = shape.k;
        CAPTURE(shape.n);
        CHECK(chosen(desc, sm90_device(), 90) == shape.variant);
    }
}
