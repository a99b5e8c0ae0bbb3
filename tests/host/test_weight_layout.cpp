// N-major weights (desc->weight_layout) on the host: the descriptor field and its default, the
// refusals, the plan cache key, the planner's choice and description, the tensor-map shapes, and
// the wgmma descriptors of the SM90 kernel's B tile checked against the PTX ISA's canonical
// shared-memory layouts.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/sm90/operand_layout.h"
#include "src/execute.h"
#include "src/plan.h"
#include "src/tensor_map.h"
#include "src/validate.h"
#include "tests/host/test_fakes.h"

using namespace ggemm_fakes;

namespace {

ggemm::KernelVariant n_major(ggemm::KernelVariant v) {
    v.weight_layout = GGEMM_WEIGHT_LAYOUT_N_MAJOR;
    return v;
}

// K-major and N-major SM90 variants of each width, and a K-major SM100 one.
std::vector<ggemm::KernelVariant> layout_variants() {
    return {variant("k256", 90, 128, 256, 1), variant("k192", 90, 128, 192, 1),
            n_major(variant("n256", 90, 128, 256, 1)), n_major(variant("n192", 90, 128, 192, 1)),
            n_major(variant("n128", 90, 128, 128, 1)), variant("sm100_k256", 100, 128, 256, 1)};
}

std::string chosen_name(const ggemm_plan_desc& desc, const std::vector<ggemm::KernelVariant>& variants,
                        const ggemm::DeviceInfo& device = sm90_device()) {
    ggemm_plan plan;
    const ggemm_status_t status = ggemm::build_plan(desc, device, list_of(variants), &plan);
    REQUIRE_MESSAGE(status == GGEMM_SUCCESS, std::string(ggemm::last_error()));
    return plan.variant.name;
}

}  // namespace

TEST_CASE("weight layout: K-major by default, for new and older callers") {
    ggemm_plan_desc desc;
    std::memset(&desc, 0x5a, sizeof desc);
    REQUIRE(ggemm_plan_desc_init(&desc, sizeof desc) == GGEMM_SUCCESS);
    CHECK(desc.weight_layout == GGEMM_WEIGHT_LAYOUT_K_MAJOR);
    CHECK(desc.reserved1 == 0);

    // A caller built against the header before weight_layout: 80 bytes, followed in memory by
    // bytes that are not theirs. The field defaults; the struct is accepted.
    unsigned char bytes[sizeof(ggemm_plan_desc)];
    std::memset(bytes, 0x01, sizeof bytes);
    ggemm_plan_desc older = valid_desc();
    older.struct_size = offsetof(ggemm_plan_desc, weight_layout);
    CHECK(older.struct_size == 80);
    std::memcpy(bytes, &older, older.struct_size);
    ggemm_plan_desc read;
    REQUIRE(ggemm::read_plan_desc(reinterpret_cast<ggemm_plan_desc*>(bytes), "desc", &read) == GGEMM_SUCCESS);
    CHECK(read.weight_layout == GGEMM_WEIGHT_LAYOUT_K_MAJOR);
    CHECK(read.reserved1 == 0);
    CHECK(ggemm::validate_desc_fields(read) == GGEMM_SUCCESS);

    // Its init call writes nothing past its 80 bytes.
    std::memset(bytes, 0xab, sizeof bytes);
    REQUIRE(ggemm_plan_desc_init(reinterpret_cast<ggemm_plan_desc*>(bytes), 80) == GGEMM_SUCCESS);
    for (std::size_t i = 80; i < sizeof bytes; ++i) CHECK(bytes[i] == 0xab);
    // A size ending between weight_layout and reserved1 was never a struct size.
    CHECK(ggemm_plan_desc_init(&desc, 84) == GGEMM_ERROR_STRUCT_SIZE);
}

