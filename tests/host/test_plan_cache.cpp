// The one-shot calls' plan cache: what it is keyed on, and its public entry points.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cuda_runtime_api.h>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
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
        [](ggemm_plan_desc& d) { d.weight_layout = GGEMM_WEIGHT_LAYOUT_N_MAJOR; },
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
    ggemm_args args = valid_args();
    const ggemm_status_t status = ggemm_grouped_gemm(&desc, &args, nullptr);
    const std::string message = ggemm::last_error();
    uint64_t count = 99;
    REQUIRE(ggemm_plan_cache_size(&count) == GGEMM_SUCCESS);
    if (no_device) {
        CHECK(status == GGEMM_ERROR_NO_DEVICE);
        CHECK(message.rfind("no CUDA device is available: ", 0) == 0);
        CHECK(count == 0);
    } else {
        MESSAGE("one-shot call on this GPU: " << ggemm_status_string(status) << " " << message);
        CHECK(count <= 1);
        CHECK(ggemm_plan_cache_clear() == GGEMM_SUCCESS);
    }
}

TEST_CASE("ggemm_workspace_size needs no GPU and creates no plan") {
    REQUIRE(ggemm_plan_cache_clear() == GGEMM_SUCCESS);
    ggemm_plan_desc desc = valid_desc();
    uint64_t bytes = 99;
    CHECK(ggemm_workspace_size(&desc, &bytes) == GGEMM_SUCCESS);
    CHECK(bytes == 0);  // dense weights, static scheduler
    desc.scheduler = GGEMM_SCHEDULER_DYNAMIC;
    CHECK(ggemm_workspace_size(&desc, &bytes) == GGEMM_SUCCESS);
    CHECK(bytes == 128);
    desc.weight_mode = GGEMM_WEIGHTS_DISCRETE;
    CHECK(ggemm_workspace_size(&desc, &bytes) == GGEMM_SUCCESS);
    CHECK(bytes == 128 + 128 * 8 + 128);  // counter, 8 maps, 8 status words (one 128-byte line)
    uint64_t count = 99;
    REQUIRE(ggemm_plan_cache_size(&count) == GGEMM_SUCCESS);
    CHECK(count == 0);
    desc.num_experts = 0;
    CHECK(ggemm_workspace_size(&desc, &bytes) == GGEMM_ERROR_INVALID_SHAPE);
}

TEST_CASE("a plan handed out by the cache outlives a clear") {
    ScopedPlanFactory fake(&fake_plan_factory);
    ggemm::SharedPlan plan;
    REQUIRE(ggemm::cached_plan(valid_desc(), &plan) == GGEMM_SUCCESS);
    const std::weak_ptr<const ggemm_plan> watch = plan;
    const uint64_t serial = plan->serial;
    CHECK(ggemm_plan_cache_clear() == GGEMM_SUCCESS);
    uint64_t count = 99;
    REQUIRE(ggemm_plan_cache_size(&count) == GGEMM_SUCCESS);
    CHECK(count == 0);
    // The caller's reference keeps it whole: under ASan a freed plan would be a fault here.
    REQUIRE_FALSE(watch.expired());
    CHECK(plan->serial == serial);
    CHECK(plan->description.find("ggemm plan on device 0") == 0);
    plan.reset();
    CHECK(watch.expired());  // the last reference frees it
    ggemm::SharedPlan again;
    REQUIRE(ggemm::cached_plan(valid_desc(), &again) == GGEMM_SUCCESS);
    CHECK(again->serial != serial);  // created anew after the clear
}

TEST_CASE("the cache keeps the most recently used plans up to its capacity") {
    ScopedPlanFactory fake(&fake_plan_factory);
    uint64_t capacity = 0;
    REQUIRE(ggemm_plan_cache_capacity(&capacity) == GGEMM_SUCCESS);
    CHECK(capacity == GGEMM_PLAN_CACHE_DEFAULT_CAPACITY);
    CHECK(ggemm_plan_cache_capacity(nullptr) == GGEMM_ERROR_NULL_ARGUMENT);
    REQUIRE(ggemm_plan_cache_set_capacity(2) == GGEMM_SUCCESS);
    REQUIRE(ggemm_plan_cache_capacity(&capacity) == GGEMM_SUCCESS);
    CHECK(capacity == 2);

    const auto desc_with_n = [](int64_t n) {
        ggemm_plan_desc desc = valid_desc();
        desc.n = n;
        return desc;
    };
    const auto serial_of = [](const ggemm_plan_desc& desc) {
        ggemm::SharedPlan plan;
        REQUIRE(ggemm::cached_plan(desc, &plan) == GGEMM_SUCCESS);
        return plan->serial;
    };
    const uint64_t a = serial_of(desc_with_n(1024));
    const uint64_t b = serial_of(desc_with_n(2048));
    CHECK(serial_of(desc_with_n(1024)) == a);  // a is now the most recently used
    const uint64_t c = serial_of(desc_with_n(4096));  // evicts b, the least recently used
    uint64_t count = 0;
    REQUIRE(ggemm_plan_cache_size(&count) == GGEMM_SUCCESS);
    CHECK(count == 2);
    CHECK(serial_of(desc_with_n(1024)) == a);
    CHECK(serial_of(desc_with_n(4096)) == c);
    CHECK(serial_of(desc_with_n(2048)) != b);  // created again; evicts a

    // Lowering the capacity evicts at once; 0 caches nothing but still serves every call.
    REQUIRE(ggemm_plan_cache_set_capacity(1) == GGEMM_SUCCESS);
    REQUIRE(ggemm_plan_cache_size(&count) == GGEMM_SUCCESS);
    CHECK(count == 1);
    CHECK(serial_of(desc_with_n(2048)) != b);
    REQUIRE(ggemm_plan_cache_set_capacity(0) == GGEMM_SUCCESS);
    REQUIRE(ggemm_plan_cache_size(&count) == GGEMM_SUCCESS);
    CHECK(count == 0);
    const uint64_t first = serial_of(desc_with_n(1024));
    CHECK(serial_of(desc_with_n(1024)) != first);
    REQUIRE(ggemm_plan_cache_size(&count) == GGEMM_SUCCESS);
    CHECK(count == 0);
}

