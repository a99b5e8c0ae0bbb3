// Tensor-map shapes and encoding.
#include "src/tensor_map.h"

#include <cuda_runtime_api.h>

#include "src/driver_api.h"
#include "src/error.h"

namespace ggemm {

namespace {

constexpr uint64_t kBF16Bytes = 2;

// A row-major rows x k bf16 matrix (k contiguous), loaded in boxes of block_k x box_rows.
TensorMapShape k_major_shape(const void* address, int64_t rows, int64_t k, int32_t block_k,
                             int32_t box_rows) noexcept {
    TensorMapShape shape{};
    shape.rank = 2;
    shape.address = address;
    shape.dims[0] = static_cast<uint64_t>(k);
    shape.dims[1] = static_cast<uint64_t>(rows);
    shape.strides[0] = static_cast<uint64_t>(k) * kBF16Bytes;
    shape.box[0] = static_cast<uint32_t>(block_k);
    shape.box[1] = static_cast<uint32_t>(box_rows);
    shape.element_strides[0] = shape.element_strides[1] = 1;
    return shape;
}

// One expert's B as the variant reads it: rows x columns with the columns contiguous.
TensorMapShape b_expert_shape(const void* address, int64_t n, int64_t k, const KernelVariant& variant) noexcept {
    if (variant.weight_layout == kNMajor) {
        // K rows of N: a box is 64 columns (128 bytes, the swizzle span) by block_k rows.
        return k_major_shape(address, k, n, static_cast<int32_t>(kNMajorBoxColumns), variant.block_k);
    }
    return k_major_shape(address, n, k, variant.block_k, variant.b_box_rows);
}

}  // namespace

TensorMapShape a_map_shape(const void* a, int64_t m, int64_t k, const KernelVariant& variant, bool counted) noexcept {
    const int32_t rows = counted && variant.a_box_rows_counted > 0 ? variant.a_box_rows_counted : variant.a_box_rows;
    return k_major_shape(a, m, k, variant.block_k, rows);
}

TensorMapShape b_dense_map_shape(const void* b, int64_t n, int64_t k, int32_t num_experts,
                                 const KernelVariant& variant) noexcept {
    // One expert's matrix (N x K or K x N) per index of the third dimension.
    TensorMapShape shape = b_expert_shape(b, n, k, variant);
    shape.rank = 3;
    shape.dims[2] = static_cast<uint64_t>(num_experts);
    shape.strides[1] = static_cast<uint64_t>(n) * static_cast<uint64_t>(k) * kBF16Bytes;
    shape.box[2] = 1;
    shape.element_strides[2] = 1;
    return shape;
}

TensorMapShape b_template_map_shape(const void* placeholder, int64_t n, int64_t k,
                                    const KernelVariant& variant) noexcept {
    return b_expert_shape(placeholder, n, k, variant);
}

TensorMapShape d_map_shape(void* d, int64_t m, int64_t n, int32_t activation, int32_t glu_backward,
                           const KernelVariant& variant) noexcept {
    const int64_t columns = glu_backward ? 2 * n : activation == GGEMM_ACTIVATION_NONE ? n : n / 2;
    return k_major_shape(d, m, columns, variant.d_box_cols, variant.d_box_rows);
}

TensorMapShape pre_map_shape(const void* pre, int64_t m, int64_t n, const KernelVariant& variant) noexcept {
    // Each row of a box is 128 bytes, read once. Promoted to 256, a miss also fetched the next
    // atom's row, which the evict-first loads (PreL2::kEvictFirst) often lost from the L2 before
    // that atom was loaded: qwen3_fc1's dGLU read 1.84 GB from DRAM with promotion, 1.65 GB
    // without, and ran 1.05x faster (H100).
    TensorMapShape shape = k_major_shape(pre, m, 2 * n, variant.d_box_cols, variant.d_box_rows);
    shape.l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_NONE;
    return shape;
}

ggemm_status_t resolve_tensor_map_encoder() noexcept {
    const DriverApi& resolved = driver_api();
    if (resolved.encode_tiled != nullptr) return GGEMM_SUCCESS;
    if (resolved.encode_error != cudaSuccess) {
        return fail(GGEMM_ERROR_CUDA,
                    "cannot resolve cuTensorMapEncodeTiled: cudaGetDriverEntryPointByVersion failed: %s (%s)",
                    cudaGetErrorName(resolved.encode_error), cudaGetErrorString(resolved.encode_error));
    }
    return fail(GGEMM_ERROR_CUDA,
                "cannot resolve cuTensorMapEncodeTiled: the driver reports query result %d "
                "(1: symbol not found, 2: driver too old for CUDA 12.0 entry points)",
                static_cast<int>(resolved.encode_query));
}

CUtensorMapDataType tensor_map_data_type(int32_t dtype) noexcept {
    switch (dtype) {
        case GGEMM_DTYPE_FP16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
        case GGEMM_DTYPE_FP32: return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
        default: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    }
}

ggemm_status_t encode_tensor_map(const TensorMapShape& shape, const char* what, CUtensorMap* map) noexcept {
    const PFN_cuTensorMapEncodeTiled_v12000 encode = driver_api().encode_tiled;
    if (encode == nullptr) return resolve_tensor_map_encoder();
    const CUresult result = encode(
        map, tensor_map_data_type(shape.dtype), shape.rank, const_cast<void*>(shape.address),
        shape.dims, shape.strides, shape.box, shape.element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
        CU_TENSOR_MAP_SWIZZLE_128B, shape.l2_promotion, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (result != CUDA_SUCCESS) {
        return fail(GGEMM_ERROR_CUDA,
                    "cuTensorMapEncodeTiled failed for the %s map with CUresult %d (rank %u, dims "
                    "{%llu, %llu, %llu}, box {%u, %u, %u}, address %p)",
                    what, static_cast<int>(result), shape.rank,
                    static_cast<unsigned long long>(shape.dims[0]),
                    static_cast<unsigned long long>(shape.dims[1]),
                    static_cast<unsigned long long>(shape.dims[2]), shape.box[0], shape.box[1],
                    shape.box[2], shape.address);
    }
    return GGEMM_SUCCESS;
}

}  // namespace ggemm
