// Tensor-map shapes (CPU) and their encoding through the driver (GPU, skipped without one).
#include <doctest/doctest.h>

#include <cuda_runtime_api.h>

#include "src/execute.h"
#include "src/tensor_map.h"
#include "tests/host/test_fakes.h"

using namespace ggemm_fakes;

TEST_CASE("A map: dims {K, M}, row stride of K bf16, box {block_k, a_box_rows}") {
    const ggemm::KernelVariant v = variant("v", 90, 128, 256, 1);
    const ggemm::TensorMapShape shape = ggemm::a_map_shape(at(kDevice0), 4096, 7168, v, false);
    CHECK(shape.rank == 2);
    CHECK(shape.address == at(kDevice0));
    CHECK(shape.dims[0] == 7168);
    CHECK(shape.dims[1] == 4096);
    CHECK(shape.strides[0] == 7168 * 2);
    CHECK(shape.box[0] == 64);
    CHECK(shape.box[1] == 64);
    CHECK(shape.element_strides[0] == 1);
    CHECK(shape.element_strides[1] == 1);
    CHECK(shape.l2_promotion == CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
}

TEST_CASE("A map of a call with valid-row counts: the variant's counted box, else its own") {
    ggemm::KernelVariant v = variant("v", 90, 128, 256, 1);
    v.a_box_rows = 128;
    CHECK(ggemm::a_map_shape(at(kDevice0), 4096, 7168, v, true).box[1] == 128);  // no counted box
    v.a_box_rows_counted = 64;
    CHECK(ggemm::a_map_shape(at(kDevice0), 4096, 7168, v, true).box[1] == 64);
    CHECK(ggemm::a_map_shape(at(kDevice0), 4096, 7168, v, false).box[1] == 128);
}

TEST_CASE("D map of a fused GLU forward: the M x N/2 output, dims {N/2, M}, the same box") {
    ggemm::KernelVariant v = variant("v", 90, 128, 256, 1);
    v.d_box_cols = 64;
    v.d_box_rows = 64;
    for (const int32_t activation : {GGEMM_ACTIVATION_SWIGLU, GGEMM_ACTIVATION_CLAMPED_GEGLU}) {
        const ggemm::TensorMapShape shape = ggemm::d_map_shape(at(kDevice0), 4096, 5760, activation, 0, v);
        CHECK(shape.dims[0] == 2880);  // TMA clips stores at N/2
        CHECK(shape.dims[1] == 4096);
        CHECK(shape.strides[0] == 2880 * 2);
        CHECK(shape.box[0] == 64);  // one 128-byte atom: the output of 128 pre-activation columns
        CHECK(shape.box[1] == 64);
    }
}

TEST_CASE("dGLU through TMA: d_pre and the saved pre-activation, both M x 2N, dims {2N, M}, the same box") {
    ggemm::KernelVariant v = variant("v", 90, 128, 128, 1);
    v.d_box_cols = 64;
    v.d_box_rows = 64;
    v.tma_dglu = true;
    // N = 1440 is R's width: the pre-activation and d_pre are 2880 wide.
    const ggemm::TensorMapShape d = ggemm::d_map_shape(at(kDevice0), 4096, 1440, GGEMM_ACTIVATION_SWIGLU, 1, v);
    const ggemm::TensorMapShape pre = ggemm::pre_map_shape(at(kDevice1), 4096, 1440, v);
    for (const ggemm::TensorMapShape& shape : {d, pre}) {
        CHECK(shape.rank == 2);
        CHECK(shape.dims[0] == 2880);  // TMA clips at 2N, loads and stores
        CHECK(shape.dims[1] == 4096);
        CHECK(shape.strides[0] == 2880 * 2);
        CHECK(shape.box[0] == 64);  // one 128-byte atom: a gate block and its up block
        CHECK(shape.box[1] == 64);
    }
    CHECK(d.address == at(kDevice0));
    CHECK(pre.address == at(kDevice1));
    // The pre-activation's misses fetch only the box's rows (tensor_map.cpp).
    CHECK(pre.l2_promotion == CU_TENSOR_MAP_L2_PROMOTION_NONE);
}

TEST_CASE("dense B map: dims {K, N, L}, strides of K and N x K bf16, box {block_k, b_box_rows, 1}") {
    const ggemm::KernelVariant v = variant("v", 90, 128, 192, 1);
    const ggemm::TensorMapShape shape = ggemm::b_dense_map_shape(at(kDevice0), 5760, 2048, 64, v);
    CHECK(shape.rank == 3);
    CHECK(shape.address == at(kDevice0));
    CHECK(shape.dims[0] == 2048);
    CHECK(shape.dims[1] == 5760);
    CHECK(shape.dims[2] == 64);
    CHECK(shape.strides[0] == 2048 * 2);
    CHECK(shape.strides[1] == uint64_t{5760} * 2048 * 2);
    CHECK(shape.box[0] == 64);
    CHECK(shape.box[1] == 192);
    CHECK(shape.box[2] == 1);
    CHECK(shape.element_strides[0] == 1);
    CHECK(shape.element_strides[1] == 1);
    CHECK(shape.element_strides[2] == 1);
}

TEST_CASE("discrete B template: one N x K expert at a 16-byte-aligned placeholder") {
    const ggemm::KernelVariant v = variant("v", 90, 128, 256, 1);
    const ggemm::TensorMapShape shape =
        ggemm::b_template_map_shape(ggemm::b_template_placeholder(at<const uint64_t>(kDevice0 + 24)), 1024, 512, v);
    CHECK(shape.rank == 2);
    CHECK(shape.address == at(kDevice0 + 16));
    CHECK(shape.dims[0] == 512);
    CHECK(shape.dims[1] == 1024);
    CHECK(shape.strides[0] == 1024);
    CHECK(shape.box[1] == 256);
    CHECK(ggemm::b_template_placeholder(at<const uint64_t>(kDevice0 + 32)) == at(kDevice0 + 32));
}

TEST_CASE("D map: dims {N, M}, row stride of N bf16, box {d_box_cols, d_box_rows}") {
    ggemm::KernelVariant v = variant("v", 90, 128, 256, 1);
    v.d_box_cols = 64;
    v.d_box_rows = 64;
    const ggemm::TensorMapShape shape = ggemm::d_map_shape(at(kDevice0), 8192, 520, GGEMM_ACTIVATION_NONE, 0, v);
    CHECK(shape.rank == 2);
    CHECK(shape.address == at(kDevice0));
    CHECK(shape.dims[0] == 520);   // TMA clips stores at N
    CHECK(shape.dims[1] == 8192);  // and at this call's M
    CHECK(shape.strides[0] == 520 * 2);
    CHECK(shape.box[0] == 64);
    CHECK(shape.box[1] == 64);
    CHECK(shape.element_strides[0] == 1);
    CHECK(shape.element_strides[1] == 1);
}

TEST_CASE("encoding tensor maps through the driver (GPU)") {
    ggemm::DeviceInfo device;
    if (!usable_gpu(&device, "encoding tensor maps")) return;
    REQUIRE(ggemm::resolve_tensor_map_encoder() == GGEMM_SUCCESS);
    void* memory = nullptr;
    REQUIRE(cudaMalloc(&memory, 1 << 22) == cudaSuccess);
    const ggemm::KernelVariant v = variant("v", ggemm::arch_of(device), 128, 256, 1);
    CUtensorMap map;
    CHECK(ggemm::encode_tensor_map(ggemm::a_map_shape(memory, 1024, 1024, v, false), "A", &map) == GGEMM_SUCCESS);
    CHECK(ggemm::encode_tensor_map(ggemm::b_dense_map_shape(memory, 256, 1024, 4, v), "B", &map) == GGEMM_SUCCESS);
    CHECK(ggemm::encode_tensor_map(ggemm::b_template_map_shape(memory, 256, 1024, v), "B", &map) == GGEMM_SUCCESS);
    ggemm::KernelVariant stores_d = v;
    stores_d.d_box_cols = 64;
    stores_d.d_box_rows = 64;
    CHECK(ggemm::encode_tensor_map(ggemm::d_map_shape(memory, 256, 520, GGEMM_ACTIVATION_NONE, 0, stores_d), "D", &map) == GGEMM_SUCCESS);
    CHECK(ggemm::encode_tensor_map(ggemm::d_map_shape(memory, 256, 8, GGEMM_ACTIVATION_NONE, 0, stores_d), "D", &map) == GGEMM_SUCCESS);
    // K tails: TMA fills past K with zeros, so K need only be a multiple of 8.
    CHECK(ggemm::encode_tensor_map(ggemm::a_map_shape(memory, 256, 72, v, false), "A", &map) == GGEMM_SUCCESS);
    // A 128-byte swizzle holds at most 128 bytes of the inner box: block_k 128 bf16 is refused.
    ggemm::KernelVariant too_wide = v;
    too_wide.block_k = 128;
    CHECK(ggemm::encode_tensor_map(ggemm::a_map_shape(memory, 1024, 1024, too_wide, false), "A", &map) == GGEMM_ERROR_CUDA);
    CHECK(message_contains("cuTensorMapEncodeTiled failed for the A map with CUresult 1"));
    // A misaligned global address is refused by the driver too.
    CHECK(ggemm::encode_tensor_map(ggemm::a_map_shape(static_cast<char*>(memory) + 8, 1024, 1024, v, false), "A", &map) ==
          GGEMM_ERROR_CUDA);
    cudaFree(memory);
}
