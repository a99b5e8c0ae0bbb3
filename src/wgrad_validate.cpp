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

// P and Q: at least one 16-byte row of bf16, whole 16-byte rows (TMA row strides), and room for
// a tile past the end in int32 (the kernel's column coordinates).
constexpr int64_t kMaxWgradExtent = 2147483392;

ggemm_status_t check_wgrad_extent(const char* name, int64_t value) {
    if (value < 8) return fail(GGEMM_ERROR_INVALID_SHAPE, "desc->%s must be >= 8, got %lld", name, (ll)value);
    if (value % 8 != 0) {
        return fail(GGEMM_ERROR_INVALID_SHAPE,
                    "desc->%s must be a multiple of 8 (16-byte rows of bf16), got %lld", name, (ll)value);
    }
    if (value > kMaxWgradExtent) {
        return fail(GGEMM_ERROR_INVALID_SHAPE, "desc->%s must be <= %lld, got %lld", name, (ll)kMaxWgradExtent,
                    (ll)value);
    }
    return GGEMM_SUCCESS;
}

struct PointerRule {
    const char* name;
    const void* pointer;
    uint64_t alignment;
};

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
    if (desc.num_experts < 1 || desc.num_experts > kMaxExperts) {
        return fail(GGEMM_ERROR_INVALID_SHAPE, "desc->num_experts (L) must be in 1..%d, got %d", kMaxExperts,
                    desc.num_experts);
    }
    if (desc.m_capacity < kSegmentAlignment) {
        return fail(GGEMM_ERROR_INVALID_SHAPE, "desc->m_capacity must be >= %lld, got %lld", (ll)kSegmentAlignment,
                    (ll)desc.m_capacity);
    }
    if (desc.m_capacity % kSegmentAlignment != 0) {
        return fail(GGEMM_ERROR_INVALID_SHAPE, "desc->m_capacity must be a multiple of %lld, got %lld",
                    (ll)kSegmentAlignment, (ll)desc.m_capacity);
    }
    if (desc.m_capacity > kMaxMCapacity) {
        return fail(GGEMM_ERROR_INVALID_SHAPE, "desc->m_capacity must be <= %lld (row offsets are int32), got %lld",
                    (ll)kMaxMCapacity, (ll)desc.m_capacity);
    }
    ggemm_status_t status = check_wgrad_extent("p", desc.p);
    if (status != GGEMM_SUCCESS) return status;
    status = check_wgrad_extent("q", desc.q);
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
    if (!device.present) {
        return fail(GGEMM_ERROR_NO_DEVICE, "no CUDA device is available: %s (desc->device = %d)", device.absence_reason,
                    desc.device);
    }
    if (desc.device < 0 || desc.device >= device.count) {
        return fail(GGEMM_ERROR_INVALID_VALUE,
                    "desc->device = %d is not a CUDA device ordinal: %d device%s visible (0..%d)", desc.device,
                    device.count, device.count == 1 ? " is" : "s are", device.count - 1);
    }
    const int32_t arch = arch_of(device);
    if (arch == 0) {
        return fail(GGEMM_ERROR_UNSUPPORTED_ARCH,
                    "device %d (%s) has compute capability %d.%d; ggemm runs only on SM90 (compute "
                    "capability 9.0, sm_90a) and SM100 (10.0, sm_100a)",
                    desc.device, device.name, device.cc_major, device.cc_minor);
    }
    if (arch == 100) {
        return fail(GGEMM_ERROR_UNSUPPORTED_CONFIG,
                    "the weight gradient (ggemm_wgrad_plan_create) has no SM100 kernel yet: device %d (%s) is "
                    "compute capability %d.%d; it runs on SM90 (compute capability 9.0) only",
                    desc.device, device.name, device.cc_major, device.cc_minor);
    }
    if (desc.sm_margin >= device.sm_count) {
        return fail(GGEMM_ERROR_UNSUPPORTED_CONFIG, "desc->sm_margin must be in [0, %d) (device %d has %d SMs), got %d",
                    device.sm_count, desc.device, device.sm_count, desc.sm_margin);
    }
    int for_arch = 0;
    for (int i = 0; i < variants.count; ++i) for_arch += variants.items[i].arch == arch;
    if (for_arch == 0) {
        return fail(GGEMM_ERROR_UNSUPPORTED_CONFIG,
                    "no compiled weight-gradient kernel variant for SM%d (device %d, %s) in this build of ggemm", arch,
                    desc.device, device.name);
    }
    return GGEMM_SUCCESS;
}

