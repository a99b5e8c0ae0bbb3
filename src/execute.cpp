// ggemm_execute. The success path makes no allocation, no synchronization and no host read
// of device memory, so it can be captured in a CUDA graph; its cost is a handful of driver and
// runtime calls (pointer attributes, one to three tensor-map encodes, a memset where one is
// needed, the launch), the launch most of it (bench host/parts/*).
#include "src/execute.h"

#include "src/workspace.h"
#include "src/driver_api.h"
#include "src/error.h"
#include "src/pointer_oracle.h"
#include "src/structs.h"
#include "src/tensor_map.h"
#include "src/validate.h"

namespace ggemm {
namespace {

// The weight map of this thread's last call, by plan and address: weights rarely move, so a
// call with the plan and weights of the one before reuses its map instead of encoding it again
// (the map depends on nothing else: shape, box and swizzle come from the plan). Per thread, so
// plans stay immutable and execute takes no lock.
struct WeightMapCache {
    uint64_t plan_serial = 0;  // 0: empty (plan serials start at 1)
    const void* address = nullptr;
    CUtensorMap map;
};
thread_local WeightMapCache t_weight_map;

ggemm_status_t weight_map(const ggemm_plan& plan, const ggemm_args& args, CUtensorMap* map) noexcept {
    const ggemm_plan_desc& desc = plan.desc;
    const bool dense = desc.weight_mode == GGEMM_WEIGHTS_DENSE;
    const void* address = dense ? args.b : b_template_placeholder(args.b_ptrs);
    if (plan.serial != 0 && t_weight_map.plan_serial == plan.serial && t_weight_map.address == address) {
        *map = t_weight_map.map;
        return GGEMM_SUCCESS;
    }
    const TensorMapShape shape = dense ? b_dense_map_shape(address, desc.n, desc.k, desc.num_experts, plan.variant)
                                       : b_template_map_shape(address, desc.n, desc.k, plan.variant);
    const ggemm_status_t status = encode_tensor_map(shape, "B", map);
    if (status == GGEMM_SUCCESS) {
        t_weight_map.plan_serial = plan.serial;
        t_weight_map.address = address;
        t_weight_map.map = *map;
    }
    return status;
}

// D's map of this thread's last call, by plan, address and M, for variants that store D with TMA:
// a steady state of calls on one output buffer encodes it once.
struct OutputMapCache {
    uint64_t plan_serial = 0;  // 0: empty
    const void* address = nullptr;
    int64_t m = 0;
    CUtensorMap map;
};
thread_local OutputMapCache t_output_map;

ggemm_status_t output_map(const ggemm_plan& plan, const ggemm_args& args, CUtensorMap* map) noexcept {
    if (plan.serial != 0 && t_output_map.plan_serial == plan.serial && t_output_map.address == args.d &&
        t_output_map.m == args.m) {
        *map = t_output_map.map;
        return GGEMM_SUCCESS;
    }
    const ggemm_status_t status = encode_tensor_map(d_map_shape(args.d, args.m, plan.desc.n, plan.variant), "D", map);
    if (status == GGEMM_SUCCESS) {
        t_output_map.plan_serial = plan.serial;
        t_output_map.address = args.d;
        t_output_map.m = args.m;
        t_output_map.map = *map;
    }
    return status;
}

}  // namespace

ggemm_status_t current_device(int* device) noexcept {
    const cudaError_t error = cudaGetDevice(device);
    if (error == cudaSuccess) return GGEMM_SUCCESS;
    cudaGetLastError();
    return fail(GGEMM_ERROR_CUDA, "cudaGetDevice failed: %s (%s)", cudaGetErrorName(error), cudaGetErrorString(error));
}

ggemm_status_t make_context_current(int device) noexcept {
    const cudaError_t error = ensure_current_context(device);
    if (error == cudaSuccess) return GGEMM_SUCCESS;
    return fail(GGEMM_ERROR_CUDA, "making device %d's context current failed: %s (%s)", device, cudaGetErrorName(error),
                cudaGetErrorString(error));
}

ggemm_status_t clear_tile_counter(void* workspace, cudaStream_t stream) noexcept {
    const cudaError_t error = cudaMemsetAsync(workspace, 0, kWorkspaceCounterBytes, stream);
    if (error == cudaSuccess) return GGEMM_SUCCESS;
    cudaGetLastError();
    return fail(GGEMM_ERROR_CUDA, "cudaMemsetAsync(tile counter in args->workspace) failed: %s (%s)",
                cudaGetErrorName(error), cudaGetErrorString(error));
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
    // Tiles if every expert's offsets are usable (skipped experts only shorten the last round;
    // the split stays correct, see kernels/common/tail_split.h).
    const KernelVariant& variant = plan.variant;
    const int64_t tiles = args.m / variant.tile_m * ((desc.n + variant.tile_n - 1) / variant.tile_n);
    kernel.tail = choose_tail_split(tiles, plan.grid, variant.tile_n, variant.max_tail_pieces);
    return kernel;
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
    int device = -1;
    status = current_device(&device);
    if (status != GGEMM_SUCCESS) return status;
    status = validate_args_for_device(plan, args, device, cuda_pointer_oracle());
    if (status != GGEMM_SUCCESS) return status;
    status = make_context_current(device);
    if (status != GGEMM_SUCCESS) return status;

    const ggemm_plan_desc& desc = plan.desc;
    const KernelVariant& variant = plan.variant;
    LaunchParams params;
    // Maps are encoded on the host before anything is enqueued: an encode failure leaves the
    // stream untouched.
    if (args.m > 0) {
        status = encode_tensor_map(a_map_shape(args.a, args.m, desc.k, variant), "A", &params.a_map);
        if (status != GGEMM_SUCCESS) return status;
        status = weight_map(plan, args, &params.b_map);
        if (status != GGEMM_SUCCESS) return status;
        if (variant.d_box_rows > 0) {
            status = output_map(plan, args, &params.d_map);
            if (status != GGEMM_SUCCESS) return status;
        }
    }

    // The caller reads this call's word whatever happens: with dense weights and M > 0 the
    // kernel writes it whole (one CTA reports the offsets); otherwise it is cleared here first
    // (M = 0 launches nothing; discrete mode's map builder ORs in its bits before the kernel).
    const bool kernel_writes_status = args.m > 0 && desc.weight_mode == GGEMM_WEIGHTS_DENSE;
    if (args.device_status != nullptr && !kernel_writes_status) {
        const cudaError_t error = cudaMemsetAsync(args.device_status, 0, sizeof(uint32_t), stream);
        if (error != cudaSuccess) {
            cudaGetLastError();
            return fail(GGEMM_ERROR_CUDA, "cudaMemsetAsync(args->device_status) failed: %s (%s)",
                        cudaGetErrorName(error), cudaGetErrorString(error));
        }
    }
    if (args.m == 0) return GGEMM_SUCCESS;

    // The dynamic scheduler claims tiles from the counter (src/workspace.h): it must
    // read zero at every launch, in stream order.
    if (desc.scheduler == GGEMM_SCHEDULER_DYNAMIC) {
        status = clear_tile_counter(args.workspace, stream);
        if (status != GGEMM_SUCCESS) return status;
    }
    params.args = make_kernel_args(plan, args);
    // dGLU: the partial sums of d_prob start at zero in every launch, so a row no expert
    // computes sums to 0.
    if (desc.glu_backward) {
        const cudaError_t error =
            cudaMemsetAsync(params.args.d_prob_partials, 0, glu_partials_bytes(desc.n, args.m), stream);
        if (error != cudaSuccess) {
            cudaGetLastError();
            return fail(GGEMM_ERROR_CUDA, "cudaMemsetAsync(d_prob partials in args->workspace) failed: %s (%s)",
                        cudaGetErrorName(error), cudaGetErrorString(error));
        }
    }
    params.b_ptrs = desc.weight_mode == GGEMM_WEIGHTS_DISCRETE ? args.b_ptrs : nullptr;
    params.grid = plan.grid;
    return launch_status(variant.launch(params, stream), variant.name, plan.grid);
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
