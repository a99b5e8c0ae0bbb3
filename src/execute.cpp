// ggemm_execute. The success path makes no allocation, no synchronization and no host read
// of device memory, so it can be captured in a CUDA graph; its cost is a handful of driver and
// runtime calls (pointer attributes, the tensor-map encodes a call on new buffers needs, a
// memset where one is needed, the launch), the launch most of it (bench host/parts/*).
#include "src/execute.h"

#include "src/workspace.h"
#include "src/driver_api.h"
#include "src/error.h"
#include "src/heuristics.h"
#include "src/pointer_oracle.h"
#include "src/structs.h"
#include "src/tensor_map.h"
#include "src/validate.h"

namespace ggemm {
namespace {

// The maps of this thread's last call, by plan, address and M: a steady state of calls on the
// same buffers (weights rarely move; activations and outputs are often reused) encodes each map
// once. A map depends on nothing else: shape, box and swizzle come from the plan, except A's box,
// which calls with valid-row counts may take smaller (KernelVariant::a_box_rows_counted): their A
// map has a slot of its own. Per thread, so plans stay immutable and execute takes no lock.
struct LastMap {
    uint64_t plan_serial = 0;  // 0: empty (plan serials start at 1)
    const void* address = nullptr;
    int64_t m = 0;
    CUtensorMap map;
};
thread_local LastMap t_a_map;
thread_local LastMap t_a_counted_map;
thread_local LastMap t_b_map;
thread_local LastMap t_d_map;
thread_local LastMap t_pre_map;

template <class MakeShape>
ggemm_status_t cached_map(LastMap& last, const ggemm_plan& plan, const void* address, int64_t m,
                          const char* operand, MakeShape make_shape, CUtensorMap* map) noexcept {
    if (plan.serial != 0 && last.plan_serial == plan.serial && last.address == address && last.m == m) {
        *map = last.map;
        return GGEMM_SUCCESS;
    }
    const ggemm_status_t status = encode_tensor_map(make_shape(), operand, map);
    if (status == GGEMM_SUCCESS) {
        last.plan_serial = plan.serial;
        last.address = address;
        last.m = m;
        last.map = *map;
    }
    return status;
}

// The tensor maps of one call, encoded on the host before anything is enqueued: an encode
// failure leaves the stream untouched.
ggemm_status_t encode_maps(const ggemm_plan& plan, const ggemm_args& args, LaunchParams* params) noexcept {
    const ggemm_plan_desc& desc = plan.desc;
    const KernelVariant& variant = plan.variant;
    const bool counted = args.valid_rows != nullptr;
    ggemm_status_t status = cached_map(
        counted ? t_a_counted_map : t_a_map, plan, args.a, args.m, "A",
        [&] { return a_map_shape(args.a, args.m, desc.k, variant, counted); }, &params->a_map);
    if (status != GGEMM_SUCCESS) return status;
    const bool dense = desc.weight_mode == GGEMM_WEIGHTS_DENSE;
    const void* b_address = dense ? args.b : b_template_placeholder(args.b_ptrs);
    status = cached_map(
        t_b_map, plan, b_address, 0, "B",
        [&] {
            return dense ? b_dense_map_shape(b_address, desc.n, desc.k, desc.num_experts, variant)
                         : b_template_map_shape(b_address, desc.n, desc.k, variant);
        },
        &params->b_map);
    if (status != GGEMM_SUCCESS || variant.d_box_rows == 0) return status;
    status = cached_map(
        t_d_map, plan, args.d, args.m, "D",
        [&] { return d_map_shape(args.d, args.m, desc.n, desc.activation, desc.glu_backward, variant); },
        &params->d_map);
    if (status != GGEMM_SUCCESS || !variant.tma_dglu) return status;
    return cached_map(
        t_pre_map, plan, args.glu_pre, args.m, "the saved pre-activation",
        [&] { return pre_map_shape(args.glu_pre, args.m, desc.n, variant); }, &params->pre_map);
}

}  // namespace

ggemm_status_t current_device(const DeviceInfo& expected, ThreadDevice* thread) noexcept {
    // The runtime reports the device of the thread's current context when there is one, so the
    // context's own device is the same answer.
    const DriverApi& api = driver_api();
    CUcontext context = nullptr;
    CUdevice handle = -1;
    if (expected.driver_handle >= 0 && api.ctx_get_current != nullptr && api.ctx_get_device != nullptr &&
        api.ctx_get_current(&context) == CUDA_SUCCESS && context != nullptr &&
        api.ctx_get_device(&handle) == CUDA_SUCCESS && handle == expected.driver_handle) {
        thread->device = expected.ordinal;
        thread->context_current = true;
        return GGEMM_SUCCESS;
    }
    thread->context_current = false;
    const cudaError_t error = cudaGetDevice(&thread->device);
    if (error == cudaSuccess) return GGEMM_SUCCESS;
    cudaGetLastError();
    return fail(GGEMM_ERROR_CUDA, "cudaGetDevice failed: %s (%s)", cudaGetErrorName(error), cudaGetErrorString(error));
}

ggemm_status_t make_context_current(const ThreadDevice& thread) noexcept {
    if (thread.context_current) return GGEMM_SUCCESS;
    const cudaError_t error = ensure_current_context(thread.device);
    if (error == cudaSuccess) return GGEMM_SUCCESS;
    return fail(GGEMM_ERROR_CUDA, "making device %d's context current failed: %s (%s)", thread.device,
                cudaGetErrorName(error), cudaGetErrorString(error));
}

ggemm_status_t zero_in_stream(void* bytes_at, uint64_t bytes, const char* what, cudaStream_t stream) noexcept {
    const cudaError_t error = cudaMemsetAsync(bytes_at, 0, bytes, stream);
    if (error == cudaSuccess) return GGEMM_SUCCESS;
    cudaGetLastError();
    return fail(GGEMM_ERROR_CUDA, "cudaMemsetAsync(%s) failed: %s (%s)", what, cudaGetErrorName(error),
                cudaGetErrorString(error));
}

ggemm_status_t launch_status(cudaError_t error, const char* kernel, int32_t grid) noexcept {
    if (error == cudaSuccess) return GGEMM_SUCCESS;
    cudaGetLastError();
    return fail(GGEMM_ERROR_CUDA, "launching kernel %s (grid %d) failed: %s (%s)", kernel, grid,
                cudaGetErrorName(error), cudaGetErrorString(error));
}

KernelArgs make_kernel_args(const ggemm_plan& plan, const ggemm_args& args) noexcept {
    const ggemm_plan_desc& desc = plan.desc;
    const bool discrete = desc.weight_mode == GGEMM_WEIGHTS_DISCRETE;
    auto* workspace = static_cast<unsigned char*>(args.workspace);
    KernelArgs kernel{};
    kernel.padded_offsets = args.padded_offsets;
    kernel.alpha = args.alpha;
    kernel.prob = args.prob;
    kernel.bias = args.bias;
    kernel.c = desc.generate_c ? args.c : nullptr;
    kernel.d = args.d;
    kernel.b_maps = discrete && workspace != nullptr
                        ? reinterpret_cast<CUtensorMap*>(workspace + workspace_maps_offset())
                        : nullptr;
    kernel.weight_status = discrete && workspace != nullptr
                               ? reinterpret_cast<const uint32_t*>(
                                     workspace + workspace_weight_status_offset(desc.num_experts))
                               : nullptr;
    kernel.tile_counter = desc.scheduler == GGEMM_SCHEDULER_DYNAMIC
                              ? reinterpret_cast<unsigned long long*>(workspace)
                              : nullptr;
    kernel.device_status = args.device_status;
    kernel.valid_rows = args.valid_rows;
    kernel.m = args.m;
    kernel.n = static_cast<int32_t>(desc.n);
    kernel.k = static_cast<int32_t>(desc.k);
    kernel.num_experts = desc.num_experts;
    kernel.c_dtype = desc.c_dtype;
    kernel.d_dtype = desc.d_dtype;
    kernel.bias_dtype = desc.bias_dtype;
    kernel.generate_c = desc.generate_c;
    kernel.scheduler = desc.scheduler;
    kernel.weight_mode = desc.weight_mode;
    kernel.activation = desc.activation;
    kernel.glu = {desc.glu_scale, desc.glu_limit, desc.glu_offset};
    if (desc.glu_backward) {
        kernel.glu_backward = 1;
        kernel.glu_pre_dtype = desc.glu_pre_dtype;
        kernel.glu_pre = args.glu_pre;
        kernel.d_prob = args.d_prob;
        kernel.d_prob_partials = reinterpret_cast<float*>(
            workspace + workspace_bytes(desc.weight_mode, desc.scheduler, desc.num_experts));
    }
    // Tiles if every expert's offsets are usable and every row valid (skipped experts and tiles
    // past a valid-row count only shorten the last round; the split stays correct, see
    // kernels/common/tail_split.h), dealt to the grid's clusters (a cluster computes one tile of
    // tile_m rows together).
    const KernelVariant& variant = plan.variant;
    const int64_t tiles = tile_count(variant, args.m, desc.n);
    kernel.k_splits = call_k_splits(plan, args.m);
    if (kernel.k_splits > 1) {
        // K split: no pieces of the last round (split_k.h), partials and counters in the workspace.
        kernel.tail = TailSplit{tiles, 1};
        const uint64_t counters = workspace_split_offset(desc.weight_mode, desc.num_experts);
        kernel.split_counters = reinterpret_cast<uint32_t*>(workspace + counters);
        kernel.split_partials = reinterpret_cast<float*>(
            workspace + counters + split_counter_bytes(plan.k_splits, plan.split_rows, desc.n));
    } else {
        kernel.tail = deal_tiles(variant, plan.grid, tiles);
    }
    return kernel;
}

int32_t call_k_splits(const ggemm_plan& plan, int64_t m) noexcept {
    return plan.k_splits > 1 && m <= plan.split_rows ? plan.k_splits : 1;
}

uint64_t cleared_workspace_bytes(const ggemm_plan& plan, int64_t m) noexcept {
    const ggemm_plan_desc& desc = plan.desc;
    // dGLU's partial sums of d_prob follow the plan's fields and start at zero, so that a row no
    // expert computes sums to 0 (a dGLU plan never splits K).
    if (desc.glu_backward) {
        return workspace_bytes(desc.weight_mode, desc.scheduler, desc.num_experts) + glu_partials_bytes(desc.n, m);
    }
    if (call_k_splits(plan, m) > 1) {
        return workspace_split_offset(desc.weight_mode, desc.num_experts) +
               split_counter_bytes(plan.k_splits, m, desc.n);
    }
    return desc.scheduler == GGEMM_SCHEDULER_DYNAMIC ? kWorkspaceCounterBytes : 0;
}

ggemm_status_t prepare_launch(const ggemm_plan& plan, const ggemm_args& args, LaunchParams* params) noexcept {
    const ggemm_status_t status = encode_maps(plan, args, params);
    if (status != GGEMM_SUCCESS) return status;
    params->args = make_kernel_args(plan, args);
    params->b_ptrs = plan.desc.weight_mode == GGEMM_WEIGHTS_DISCRETE ? args.b_ptrs : nullptr;
    params->grid = plan.grid;
    return GGEMM_SUCCESS;
}

const void* b_template_placeholder(const uint64_t* b_ptrs) noexcept {
    return reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(b_ptrs) & ~uintptr_t{15});
}

