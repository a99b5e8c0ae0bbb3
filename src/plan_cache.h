// The process-wide plan cache behind the one-shot calls.
//
// Keyed on every descriptor field that shapes the kernel or its launch. Not on m_capacity: a
// cached plan is created with the largest capacity and serves every M; each one-shot call
// checks its M against its own descriptor's m_capacity. Never on pointers or M.
#pragma once

#include <cstdint>
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

    auto fields() const {
        return std::tie(device, n, k, num_experts, weight_mode, c_dtype, d_dtype, bias_dtype,
                        generate_c, scheduler, tile_m, tile_n, cluster_m, sm_margin);
    }
    bool operator<(const PlanCacheKey& other) const { return fields() < other.fields(); }
    bool operator==(const PlanCacheKey& other) const { return fields() == other.fields(); }
    bool operator!=(const PlanCacheKey& other) const { return !(*this == other); }
};

PlanCacheKey plan_cache_key(const ggemm_plan_desc& desc) noexcept;

// The cached plan for `desc` (read and field-validated), created on first use. The pointer
// stays valid until plan_cache_clear().
ggemm_status_t cached_plan(const ggemm_plan_desc& desc, const ggemm_plan** plan);

uint64_t plan_cache_size();
void plan_cache_clear();

}  // namespace ggemm
