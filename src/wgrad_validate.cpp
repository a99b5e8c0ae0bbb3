// The weight gradient's descriptor and argument refusals. Each names the argument, the value and
// the rule.
#include "src/wgrad_validate.h"

#include <cstdio>

#include "kernels/common/contract.h"
#include "src/error.h"
#include "src/validate.h"
#include "src/workspace.h"

namespace ggemm {

namespace {

using ll = long long;

constexpr int kWgradPointerRules = 7;

void wgrad_pointer_rules(const ggemm_wgrad_args& args, PointerRule (&rules)[kWgradPointerRules]) {
    rules[0] = {"x1", args.x1, kDataAlignment};
    rules[1] = {"x2", args.x2, kDataAlignment};
    rules[2] = {"padded_offsets", args.padded_offsets, kDataAlignment};
    rules[3] = {"alpha", args.alpha, kDataAlignment};
    rules[4] = {"out", args.out, kDataAlignment};
    rules[5] = {"out_ptrs", args.out_ptrs, kPointerArrayAlignment};
    rules[6] = {"device_status", args.device_status, kDeviceStatusAlignment};
}

}  // namespace

ggemm_status_t validate_wgrad_desc_fields(const ggemm_wgrad_desc& desc) noexcept {
    if (desc.reserved0 != 0) {
        return fail(GGEMM_ERROR_INVALID_VALUE, "desc->reserved0 must be 0, got %d", desc.reserved0);
    }
    if (desc.reserved1 != 0) {
        return fail(GGEMM_ERROR_INVALID_VALUE, "desc->reserved1 must be 0, got %d", desc.reserved1);
    }
    ggemm_status_t status = check_experts_and_capacity(desc.num_experts, desc.m_capacity);
    if (status != GGEMM_SUCCESS) return status;
    status = check_extent("p", desc.p);
    if (status != GGEMM_SUCCESS) return status;
    status = check_extent("q", desc.q);
    if (status != GGEMM_SUCCESS) return status;
    if (desc.out_dtype != GGEMM_DTYPE_BF16 && desc.out_dtype != GGEMM_DTYPE_FP16 && desc.out_dtype != GGEMM_DTYPE_FP32) {
        return fail(GGEMM_ERROR_INVALID_DTYPE,
                    "desc->out_dtype must be GGEMM_DTYPE_BF16 (1), GGEMM_DTYPE_FP16 (2) or GGEMM_DTYPE_FP32 (3), got %d",
                    desc.out_dtype);
    }
    if (desc.output_mode != GGEMM_WGRAD_OUTPUT_DENSE && desc.output_mode != GGEMM_WGRAD_OUTPUT_POINTERS) {
        return fail(GGEMM_ERROR_INVALID_VALUE,
                    "desc->output_mode must be GGEMM_WGRAD_OUTPUT_DENSE (0) or GGEMM_WGRAD_OUTPUT_POINTERS (1), got %d",
                    desc.output_mode);
    }
    if (desc.accumulate != 0 && desc.accumulate != 1) {
        return fail(GGEMM_ERROR_INVALID_VALUE, "desc->accumulate must be 0 or 1, got %d", desc.accumulate);
    }
    if (desc.scheduler != GGEMM_SCHEDULER_STATIC && desc.scheduler != GGEMM_SCHEDULER_DYNAMIC) {
        return fail(GGEMM_ERROR_INVALID_VALUE,
                    "desc->scheduler must be GGEMM_SCHEDULER_STATIC (0) or GGEMM_SCHEDULER_DYNAMIC (1), got %d",
                    desc.scheduler);
    }
    if (desc.sm_margin < 0) {
        return fail(GGEMM_ERROR_UNSUPPORTED_CONFIG, "desc->sm_margin must be >= 0, got %d", desc.sm_margin);
    }
    return GGEMM_SUCCESS;
}

ggemm_status_t validate_wgrad_desc_for_device(const ggemm_wgrad_desc& desc, const DeviceInfo& device,
                                              WgradVariantList variants) noexcept {
    int32_t arch = 0;
    return check_device_and_kernels(desc.device, desc.sm_margin, device, variants, "weight-gradient kernel variant",
                                    &arch);
}

ggemm_status_t validate_wgrad_args_fields(const ggemm_plan& plan, const ggemm_wgrad_args& args) noexcept {
    const ggemm_wgrad_desc& desc = plan.wgrad.desc;
    if (args.reserved0 != 0) {
        return fail(GGEMM_ERROR_INVALID_VALUE, "args->reserved0 must be 0, got %u", args.reserved0);
    }
    ggemm_status_t status = check_args_m(args.m, desc.m_capacity);
    if (status != GGEMM_SUCCESS) return status;
    // --- required pointers ----------------------------------------------------------------
    if (args.padded_offsets == nullptr) {
        return fail(GGEMM_ERROR_NULL_ARGUMENT, "args->padded_offsets is NULL; it is required");
    }
    if (args.m > 0 && args.x1 == nullptr) {
        return fail(GGEMM_ERROR_NULL_ARGUMENT, "args->x1 is NULL; it is required when args->m > 0 (m = %lld)",
                    (ll)args.m);
    }
    if (args.m > 0 && args.x2 == nullptr) {
        return fail(GGEMM_ERROR_NULL_ARGUMENT, "args->x2 is NULL; it is required when args->m > 0 (m = %lld)",
                    (ll)args.m);
    }
    // --- the output -----------------------------------------------------------------------
    if (desc.output_mode == GGEMM_WGRAD_OUTPUT_DENSE) {
        if (args.out_ptrs != nullptr) {
            return fail(GGEMM_ERROR_INVALID_VALUE,
                        "args->out_ptrs is set but the plan writes a dense output (GGEMM_WGRAD_OUTPUT_DENSE): set "
                        "args->out and leave out_ptrs NULL");
        }
        if (args.out == nullptr) {
            return fail(GGEMM_ERROR_NULL_ARGUMENT,
                        "args->out is NULL; the plan writes a dense L x P x Q output (GGEMM_WGRAD_OUTPUT_DENSE)");
        }
    } else {
        if (args.out != nullptr) {
            return fail(GGEMM_ERROR_INVALID_VALUE,
                        "args->out is set but the plan writes through pointers (GGEMM_WGRAD_OUTPUT_POINTERS): set "
                        "args->out_ptrs and leave out NULL");
        }
        if (args.out_ptrs == nullptr) {
            return fail(GGEMM_ERROR_NULL_ARGUMENT,
                        "args->out_ptrs is NULL; the plan writes through a device array of L pointers "
                        "(GGEMM_WGRAD_OUTPUT_POINTERS)");
        }
    }
    PointerRule pointers[kWgradPointerRules];
    wgrad_pointer_rules(args, pointers);
    status = check_alignment(pointers, kWgradPointerRules);
    if (status != GGEMM_SUCCESS) return status;
    return check_workspace(plan.workspace_bytes, args.workspace, args.workspace_size);
}

ggemm_status_t validate_wgrad_args_for_device(const ggemm_plan& plan, const ggemm_wgrad_args& args,
                                              int32_t current_device, const PointerOracle& oracle) noexcept {
    PointerRule pointers[kWgradPointerRules];
    wgrad_pointer_rules(args, pointers);
    return check_residency(pointers, kWgradPointerRules, args.workspace, plan.workspace_bytes, current_device,
                           plan.wgrad.desc.device, oracle);
}

}  // namespace ggemm
