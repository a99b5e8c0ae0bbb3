// The weight gradient's refusals as pure functions, like src/validate.h: device facts come in as
// a DeviceInfo, pointer facts from a PointerOracle, so every refusal is testable without a GPU.
#pragma once

#include <cstdint>

#include "ggemm.h"
#include "src/device.h"
#include "src/plan.h"
#include "src/pointer_oracle.h"
#include "src/wgrad_variant.h"

namespace ggemm {

struct WgradVariantList {
    const WgradVariant* items = nullptr;
    int count = 0;
};

// Rules that need no device: shapes, dtypes, enumerations, reserved fields.
ggemm_status_t validate_wgrad_desc_fields(const ggemm_wgrad_desc& desc) noexcept;

// Rules about the device: present, ordinal in range, SM90 or SM100, sm_margin in range, a compiled
// variant for it.
ggemm_status_t validate_wgrad_desc_for_device(const ggemm_wgrad_desc& desc, const DeviceInfo& device,
                                              WgradVariantList variants) noexcept;

// The per-call refusals, before anything is enqueued: first those that need only the plan and
// the arguments (M, NULLs, output source, alignment, workspace), then the current device and
// where each pointer lives (asked of `oracle` last).
ggemm_status_t validate_wgrad_args_fields(const ggemm_plan& plan, const ggemm_wgrad_args& args) noexcept;
ggemm_status_t validate_wgrad_args_for_device(const ggemm_plan& plan, const ggemm_wgrad_args& args,
                                              int32_t current_device, const PointerOracle& oracle) noexcept;

}  // namespace ggemm
