// The contract's refusals as pure functions: no CUDA call, no allocation on success. Device
// facts come in as a DeviceInfo, pointer facts from a PointerOracle, the current device as a
// number, so every refusal is testable without a GPU.
#pragma once

#include <cstdint>

#include "ggemm.h"
#include "kernels/common/contract.h"
#include "src/device.h"
#include "src/plan.h"
#include "src/pointer_oracle.h"

namespace ggemm {

constexpr int64_t kMaxMCapacity = 2147483392;        // the largest multiple of 256 below 2^31: offsets are int32
constexpr uint64_t kDataAlignment = 16;              // TMA global addresses, vector stores
constexpr uint64_t kPointerArrayAlignment = 8;       // b_ptrs: an array of 64-bit pointers
constexpr uint64_t kDeviceStatusAlignment = 4;
constexpr uint64_t kValidRowsAlignment = 4;           // int32 counts, each read on its own
// One expert's weights must be addressable by a TMA stride (global strides < 2^40 bytes).
constexpr int64_t kMaxTmaStrideBytes = int64_t{1} << 40;

// Rules that need no device: shapes, dtypes, enumerations, reserved fields.
ggemm_status_t validate_desc_fields(const ggemm_plan_desc& desc) noexcept;

// Rules about the device: present, ordinal in range, a supported arch, sm_margin in range,
// and tile/cluster overrides that some compiled variant for the device's arch supports.
ggemm_status_t validate_desc_for_device(const ggemm_plan_desc& desc, const DeviceInfo& device,
                                        VariantList variants) noexcept;

// Both of the above, in that order.
ggemm_status_t validate_plan_desc(const ggemm_plan_desc& desc, const DeviceInfo& device,
                                  VariantList variants) noexcept;

// The per-call refusals of execute, checked before anything is enqueued. `args` has been
// read (struct size checked, defaults filled); m is checked against `m_capacity` (the plan's,
// or the one-shot call's descriptor's); `current_device` is what cudaGetDevice says. Pointer
// residency is asked of `oracle` last, after every cheap rule has passed.
ggemm_status_t validate_args(const ggemm_plan& plan, const ggemm_args& args, int64_t m_capacity,
                             int32_t current_device, const PointerOracle& oracle) noexcept;

// The two halves of validate_args. The first needs nothing but the plan and the arguments
// (struct, M, NULLs, weight source, bias, alignment, workspace), so execute runs it before its
// first CUDA call: a driver failure never hides an argument error. The second takes the
// current device and asks `oracle` where each pointer lives.
ggemm_status_t validate_args_fields(const ggemm_plan& plan, const ggemm_args& args,
                                    int64_t m_capacity) noexcept;
ggemm_status_t validate_args_for_device(const ggemm_plan& plan, const ggemm_args& args,
                                        int32_t current_device, const PointerOracle& oracle) noexcept;

// The rules both plan kinds (the forward, the weight gradient) share, each failing with the
// message that names the field, the value and the rule.
struct PointerRule {
    const char* name;      // as in the args struct
    const void* pointer;
    uint64_t alignment;
};
// desc->name: >= 8, a multiple of 8, at most 2147483392.
ggemm_status_t check_extent(const char* name, int64_t value) noexcept;
// desc->num_experts in 1..kMaxExperts; desc->m_capacity a positive multiple of 256 below 2^31.
ggemm_status_t check_experts_and_capacity(int32_t num_experts, int64_t m_capacity) noexcept;
// The device is present, `device` is one of its ordinals, and its arch is SM90 or SM100 (*arch).
ggemm_status_t check_device_arch(int32_t device, const DeviceInfo& info, int32_t* arch) noexcept;
ggemm_status_t check_sm_margin(int32_t sm_margin, int32_t device, const DeviceInfo& info) noexcept;
// The refusal of a build that holds no `kernels` (a name for the message) for the device's arch.
ggemm_status_t no_kernel_for_arch(const char* kernels, int32_t arch, int32_t device, const DeviceInfo& info) noexcept;
// check_device_arch and check_sm_margin, then at least one of `variants` (a list of a plan kind's
// compiled kernels, each with its arch) for the device's arch (*arch).
template <class VariantListT>
ggemm_status_t check_device_and_kernels(int32_t device, int32_t sm_margin, const DeviceInfo& info,
                                        VariantListT variants, const char* kernels, int32_t* arch) noexcept {
    ggemm_status_t status = check_device_arch(device, info, arch);
    if (status == GGEMM_SUCCESS) status = check_sm_margin(sm_margin, device, info);
    if (status != GGEMM_SUCCESS) return status;
    for (int i = 0; i < variants.count; ++i)
        if (variants.items[i].arch == *arch) return GGEMM_SUCCESS;
    return no_kernel_for_arch(kernels, *arch, device, info);
}
// args->m: >= 0, a multiple of 256, at most m_capacity.
ggemm_status_t check_args_m(int64_t m, int64_t m_capacity) noexcept;
// Each non-NULL pointer aligned as its rule says.
ggemm_status_t check_alignment(const PointerRule* rules, int count) noexcept;
// A workspace of `needed` bytes (none when 0): present, 128-byte aligned, large enough.
ggemm_status_t check_workspace(uint64_t needed, const void* workspace, uint64_t workspace_size) noexcept;
// The current device is the plan's, and every non-NULL pointer (and the workspace, when needed)
// is memory of that device, asked of `oracle`.
ggemm_status_t check_residency(const PointerRule* rules, int count, const void* workspace, uint64_t needed,
                               int32_t current_device, int32_t device, const PointerOracle& oracle) noexcept;

// "BF16", "FP16", "FP32", "NONE" or "unknown".
const char* dtype_name(int32_t dtype) noexcept;

// "none", "SwiGLU", "clamped GeGLU" or "unknown".
const char* activation_name(int32_t activation) noexcept;

// "K-major", "N-major" or "unknown".
const char* weight_layout_name(int32_t weight_layout) noexcept;

}  // namespace ggemm
