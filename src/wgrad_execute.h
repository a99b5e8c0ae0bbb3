// ggemm_wgrad_execute: read and validate the arguments, encode the operand maps, enqueue.
#pragma once

#include <cstdint>
#include <cuda_runtime_api.h>

#include "ggemm.h"
#include "kernels/common/wgrad_params.h"
#include "src/plan.h"
#include "src/tensor_map.h"

namespace ggemm {

// X1 or X2: M rows of `columns` bf16, row-major; dims {columns, M}, box {box_columns, block_rows}
// (the 128-byte swizzle span by one k-block), as the kernel's MN-major operands need.
TensorMapShape wgrad_operand_map_shape(const void* address, int64_t m, int64_t columns,
                                       const WgradVariant& variant) noexcept;

// The dense L x P x Q output of out_dtype, for the TMA store path: dims {Q, P, L}, box {128
// bytes of Q, 64 rows of P, 1} (one staging atom, kernels/sm90/wgrad_store_layout_sm90.h). Three
// dims, not {Q, P L}, so that the box clips at each expert's own P.
TensorMapShape wgrad_output_map_shape(void* out, const ggemm_wgrad_desc& desc) noexcept;

// The kernel's per-call arguments from validated ones (pure).
WgradKernelArgs make_wgrad_kernel_args(const ggemm_plan& plan, const ggemm_wgrad_args& args) noexcept;

// ggemm_wgrad_execute's body. Nothing is enqueued unless every check passes.
ggemm_status_t execute_wgrad_plan(const ggemm_plan& plan, const ggemm_wgrad_args* user_args,
                                  cudaStream_t stream) noexcept;

}  // namespace ggemm
