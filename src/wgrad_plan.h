// The weight-gradient planner: validates a ggemm_wgrad_desc, picks the tile width along Q, sizes
// the persistent grid and the workspace, and writes the plan's description. A wgrad plan is a
// ggemm_plan of kind PlanKind::kWgrad (src/plan.h).
#pragma once

#include <cstdint>
#include <memory>

#include "ggemm.h"
#include "src/device.h"
#include "src/plan.h"
#include "src/wgrad_validate.h"

namespace ggemm {

// The weight-gradient variants compiled into this library for `arch` (90 or 100); empty for any other.
WgradVariantList compiled_wgrad_variants(int32_t arch) noexcept;

// Workspace of one call: the dynamic scheduler's tile counter, or nothing.
uint64_t wgrad_workspace_bytes(int32_t scheduler) noexcept;

// How a plan for `desc` stores its tiles with a kernel that has both store paths (SM90): through
// TMA (kWgradStoreTma) for a dense output overwritten, from registers otherwise. `store_switch`
// (GGEMM_WGRAD_STORE: "registers" or "tma", or nullptr) can send a plan down the register path;
// it cannot give TMA stores to a plan they do not serve. A kernel without the TMA store path
// (SM100, WgradVariant::tma_store) always stores from registers.
int32_t choose_wgrad_store_path(const ggemm_wgrad_desc& desc, const char* store_switch) noexcept;

// The pure planner (fake devices and variants in the tests). Fills *plan on success, without
// calling the variant's prepare.
ggemm_status_t build_wgrad_plan(const ggemm_wgrad_desc& desc, const DeviceInfo& device, WgradVariantList variants,
                                ggemm_plan* plan, const char* store_switch = nullptr);

// The real one: queries the device, builds the plan, prepares the kernel on the plan's device.
ggemm_status_t create_wgrad_plan(const ggemm_wgrad_desc& desc, std::unique_ptr<ggemm_plan>* plan);

}  // namespace ggemm
