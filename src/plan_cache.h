// The process-wide plan cache behind the one-shot calls.
//
// Keyed on every descriptor field that shapes the kernel or its launch. Not on m_capacity: a
// cached plan is created with the largest capacity and serves every M; each one-shot call
// checks its M against its own descriptor's m_capacity. Never on pointers or M.
//
// Plans are shared by reference count: a call holds its plan for as long as it uses it, so a
// clear, an eviction or a capacity change on another thread only drops the cache's reference.
// The cache holds at most plan_cache_capacity() plans and evicts the least recently used.
// Plans are built outside the cache's lock, so a slow creation never blocks other keys; two
// threads that miss on the same key at once may both build, and the first to insert wins (the
// other uses the winner's plan and drops its own).
#pragma once

#include <cstdint>
#include <memory>
#include <tuple>

#include "ggemm.h"
#include "src/plan.h"

namespace ggemm {

struct PlanCacheKey {
    int32_t device;
    int64_t n;
    int64_t k;
    int32_t num_experts;
    int32_t weight_mode;
    int32_t c_dtype;
    int32_t d_dtype;
    int32_t bias_dtype;
    int32_t generate_c;
    int32_t scheduler;
    int32_t tile_m;
    int32_t tile_n;
    int32_t cluster_m;
    int32_t sm_margin;
    int32_t weight_layout;
    int32_t split_k;
    // The activation and, for the clamped GeGLU only, its constants' bits (other activations
    // ignore them, so they do not split the cache).
    int32_t activation;
    uint32_t glu_scale_bits;
    uint32_t glu_limit_bits;
    uint32_t glu_offset_bits;
    int32_t glu_backward;
    int32_t glu_pre_dtype;  // dGLU only (0 otherwise)

    auto fields() const {
        return std::tie(device, n, k, num_experts, weight_mode, c_dtype, d_dtype, bias_dtype,
                        generate_c, scheduler, tile_m, tile_n, cluster_m, sm_margin, weight_layout, split_k,
                        activation, glu_scale_bits, glu_limit_bits, glu_offset_bits, glu_backward,
                        glu_pre_dtype);
    }
    bool operator<(const PlanCacheKey& other) const { return fields() < other.fields(); }
    bool operator==(const PlanCacheKey& other) const { return fields() == other.fields(); }
    bool operator!=(const PlanCacheKey& other) const { return !(*this == other); }
};

using SharedPlan = std::shared_ptr<const ggemm_plan>;

// Plans the cache holds when nobody sets a capacity (include/ggemm.h): more distinct shapes than
// one model's MoE layers use, and at a few KiB of host memory per plan a bound that costs little.
constexpr uint64_t kDefaultPlanCacheCapacity = GGEMM_PLAN_CACHE_DEFAULT_CAPACITY;

PlanCacheKey plan_cache_key(const ggemm_plan_desc& desc) noexcept;

// The cached plan for `desc` (read and field-validated), created on first use. The caller's
// reference keeps the plan alive whatever the cache does meanwhile.
ggemm_status_t cached_plan(const ggemm_plan_desc& desc, SharedPlan* plan);

uint64_t plan_cache_size();
void plan_cache_clear();
uint64_t plan_cache_capacity();
void plan_cache_set_capacity(uint64_t capacity);  // evicts the least recently used past it

// How the cache makes a plan on a miss: create_plan unless a test installs another (a fake
// that needs no GPU). Returns the factory it replaces; nullptr restores create_plan.
using PlanFactory = ggemm_status_t (*)(const ggemm_plan_desc& desc, std::unique_ptr<ggemm_plan>* plan);
PlanFactory set_plan_factory(PlanFactory factory) noexcept;

}  // namespace ggemm
