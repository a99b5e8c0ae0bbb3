// Descriptor and argument refusals. Each names the argument, the value and the rule.
#include "src/validate.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "src/workspace.h"
#include "src/error.h"

namespace ggemm {

const char* dtype_name(int32_t dtype) noexcept {
    switch (dtype) {
        case GGEMM_DTYPE_NONE: return "NONE";
        case GGEMM_DTYPE_BF16: return "BF16";
        case GGEMM_DTYPE_FP16: return "FP16";
        case GGEMM_DTYPE_FP32: return "FP32";
        default: return "unknown";
    }
}

const char* activation_name(int32_t activation) noexcept {
    switch (activation) {
        case GGEMM_ACTIVATION_NONE: return "none";
        case GGEMM_ACTIVATION_SWIGLU: return "SwiGLU";
        case GGEMM_ACTIVATION_CLAMPED_GEGLU: return "clamped GeGLU";
        default: return "unknown";
    }
}

const char* weight_layout_name(int32_t weight_layout) noexcept {
    switch (weight_layout) {
        case GGEMM_WEIGHT_LAYOUT_K_MAJOR: return "K-major";
        case GGEMM_WEIGHT_LAYOUT_N_MAJOR: return "N-major";
        default: return "unknown";
    }
}

namespace {

using ll = long long;

bool is_output_dtype(int32_t dtype) {
    return dtype == GGEMM_DTYPE_BF16 || dtype == GGEMM_DTYPE_FP16 || dtype == GGEMM_DTYPE_FP32;
}

// The distinct values of one variant field among the variants of `arch`, ascending.
struct ValueSet {
    int32_t values[32];
    int count = 0;

