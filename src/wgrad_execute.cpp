// ggemm_wgrad_execute. Like ggemm_execute, the success path makes no allocation, no
// synchronization and no host read of device memory, so it can be captured in a CUDA graph.
#include "src/wgrad_execute.h"

#include "src/driver_api.h"
#include "src/error.h"
#include "src/execute.h"
#include "src/pointer_oracle.h"
#include "src/structs.h"
#include "src/wgrad_validate.h"
#include "src/workspace.h"

namespace ggemm {

TensorMapShape wgrad_operand_map_shape(const void* address, int64_t m, int64_t columns,
                                       const WgradVariant& variant) noexcept {
    TensorMapShape shape{};
    shape.rank = 2;
    shape.address = address;
    shape.dims[0] = static_cast<uint64_t>(columns);
    shape.dims[1] = static_cast<uint64_t>(m);
    shape.strides[0] = static_cast<uint64_t>(columns) * 2;  // bf16
    shape.box[0] = static_cast<uint32_t>(variant.box_columns);
    shape.box[1] = static_cast<uint32_t>(variant.block_rows);
    shape.element_strides[0] = shape.element_strides[1] = 1;
    return shape;
}

TensorMapShape wgrad_output_map_shape(void* out, const ggemm_wgrad_desc& desc) noexcept {
    const uint64_t element = desc.out_dtype == GGEMM_DTYPE_FP32 ? 4 : 2;
    TensorMapShape shape{};
    shape.rank = 3;
    shape.address = out;
    shape.dtype = desc.out_dtype;
    shape.dims[0] = static_cast<uint64_t>(desc.q);
    shape.dims[1] = static_cast<uint64_t>(desc.p);
    shape.dims[2] = static_cast<uint64_t>(desc.num_experts);
    shape.strides[0] = static_cast<uint64_t>(desc.q) * element;
    shape.strides[1] = static_cast<uint64_t>(desc.p) * static_cast<uint64_t>(desc.q) * element;
    shape.box[0] = static_cast<uint32_t>(128 / element);
    shape.box[1] = 64;
    shape.box[2] = 1;
    shape.element_strides[0] = shape.element_strides[1] = shape.element_strides[2] = 1;
    return shape;
}

WgradKernelArgs make_wgrad_kernel_args(const ggemm_plan& plan, const ggemm_wgrad_args& args) noexcept {
    const ggemm_wgrad_desc& desc = plan.wgrad.desc;
    WgradKernelArgs kernel{};
    kernel.padded_offsets = args.padded_offsets;
    kernel.alpha = args.alpha;
    kernel.out = desc.output_mode == GGEMM_WGRAD_OUTPUT_DENSE ? args.out : nullptr;
    kernel.out_ptrs = desc.output_mode == GGEMM_WGRAD_OUTPUT_POINTERS ? args.out_ptrs : nullptr;
    kernel.tile_counter = desc.scheduler == GGEMM_SCHEDULER_DYNAMIC
                              ? static_cast<unsigned long long*>(args.workspace)
                              : nullptr;
    kernel.device_status = args.device_status;
    kernel.m = args.m;
    kernel.p = static_cast<int32_t>(desc.p);
    kernel.q = static_cast<int32_t>(desc.q);
    kernel.num_experts = desc.num_experts;
    kernel.out_dtype = desc.out_dtype;
    kernel.output_mode = desc.output_mode;
    kernel.accumulate = desc.accumulate;
    kernel.scheduler = desc.scheduler;
    kernel.store_path = plan.wgrad.store_path;
    return kernel;
}

ggemm_status_t execute_wgrad_plan(const ggemm_plan& plan, const ggemm_wgrad_args* user_args,
                                  cudaStream_t stream) noexcept {
    ggemm_wgrad_args args;
    ggemm_status_t status = read_wgrad_args(user_args, "args", &args);
    if (status != GGEMM_SUCCESS) return status;
    status = validate_wgrad_args_fields(plan, args);
    if (status != GGEMM_SUCCESS) return status;
    ThreadDevice thread;
    status = current_device(plan.device, &thread);
    if (status != GGEMM_SUCCESS) return status;
    status = validate_wgrad_args_for_device(plan, args, thread.device, cuda_pointer_oracle());
    if (status != GGEMM_SUCCESS) return status;
    status = make_context_current(thread);
    if (status != GGEMM_SUCCESS) return status;

    const ggemm_wgrad_desc& desc = plan.wgrad.desc;
    const WgradVariant& variant = plan.wgrad.variant;
    WgradLaunchParams params{};
    // Encoded before anything is enqueued: a failure leaves the stream untouched. With M = 0 the
    // kernel loads nothing (every expert is empty or skipped) and the maps stay zero.
    if (args.m > 0) {
        status = encode_tensor_map(wgrad_operand_map_shape(args.x1, args.m, desc.p, variant), "X1", &params.x1_map);
        if (status != GGEMM_SUCCESS) return status;
        status = encode_tensor_map(wgrad_operand_map_shape(args.x2, args.m, desc.q, variant), "X2", &params.x2_map);
        if (status != GGEMM_SUCCESS) return status;
    }
    if (plan.wgrad.store_path == kWgradStoreTma) {
        status = encode_tensor_map(wgrad_output_map_shape(args.out, desc), "out", &params.out_map);
        if (status != GGEMM_SUCCESS) return status;
    }
    // The kernel always runs, M = 0 included (overwrite mode writes zeros for empty experts), and
    // its CTA 0 writes the status word whole: nothing to clear here.
    if (desc.scheduler == GGEMM_SCHEDULER_DYNAMIC) {
        status = zero_in_stream(args.workspace, kWorkspaceCounterBytes, "the tile counter in args->workspace", stream);
        if (status != GGEMM_SUCCESS) return status;
    }
    params.args = make_wgrad_kernel_args(plan, args);
    params.grid = plan.grid;
    return launch_status(variant.launch(params, stream), variant.name, plan.grid);
}

}  // namespace ggemm

extern "C" {

GGEMM_API ggemm_status_t ggemm_wgrad_execute(ggemm_plan_t plan, const ggemm_wgrad_args* args,
                                             struct CUstream_st* stream) {
    return ggemm::guarded("ggemm_wgrad_execute", [&] {
        if (plan == nullptr) {
            return ggemm::fail(GGEMM_ERROR_NULL_ARGUMENT,
                               "plan is NULL (create one with ggemm_wgrad_plan_create)");
        }
        if (plan->kind != ggemm::PlanKind::kWgrad) {
            return ggemm::fail(GGEMM_ERROR_INVALID_VALUE,
                               "plan is a forward grouped-GEMM plan (ggemm_plan_create): run it with "
                               "ggemm_execute; ggemm_wgrad_execute takes a plan from ggemm_wgrad_plan_create");
        }
        return ggemm::execute_wgrad_plan(*plan, args, stream);
    });
}

}  // extern "C"
