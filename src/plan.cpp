// The planner: validate, filter the compiled variants, score them (src/heuristics.h), keep the
// best, and say why in the plan's description.
#include "src/plan.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime_api.h>
#include <vector>

#include "src/variants.h"
#include "src/workspace.h"
#include "src/error.h"
#include "src/fill.h"
#include "src/heuristics.h"
#include "src/tensor_map.h"
#include "src/validate.h"

namespace ggemm {

void appendf(std::string* text, const char* format, ...) {
    char line[512];
    va_list arguments;
    va_start(arguments, format);
    std::vsnprintf(line, sizeof line, format, arguments);
    va_end(arguments);
    text->append(line);
}

namespace {

// The start of the reason for a variant that GGEMM_KERNEL leaves out (build_plan counts them).
constexpr char kOutsideKernelPrefix[] = "name does not start with GGEMM_KERNEL=";

// Why `variant` cannot serve this plan, or nullptr if it can. `reason` holds the text.
const char* exclusion(const KernelVariant& variant, const ggemm_plan_desc& desc, const DeviceInfo& device,
                      const char* kernel_prefix, char* reason, std::size_t size) {
    if (variant.tile_m <= 0 || variant.tile_n <= 0 || variant.block_k <= 0 || variant.stages <= 0 ||
        variant.cluster_m <= 0 || variant.launch == nullptr) {
        std::snprintf(reason, size, "malformed variant description (a bug in ggemm)");
        return reason;
    }
    if (variant.weight_layout != desc.weight_layout) {
        std::snprintf(reason, size, "reads %s weights, desc->weight_layout = %s", weight_layout_name(variant.weight_layout),
                      weight_layout_name(desc.weight_layout));
        return reason;
    }
    if (desc.tile_m != 0 && variant.tile_m != desc.tile_m) {
        std::snprintf(reason, size, "tile_m %d, desc->tile_m = %d", variant.tile_m, desc.tile_m);
        return reason;
    }
    if (desc.tile_n != 0 && variant.tile_n != desc.tile_n) {
        std::snprintf(reason, size, "tile_n %d, desc->tile_n = %d", variant.tile_n, desc.tile_n);
        return reason;
    }
    if (desc.cluster_m != 0 && variant.cluster_m != desc.cluster_m) {
        std::snprintf(reason, size, "cluster_m %d, desc->cluster_m = %d", variant.cluster_m, desc.cluster_m);
        return reason;
    }
    if (desc.scheduler == GGEMM_SCHEDULER_DYNAMIC && !variant.dynamic_scheduler) {
        std::snprintf(reason, size,
                      "runs the static scheduler only (both CTAs of a cluster take the same tiles), "
                      "desc->scheduler = dynamic");
        return reason;
    }
    if (kernel_prefix != nullptr && std::strncmp(variant.name, kernel_prefix, std::strlen(kernel_prefix)) != 0) {
        std::snprintf(reason, size, "%s%.60s", kOutsideKernelPrefix, kernel_prefix);
        return reason;
    }
    if (variant.d_box_rows > 0 && (desc.d_dtype != GGEMM_DTYPE_BF16 || desc.generate_c)) {
        std::snprintf(reason, size, "stores D with TMA, which serves a bf16 D without C only");
        return reason;
    }
    if (variant.tma_dglu && !desc.glu_backward) {
        std::snprintf(reason, size, "loads the saved pre-activation with TMA, which serves dGLU only, "
                                    "desc->glu_backward = 0");
        return reason;
    }
    if (variant.tma_dglu && desc.glu_pre_dtype != GGEMM_DTYPE_BF16) {
        std::snprintf(reason, size, "loads the saved pre-activation with TMA, which serves a bf16 one only, "
                                    "desc->glu_pre_dtype = %s", dtype_name(desc.glu_pre_dtype));
        return reason;
    }
    if (variant.d_box_rows > 0 && !variant.tma_dglu && desc.glu_backward) {
        std::snprintf(reason, size, "stores D with TMA, which serves the GLU forward only, desc->glu_backward = 1");
        return reason;
    }
    if (!variant.fused_glu && desc.activation != GGEMM_ACTIVATION_NONE) {
        std::snprintf(reason, size, "%sfuses no GLU epilogue, desc->activation = %s",
                      variant.d_box_rows > 0 ? "stores D with TMA and " : "", activation_name(desc.activation));
        return reason;
    }
    // A GGEMM_KERNEL prefix that names it (holds "pingpong") times it on any call; a shorter one,
    // e.g. every TMA-store variant's, leaves it to its regime.
    if (variant.pingpong && (kernel_prefix == nullptr || std::strstr(kernel_prefix, "pingpong") == nullptr)) {
        const int32_t grid = persistent_grid(device.sm_count, desc.sm_margin, variant.cluster_m);
        if (!pingpong_pays(variant, desc.m_capacity, desc.num_experts, desc.n, desc.k, grid)) {
            const double per_cta =
                grid > 0 ? static_cast<double>(tile_count(variant, desc.m_capacity, desc.n)) / grid : 0;
            std::snprintf(
                reason, size,
                "ping-pong, for m_capacity / L <= %lld, K <= %lld, tiles per CTA >= %lld (here %lld, %lld, %.1f)",
                static_cast<long long>(kPingPongRegime.max_rows_per_expert),
                static_cast<long long>(kPingPongRegime.max_k), static_cast<long long>(kPingPongRegime.min_tiles_per_cta),
                static_cast<long long>(desc.m_capacity / desc.num_experts), static_cast<long long>(desc.k), per_cta);
            return reason;
        }
    }
    if (desc.num_experts > variant.max_experts) {
        std::snprintf(reason, size, "holds the offsets of at most %d experts, L = %d", variant.max_experts,
                      desc.num_experts);
        return reason;
    }
    if (variant.smem_bytes > device.max_smem_optin) {
        std::snprintf(reason, size, "needs %d B of shared memory, the device allows %d B per block",
                      variant.smem_bytes, device.max_smem_optin);
        return reason;
    }
    if (desc.split_k > variant.max_split_k) {
        std::snprintf(reason, size, "splits K at most %d way%s, desc->split_k = %d", variant.max_split_k,
                      variant.max_split_k == 1 ? "" : "s", desc.split_k);
        return reason;
    }
    if (persistent_grid(device.sm_count, desc.sm_margin, variant.cluster_m) == 0) {
        std::snprintf(reason, size, "%d SMs - margin %d leave no whole cluster of %d",
                      device.sm_count, desc.sm_margin, variant.cluster_m);
        return reason;
    }
    return nullptr;
}

void describe_score(std::string* text, const char* mark, const KernelVariant& variant,
                    const VariantScore& score, int64_t n) {
    appendf(text,
            "  %-8s %.4f = width %.3f%s x columns %.4f (%lld of %lld) x tile_m %.2f x cluster "
            "%.2f x grid %.4f (%d CTAs) x rounds %.4f (%.2f) x output %.2f  %s%s\n",
            mark, score.total, score.width_efficiency, score.width_in_table ? "" : " (assumed)",
            score.column_use, static_cast<long long>(n), static_cast<long long>(score.padded_n),
            score.tile_m_factor, score.cluster_factor, score.grid_use, score.grid, score.round_use, score.rounds,
            score.output_factor, variant.name, variant.proven ? "" : " (never run on a GPU: ranked below proven ones)");
}

std::string describe_plan(const ggemm_plan& plan, const std::vector<Candidate>& candidates,
                          const FillDecision& fill, const std::string& excluded, const char* kernel_prefix) {
    const ggemm_plan_desc& desc = plan.desc;
    const DeviceInfo& device = plan.device;
    const KernelVariant& variant = plan.variant;
    std::string text;
    appendf(&text, "ggemm plan on device %d (%s, SM%d, compute capability %d.%d, %d SMs, %d B shared memory per block)\n",
            desc.device, device.name, arch_of(device), device.cc_major, device.cc_minor,
            device.sm_count, device.max_smem_optin);
    appendf(&text, "problem: L = %d experts, N = %lld, K = %lld, M up to %lld in multiples of 256; %s %s weights "
            "(%s); C %s%s; D %s; bias %s\n",
            desc.num_experts, static_cast<long long>(desc.n), static_cast<long long>(desc.k),
            static_cast<long long>(desc.m_capacity),
            desc.weight_mode == GGEMM_WEIGHTS_DENSE ? "dense" : "discrete (b_ptrs)",
            weight_layout_name(desc.weight_layout),
            desc.weight_layout == GGEMM_WEIGHT_LAYOUT_N_MAJOR ? "each B_g is K x N, N contiguous"
                                                              : "each B_g is N x K, K contiguous",
            dtype_name(desc.c_dtype), desc.generate_c ? " (written)" : " (not written)",
            dtype_name(desc.d_dtype), dtype_name(desc.bias_dtype));
    if (desc.activation == GGEMM_ACTIVATION_NONE) {
        appendf(&text, "activation: none (D is M x N)\n");
    } else if (desc.glu_backward) {
        appendf(&text,
                "activation: %s backward (dGLU) fused in the epilogue: R = alpha * A @ B_g^T is M x %lld; d_pre "
                "(D, M x %lld) from the saved %s pre-activation; d_prob (M, fp32) from per-tile partials in the "
                "workspace and an ordered reduction\n",
                activation_name(desc.activation), static_cast<long long>(desc.n),
                static_cast<long long>(2 * desc.n), dtype_name(desc.glu_pre_dtype));
    } else {
        appendf(&text,
                "activation: %s fused in the epilogue: D = prob * act(gate, up) is M x %lld from blocks of 32 gate "
                "and 32 up columns; C%s is the M x N pre-activation\n",
                activation_name(desc.activation), static_cast<long long>(desc.n / 2),
                desc.generate_c ? "" : " (not written)");
    }
    if (desc.activation == GGEMM_ACTIVATION_CLAMPED_GEGLU) {
        appendf(&text, "activation constants: s = %.9g, limit = %.9g, offset = %.9g\n",
                static_cast<double>(desc.glu_scale), static_cast<double>(desc.glu_limit),
                static_cast<double>(desc.glu_offset));
    }
    appendf(&text, "kernel: %s: tile %d x %d, block_k %d, %d stages, cluster %d along M, %d threads, %d B shared memory, "
            "reads %s B\n",
            variant.name, variant.tile_m, variant.tile_n, variant.block_k, variant.stages,
            variant.cluster_m, variant.threads, variant.smem_bytes, weight_layout_name(variant.weight_layout));
    appendf(&text, "scheduler: %s\n",
            desc.scheduler == GGEMM_SCHEDULER_STATIC
                ? "static (tiles dealt over the persistent grid by a fixed rule)"
                : "dynamic (tiles claimed from a counter in the workspace, zeroed in-stream)");
    appendf(&text, "grid: %d persistent CTAs (%d SMs - margin %d, rounded down to whole clusters of %d)\n",
            plan.grid, device.sm_count, desc.sm_margin, variant.cluster_m);
    if (variant.max_tail_pieces > 1) {
        appendf(&text,
                "last round: when M leaves a partial last round of tiles small enough, its tiles run as up to %d "
                "pieces along N (full K each)\n",
                variant.max_tail_pieces);
    } else {
        appendf(&text, "last round: tiles are never cut\n");
    }
    appendf(&text, "workspace: %llu bytes per call in flight\n",
            static_cast<unsigned long long>(plan.workspace_bytes));
    appendf(&text, "overrides: tile_m %d, tile_n %d, cluster_m %d, split_k %d (0 = planner's choice)\n",
            desc.tile_m, desc.tile_n, desc.cluster_m, desc.split_k);
    if (variant.d_box_rows == 0) {
        appendf(&text, "output: C and D stored by the math warps\n");
    } else if (variant.tma_dglu) {
        appendf(&text,
                "output: each tile's saved pre-activation loaded by TMA into a buffer in shared memory during its "
                "main loop, turned into d_pre (D, M x %lld) there and stored from it by TMA\n",
                static_cast<long long>(2 * desc.n));
    } else if (desc.activation != GGEMM_ACTIVATION_NONE) {
        appendf(&text,
                "output: D (M x %lld, the activation's output) stored by TMA from a tile buffer in shared memory, "
                "one box of 64 output columns per 128 pre-activation columns\n",
                static_cast<long long>(desc.n / 2));
    } else {
        appendf(&text, "output: D stored by TMA from a tile buffer in shared memory\n");
    }
    // SM90's plain-epilogue and GLU kernel instances (src/variants_sm90.cuh): which calls run them.
    if (variant.arch == 90 && !variant.tma_dglu) {
        if (variant.glu_instance && desc.activation != GGEMM_ACTIVATION_NONE) {
            appendf(&text,
                    "kernel instance: %sthe GLU instance (each tile's activation computed while the tensor cores run "
                    "its last and the next tile's first k-blocks, compiled alone)%s\n",
                    plan.k_splits > 1 ? "calls with K whole (M past the split rows) run " : "",
                    plan.k_splits > 1 ? "; other calls the general one" : "");
        } else if (!plain_output(desc.generate_c != 0, desc.d_dtype, desc.activation, desc.glu_backward,
                                 variant.d_box_rows > 0)) {
            appendf(&text, "kernel instance: the general one (every epilogue)\n");
        } else {
            appendf(&text,
                    "kernel instance: calls without bias%s run the plain-epilogue instance (D = alpha x acc x prob, "
                    "or acc without alpha and prob, compiled alone); other calls the general one\n",
                    plan.k_splits > 1 ? " and with K whole (M past the split rows)" : "");
        }
    }
    if (desc.glu_backward && variant.arch == 100) {
        appendf(&text,
                "dGLU on SM100: each epilogue thread owns one row of R (its TMEM lane) and reads that row's saved "
                "pre-activation from global memory (into the L2 before the tile's accumulator is waited for); "
                "compiled for sm_100a and checked on the CPU only, never run on an SM100 GPU\n");
    }
    if (kernel_prefix != nullptr) appendf(&text, "kernels restricted to names starting with GGEMM_KERNEL=%.60s\n", kernel_prefix);
    appendf(&text, "why: highest score of %zu candidate%s, those never run on a GPU after the rest (then the fill rule below); score = width efficiency x column use x tile_m x cluster x grid use x round use x output\n",
            candidates.size(), candidates.size() == 1 ? "" : "s");
    const bool large = large_experts(desc.m_capacity, desc.num_experts);
    appendf(&text, "ties: %s stages first (experts of %s %lld rows on average%s)\n", large ? "fewer" : "more",
            large ? "at least" : "under", static_cast<long long>(kLargeExpertRows),
            large ? ": the shallower pipeline leaves room for a whole-tile output buffer" : "");
    for (const Candidate& candidate : candidates) {
        const char* mark = &candidate == fill.chosen ? "chosen" : &candidate == fill.primary ? "primary" : "";
        describe_score(&text, mark, *candidate.variant, candidate.score, desc.n);
    }
    text += excluded;
    describe_fill(&text, plan, fill);
    return text;
}

}  // namespace

uint64_t next_plan_serial() noexcept {
    static std::atomic<uint64_t> last_serial{0};
    return ++last_serial;
}

VariantList compiled_variants(int32_t arch) noexcept {
    VariantList list;
    if (arch == 90) list.items = sm90_variants(&list.count);
    if (arch == 100) list.items = sm100_variants(&list.count);
    if (list.items == nullptr) list.count = 0;
    return list;
}

ggemm_status_t build_plan(const ggemm_plan_desc& desc, const DeviceInfo& device, VariantList variants,
                          ggemm_plan* plan, const char* kernel_prefix) {
    ggemm_status_t status = validate_plan_desc(desc, device, variants);
    if (status != GGEMM_SUCCESS) return status;
    const int32_t arch = arch_of(device);

    std::vector<Candidate> candidates;
    std::string excluded;
    // The variants GGEMM_KERNEL leaves out go in one line after the others: listed one by one
    // they would push the reasons that decide a refusal past the end of its message.
    int unnamed = 0;
    const Candidate* best = nullptr;
    for (int i = 0; i < variants.count; ++i) {
        const KernelVariant& variant = variants.items[i];
        if (variant.arch != arch) continue;
        char reason[160];
        if (exclusion(variant, desc, device, kernel_prefix, reason, sizeof reason) != nullptr) {
            if (std::strncmp(reason, kOutsideKernelPrefix, sizeof kOutsideKernelPrefix - 1) == 0) {
                ++unnamed;
            } else {
                appendf(&excluded, "  excluded %s: %s\n", variant.name, reason);
            }
            continue;
        }
        candidates.push_back({&variant, score_variant(variant, desc.m_capacity, desc.n, device.sm_count, desc.sm_margin)});
    }
    if (unnamed > 0) {
        appendf(&excluded, "  excluded %d variant%s whose name%s not start with GGEMM_KERNEL=%.60s\n", unnamed,
                unnamed == 1 ? "" : "s", unnamed == 1 ? " does" : "s do", kernel_prefix);
    }
    const bool large = large_experts(desc.m_capacity, desc.num_experts);
    for (const Candidate& candidate : candidates) {
        if (best == nullptr || better_choice(*candidate.variant, candidate.score, *best->variant, best->score, large))
            best = &candidate;
    }
    if (best == nullptr) {
        return fail(GGEMM_ERROR_UNSUPPORTED_CONFIG,
                    "no compiled SM%d kernel variant can serve tile_m = %d, tile_n = %d, cluster_m = "
                    "%d (0 = any) with sm_margin = %d on device %d (%s):\n%s",
                    arch, desc.tile_m, desc.tile_n, desc.cluster_m, desc.sm_margin, desc.device,
                    device.name, excluded.c_str());
    }
    const FillDecision fill = decide_fill(desc, candidates, *best);
    plan->desc = desc;
    plan->device = device;
    plan->variant = *fill.chosen->variant;
    plan->grid = fill.chosen->score.grid;
    plan->k_splits = fill.splits;
    plan->split_rows = fill.splits > 1 ? split_rows(desc.m_capacity) : 0;
    plan->workspace_bytes = call_workspace_bytes(desc.weight_mode, desc.scheduler, desc.num_experts, plan->k_splits,
                                                 plan->split_rows, desc.glu_backward, desc.n, desc.m_capacity);
    plan->description = describe_plan(*plan, candidates, fill, excluded, kernel_prefix);
    plan->serial = next_plan_serial();
    return GGEMM_SUCCESS;
}

ggemm_status_t create_plan(const ggemm_plan_desc& desc, std::unique_ptr<ggemm_plan>* plan) {
    ggemm_status_t status = validate_desc_fields(desc);
    if (status != GGEMM_SUCCESS) return status;
    DeviceInfo device;
    status = query_device(desc.device, &device);
    if (status != GGEMM_SUCCESS) return status;
    auto built = std::make_unique<ggemm_plan>();
    // GGEMM_KERNEL: a benchmarking switch that times one kernel design against another in the
    // same process. Read here only, never when a plan runs.
    const char* kernel_prefix = std::getenv("GGEMM_KERNEL");
    if (kernel_prefix != nullptr && kernel_prefix[0] == '\0') kernel_prefix = nullptr;
    status = build_plan(desc, device, compiled_variants(arch_of(device)), built.get(), kernel_prefix);
    if (status != GGEMM_SUCCESS) return status;
    status = resolve_tensor_map_encoder();
    if (status != GGEMM_SUCCESS) return status;

    if (built->variant.prepare != nullptr) {
        // The shared-memory attribute belongs to the kernel on the current device: set it on
        // the plan's device, then give the caller back their current device.
        int previous = desc.device;
        cudaError_t error = cudaGetDevice(&previous);
        const bool switched = error == cudaSuccess && previous != desc.device;
        if (switched) error = cudaSetDevice(desc.device);
        if (error == cudaSuccess) error = built->variant.prepare();
        if (switched) {
            const cudaError_t restored = cudaSetDevice(previous);
            if (error == cudaSuccess) error = restored;  // never leave the caller on our device
        }
        if (error != cudaSuccess) {
            cudaGetLastError();
            return fail(GGEMM_ERROR_CUDA, "preparing kernel %s on device %d failed: %s (%s)",
                        built->variant.name, desc.device, cudaGetErrorName(error), cudaGetErrorString(error));
        }
    }
    if (log_enabled()) std::fprintf(stderr, "ggemm: created plan:\n%s", built->description.c_str());
    *plan = std::move(built);
    return GGEMM_SUCCESS;
}

}  // namespace ggemm