ggemm_status_t validate_wgrad_args_fields(const ggemm_plan& plan, const ggemm_wgrad_args& args) noexcept {
    const ggemm_wgrad_desc& desc = plan.wgrad.desc;
    if (args.reserved0 != 0) {
        return fail(GGEMM_ERROR_INVALID_VALUE, "args->reserved0 must be 0, got %u", args.reserved0);
    }
    // --- M --------------------------------------------------------------------------------
    if (args.m < 0) return fail(GGEMM_ERROR_INVALID_SHAPE, "args->m must be >= 0, got %lld", (ll)args.m);
    if (args.m % kSegmentAlignment != 0) {
        return fail(GGEMM_ERROR_INVALID_SHAPE, "args->m must be a multiple of %lld, got %lld", (ll)kSegmentAlignment,
                    (ll)args.m);
    }
    if (args.m > desc.m_capacity) {
        return fail(GGEMM_ERROR_INVALID_SHAPE, "args->m = %lld is larger than m_capacity = %lld", (ll)args.m,
                    (ll)desc.m_capacity);
    }
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
    // --- alignment ------------------------------------------------------------------------
    PointerRule pointers[kWgradPointerRules];
    wgrad_pointer_rules(args, pointers);
    for (const PointerRule& rule : pointers) {
        if (rule.pointer != nullptr && reinterpret_cast<uintptr_t>(rule.pointer) % rule.alignment != 0) {
            return fail(GGEMM_ERROR_MISALIGNED, "args->%s = %p is not %llu-byte aligned", rule.name, rule.pointer,
                        (unsigned long long)rule.alignment);
        }
    }
    // --- workspace ------------------------------------------------------------------------
    if (plan.workspace_bytes > 0) {
        if (args.workspace == nullptr) {
            return fail(GGEMM_ERROR_WORKSPACE,
                        "args->workspace is NULL but the plan needs %llu bytes (ggemm_plan_workspace_size)",
                        (unsigned long long)plan.workspace_bytes);
        }
        if (reinterpret_cast<uintptr_t>(args.workspace) % kWorkspaceAlignment != 0) {
            return fail(GGEMM_ERROR_WORKSPACE, "args->workspace = %p is not %llu-byte aligned", args.workspace,
                        (unsigned long long)kWorkspaceAlignment);
        }
        if (args.workspace_size < plan.workspace_bytes) {
            return fail(GGEMM_ERROR_WORKSPACE, "args->workspace_size = %llu is smaller than the %llu bytes the plan needs",
                        (unsigned long long)args.workspace_size, (unsigned long long)plan.workspace_bytes);
        }
    }
    return GGEMM_SUCCESS;
}

ggemm_status_t validate_wgrad_args_for_device(const ggemm_plan& plan, const ggemm_wgrad_args& args,
                                              int32_t current_device, const PointerOracle& oracle) noexcept {
    const int32_t device = plan.wgrad.desc.device;
    if (current_device != device) {
        return fail(GGEMM_ERROR_WRONG_DEVICE,
                    "the current CUDA device is %d but the plan runs on device %d: call cudaSetDevice(%d) before "
                    "executing",
                    current_device, device, device);
    }
    const auto resident = [&](const char* name, const void* pointer) -> ggemm_status_t {
        const PointerFacts facts = oracle.query(pointer);
        if (is_memory_of_device(facts, device)) return GGEMM_SUCCESS;
        char what[160];
        describe_memory(facts, what, sizeof what);
        return fail(GGEMM_ERROR_NOT_DEVICE_MEMORY,
                    "args->%s = %p is %s; it must be device memory of the plan's device %d (or managed memory)", name,
                    pointer, what, device);
    };
    PointerRule pointers[kWgradPointerRules];
    wgrad_pointer_rules(args, pointers);
    for (const PointerRule& rule : pointers) {
        if (rule.pointer == nullptr) continue;
        const ggemm_status_t status = resident(rule.name, rule.pointer);
        if (status != GGEMM_SUCCESS) return status;
    }
    return plan.workspace_bytes > 0 ? resident("workspace", args.workspace) : GGEMM_SUCCESS;
}

}  // namespace ggemm
