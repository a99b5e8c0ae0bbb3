// The plan cache and the one-shot calls.
#include "src/plan_cache.h"

#include <atomic>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "src/workspace.h"
#include "src/error.h"
#include "src/execute.h"
#include "src/structs.h"
#include "src/validate.h"

namespace ggemm {

namespace {

struct Entry {
    SharedPlan plan;
    std::list<PlanCacheKey>::iterator use;  // its place in PlanCache::recency
};

struct PlanCache {
    std::mutex mutex;
    std::map<PlanCacheKey, Entry> plans;
    std::list<PlanCacheKey> recency;  // most recently used first
    uint64_t capacity = kDefaultPlanCacheCapacity;
};

// Never destroyed: one-shot calls from other static destructors stay safe at exit.
PlanCache& cache() {
    static PlanCache* instance = new PlanCache;
    return *instance;
}

std::atomic<PlanFactory> g_factory{nullptr};

// Drops entries past the capacity, least recently used first. The plans are handed to
// `dropped` so that their memory is freed after the lock is released.
void evict_past_capacity(PlanCache& shared, std::vector<SharedPlan>* dropped) {
    while (shared.plans.size() > shared.capacity) {
        auto oldest = shared.plans.find(shared.recency.back());
        dropped->push_back(std::move(oldest->second.plan));
        shared.plans.erase(oldest);
        shared.recency.pop_back();
    }
}

// Reads and field-checks the caller's descriptor; the one-shot calls share this prologue.
ggemm_status_t read_one_shot_desc(const ggemm_plan_desc* user, ggemm_plan_desc* desc) {
    const ggemm_status_t status = read_plan_desc(user, "desc", desc);
    if (status != GGEMM_SUCCESS) return status;
    return validate_desc_fields(*desc);
}

}  // namespace

PlanCacheKey plan_cache_key(const ggemm_plan_desc& desc) noexcept {
    const bool constants = desc.activation == GGEMM_ACTIVATION_CLAMPED_GEGLU;
    const auto bits = [constants](float value) {
        uint32_t word = 0;
        if (constants) std::memcpy(&word, &value, sizeof word);
        return word;
    };
    return PlanCacheKey{desc.device,     desc.n,          desc.k,           desc.num_experts,
                        desc.weight_mode, desc.c_dtype,   desc.d_dtype,     desc.bias_dtype,
                        desc.generate_c, desc.scheduler, desc.tile_m,      desc.tile_n,
                        desc.cluster_m,  desc.sm_margin, desc.weight_layout, desc.split_k, desc.activation,
                        bits(desc.glu_scale), bits(desc.glu_limit), bits(desc.glu_offset),
                        desc.glu_backward, desc.glu_backward ? desc.glu_pre_dtype : 0};
}

PlanFactory set_plan_factory(PlanFactory factory) noexcept { return g_factory.exchange(factory); }

ggemm_status_t cached_plan(const ggemm_plan_desc& desc, SharedPlan* plan) {
    const PlanCacheKey key = plan_cache_key(desc);
    PlanCache& shared = cache();
    {
        std::lock_guard<std::mutex> lock(shared.mutex);
        auto found = shared.plans.find(key);
        if (found != shared.plans.end()) {
            shared.recency.splice(shared.recency.begin(), shared.recency, found->second.use);
            *plan = found->second.plan;
            return GGEMM_SUCCESS;
        }
    }
    // Built without the lock: other keys are served meanwhile (see plan_cache.h for a race on
    // this key).
    ggemm_plan_desc widest = desc;
    widest.m_capacity = kMaxMCapacity;
    std::unique_ptr<ggemm_plan> created;
    const PlanFactory factory = g_factory.load();
    const ggemm_status_t status = (factory != nullptr ? factory : &create_plan)(widest, &created);
    if (status != GGEMM_SUCCESS) return status;  // failures are not cached: the device may appear
    SharedPlan built(std::move(created));

    std::vector<SharedPlan> dropped;
    std::lock_guard<std::mutex> lock(shared.mutex);
    auto found = shared.plans.find(key);
    if (found != shared.plans.end()) {  // another thread inserted this key first: use its plan
        shared.recency.splice(shared.recency.begin(), shared.recency, found->second.use);
        *plan = found->second.plan;
        dropped.push_back(std::move(built));
        return GGEMM_SUCCESS;
    }
    *plan = built;
    if (shared.capacity == 0) return GGEMM_SUCCESS;  // caching is off: the caller's plan only
    shared.recency.push_front(key);
    shared.plans.emplace(key, Entry{std::move(built), shared.recency.begin()});
    evict_past_capacity(shared, &dropped);
    return GGEMM_SUCCESS;
}

uint64_t plan_cache_size() {
    PlanCache& shared = cache();
    std::lock_guard<std::mutex> lock(shared.mutex);
    return shared.plans.size();
}

void plan_cache_clear() {
    std::map<PlanCacheKey, Entry> dropped;  // freed after the lock is released
    PlanCache& shared = cache();
    std::lock_guard<std::mutex> lock(shared.mutex);
    dropped.swap(shared.plans);
    shared.recency.clear();
}

uint64_t plan_cache_capacity() {
    PlanCache& shared = cache();
    std::lock_guard<std::mutex> lock(shared.mutex);
    return shared.capacity;
}

void plan_cache_set_capacity(uint64_t capacity) {
    std::vector<SharedPlan> dropped;
    PlanCache& shared = cache();
    std::lock_guard<std::mutex> lock(shared.mutex);
    shared.capacity = capacity;
    evict_past_capacity(shared, &dropped);
}

}  // namespace ggemm

