// The plan: a validated descriptor, the device it runs on, the chosen kernel variant, the
// persistent grid and the workspace it needs. Immutable after creation, so one plan serves
// many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ggemm.h"
#include "src/kernel_variant.h"
#include "src/device.h"
#include "src/wgrad_variant.h"

namespace ggemm {

// Appends one printf-formatted line (at most 511 characters) to a plan's description.
void appendf(std::string* text, const char* format, ...) __attribute__((format(printf, 2, 3)));

// What a plan computes: the forward grouped GEMM (ggemm_plan_create, ggemm_execute) or the
// weight gradient (ggemm_wgrad_plan_create, ggemm_wgrad_execute). Each execute refuses the
// other kind.
enum class PlanKind : int32_t { kForward = 0, kWgrad = 1 };

// The weight gradient's part of a plan (kind == kWgrad).
struct WgradPlan {
    ggemm_wgrad_desc desc{};  // validated, every default filled in
    WgradVariant variant{};   // the chosen one
    int32_t store_path = 0;   // kWgradStoreRegisters or kWgradStoreTma (kernels/common/wgrad_params.h)
};

}  // namespace ggemm

struct ggemm_plan {
    ggemm_plan_desc desc;          // validated, every default filled in
    ggemm::DeviceInfo device;
    ggemm::KernelVariant variant;  // the chosen one (a copy: names point into the kernel's TU)
    int32_t grid = 0;              // persistent CTAs, a multiple of variant.cluster_m
    uint64_t workspace_bytes = 0;
    // Split-K (kernels/common/split_k.h): splits of each tile's K range, used on calls of at
    // most split_rows rows (the partials' room); 1: never split.
    int32_t k_splits = 1;
    int64_t split_rows = 0;
    std::string description;       // ggemm_plan_describe's text
    uint64_t serial = 0;           // unique among this process's plans (from 1), never reused
    // The kind of plan; a wgrad plan uses `wgrad` with the device, grid, workspace, description
    // and serial above (desc and variant stay unset).
    ggemm::PlanKind kind = ggemm::PlanKind::kForward;
    ggemm::WgradPlan wgrad;
};

namespace ggemm {

// A new plan serial: unique among this process's plans of every kind, from 1, never reused.
uint64_t next_plan_serial() noexcept;

// The variants compiled into this library for `arch` (90 or 100); empty for any other.
VariantList compiled_variants(int32_t arch) noexcept;

// The pure planner: validates `desc` (already read, defaults filled) against `device` and
// chooses among `variants` (any arch: those not matching the device are ignored). Touches no
// GPU, so tests feed fake devices and fake variants. On success fills *plan (variant.prepare
// is not called here). kernel_prefix, when not null, keeps only the variants whose name starts
// with it (create_plan passes the GGEMM_KERNEL environment variable: a benchmarking switch).
ggemm_status_t build_plan(const ggemm_plan_desc& desc, const DeviceInfo& device,
                          VariantList variants, ggemm_plan* plan, const char* kernel_prefix = nullptr);

// The real planner: queries the device, takes the compiled variants, builds the plan and
// prepares the kernel (its shared-memory attribute) on the plan's device.
ggemm_status_t create_plan(const ggemm_plan_desc& desc, std::unique_ptr<ggemm_plan>* plan);

}  // namespace ggemm
