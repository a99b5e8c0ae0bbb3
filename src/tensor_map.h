// TMA tensor maps of A, B and (for the variants that store it with TMA) D. The shapes are pure data (testable on the CPU); encoding goes
// through cuTensorMapEncodeTiled, resolved once at run time from the driver: the library
// never links libcuda.
#pragma once

#include <cstdint>

#include "ggemm.h"
#include "src/kernel_variant.h"

namespace ggemm {

// Everything cuTensorMapEncodeTiled takes besides the fixed choices (no interleave,
// 128-byte swizzle, zero fill out of bounds).
struct TensorMapShape {
    uint32_t rank;
    const void* address;
    uint64_t dims[3];          // innermost first
    uint64_t strides[2];       // bytes, for dims 1.. (dim 0 is contiguous)
    uint32_t box[3];
    uint32_t element_strides[3];
    int32_t dtype = GGEMM_DTYPE_BF16;  // the element type: GGEMM_DTYPE_BF16, FP16 or FP32
    // How much a load that misses the L2 brings in: 256 bytes, a box row of 128 bytes and its
    // neighbour (a K-major operand row's next k-block, an N-major one's next 64 columns), except
    // where noted.
    CUtensorMapL2promotion l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
};

// A: M x K row-major; dims {K, M}, box {block_k, a_box_rows}.
TensorMapShape a_map_shape(const void* a, int64_t m, int64_t k, const KernelVariant& variant, bool counted) noexcept;

// N-major B is loaded in boxes of this many columns: one 128-byte swizzle row of bf16, the
// width of the wgmma MN-major 128-byte-swizzle atom (kernels/sm90/operand_layout.h).
constexpr uint32_t kNMajorBoxColumns = 64;

// Dense B, by the variant's weight layout. K-major: L x N x K; dims {K, N, L}, box {block_k,
// b_box_rows, 1}. N-major: L x K x N; dims {N, K, L}, box {kNMajorBoxColumns, block_k, 1}.
TensorMapShape b_dense_map_shape(const void* b, int64_t n, int64_t k, int32_t num_experts,
                                 const KernelVariant& variant) noexcept;

// Discrete B template: one expert, N x K (K-major) or K x N (N-major) with the dense map's first
// two dims and box; the kernel replaces the address per expert, so any 16-byte-aligned device
// address serves as the placeholder.
TensorMapShape b_template_map_shape(const void* placeholder, int64_t n, int64_t k,
                                    const KernelVariant& variant) noexcept;

// D: M x N bf16 row-major; dims {N, M}, box {d_box_cols, d_box_rows} (the variant's TMA store
// box). With a gated activation (desc->activation) the forward's D is the M x N/2 output: dims
// {N/2, M}; dGLU's (glu_backward) is d_pre, M x 2N: dims {2N, M}. Its row extent is this call's
// M: no store reaches past it.
TensorMapShape d_map_shape(void* d, int64_t m, int64_t n, int32_t activation, int32_t glu_backward,
                           const KernelVariant& variant) noexcept;

// dGLU through TMA: the saved pre-activation, M x 2N bf16 row-major, loaded in D's boxes,
// without L2 promotion (tensor_map.cpp says why).
TensorMapShape pre_map_shape(const void* pre, int64_t m, int64_t n, const KernelVariant& variant) noexcept;

// The driver's element type of a GGEMM_DTYPE_* (bf16 for anything else).
CUtensorMapDataType tensor_map_data_type(int32_t dtype) noexcept;

// Resolves cuTensorMapEncodeTiled (once per process). GGEMM_ERROR_CUDA if the driver lacks it.
ggemm_status_t resolve_tensor_map_encoder() noexcept;

// Encodes `shape` into *map. GGEMM_ERROR_CUDA naming `what` and the CUresult on failure.
ggemm_status_t encode_tensor_map(const TensorMapShape& shape, const char* what, CUtensorMap* map) noexcept;

}  // namespace ggemm