    bool contains(int32_t value) const {
        for (int i = 0; i < count; ++i)
            if (values[i] == value) return true;
        return false;
    }
    void add(int32_t value) {
        if (contains(value) || count == 32) return;
        int at = count++;
        for (; at > 0 && values[at - 1] > value; --at) values[at] = values[at - 1];
        values[at] = value;
    }
    // "128, 256"
    void format(char* buffer, std::size_t size) const {
        std::size_t used = 0;
        buffer[0] = '\0';
        for (int i = 0; i < count && used < size; ++i) {
            const int written = std::snprintf(buffer + used, size - used, i ? ", %d" : "%d", values[i]);
            if (written < 0) break;
            used += static_cast<std::size_t>(written);
        }
    }
};

ValueSet variant_values(VariantList variants, int32_t arch, int32_t KernelVariant::*field) {
    ValueSet set;
    for (int i = 0; i < variants.count; ++i)
        if (variants.items[i].arch == arch) set.add(variants.items[i].*field);
    return set;
}

ggemm_status_t check_override(const char* name, int32_t value, VariantList variants, int32_t arch,
                              int32_t KernelVariant::*field) {
    if (value == 0) return GGEMM_SUCCESS;
    const ValueSet supported = variant_values(variants, arch, field);
    if (supported.contains(value)) return GGEMM_SUCCESS;
    char list[256];
    supported.format(list, sizeof list);
    return fail(GGEMM_ERROR_UNSUPPORTED_CONFIG,
                "desc->%s = %d is not supported on SM%d: use 0 (let the planner choose) or one "
                "of the compiled values %s",
                name, value, arch, list);
}

}  // namespace

// N and K (P and Q of the weight gradient) share one rule: at least one 16-byte row of bf16,
// whole 16-byte rows, and room for a tile past the end in int32 (the kernels round them up to
// their tiles in int32).
constexpr int64_t kMaxExtent = 2147483392;  // INT32_MAX - 255, rounded down to a multiple of 8
static_assert(max_split_items(kMaxExtent) <= 2147483647, "a split call's work items fit the kernel's 32 bits");
ggemm_status_t check_extent(const char* name, int64_t value) noexcept {
    if (value < 8) return fail(GGEMM_ERROR_INVALID_SHAPE, "desc->%s must be >= 8, got %lld", name, (ll)value);
    if (value % 8 != 0) {
        return fail(GGEMM_ERROR_INVALID_SHAPE,
                    "desc->%s must be a multiple of 8 (16-byte rows of bf16), got %lld", name, (ll)value);
    }
    if (value > kMaxExtent) {
        return fail(GGEMM_ERROR_INVALID_SHAPE, "desc->%s must be <= %lld, got %lld", name, (ll)kMaxExtent,
                    (ll)value);
    }
    return GGEMM_SUCCESS;
}

ggemm_status_t check_experts_and_capacity(int32_t num_experts, int64_t m_capacity) noexcept {
    if (num_experts < 1 || num_experts > kMaxExperts) {
        return fail(GGEMM_ERROR_INVALID_SHAPE, "desc->num_experts (L) must be in 1..%d, got %d",
                    kMaxExperts, num_experts);
    }
    if (m_capacity < kSegmentAlignment) {
        return fail(GGEMM_ERROR_INVALID_SHAPE, "desc->m_capacity must be >= %lld, got %lld",
                    (ll)kSegmentAlignment, (ll)m_capacity);
    }
    if (m_capacity % kSegmentAlignment != 0) {
        return fail(GGEMM_ERROR_INVALID_SHAPE, "desc->m_capacity must be a multiple of %lld, got %lld",
                    (ll)kSegmentAlignment, (ll)m_capacity);
    }
    if (m_capacity > kMaxMCapacity) {
        return fail(GGEMM_ERROR_INVALID_SHAPE,
                    "desc->m_capacity must be <= %lld (row offsets are int32), got %lld",
                    (ll)kMaxMCapacity, (ll)m_capacity);
    }
    return GGEMM_SUCCESS;
}

ggemm_status_t check_device_arch(int32_t device, const DeviceInfo& info, int32_t* arch) noexcept {
    if (!info.present) {
        return fail(GGEMM_ERROR_NO_DEVICE, "no CUDA device is available: %s (desc->device = %d)",
                    info.absence_reason, device);
    }
    if (device < 0 || device >= info.count) {
        return fail(GGEMM_ERROR_INVALID_VALUE,
                    "desc->device = %d is not a CUDA device ordinal: %d device%s visible (0..%d)",
                    device, info.count, info.count == 1 ? " is" : "s are", info.count - 1);
    }
    *arch = arch_of(info);
    if (*arch == 0) {
        return fail(GGEMM_ERROR_UNSUPPORTED_ARCH,
                    "device %d (%s) has compute capability %d.%d; ggemm runs only on SM90 (compute "
                    "capability 9.0, sm_90a) and SM100 (10.0, sm_100a)",
                    device, info.name, info.cc_major, info.cc_minor);
    }
    return GGEMM_SUCCESS;
}

ggemm_status_t check_sm_margin(int32_t sm_margin, int32_t device, const DeviceInfo& info) noexcept {
    if (sm_margin >= info.sm_count) {
        return fail(GGEMM_ERROR_UNSUPPORTED_CONFIG,
                    "desc->sm_margin must be in [0, %d) (device %d has %d SMs), got %d",
                    info.sm_count, device, info.sm_count, sm_margin);
    }
    return GGEMM_SUCCESS;
}

ggemm_status_t no_kernel_for_arch(const char* kernels, int32_t arch, int32_t device, const DeviceInfo& info) noexcept {
    return fail(GGEMM_ERROR_UNSUPPORTED_CONFIG, "no compiled %s for SM%d (device %d, %s) in this build of ggemm",
                kernels, arch, device, info.name);
}

ggemm_status_t check_args_m(int64_t m, int64_t m_capacity) noexcept {
    if (m < 0) return fail(GGEMM_ERROR_INVALID_SHAPE, "args->m must be >= 0, got %lld", (ll)m);
    if (m % kSegmentAlignment != 0) {
        return fail(GGEMM_ERROR_INVALID_SHAPE, "args->m must be a multiple of %lld, got %lld",
                    (ll)kSegmentAlignment, (ll)m);
    }
    if (m > m_capacity) {
        return fail(GGEMM_ERROR_INVALID_SHAPE, "args->m = %lld is larger than m_capacity = %lld",
                    (ll)m, (ll)m_capacity);
    }
    return GGEMM_SUCCESS;
}

ggemm_status_t check_alignment(const PointerRule* rules, int count) noexcept {
    for (int i = 0; i < count; ++i) {
        const PointerRule& rule = rules[i];
        if (rule.pointer != nullptr && reinterpret_cast<uintptr_t>(rule.pointer) % rule.alignment != 0) {
            return fail(GGEMM_ERROR_MISALIGNED, "args->%s = %p is not %llu-byte aligned", rule.name,
                        rule.pointer, (unsigned long long)rule.alignment);
        }
    }
    return GGEMM_SUCCESS;
}

ggemm_status_t check_workspace(uint64_t needed, const void* workspace, uint64_t workspace_size) noexcept {
    if (needed == 0) return GGEMM_SUCCESS;
    if (workspace == nullptr) {
        return fail(GGEMM_ERROR_WORKSPACE,
                    "args->workspace is NULL but the plan needs %llu bytes (ggemm_plan_workspace_size)",
                    (unsigned long long)needed);
    }
    // The per-expert tensor maps of discrete mode need 64 B; the tile counter gets its own
    // 128-byte line. cudaMalloc returns 256-byte aligned memory.
    if (reinterpret_cast<uintptr_t>(workspace) % kWorkspaceAlignment != 0) {
        return fail(GGEMM_ERROR_WORKSPACE, "args->workspace = %p is not %llu-byte aligned", workspace,
                    (unsigned long long)kWorkspaceAlignment);
    }
    if (workspace_size < needed) {
        return fail(GGEMM_ERROR_WORKSPACE,
                    "args->workspace_size = %llu is smaller than the %llu bytes the plan needs",
                    (unsigned long long)workspace_size, (unsigned long long)needed);
    }
    return GGEMM_SUCCESS;
}

ggemm_status_t check_residency(const PointerRule* rules, int count, const void* workspace, uint64_t needed,
                               int32_t current_device, int32_t device, const PointerOracle& oracle) noexcept {
    if (current_device != device) {
        return fail(GGEMM_ERROR_WRONG_DEVICE,
                    "the current CUDA device is %d but the plan runs on device %d: call "
                    "cudaSetDevice(%d) before executing",
                    current_device, device, device);
    }
    // The only questions that cost a driver call each (~80 ns, bench host/parts/*). A pointer in
    // a mapping an earlier answer of this call found resident is not asked about again: the
    // small arrays of a call (offsets, alpha, prob, the status word) often share one, as
    // cudaMalloc, PyTorch's caching allocator and stream-ordered pools place them. Nothing is
    // kept between calls: memory may be freed and its addresses reused.
    struct Mapping {
        uintptr_t begin, end;
    };
    constexpr int kMaxResidentMappings = 16;  // past it, pointers are simply asked about
    Mapping resident_mappings[kMaxResidentMappings];
    int known = 0;
    const auto resident = [&](const char* name, const void* pointer) -> ggemm_status_t {
        const auto address = reinterpret_cast<uintptr_t>(pointer);
        for (int i = 0; i < known; ++i)
            if (address >= resident_mappings[i].begin && address < resident_mappings[i].end) return GGEMM_SUCCESS;
        const PointerFacts facts = oracle.query(pointer);
        if (is_memory_of_device(facts, device)) {
            if (known < kMaxResidentMappings && facts.mapping_end > facts.mapping_begin)
                resident_mappings[known++] = {facts.mapping_begin, facts.mapping_end};
            return GGEMM_SUCCESS;
        }
        char what[160];
        describe_memory(facts, what, sizeof what);
        return fail(GGEMM_ERROR_NOT_DEVICE_MEMORY,
                    "args->%s = %p is %s; it must be device memory of the plan's device %d (or managed memory)",
                    name, pointer, what, device);
    };
    for (int i = 0; i < count; ++i) {
        if (rules[i].pointer == nullptr) continue;
        const ggemm_status_t status = resident(rules[i].name, rules[i].pointer);
        if (status != GGEMM_SUCCESS) return status;
    }
    return needed > 0 ? resident("workspace", workspace) : GGEMM_SUCCESS;
}

namespace {

// The fused activation's rules: a known activation, whole 64-column gate/up blocks, and for
// the clamped GeGLU finite constants with a positive limit. The constants of other activations
// are ignored (a struct zeroed without ggemm_plan_desc_init stays valid without an activation).
ggemm_status_t check_activation(const ggemm_plan_desc& desc) {
    if (desc.activation != GGEMM_ACTIVATION_NONE && desc.activation != GGEMM_ACTIVATION_SWIGLU &&
        desc.activation != GGEMM_ACTIVATION_CLAMPED_GEGLU) {
        return fail(GGEMM_ERROR_INVALID_VALUE,
                    "desc->activation must be GGEMM_ACTIVATION_NONE (0), GGEMM_ACTIVATION_SWIGLU (1) or "
                    "GGEMM_ACTIVATION_CLAMPED_GEGLU (2), got %d",
                    desc.activation);
    }
    if (desc.glu_backward != 0 && desc.glu_backward != 1) {
        return fail(GGEMM_ERROR_INVALID_VALUE, "desc->glu_backward must be 0 or 1, got %d", desc.glu_backward);
    }
    if (desc.activation != GGEMM_ACTIVATION_NONE && desc.split_k >= 2) {
        return fail(GGEMM_ERROR_UNSUPPORTED_CONFIG,
                    "desc->split_k = %d with desc->activation = %s: the fused GLU and dGLU epilogues run on whole "
                    "sums of K, never split; use split_k 0 or 1",
                    desc.split_k, activation_name(desc.activation));
    }
    if (desc.activation == GGEMM_ACTIVATION_NONE) {
        if (desc.glu_backward) {
            return fail(GGEMM_ERROR_INVALID_VALUE,
                        "desc->glu_backward = 1 needs the forward's activation: desc->activation is "
                        "GGEMM_ACTIVATION_NONE");
        }
        return GGEMM_SUCCESS;
    }
    if (!desc.glu_backward && desc.n % (2 * GGEMM_GLU_BLOCK_COLUMNS) != 0) {
        return fail(GGEMM_ERROR_INVALID_SHAPE,
                    "desc->n = %lld must be a multiple of 64 with desc->activation = %s: the pre-activation "
                    "columns come in blocks of %d gate and %d up columns",
                    (ll)desc.n, activation_name(desc.activation), GGEMM_GLU_BLOCK_COLUMNS, GGEMM_GLU_BLOCK_COLUMNS);
    }
    if (desc.glu_backward) {
        if (desc.n % GGEMM_GLU_BLOCK_COLUMNS != 0) {
            return fail(GGEMM_ERROR_INVALID_SHAPE,
                        "desc->n = %lld must be a multiple of %d with desc->glu_backward = 1: N is the "
                        "activation's width, half the forward's N, whose blocks are %d gate and %d up columns",
                        (ll)desc.n, GGEMM_GLU_BLOCK_COLUMNS, GGEMM_GLU_BLOCK_COLUMNS, GGEMM_GLU_BLOCK_COLUMNS);
        }
        if (desc.generate_c) {
            return fail(GGEMM_ERROR_INVALID_VALUE,
                        "desc->generate_c must be 0 with desc->glu_backward = 1 (dGLU writes d_pre to D and "
                        "d_prob; it has no C), got 1");
        }
        if (desc.bias_dtype != GGEMM_DTYPE_NONE) {
            return fail(GGEMM_ERROR_INVALID_VALUE,
                        "desc->bias_dtype must be GGEMM_DTYPE_NONE with desc->glu_backward = 1 (the "
                        "input-gradient GEMM has no bias), got %s",
                        dtype_name(desc.bias_dtype));
        }
        if (!is_output_dtype(desc.glu_pre_dtype)) {
            return fail(GGEMM_ERROR_INVALID_DTYPE,
                        "desc->glu_pre_dtype must be GGEMM_DTYPE_BF16 (1), FP16 (2) or FP32 (3) (the saved "
                        "pre-activation, the forward's c_dtype), got %d",
                        desc.glu_pre_dtype);
        }
    }
    if (desc.activation != GGEMM_ACTIVATION_CLAMPED_GEGLU) return GGEMM_SUCCESS;
    const struct {
        const char* name;
        float value;
    } constants[] = {{"glu_scale", desc.glu_scale}, {"glu_limit", desc.glu_limit}, {"glu_offset", desc.glu_offset}};
    for (const auto& constant : constants) {
        if (!std::isfinite(constant.value)) {
            return fail(GGEMM_ERROR_INVALID_VALUE, "desc->%s must be finite, got %g", constant.name,
                        static_cast<double>(constant.value));
        }
    }
    if (!(desc.glu_limit > 0.0f)) {
        return fail(GGEMM_ERROR_INVALID_VALUE,
                    "desc->glu_limit must be > 0, got %g (ggemm_plan_desc_init writes the default 7)",
                    static_cast<double>(desc.glu_limit));
    }
    return GGEMM_SUCCESS;
}

}  // namespace

ggemm_status_t validate_desc_fields(const ggemm_plan_desc& desc) noexcept {
    if (desc.reserved0 != 0) {
        return fail(GGEMM_ERROR_INVALID_VALUE, "desc->reserved0 must be 0, got %d", desc.reserved0);
    }
    if (desc.reserved1 != 0) {
        return fail(GGEMM_ERROR_INVALID_VALUE, "desc->reserved1 must be 0, got %d", desc.reserved1);
    }
    if (desc.reserved2 != 0) {
        return fail(GGEMM_ERROR_INVALID_VALUE, "desc->reserved2 must be 0, got %d", desc.reserved2);
    }
    if (desc.split_k < 0 || desc.split_k > kMaxSplitK) {
        return fail(GGEMM_ERROR_UNSUPPORTED_CONFIG,
                    "desc->split_k must be 0 (choose), 1 (never split K) or up to %d splits, got %d", kMaxSplitK,
                    desc.split_k);
    }
    // K is checked later; here it may be anything, so its blocks are counted without overflow.
    const int64_t k_blocks = desc.k / kSplitBlockK + (desc.k % kSplitBlockK > 0 ? 1 : 0);
    if (desc.split_k > k_blocks) {
        return fail(GGEMM_ERROR_UNSUPPORTED_CONFIG,
                    "desc->split_k = %d splits K = %lld, which has only %lld blocks of %d: at most one split per block",
                    desc.split_k, static_cast<long long>(desc.k), static_cast<long long>(k_blocks), kSplitBlockK);
    }
    if (desc.weight_layout != GGEMM_WEIGHT_LAYOUT_K_MAJOR && desc.weight_layout != GGEMM_WEIGHT_LAYOUT_N_MAJOR) {
        return fail(GGEMM_ERROR_INVALID_VALUE,
                    "desc->weight_layout must be GGEMM_WEIGHT_LAYOUT_K_MAJOR (0) or "
                    "GGEMM_WEIGHT_LAYOUT_N_MAJOR (1), got %d",
                    desc.weight_layout);
    }
    ggemm_status_t status = check_experts_and_capacity(desc.num_experts, desc.m_capacity);
    if (status != GGEMM_SUCCESS) return status;
    status = check_extent("n", desc.n);
    if (status != GGEMM_SUCCESS) return status;
    status = check_extent("k", desc.k);
    if (status != GGEMM_SUCCESS) return status;
    if (desc.weight_mode != GGEMM_WEIGHTS_DENSE && desc.weight_mode != GGEMM_WEIGHTS_DISCRETE) {
        return fail(GGEMM_ERROR_INVALID_VALUE,
                    "desc->weight_mode must be GGEMM_WEIGHTS_DENSE (0) or GGEMM_WEIGHTS_DISCRETE (1), got %d",
                    desc.weight_mode);
    }
    // Dense B steps from expert to expert by N*K elements, a TMA global stride.
    if (desc.weight_mode == GGEMM_WEIGHTS_DENSE && desc.n * desc.k * 2 >= kMaxTmaStrideBytes) {
        return fail(GGEMM_ERROR_INVALID_SHAPE,
                    "desc->n * desc->k * 2 bytes (one expert of dense B) must be below 2^40 (the "
                    "TMA stride limit), got %lld x %lld; use discrete weights",
                    (ll)desc.n, (ll)desc.k);
    }
    if (desc.scheduler != GGEMM_SCHEDULER_STATIC && desc.scheduler != GGEMM_SCHEDULER_DYNAMIC) {
        return fail(GGEMM_ERROR_INVALID_VALUE,
                    "desc->scheduler must be GGEMM_SCHEDULER_STATIC (0) or GGEMM_SCHEDULER_DYNAMIC (1), got %d",
                    desc.scheduler);
    }
    if (desc.generate_c != 0 && desc.generate_c != 1) {
        return fail(GGEMM_ERROR_INVALID_VALUE, "desc->generate_c must be 0 or 1, got %d", desc.generate_c);
    }
    if (!is_output_dtype(desc.c_dtype)) {
        return fail(GGEMM_ERROR_INVALID_DTYPE,
                    "desc->c_dtype must be GGEMM_DTYPE_BF16 (1), GGEMM_DTYPE_FP16 (2) or GGEMM_DTYPE_FP32 (3), got %d",
                    desc.c_dtype);
    }
    if (!is_output_dtype(desc.d_dtype)) {
        return fail(GGEMM_ERROR_INVALID_DTYPE,
                    "desc->d_dtype must be GGEMM_DTYPE_BF16 (1), GGEMM_DTYPE_FP16 (2) or GGEMM_DTYPE_FP32 (3), got %d",
                    desc.d_dtype);
    }
    if (desc.bias_dtype != GGEMM_DTYPE_NONE && !is_output_dtype(desc.bias_dtype)) {
        return fail(GGEMM_ERROR_INVALID_DTYPE,
                    "desc->bias_dtype must be GGEMM_DTYPE_NONE (0), BF16 (1), FP16 (2) or FP32 (3), got %d",
                    desc.bias_dtype);
    }
    if (desc.sm_margin < 0) {
        return fail(GGEMM_ERROR_UNSUPPORTED_CONFIG, "desc->sm_margin must be >= 0, got %d", desc.sm_margin);
    }
    return check_activation(desc);
}

ggemm_status_t validate_desc_for_device(const ggemm_plan_desc& desc, const DeviceInfo& device,
                                        VariantList variants) noexcept {
    int32_t arch = 0;
    ggemm_status_t status =
        check_device_and_kernels(desc.device, desc.sm_margin, device, variants, "kernel variant", &arch);
    if (status != GGEMM_SUCCESS) return status;
    if (!variant_values(variants, arch, &KernelVariant::weight_layout).contains(desc.weight_layout)) {
        return fail(GGEMM_ERROR_UNSUPPORTED_CONFIG,
                    "desc->weight_layout = %s (%d) is not supported on SM%d (device %d, %s): this build of "
                    "ggemm has no SM%d kernel that reads %s weights; pass the weights K-major "
                    "(GGEMM_WEIGHT_LAYOUT_K_MAJOR, each B_g N x K)",
                    weight_layout_name(desc.weight_layout), desc.weight_layout, arch, desc.device, device.name,
                    arch, weight_layout_name(desc.weight_layout));
    }
    status = check_override("tile_m", desc.tile_m, variants, arch, &KernelVariant::tile_m);
    if (status != GGEMM_SUCCESS) return status;
    status = check_override("tile_n", desc.tile_n, variants, arch, &KernelVariant::tile_n);
    if (status != GGEMM_SUCCESS) return status;
    return check_override("cluster_m", desc.cluster_m, variants, arch, &KernelVariant::cluster_m);
}

ggemm_status_t validate_plan_desc(const ggemm_plan_desc& desc, const DeviceInfo& device,
                                  VariantList variants) noexcept {
    const ggemm_status_t status = validate_desc_fields(desc);
    if (status != GGEMM_SUCCESS) return status;
    return validate_desc_for_device(desc, device, variants);
}

namespace {

constexpr int kPointerRules = 13;

// The pointers execute checks for alignment and residency. C is ignored (and may be anything)
// when the plan does not write it.
void pointer_rules(const ggemm_plan_desc& desc, const ggemm_args& args, PointerRule (&rules)[kPointerRules]) {
    const void* c = desc.generate_c ? args.c : nullptr;
    rules[0] = {"a", args.a, kDataAlignment};
    rules[1] = {"b", args.b, kDataAlignment};
    rules[2] = {"b_ptrs", args.b_ptrs, kPointerArrayAlignment};
    rules[3] = {"padded_offsets", args.padded_offsets, kDataAlignment};
    rules[4] = {"alpha", args.alpha, kDataAlignment};
    rules[5] = {"prob", args.prob, kDataAlignment};
    rules[6] = {"bias", args.bias, kDataAlignment};
    rules[7] = {"c", c, kDataAlignment};
    rules[8] = {"d", args.d, kDataAlignment};
    rules[9] = {"device_status", args.device_status, kDeviceStatusAlignment};
    rules[10] = {"valid_rows", args.valid_rows, kValidRowsAlignment};
    // dGLU's inputs and outputs; ignored (and may be anything) by other plans.
    rules[11] = {"glu_pre", desc.glu_backward ? args.glu_pre : nullptr, kDataAlignment};
    rules[12] = {"d_prob", desc.glu_backward ? args.d_prob : nullptr, kDataAlignment};
}

// The workspace this call needs: dGLU's partials grow with its M.
uint64_t needed_workspace(const ggemm_plan& plan, int64_t m) {
    const ggemm_plan_desc& desc = plan.desc;
    if (!desc.glu_backward) return plan.workspace_bytes;
    return call_workspace_bytes(desc.weight_mode, desc.scheduler, desc.num_experts, plan.k_splits, plan.split_rows,
                                desc.glu_backward, desc.n, m);
}

}  // namespace

ggemm_status_t validate_args(const ggemm_plan& plan, const ggemm_args& args, int64_t m_capacity,
                             int32_t current_device, const PointerOracle& oracle) noexcept {
    const ggemm_status_t status = validate_args_fields(plan, args, m_capacity);
    if (status != GGEMM_SUCCESS) return status;
    return validate_args_for_device(plan, args, current_device, oracle);
}

ggemm_status_t validate_args_fields(const ggemm_plan& plan, const ggemm_args& args,
                                    int64_t m_capacity) noexcept {
    const ggemm_plan_desc& desc = plan.desc;
    if (args.reserved0 != 0) {
        return fail(GGEMM_ERROR_INVALID_VALUE, "args->reserved0 must be 0, got %u", args.reserved0);
    }
    ggemm_status_t status = check_args_m(args.m, m_capacity);
    if (status != GGEMM_SUCCESS) return status;
    // --- required pointers ----------------------------------------------------------------
    const PointerRule required[] = {
        {"a", args.a, 0}, {"padded_offsets", args.padded_offsets, 0}, {"d", args.d, 0},
    };
    for (const PointerRule& rule : required) {
        if (rule.pointer == nullptr) {
            return fail(GGEMM_ERROR_NULL_ARGUMENT, "args->%s is NULL; it is required", rule.name);
        }
    }
    if (desc.glu_backward && args.glu_pre == nullptr) {
        return fail(GGEMM_ERROR_NULL_ARGUMENT,
                    "args->glu_pre is NULL but the plan is dGLU (glu_backward = 1): pass the saved M x 2N "
                    "pre-activation");
    }
    if (desc.glu_backward && args.d_prob == nullptr) {
        return fail(GGEMM_ERROR_NULL_ARGUMENT,
                    "args->d_prob is NULL but the plan is dGLU (glu_backward = 1): pass an M fp32 output");
    }
    if (desc.generate_c && args.c == nullptr) {
        return fail(GGEMM_ERROR_NULL_ARGUMENT,
                    "args->c is NULL but the plan has generate_c = 1 (C is written)");
    }
    // --- bias -----------------------------------------------------------------------------
    const bool plan_has_bias = desc.bias_dtype != GGEMM_DTYPE_NONE;
    if (plan_has_bias && args.bias == nullptr) {
        return fail(GGEMM_ERROR_BIAS_MISMATCH,
                    "args->bias is NULL but the plan has bias_dtype = %s: pass the L x N bias",
                    dtype_name(desc.bias_dtype));
    }
    if (!plan_has_bias && args.bias != nullptr) {
        return fail(GGEMM_ERROR_BIAS_MISMATCH,
                    "args->bias is set but the plan has bias_dtype = NONE: create the plan with "
                    "a bias dtype, or pass bias = NULL");
    }
    // --- weights --------------------------------------------------------------------------
    const bool dense = desc.weight_mode == GGEMM_WEIGHTS_DENSE;
    const char* mode = dense ? "dense weights (GGEMM_WEIGHTS_DENSE): set args->b"
                             : "discrete weights (GGEMM_WEIGHTS_DISCRETE): set args->b_ptrs";
    if (args.b != nullptr && args.b_ptrs != nullptr) {
        return fail(GGEMM_ERROR_WEIGHT_SOURCE,
                    "both args->b and args->b_ptrs are set; give exactly one: the plan uses %s", mode);
    }
    if (args.b == nullptr && args.b_ptrs == nullptr) {
        return fail(GGEMM_ERROR_WEIGHT_SOURCE, "neither args->b nor args->b_ptrs is set: the plan uses %s", mode);
    }
    if (dense && args.b == nullptr) {
        return fail(GGEMM_ERROR_WEIGHT_SOURCE,
                    "args->b_ptrs is set but the plan uses %s and leave b_ptrs NULL", mode);
    }
    if (!dense && args.b_ptrs == nullptr) {
        return fail(GGEMM_ERROR_WEIGHT_SOURCE,
                    "args->b is set but the plan uses %s and leave b NULL", mode);
    }
    // --- valid rows -------------------------------------------------------------------------
    if (args.valid_rows != nullptr && plan.variant.arch == 100 && plan.variant.cluster_m > 1) {
        return fail(GGEMM_ERROR_UNSUPPORTED_CONFIG,
                    "args->valid_rows is set but the plan runs an SM100 CTA-pair kernel (%s), whose work units "
                    "are whole 256-row blocks of an expert: valid-row counts are supported by the SM90 kernels "
                    "and the one-CTA SM100 kernels (docs/SM100.md); pass valid_rows = NULL, or plan with "
                    "tile_m = 128",
                    plan.variant.name);
    }
    if (args.valid_rows != nullptr && desc.glu_backward) {
        return fail(GGEMM_ERROR_UNSUPPORTED_CONFIG,
                    "args->valid_rows is set but the plan is dGLU (desc->glu_backward = 1), which writes d_prob "
                    "for every row; pass valid_rows = NULL");
    }
    PointerRule pointers[kPointerRules];
    pointer_rules(desc, args, pointers);
    status = check_alignment(pointers, kPointerRules);
    if (status != GGEMM_SUCCESS) return status;
    return check_workspace(needed_workspace(plan, args.m), args.workspace, args.workspace_size);
}

ggemm_status_t validate_args_for_device(const ggemm_plan& plan, const ggemm_args& args,
                                        int32_t current_device, const PointerOracle& oracle) noexcept {
    PointerRule pointers[kPointerRules];
    pointer_rules(plan.desc, args, pointers);
    return check_residency(pointers, kPointerRules, args.workspace, needed_workspace(plan, args.m), current_device,
                           plan.desc.device, oracle);
}

}  // namespace ggemm
