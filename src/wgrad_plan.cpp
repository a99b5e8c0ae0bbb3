// The weight-gradient planner and ggemm_wgrad_plan_create.
#include "src/wgrad_plan.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime_api.h>
#include <string>

#include "kernels/common/wgrad_params.h"
#include "kernels/common/wgrad_schedule.h"
#include "src/error.h"
#include "src/structs.h"
#include "src/tensor_map.h"
#include "src/validate.h"
#include "src/workspace.h"

namespace ggemm {

namespace {

// The fraction of computed Q columns that are kept: the last tile along Q is partly padding.
double column_use(int64_t q, int32_t tile_q) {
    const int64_t padded = (q + tile_q - 1) / tile_q * tile_q;
    return static_cast<double>(q) / static_cast<double>(padded);
}

// Widest tile among those that waste the fewest Q columns: a wider tile reads each X1 k-block
// for more columns.
bool better_wgrad_choice(const WgradVariant& candidate, const WgradVariant& best, int64_t q) {
    const double a = column_use(q, candidate.tile_q), b = column_use(q, best.tile_q);
    if (a != b) return a > b;
    return candidate.tile_q > best.tile_q;
}

std::string describe_wgrad_plan(const ggemm_plan& plan, WgradVariantList variants, const WgradTiles& deal) {
    const int64_t tiles = deal.count();
    const ggemm_wgrad_desc& desc = plan.wgrad.desc;
    const WgradVariant& variant = plan.wgrad.variant;
    const DeviceInfo& device = plan.device;
    std::string text;
    appendf(&text,
            "ggemm weight-gradient plan on device %d (%s, SM%d, compute capability %d.%d, %d SMs, %d B shared memory "
            "per block)\n",
            desc.device, device.name, arch_of(device), device.cc_major, device.cc_minor, device.sm_count,
            device.max_smem_optin);
    appendf(&text,
            "problem: W_g = alpha_g * X1_g^T X2_g for L = %d experts, P = %lld, Q = %lld, over M up to %lld rows in "
            "multiples of 256; output %s, %s, %s\n",
            desc.num_experts, static_cast<long long>(desc.p), static_cast<long long>(desc.q),
            static_cast<long long>(desc.m_capacity), dtype_name(desc.out_dtype),
            desc.output_mode == GGEMM_WGRAD_OUTPUT_DENSE ? "dense L x P x Q" : "through L pointers (out_ptrs)",
            desc.accumulate ? "accumulated into (empty experts untouched)" : "overwritten (empty experts get zeros)");
    appendf(&text,
            "kernel: %s: tile %d (P) x %d (Q), %d rows per stage, %d stages, both operands MN-major (%s), %d threads, "
            "%d B shared memory\n",
            variant.name, variant.tile_p, variant.tile_q, variant.block_rows, variant.stages,
            variant.arch == 100 ? "tcgen05.mma with transpose A and B, one CTA, accumulators in tensor memory"
                                : "transposed wgmma",
            variant.threads, variant.smem_bytes);
    appendf(&text, "store: %s\n",
            !variant.tma_store
                ? "registers (each epilogue warp drains its 32 rows of the tile from tensor memory, 32 columns at a "
                  "time, and stores them from registers; this kernel has no TMA store path)"
            : plan.wgrad.store_path == kWgradStoreTma
                ? desc.accumulate
                      ? "TMA (each math warpgroup stages 64 rows x 128 bytes of the tile in shared memory, swizzled, "
                        "and adds them into the {Q, P, L} output with 3-D TMA reduce-adds, clipped at P and Q)"
                      : "TMA (each math warpgroup stages 64 rows x 128 bytes of the tile in shared memory, swizzled, "
                        "and stores them with 3-D TMA tensor stores into the {Q, P, L} output, clipped at P and Q)"
                : choose_wgrad_store_path(desc, nullptr) == kWgradStoreTma
                      ? "registers (GGEMM_WGRAD_STORE=registers: pairs stored straight from the accumulators)"
                      : "registers (pairs stored straight from the accumulators; TMA serves a dense output "
                        "overwritten, or accumulated into in fp32)");
    appendf(&text, "tiles: %lld (%d experts x P blocks x Q blocks), each summing all of its expert's rows (no split of K)\n",
            static_cast<long long>(tiles), desc.num_experts);
    // A tile costs its expert's rows (kernels/common/wgrad_schedule.h).
    appendf(&text, "scheduler: %s\n",
            desc.scheduler == GGEMM_SCHEDULER_DYNAMIC
                ? "dynamic (tiles claimed from a counter in the workspace, zeroed in-stream: CTAs stay busy "
                  "however uneven the experts' rows)"
            : variant.arch == 90
                ? wgrad_sorts_experts(deal, plan.grid)
                      ? "static (where the experts' rows differ, each CTA sorts the experts by rows on the device "
                        "and the tiles, largest experts first, are dealt over the persistent grid in rounds, every "
                        "other round in the opposite direction; else round-robin in expert order. Some CTAs still "
                        "finish early where experts are uneven: the dynamic scheduler keeps them busy)"
                      : "static (tiles dealt round-robin over the persistent grid in expert order: each expert "
                        "has as many tiles as the grid has CTAs or more, so each CTA gets about as many of every "
                        "expert's; a tile costs its expert's rows, and where experts are uneven some CTAs still "
                        "finish early: the dynamic scheduler keeps them busy)"
                : "static (tiles dealt round-robin over the persistent grid in expert order; a tile costs its "
                  "expert's rows, so where experts are uneven some CTAs finish early: the dynamic scheduler "
                  "keeps them busy)");
    appendf(&text, "grid: %d persistent CTAs (%d SMs - margin %d, at most one per tile)\n", plan.grid, device.sm_count,
            desc.sm_margin);
    appendf(&text, "workspace: %llu bytes per call in flight\n", static_cast<unsigned long long>(plan.workspace_bytes));
    appendf(&text, "why: the widest tile along Q among those that waste the fewest of Q's %lld columns:\n",
            static_cast<long long>(desc.q));
    for (int i = 0; i < variants.count; ++i) {
        const WgradVariant& v = variants.items[i];
        if (v.arch != arch_of(device)) continue;
        appendf(&text, "  %-8s column use %.4f  %s", v.name == variant.name ? "chosen" : "",
                column_use(desc.q, v.tile_q), v.name);
        if (v.max_experts < desc.num_experts) {
            appendf(&text, " (excluded: its shared copy of the offsets holds at most %d experts)", v.max_experts);
        }
        text += '\n';
    }
    return text;
}

}  // namespace

WgradVariantList compiled_wgrad_variants(int32_t arch) noexcept {
    WgradVariantList list;
    if (arch == 90) list.items = sm90_wgrad_variants(&list.count);
    if (arch == 100) list.items = sm100_wgrad_variants(&list.count);
    if (list.items == nullptr) list.count = 0;
    return list;
}

int32_t choose_wgrad_store_path(const ggemm_wgrad_desc& desc, const char* store_switch) noexcept {
    // Accumulating, TMA's reduce-add rounds old + new once, as the register path does, only in
    // fp32: a 16-bit output would be rounded twice (the staged value, then the sum).
    const bool serves = desc.output_mode == GGEMM_WGRAD_OUTPUT_DENSE &&
                        (desc.accumulate == 0 || desc.out_dtype == GGEMM_DTYPE_FP32);
    const bool registers_asked = store_switch != nullptr && std::strcmp(store_switch, "registers") == 0;
    return serves && !registers_asked ? kWgradStoreTma : kWgradStoreRegisters;
}

uint64_t wgrad_workspace_bytes(int32_t scheduler) noexcept {
    return scheduler == GGEMM_SCHEDULER_DYNAMIC ? kWorkspaceCounterBytes : 0;
}

ggemm_status_t build_wgrad_plan(const ggemm_wgrad_desc& desc, const DeviceInfo& device, WgradVariantList variants,
                                ggemm_plan* plan, const char* store_switch) {
    ggemm_status_t status = validate_wgrad_desc_fields(desc);
    if (status != GGEMM_SUCCESS) return status;
    status = validate_wgrad_desc_for_device(desc, device, variants);
    if (status != GGEMM_SUCCESS) return status;
    const int32_t arch = arch_of(device);
    const WgradVariant* best = nullptr;
    for (int i = 0; i < variants.count; ++i) {
        const WgradVariant& variant = variants.items[i];
        if (variant.arch != arch || variant.smem_bytes > device.max_smem_optin || variant.launch == nullptr ||
            variant.tile_p <= 0 || variant.tile_q <= 0 || variant.max_experts < desc.num_experts) {
            continue;
        }
        if (best == nullptr || better_wgrad_choice(variant, *best, desc.q)) best = &variant;
    }
    if (best == nullptr) {
        return fail(GGEMM_ERROR_UNSUPPORTED_CONFIG,
                    "no compiled SM%d weight-gradient kernel variant fits device %d (%s, %d B shared memory per block)",
                    arch, desc.device, device.name, device.max_smem_optin);
    }
    const WgradTiles tiles = wgrad_tiles(desc.num_experts, desc.p, desc.q, best->tile_p, best->tile_q);
    const int64_t sms = device.sm_count - desc.sm_margin;
    plan->kind = PlanKind::kWgrad;
    plan->device = device;
    plan->wgrad.desc = desc;
    plan->wgrad.variant = *best;
    plan->wgrad.store_path = best->tma_store ? choose_wgrad_store_path(desc, store_switch) : kWgradStoreRegisters;
    plan->grid = static_cast<int32_t>(tiles.count() < sms ? tiles.count() : sms);
    plan->workspace_bytes = wgrad_workspace_bytes(desc.scheduler);
    plan->description = describe_wgrad_plan(*plan, variants, tiles);
    plan->serial = next_plan_serial();
    return GGEMM_SUCCESS;
}

ggemm_status_t create_wgrad_plan(const ggemm_wgrad_desc& desc, std::unique_ptr<ggemm_plan>* plan) {
    ggemm_status_t status = validate_wgrad_desc_fields(desc);
    if (status != GGEMM_SUCCESS) return status;
    DeviceInfo device;
    status = query_device(desc.device, &device);
    if (status != GGEMM_SUCCESS) return status;
    auto built = std::make_unique<ggemm_plan>();
    // GGEMM_WGRAD_STORE=registers: a benchmarking and testing switch that times (or checks) the
    // register store path against the TMA one in the same process. Read here only.
    status = build_wgrad_plan(desc, device, compiled_wgrad_variants(arch_of(device)), built.get(),
                              std::getenv("GGEMM_WGRAD_STORE"));
    if (status != GGEMM_SUCCESS) return status;
    status = resolve_tensor_map_encoder();
    if (status != GGEMM_SUCCESS) return status;
    const WgradVariant& variant = built->wgrad.variant;
    if (variant.prepare != nullptr) {
        // The shared-memory attribute belongs to the kernel on the current device: set it on the
        // plan's device, then give the caller back their current device.
        int previous = desc.device;
        cudaError_t error = cudaGetDevice(&previous);
        const bool switched = error == cudaSuccess && previous != desc.device;
        if (switched) error = cudaSetDevice(desc.device);
        if (error == cudaSuccess) error = variant.prepare();
        if (switched) {
            const cudaError_t restored = cudaSetDevice(previous);
            if (error == cudaSuccess) error = restored;
        }
        if (error != cudaSuccess) {
            cudaGetLastError();
            return fail(GGEMM_ERROR_CUDA, "preparing kernel %s on device %d failed: %s (%s)", variant.name, desc.device,
                        cudaGetErrorName(error), cudaGetErrorString(error));
        }
    }
    if (log_enabled()) std::fprintf(stderr, "ggemm: created plan:\n%s", built->description.c_str());
    *plan = std::move(built);
    return GGEMM_SUCCESS;
}

}  // namespace ggemm

extern "C" {

GGEMM_API ggemm_status_t ggemm_wgrad_plan_create(ggemm_plan_t* plan, const ggemm_wgrad_desc* desc) {
    return ggemm::guarded("ggemm_wgrad_plan_create", [&] {
        if (plan == nullptr) {
            return ggemm::fail(GGEMM_ERROR_NULL_ARGUMENT,
                               "plan is NULL: pass the address of a ggemm_plan_t to receive the plan");
        }
        *plan = nullptr;
        ggemm_wgrad_desc checked;
        ggemm_status_t status = ggemm::read_wgrad_desc(desc, "desc", &checked);
        if (status != GGEMM_SUCCESS) return status;
        std::unique_ptr<ggemm_plan> created;
        status = ggemm::create_wgrad_plan(checked, &created);
        if (status == GGEMM_SUCCESS) *plan = created.release();
        return status;
    });
}

}  // extern "C"