TEST_CASE("weight layout: unknown values and a non-zero reserved1 are refused with their message") {
    ggemm_plan_desc desc = valid_desc();
    desc.weight_layout = 2;
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_ERROR_INVALID_VALUE);
    CHECK(message_contains("desc->weight_layout must be GGEMM_WEIGHT_LAYOUT_K_MAJOR (0) or "
                           "GGEMM_WEIGHT_LAYOUT_N_MAJOR (1), got 2"));
    desc.weight_layout = -1;
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_ERROR_INVALID_VALUE);
    CHECK(message_contains("got -1"));
    desc = valid_desc();
    desc.weight_layout = GGEMM_WEIGHT_LAYOUT_N_MAJOR;
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_SUCCESS);
    desc.reserved1 = 5;
    CHECK(ggemm::validate_desc_fields(desc) == GGEMM_ERROR_INVALID_VALUE);
    CHECK(message_contains("desc->reserved1 must be 0, got 5"));
    // Through the public entry point that needs no GPU.
    desc.reserved1 = 0;
    desc.weight_layout = 7;
    uint64_t bytes = 0;
    CHECK(ggemm_workspace_size(&desc, &bytes) == GGEMM_ERROR_INVALID_VALUE);
}

TEST_CASE("weight layout: the planner serves each layout only with kernels that read it") {
    const auto variants = layout_variants();
    ggemm_plan_desc desc = valid_desc();
    CHECK(chosen_name(desc, variants) == "k256");
    desc.weight_layout = GGEMM_WEIGHT_LAYOUT_N_MAJOR;
    CHECK(chosen_name(desc, variants) == "n256");
    desc.m_capacity = 32768;  // enough rounds that the last one hardly counts
    desc.n = 5760;            // 30 x 192: the width that wastes no column, among the N-major ones
    CHECK(chosen_name(desc, variants) == "n192");
    desc.tile_n = 128;  // an override names a width; the layout still decides the kernel
    CHECK(chosen_name(desc, variants) == "n128");
    desc.weight_layout = GGEMM_WEIGHT_LAYOUT_K_MAJOR;
    ggemm_plan plan;
    CHECK(ggemm::build_plan(desc, sm90_device(), list_of(variants), &plan) == GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK(message_contains("excluded n128: reads N-major weights, desc->weight_layout = K-major"));
}

TEST_CASE("weight layout: the description says which layout and which kernel") {
    const auto variants = layout_variants();
    ggemm_plan_desc desc = valid_desc();
    desc.weight_layout = GGEMM_WEIGHT_LAYOUT_N_MAJOR;
    desc.weight_mode = GGEMM_WEIGHTS_DISCRETE;
    ggemm_plan plan;
    REQUIRE(ggemm::build_plan(desc, sm90_device(), list_of(variants), &plan) == GGEMM_SUCCESS);
    INFO(plan.description);
    CHECK(plan.description.find("discrete (b_ptrs) N-major weights (each B_g is K x N, N contiguous)") !=
          std::string::npos);
    CHECK(plan.description.find("kernel: n256:") != std::string::npos);
    CHECK(plan.description.find("reads N-major B") != std::string::npos);
    CHECK(plan.description.find("excluded k256: reads K-major weights, desc->weight_layout = N-major") !=
          std::string::npos);
}

TEST_CASE("weight layout: an architecture without N-major kernels refuses N-major, saying so") {
    const auto variants = layout_variants();
    ggemm_plan_desc desc = valid_desc();
    desc.weight_layout = GGEMM_WEIGHT_LAYOUT_N_MAJOR;
    CHECK(ggemm::validate_plan_desc(desc, sm100_device(), list_of(variants)) == GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK(message_contains("desc->weight_layout = N-major (1) is not supported on SM100"));
    CHECK(message_contains("pass the weights K-major"));
    // The library as built: SM90 has one N-major kernel per width with the math warps' stores and
    // five with TMA stores (dGLU's two among them, with evict-first streams), as for K-major
    // weights, and the 256-wide halves design again as a cluster of two. (SM100's N-major kernels:
    // the next test cases.)
    const ggemm::VariantList sm90 = ggemm::compiled_variants(90);
    int n_major_widths = 0;
    for (int i = 0; i < sm90.count; ++i) {
        if (sm90.items[i].weight_layout != GGEMM_WEIGHT_LAYOUT_N_MAJOR) continue;
        ++n_major_widths;
        CHECK(std::string(sm90.items[i].name).find("_nmajor") != std::string::npos);
        CHECK(sm90.items[i].tile_n % 64 == 0);
    }
    // warp stores: 256, 192, 128, 64; TMA stores: 256 (two), 192, dGLU's 128 and 192; a cluster
    // of two: 256
    CHECK(n_major_widths == 10);
}

TEST_CASE("weight layout: on SM100 an N-major plan gets an SM100 N-major kernel, dense or discrete") {
    // The kernels as built for sm_100a (compiled and checked, never run on an SM100 GPU).
    for (const int32_t mode : {GGEMM_WEIGHTS_DENSE, GGEMM_WEIGHTS_DISCRETE}) {
        ggemm_plan_desc desc = valid_desc();
        desc.m_capacity = 32768;  // enough rounds that the last one hardly counts
        desc.weight_layout = GGEMM_WEIGHT_LAYOUT_N_MAJOR;
        desc.weight_mode = mode;
        CAPTURE(mode);
        REQUIRE(ggemm::validate_plan_desc(desc, sm100_device(), ggemm::compiled_variants(100)) == GGEMM_SUCCESS);
        ggemm_plan plan;
        REQUIRE_MESSAGE(ggemm::build_plan(desc, sm100_device(), ggemm::compiled_variants(100), &plan) ==
                            GGEMM_SUCCESS,
                        std::string(ggemm::last_error()));
        INFO(plan.description);
        CHECK(plan.variant.arch == 100);
        CHECK(plan.variant.weight_layout == GGEMM_WEIGHT_LAYOUT_N_MAJOR);
        // One CTA first (the pairs only when asked for), 256 wide for N = 4096, as for K-major.
        CHECK(std::string(plan.variant.name) == "sm100_tma_tcgen05_128x256x64_s4_nmajor");
        CHECK(plan.description.find(mode == GGEMM_WEIGHTS_DENSE
                                        ? "dense N-major weights (each B_g is K x N, N contiguous)"
                                        : "discrete (b_ptrs) N-major weights (each B_g is K x N, N contiguous)") !=
              std::string::npos);
        CHECK(plan.description.find("kernel: sm100_tma_tcgen05_128x256x64_s4_nmajor:") != std::string::npos);
        CHECK(plan.description.find("reads N-major B") != std::string::npos);
        CHECK(plan.description.find("excluded sm100_tma_tcgen05_128x256x64_s4: reads K-major weights, "
                                    "desc->weight_layout = N-major") != std::string::npos);
        // Its tensor maps: B as {N, K(, L)} in boxes of 64 columns x 64 K-rows.
        const ggemm::TensorMapShape b = ggemm::b_dense_map_shape(at(kDevice0), desc.n, desc.k, 8, plan.variant);
        CHECK(b.dims[0] == static_cast<uint64_t>(desc.n));
        CHECK(b.dims[1] == static_cast<uint64_t>(desc.k));
        CHECK(b.box[0] == 64);
        CHECK(b.box[1] == 64);
        // The K-major plan of the same problem keeps the K-major kernel.
        desc.weight_layout = GGEMM_WEIGHT_LAYOUT_K_MAJOR;
        REQUIRE(ggemm::build_plan(desc, sm100_device(), ggemm::compiled_variants(100), &plan) == GGEMM_SUCCESS);
        CHECK(std::string(plan.variant.name) == "sm100_tma_tcgen05_128x256x64_s4");
    }
}

TEST_CASE("weight layout: SM100 N-major widths and CTA pairs, and the pair of 192 that has no N-major form") {
    ggemm_plan_desc desc = valid_desc();
    desc.m_capacity = 32768;  // enough rounds that the last one hardly counts
    desc.weight_layout = GGEMM_WEIGHT_LAYOUT_N_MAJOR;
    auto chosen = [&desc]() {
        ggemm_plan plan;
        const ggemm_status_t status = ggemm::build_plan(desc, sm100_device(), ggemm::compiled_variants(100), &plan);
        REQUIRE_MESSAGE(status == GGEMM_SUCCESS, std::string(ggemm::last_error()));
        CHECK(plan.variant.weight_layout == GGEMM_WEIGHT_LAYOUT_N_MAJOR);
        return std::string(plan.variant.name);
    };
    desc.n = 5760;  // 30 x 192
    CHECK(chosen() == "sm100_tma_tcgen05_128x192x64_s5_nmajor");
    desc.tile_n = 128;
    CHECK(chosen() == "sm100_tma_tcgen05_128x128x64_s6_nmajor");
    desc.tile_m = 256;  // a CTA pair: each CTA loads 64 of the 128 columns, one box
    CHECK(chosen() == "sm100_tma_tcgen05_256x128x64_s8_c2_nmajor");
    desc.tile_n = 256;  // two boxes per CTA
    CHECK(chosen() == "sm100_tma_tcgen05_256x256x64_s6_c2_nmajor");
    // The pair of 192 columns holds 96 per CTA, not whole 64-column boxes: only its K-major form
    // exists, and the plan says why it was excluded.
    desc.tile_n = 192;
    ggemm_plan plan;
    CHECK(ggemm::build_plan(desc, sm100_device(), ggemm::compiled_variants(100), &plan) ==
          GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK(message_contains("excluded sm100_tma_tcgen05_256x192x64_s7_c2: reads K-major weights, "
                           "desc->weight_layout = N-major"));
}

TEST_CASE("weight layout: the suite's dgrad shapes plan the N-major SM90 kernel of the forward's width") {
    // dgrad of a forward with N x K weights: N' = K, K' = N. A bf16 D without C (valid_desc) is
    // stored by TMA, as in the forward; 8 experts of 2000+ rows take the 3-stage whole-tile
    // kernel, as the forward's pins do (tests/host/test_fill.cpp).
    struct Shape {
        int64_t m_capacity, n, k;
        const char* variant;
    };
    const Shape shapes[] = {
        {32768, 7168, 4096, "sm90_tmastore_whole_128x256x64_s3_nmajor"},   // dsv3_fc1
        {32768, 2048, 7168, "sm90_tmastore_whole_128x256x64_s3_nmajor"},   // dsv3_fc2
        {17664, 4096, 28672, "sm90_tmastore_whole_128x256x64_s3_nmajor"},  // mixtral_fc1
        {63232, 2880, 5760, "sm90_tmastore_whole_128x192x64_s4_nmajor"},   // gptoss_fc1: 2880 = 15 x 192
    };
    for (const Shape& shape : shapes) {
        ggemm_plan_desc desc = valid_desc();
        desc.m_capacity = shape.m_capacity;
        desc.n = shape.n;
        desc.k = shape.k;
        desc.weight_layout = GGEMM_WEIGHT_LAYOUT_N_MAJOR;
        CAPTURE(shape.n);
        ggemm_plan plan;
        REQUIRE(ggemm::build_plan(desc, sm90_device(), ggemm::compiled_variants(90), &plan) == GGEMM_SUCCESS);
        CHECK(std::string(plan.variant.name) == shape.variant);
        CHECK(plan.variant.weight_layout == GGEMM_WEIGHT_LAYOUT_N_MAJOR);
    }
}

TEST_CASE("weight layout: N-major tensor maps are {N, K, L} with boxes of 64 columns x block_k rows") {
    const ggemm::KernelVariant v = n_major(variant("n", 90, 128, 256, 1));
    const ggemm::TensorMapShape dense = ggemm::b_dense_map_shape(at(kDevice0), 5760, 2048, 64, v);
    CHECK(dense.rank == 3);
    CHECK(dense.address == at(kDevice0));
    CHECK(dense.dims[0] == 5760);  // N, contiguous
    CHECK(dense.dims[1] == 2048);  // K
    CHECK(dense.dims[2] == 64);    // L
    CHECK(dense.strides[0] == 5760 * 2);
    CHECK(dense.strides[1] == uint64_t{5760} * 2048 * 2);
    CHECK(dense.box[0] == 64);
    CHECK(dense.box[1] == 64);
    CHECK(dense.box[2] == 1);
    CHECK(dense.element_strides[0] == 1);
    CHECK(dense.element_strides[1] == 1);
    CHECK(dense.element_strides[2] == 1);
    CHECK(ggemm::kNMajorBoxColumns * 2 == 128);  // one 128-byte swizzle row

    const ggemm::TensorMapShape expert =
        ggemm::b_template_map_shape(ggemm::b_template_placeholder(at<const uint64_t>(kDevice0 + 40)), 1032, 520, v);
    CHECK(expert.rank == 2);
    CHECK(expert.address == at(kDevice0 + 32));
    CHECK(expert.dims[0] == 1032);
    CHECK(expert.dims[1] == 520);
    CHECK(expert.strides[0] == 1032 * 2);
    CHECK(expert.box[0] == 64);
    CHECK(expert.box[1] == 64);

    // The K-major shapes are what they were.
    const ggemm::KernelVariant k = variant("k", 90, 128, 256, 1);
    const ggemm::TensorMapShape k_dense = ggemm::b_dense_map_shape(at(kDevice0), 5760, 2048, 64, k);
    CHECK(k_dense.dims[0] == 2048);
    CHECK(k_dense.dims[1] == 5760);
    CHECK(k_dense.box[0] == 64);
    CHECK(k_dense.box[1] == 256);
}

namespace {

// The fields of a wgmma matrix descriptor, decoded (PTX ISA 9.7.15.5.1): byte values.
struct DecodedDescriptor {
    uint32_t start, leading, stride, base_offset, swizzle;
};

DecodedDescriptor decode(uint64_t d) {
    return {static_cast<uint32_t>(d & 0x3FFF) << 4, static_cast<uint32_t>((d >> 16) & 0x3FFF) << 4,
            static_cast<uint32_t>((d >> 32) & 0x3FFF) << 4, static_cast<uint32_t>((d >> 49) & 0x7),
            static_cast<uint32_t>(d >> 62)};
}

// Where the canonical 128-byte-swizzle layouts of the PTX ISA put element (mn, k) of a k16 operand
// slice, before the swizzle (which both TMA and wgmma apply to the same address bits):
//   MN-major: atoms of 64 MN-elements (128 bytes) x 8 K-rows; MN-atoms `leading` bytes apart,
//             K-atoms (groups of 8 rows) `stride` bytes apart.
//   K-major:  rows of 64 K-elements (128 bytes); groups of 8 MN-rows `stride` bytes apart; the
//             k16 slice's 16 elements are contiguous from the start address.
uint32_t canonical_mn_major(const DecodedDescriptor& d, int mn, int k) {
    return d.start + static_cast<uint32_t>(mn / 64) * d.leading + static_cast<uint32_t>(k / 8) * d.stride +
           static_cast<uint32_t>(k % 8) * 128 + static_cast<uint32_t>(mn % 64) * 2;
}
uint32_t canonical_k_major(const DecodedDescriptor& d, int mn, int k) {
    return d.start + static_cast<uint32_t>(mn / 8) * d.stride + static_cast<uint32_t>(mn % 8) * 128 +
           static_cast<uint32_t>(k) * 2;
}

}  // namespace

TEST_CASE("weight layout: the N-major B descriptor reads exactly where TMA put each element") {
    using ggemm::sm90::b_slice_descriptor;
    const uint32_t base = 0x9000;  // a 1024-byte-aligned stage
    for (int slice = 0; slice < 4; ++slice) {
        const DecodedDescriptor d = decode(b_slice_descriptor<ggemm::kNMajor>(base, slice));
        CHECK(d.swizzle == 1);      // 128-byte swizzle
        CHECK(d.base_offset == 0);  // tiles are 1024-byte aligned
        CHECK(d.leading == 8192);   // next 64 columns: the next TMA box
        CHECK(d.stride == 1024);    // next 8 rows of K
        for (int n = 0; n < 256; ++n) {
            for (int k = 0; k < 16; ++k) {
                // TMA: box n / 64 of 64 rows x 128 bytes, boxes back to back; row = K index.
                const int row = slice * 16 + k;
                const uint32_t tma = base + static_cast<uint32_t>(n / 64) * 64 * 128 +
                                     static_cast<uint32_t>(row) * 128 + static_cast<uint32_t>(n % 64) * 2;
                if (canonical_mn_major(d, n, k) != tma) {
                    FAIL("slice " << slice << " n " << n << " k " << k << ": wgmma reads " << canonical_mn_major(d, n, k)
                                  << ", TMA wrote " << tma);
                }
                CHECK(base + ggemm::sm90::nmajor_tile_offset(n, row) == tma);
            }
        }
    }
}

TEST_CASE("weight layout: the K-major B descriptor is unchanged and matches the K-major TMA box") {
    using ggemm::sm90::b_slice_descriptor;
    const uint32_t base = 0x4400 & ~0x3FFu;
    for (int slice = 0; slice < 4; ++slice) {
        const uint64_t descriptor = b_slice_descriptor<ggemm::kKMajor>(base, slice);
        CHECK(descriptor == ggemm::ptx::wgmma_smem_desc(base + slice * 32, 0, 1024, ggemm::ptx::WgmmaSwizzle::k128B));
        const DecodedDescriptor d = decode(descriptor);
        for (int n = 0; n < 256; ++n) {
            for (int k = 0; k < 16; ++k) {
                // TMA: one box of tile_n rows x 128 bytes; row = N index, 64 K per row.
                const uint32_t tma = base + static_cast<uint32_t>(n) * 128 + static_cast<uint32_t>(slice * 16 + k) * 2;
                if (canonical_k_major(d, n, k) != tma) FAIL("slice " << slice << " n " << n << " k " << k);
            }
        }
    }
}

TEST_CASE("weight layout: stepping slice 0's descriptors gives every slice's, at every stage address") {
    using ggemm::ptx::wgmma_desc_advance;
    using ggemm::sm90::b_slice_descriptor;
    // Every 1024-byte-aligned tile in the 227 KB an SM90 CTA can address; the start-address field
    // must not carry into the leading offset.
    for (uint32_t base = 0; base + 1024 <= 227u * 1024; base += 1024) {
        const uint64_t a0 = ggemm::sm90::a_descriptor(base);
        const uint64_t k0 = b_slice_descriptor<ggemm::kKMajor>(base, 0);
        const uint64_t n0 = b_slice_descriptor<ggemm::kNMajor>(base, 0);
        for (int slice = 0; slice < 4; ++slice) {
            CHECK(wgmma_desc_advance(a0, slice * ggemm::sm90::kKMajorSliceBytes) ==
                  ggemm::ptx::wgmma_smem_desc(base + slice * 32, 0, 1024, ggemm::ptx::WgmmaSwizzle::k128B));
            CHECK(wgmma_desc_advance(k0, slice * ggemm::sm90::kBSliceBytes<ggemm::kKMajor>) ==
                  b_slice_descriptor<ggemm::kKMajor>(base, slice));
            CHECK(wgmma_desc_advance(n0, slice * ggemm::sm90::kBSliceBytes<ggemm::kNMajor>) ==
                  b_slice_descriptor<ggemm::kNMajor>(base, slice));
        }
    }
}

TEST_CASE("weight layout: the first stage's descriptors stepped by whole stages are each stage's own") {
    using ggemm::sm90::a_descriptor;
    using ggemm::sm90::b_slice_descriptor;
    using ggemm::sm90::stage_descriptor;
    // Stages of 128 rows of A and 32 to 256 rows of B, 64 K each, at every 1024-byte-aligned
    // first stage whose ring fits the 227 KB an SM90 CTA can address; A from either math
    // warpgroup's rows, B from either half of a split tile.
    for (uint32_t b_rows : {32u, 64u, 112u, 128u, 192u, 256u}) {
        const uint32_t stage_bytes = (128 + b_rows) * 128;
        for (uint32_t first = 0; first + stage_bytes <= 227u * 1024; first += 1024) {
            for (uint32_t stage = 0; first + (stage + 1) * stage_bytes <= 227u * 1024; ++stage) {
                const uint32_t at = first + stage * stage_bytes;
                for (uint32_t a_offset : {0u, 64u * 128}) {
                    CHECK(stage_descriptor(a_descriptor(first + a_offset), stage, stage_bytes) ==
                          a_descriptor(at + a_offset));
                }
                for (uint32_t b_offset : {128u * 128, 128u * 128 + b_rows / 2 * 128}) {
                    CHECK(stage_descriptor(b_slice_descriptor<ggemm::kKMajor>(first + b_offset, 0), stage,
                                           stage_bytes) == b_slice_descriptor<ggemm::kKMajor>(at + b_offset, 0));
                    CHECK(stage_descriptor(b_slice_descriptor<ggemm::kNMajor>(first + b_offset, 0), stage,
                                           stage_bytes) == b_slice_descriptor<ggemm::kNMajor>(at + b_offset, 0));
                }
            }
        }
    }
}