namespace {

// A factory that holds every creation for n == kSlowN until released, counting arrivals.
constexpr int64_t kSlowN = 1024;
std::mutex g_gate_mutex;
std::condition_variable g_gate;
bool g_gate_open = false;
int g_slow_arrivals = 0;
std::atomic<int> g_factory_calls{0};

ggemm_status_t gated_factory(const ggemm_plan_desc& desc, std::unique_ptr<ggemm_plan>* plan) {
    ++g_factory_calls;
    if (desc.n == kSlowN) {
        std::unique_lock<std::mutex> lock(g_gate_mutex);
        ++g_slow_arrivals;
        g_gate.notify_all();
        g_gate.wait(lock, [] { return g_gate_open; });
    }
    return fake_plan_factory(desc, plan);
}

void close_gate() {
    std::lock_guard<std::mutex> lock(g_gate_mutex);
    g_gate_open = false;
    g_slow_arrivals = 0;
}

void open_gate() {
    std::lock_guard<std::mutex> lock(g_gate_mutex);
    g_gate_open = true;
    g_gate.notify_all();
}

bool wait_for_arrivals(int count) {
    std::unique_lock<std::mutex> lock(g_gate_mutex);
    return g_gate.wait_for(lock, std::chrono::seconds(20), [&] { return g_slow_arrivals >= count; });
}

ggemm_plan_desc desc_with_n(int64_t n) {
    ggemm_plan_desc desc = valid_desc();
    desc.n = n;
    return desc;
}

}  // namespace

TEST_CASE("a plan being created does not hold up other shapes") {
    ScopedPlanFactory fake(&gated_factory);
    close_gate();
    auto slow = std::async(std::launch::async, [] {
        ggemm::SharedPlan plan;
        return ggemm::cached_plan(desc_with_n(kSlowN), &plan);
    });
    REQUIRE(wait_for_arrivals(1));
    // While that creation waits, another key is created, and clear and size answer.
    auto other = std::async(std::launch::async, [] {
        ggemm::SharedPlan plan;
        const ggemm_status_t status = ggemm::cached_plan(desc_with_n(2048), &plan);
        ggemm::plan_cache_clear();
        return status;
    });
    const bool served = other.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
    CHECK(served);
    open_gate();
    CHECK(slow.get() == GGEMM_SUCCESS);
    CHECK(other.get() == GGEMM_SUCCESS);
}

TEST_CASE("two threads creating the same key: both may build, both get the one cached plan") {
    ScopedPlanFactory fake(&gated_factory);
    close_gate();
    g_factory_calls = 0;
    const auto get = [] {
        ggemm::SharedPlan plan;
        REQUIRE(ggemm::cached_plan(desc_with_n(kSlowN), &plan) == GGEMM_SUCCESS);
        return plan->serial;
    };
    auto first = std::async(std::launch::async, get);
    auto second = std::async(std::launch::async, get);
    REQUIRE(wait_for_arrivals(2));  // both missed and are building
    open_gate();
    const uint64_t a = first.get();
    const uint64_t b = second.get();
    CHECK(a == b);
    CHECK(g_factory_calls == 2);
    uint64_t count = 0;
    REQUIRE(ggemm_plan_cache_size(&count) == GGEMM_SUCCESS);
    CHECK(count == 1);
}

TEST_CASE("one-shot calls run on the cached plan and report their own refusals") {
    ScopedPlanFactory fake(&fake_plan_factory);
    ggemm_plan_desc desc = valid_desc();
    ggemm_args args = valid_args();
    args.m = 8192;  // larger than this call's m_capacity, not the cached plan's
    CHECK(ggemm_grouped_gemm(&desc, &args, nullptr) == GGEMM_ERROR_INVALID_SHAPE);
    CHECK(message_contains("args->m = 8192 is larger than m_capacity = 4096"));
    uint64_t count = 0;
    REQUIRE(ggemm_plan_cache_size(&count) == GGEMM_SUCCESS);
    CHECK(count == 1);
}

TEST_CASE("one-shot calls with and without valid-row counts share one cached plan") {
    ScopedPlanFactory fake(&fake_plan_factory);
    ggemm_plan_desc desc = valid_desc();
    ggemm_args args = valid_args();
    args.valid_rows = at<const int32_t>(kDevice0 + 12 * (uintptr_t{1} << 30) + 2);  // refused: misaligned
    CHECK(ggemm_grouped_gemm(&desc, &args, nullptr) == GGEMM_ERROR_MISALIGNED);
    CHECK(message_contains("args->valid_rows = "));
    args.valid_rows = nullptr;
    args.m = 8192;  // refused before any device question
    CHECK(ggemm_grouped_gemm(&desc, &args, nullptr) == GGEMM_ERROR_INVALID_SHAPE);
    args.valid_rows = at<const int32_t>(kDevice0 + 13 * (uintptr_t{1} << 30));
    CHECK(ggemm_grouped_gemm(&desc, &args, nullptr) == GGEMM_ERROR_INVALID_SHAPE);
    uint64_t count = 0;
    REQUIRE(ggemm_plan_cache_size(&count) == GGEMM_SUCCESS);
    CHECK(count == 1);
}
