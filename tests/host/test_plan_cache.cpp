// The one-shot calls' plan cache: what it is keyed on, and its public entry points.
#include <doctest/doctest.h>

#include <cuda_runtime_api.h>
#include <functional>
#include <string>
#include <vector>

#include "src/plan_cache.h"
#include "tests/host/test_fakes.h"

using namespace ggemm_fakes;

TEST_CASE("the cache key ignores m_capacity") {
    ggemm_plan_desc a = valid_desc();
    ggemm_plan_desc b = valid_desc();
    b.m_capacity = 256;
    CHECK(ggemm::plan_cache_key(a) == ggemm::plan_cache_key(b));
    CHECK_FALSE(ggemm::plan_cache_key(a) < ggemm::plan_cache_key(b));
    CHECK_FALSE(ggemm::plan_cache_key(b) < ggemm::plan_cache_key(a));
}

TEST_CASE("the cache key changes with every field that shapes the kernel") {
    const std::vector<std::function<void(ggemm_plan_desc&)>> changes = {
        [](ggemm_plan_desc& d) { d.device = 1; },
        [](ggemm_plan_desc& d) { d.n += 8; },
        [](ggemm_plan_desc& d) { d.k += 8; },
        [](ggemm_plan_desc& d) { d.num_experts += 1; },
        [](ggemm_plan_desc& d) { d.weight_mode = GGEMM_WEIGHTS_DISCRETE; },
        [](ggemm_plan_desc& d) { d.c_dtype = GGEMM_DTYPE_FP16; },
        [](ggemm_plan_desc& d) { d.d_dtype = GGEMM_DTYPE_FP32; },
        [](ggemm_plan_desc& d) { d.bias_dtype = GGEMM_DTYPE_BF16; },
        [](ggemm_plan_desc& d) { d.generate_c = 1; },
        [](ggemm_plan_desc& d) { d.scheduler = GGEMM_SCHEDULER_DYNAMIC; },
        [](ggemm_plan_desc& d) { d.tile_m = 256; },
        [](ggemm_plan_desc& d) { d.tile_n = 192; },
        [](ggemm_plan_desc& d) { d.cluster_m = 2; },
        [](ggemm_plan_desc& d) { d.sm_margin = 8; },
    };
    const ggemm::PlanCacheKey base = ggemm::plan_cache_key(valid_desc());
    std::vector<ggemm::PlanCacheKey> keys;
    for (std::size_t i = 0; i < changes.size(); ++i) {
        CAPTURE(i);
        ggemm_plan_desc desc = valid_desc();
        changes[i](desc);
        const ggemm::PlanCacheKey key = ggemm::plan_cache_key(desc);
        CHECK(key != base);
        CHECK((key < base) != (base < key));  // a strict weak order tells them apart
        for (const ggemm::PlanCacheKey& other : keys) CHECK(key != other);
        keys.push_back(key);
    }
}

TEST_CASE("one-shot calls check their descriptor before any device question") {
    REQUIRE(ggemm_plan_cache_clear() == GGEMM_SUCCESS);
    ggemm_plan_desc desc = valid_desc();
    desc.k = 1001;
    uint64_t bytes = 0;
    CHECK(ggemm_workspace_size(&desc, &bytes) == GGEMM_ERROR_INVALID_SHAPE);
    CHECK(message_contains("desc->k must be a multiple of 8"));
    ggemm_args args = valid_args();
    CHECK(ggemm_grouped_gemm(&desc, &args, nullptr) == GGEMM_ERROR_INVALID_SHAPE);
    CHECK(ggemm_grouped_gemm(nullptr, &args, nullptr) == GGEMM_ERROR_NULL_ARGUMENT);
    CHECK(message_contains("desc is NULL"));
    desc = valid_desc();
    CHECK(ggemm_workspace_size(&desc, nullptr) == GGEMM_ERROR_NULL_ARGUMENT);
    CHECK(message_contains("bytes is NULL"));
    CHECK(ggemm_plan_cache_size(nullptr) == GGEMM_ERROR_NULL_ARGUMENT);
    uint64_t count = 99;
    CHECK(ggemm_plan_cache_size(&count) == GGEMM_SUCCESS);
    CHECK(count == 0);
}

TEST_CASE("one-shot calls on this machine: refused without a device, never cached when refused") {
    REQUIRE(ggemm_plan_cache_clear() == GGEMM_SUCCESS);
    int devices = 0;
    const bool no_device = cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0;
    cudaGetLastError();
    ggemm_plan_desc desc = valid_desc();
    uint64_t bytes = 0;
    const ggemm_status_t status = ggemm_workspace_size(&desc, &bytes);
    const std::string message = ggemm::last_error();
    uint64_t count = 99;
    REQUIRE(ggemm_plan_cache_size(&count) == GGEMM_SUCCESS);
    if (no_device) {
        CHECK(status == GGEMM_ERROR_NO_DEVICE);
        CHECK(message.rfind("no CUDA device is available: ", 0) == 0);
        CHECK(count == 0);
    } else if (status == GGEMM_SUCCESS) {
        // A GPU with compiled variants: one plan cached, and asking again reuses it.
        CHECK(bytes == 0);  // dense, static scheduler
        CHECK(count == 1);
        desc.m_capacity = 256;  // not part of the key
        CHECK(ggemm_workspace_size(&desc, &bytes) == GGEMM_SUCCESS);
        REQUIRE(ggemm_plan_cache_size(&count) == GGEMM_SUCCESS);
        CHECK(count == 1);
        desc.scheduler = GGEMM_SCHEDULER_DYNAMIC;
        CHECK(ggemm_workspace_size(&desc, &bytes) == GGEMM_SUCCESS);
        CHECK(bytes == 128);
        REQUIRE(ggemm_plan_cache_size(&count) == GGEMM_SUCCESS);
        CHECK(count == 2);
        CHECK(ggemm_plan_cache_clear() == GGEMM_SUCCESS);
        REQUIRE(ggemm_plan_cache_size(&count) == GGEMM_SUCCESS);
        CHECK(count == 0);
    } else {
        // A GPU this build cannot serve (another arch, or no compiled variant yet).
        MESSAGE("one-shot call refused on this GPU: " << message);
        CHECK((status == GGEMM_ERROR_UNSUPPORTED_ARCH || status == GGEMM_ERROR_UNSUPPORTED_CONFIG));
        CHECK(count == 0);
    }
}