extern "C" {

GGEMM_API ggemm_status_t ggemm_grouped_gemm(const ggemm_plan_desc* desc, const ggemm_args* args,
                                            struct CUstream_st* stream) {
    return ggemm::guarded("ggemm_grouped_gemm", [&] {
        ggemm_plan_desc checked;
        ggemm_status_t status = ggemm::read_one_shot_desc(desc, &checked);
        if (status != GGEMM_SUCCESS) return status;
        ggemm::SharedPlan plan;  // held until the call returns, whatever the cache does meanwhile
        status = ggemm::cached_plan(checked, &plan);
        if (status != GGEMM_SUCCESS) return status;
        return ggemm::execute_plan(*plan, args, checked.m_capacity, stream);
    });
}

// The size depends on the descriptor alone (src/workspace.h): no device, no plan.
GGEMM_API ggemm_status_t ggemm_workspace_size(const ggemm_plan_desc* desc, uint64_t* bytes) {
    return ggemm::guarded("ggemm_workspace_size", [&] {
        if (bytes == nullptr) return ggemm::fail(GGEMM_ERROR_NULL_ARGUMENT, "bytes is NULL");
        ggemm_plan_desc checked;
        const ggemm_status_t status = ggemm::read_one_shot_desc(desc, &checked);
        if (status != GGEMM_SUCCESS) return status;
        // The cached plan is created with the largest capacity (cached_plan): sized for that, but
        // dGLU's partials for this descriptor's capacity (a call is checked against its own M).
        *bytes = ggemm::call_workspace_bytes(checked.weight_mode, checked.scheduler, checked.num_experts,
                                             checked.split_k, ggemm::split_rows(ggemm::kMaxMCapacity),
                                             checked.glu_backward, checked.n, checked.m_capacity);
        return GGEMM_SUCCESS;
    });
}

GGEMM_API ggemm_status_t ggemm_plan_cache_size(uint64_t* count) {
    return ggemm::guarded("ggemm_plan_cache_size", [&] {
        if (count == nullptr) return ggemm::fail(GGEMM_ERROR_NULL_ARGUMENT, "count is NULL");
        *count = ggemm::plan_cache_size();
        return GGEMM_SUCCESS;
    });
}

GGEMM_API ggemm_status_t ggemm_plan_cache_clear(void) {
    return ggemm::guarded("ggemm_plan_cache_clear", [] {
        ggemm::plan_cache_clear();
        return GGEMM_SUCCESS;
    });
}

GGEMM_API ggemm_status_t ggemm_plan_cache_set_capacity(uint64_t capacity) {
    return ggemm::guarded("ggemm_plan_cache_set_capacity", [&] {
        ggemm::plan_cache_set_capacity(capacity);
        return GGEMM_SUCCESS;
    });
}

GGEMM_API ggemm_status_t ggemm_plan_cache_capacity(uint64_t* capacity) {
    return ggemm::guarded("ggemm_plan_cache_capacity", [&] {
        if (capacity == nullptr) return ggemm::fail(GGEMM_ERROR_NULL_ARGUMENT, "capacity is NULL");
        *capacity = ggemm::plan_cache_capacity();
        return GGEMM_SUCCESS;
    });
}

}  // extern "C"