ggemm_status_t execute_plan(const ggemm_plan& plan, const ggemm_args* user_args, int64_t m_capacity,
                            cudaStream_t stream) noexcept {
    ggemm_args args;
    ggemm_status_t status = read_args(user_args, "args", &args);
    if (status != GGEMM_SUCCESS) return status;
    status = validate_args_fields(plan, args, m_capacity);
    if (status != GGEMM_SUCCESS) return status;
    ThreadDevice thread;
    status = current_device(plan.device, &thread);
    if (status != GGEMM_SUCCESS) return status;
    status = validate_args_for_device(plan, args, thread.device, cuda_pointer_oracle());
    if (status != GGEMM_SUCCESS) return status;
    status = make_context_current(thread);
    if (status != GGEMM_SUCCESS) return status;

    const ggemm_plan_desc& desc = plan.desc;
    LaunchParams params;
    if (args.m > 0) {
        status = prepare_launch(plan, args, &params);
        if (status != GGEMM_SUCCESS) return status;
    }

    // The caller reads this call's word whatever happens: with dense weights and M > 0 the
    // kernel writes it whole (one CTA reports the offsets); otherwise it is cleared here first
    // (M = 0 launches nothing; discrete mode's map builder ORs in its bits before the kernel).
    const bool kernel_writes_status = args.m > 0 && desc.weight_mode == GGEMM_WEIGHTS_DENSE;
    if (args.device_status != nullptr && !kernel_writes_status) {
        status = zero_in_stream(args.device_status, sizeof(uint32_t), "args->device_status", stream);
        if (status != GGEMM_SUCCESS) return status;
    }
    if (args.m == 0) return GGEMM_SUCCESS;

    // The dynamic scheduler's tile counter, split-K's arrival counters and dGLU's partial sums
    // (src/workspace.h) must read zero at every launch, in stream order: one memset from the
    // workspace's start (in discrete mode it also covers the maps, which the map builder writes
    // afterwards).
    const uint64_t cleared = cleared_workspace_bytes(plan, args.m);
    if (cleared > 0) {
        status = zero_in_stream(args.workspace, cleared, "the counters and partials in args->workspace", stream);
        if (status != GGEMM_SUCCESS) return status;
    }
    return launch_status(plan.variant.launch(params, stream), plan.variant.name, plan.grid);
}

}  // namespace ggemm

extern "C" {

GGEMM_API ggemm_status_t ggemm_execute(ggemm_plan_t plan, const ggemm_args* args,
                                       struct CUstream_st* stream) {
    return ggemm::guarded("ggemm_execute", [&] {
        if (plan == nullptr) {
            return ggemm::fail(GGEMM_ERROR_NULL_ARGUMENT, "plan is NULL (create one with ggemm_plan_create)");
        }
        if (plan->kind != ggemm::PlanKind::kForward) {
            return ggemm::fail(GGEMM_ERROR_INVALID_VALUE,
                               "plan is a weight-gradient plan (ggemm_wgrad_plan_create): run it with "
                               "ggemm_wgrad_execute; ggemm_execute takes a plan from ggemm_plan_create");
        }
        return ggemm::execute_plan(*plan, args, plan->desc.m_capacity, stream);
    });
}

}  // extern "C"
