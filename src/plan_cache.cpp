// The plan cache and the one-shot calls.
#include "src/plan_cache.h"

#include <map>
#include <memory>
#include <mutex>

#include "src/error.h"
#include "src/execute.h"
#include "src/structs.h"
#include "src/validate.h"

namespace ggemm {

namespace {

struct PlanCache {
    std::mutex mutex;
    std::map<PlanCacheKey, std::unique_ptr<ggemm_plan>> plans;
};

// Never destroyed: one-shot calls from other static destructors stay safe at exit.
PlanCache& cache() {
    static PlanCache* instance = new PlanCache;
    return *instance;
}

// Reads and field-checks the caller's descriptor; the one-shot calls share this prologue.
ggemm_status_t read_one_shot_desc(const ggemm_plan_desc* user, ggemm_plan_desc* desc) {
    const ggemm_status_t status = read_plan_desc(user, "desc", desc);
    if (status != GGEMM_SUCCESS) return status;
    return validate_desc_fields(*desc);
}

}  // namespace

PlanCacheKey plan_cache_key(const ggemm_plan_desc& desc) noexcept {
    return PlanCacheKey{desc.device,     desc.n,          desc.k,           desc.num_experts,
                        desc.weight_mode, desc.c_dtype,   desc.d_dtype,     desc.bias_dtype,
                        desc.generate_c, desc.scheduler, desc.tile_m,      desc.tile_n,
                        desc.cluster_m,  desc.sm_margin};
}

ggemm_status_t cached_plan(const ggemm_plan_desc& desc, const ggemm_plan** plan) {
    const PlanCacheKey key = plan_cache_key(desc);
    PlanCache& shared = cache();
    std::lock_guard<std::mutex> lock(shared.mutex);
    auto found = shared.plans.find(key);
    if (found != shared.plans.end()) {
        *plan = found->second.get();
        return GGEMM_SUCCESS;
    }
    // Plans are created under the lock: creation is rare, and two threads racing on one key
    // must not both pay for it.
    ggemm_plan_desc widest = desc;
    widest.m_capacity = kMaxMCapacity;
    std::unique_ptr<ggemm_plan> created;
    const ggemm_status_t status = create_plan(widest, &created);
    if (status != GGEMM_SUCCESS) return status;  // failures are not cached: the device may appear
    *plan = created.get();
    shared.plans.emplace(key, std::move(created));
    return GGEMM_SUCCESS;
}

uint64_t plan_cache_size() {
    PlanCache& shared = cache();
    std::lock_guard<std::mutex> lock(shared.mutex);
    return shared.plans.size();
}

void plan_cache_clear() {
    PlanCache& shared = cache();
    std::lock_guard<std::mutex> lock(shared.mutex);
    shared.plans.clear();
}

namespace {

// The one-shot calls' first step: read and check the descriptor, then find or make its plan.
ggemm_status_t one_shot_plan(const ggemm_plan_desc* desc, ggemm_plan_desc* checked, const ggemm_plan** plan) {
    const ggemm_status_t status = read_one_shot_desc(desc, checked);
    return status != GGEMM_SUCCESS ? status : cached_plan(*checked, plan);
}

}  // namespace

}  // namespace ggemm

extern "C" {

GGEMM_API ggemm_status_t ggemm_grouped_gemm(const ggemm_plan_desc* desc, const ggemm_args* args,
                                            struct CUstream_st* stream) {
    return ggemm::guarded("ggemm_grouped_gemm", [&] {
        ggemm_plan_desc checked;
        const ggemm_plan* plan = nullptr;
        const ggemm_status_t status = ggemm::one_shot_plan(desc, &checked, &plan);
        if (status != GGEMM_SUCCESS) return status;
        return ggemm::execute_plan(*plan, args, checked.m_capacity, stream);
    });
}

GGEMM_API ggemm_status_t ggemm_workspace_size(const ggemm_plan_desc* desc, uint64_t* bytes) {
    return ggemm::guarded("ggemm_workspace_size", [&] {
        if (bytes == nullptr) return ggemm::fail(GGEMM_ERROR_NULL_ARGUMENT, "bytes is NULL");
        ggemm_plan_desc checked;
        const ggemm_plan* plan = nullptr;
        const ggemm_status_t status = ggemm::one_shot_plan(desc, &checked, &plan);
        if (status != GGEMM_SUCCESS) return status;
        *bytes = plan->workspace_bytes;
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

}  // extern "C"
