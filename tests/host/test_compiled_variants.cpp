// The planner over the variants actually compiled into the library (not fakes): an SM90 device
// gets an sm_90a kernel, an SM100 device an sm_100a one, and on SM90 the suite's shapes get the
// tile widths measured best on an H200 (docs/PERFORMANCE.md, tile-width sweep), with TMA stores
// of D where the plan's outputs allow them (a bf16 D without C). SM100's
// tile-width table (src/heuristics.cpp) is an estimate never measured on SM100; no test pins it.
#include <doctest/doctest.h>

#include <string>

#include "kernels/common/contract.h"

#include "src/plan.h"
#include "tests/host/test_fakes.h"

using namespace ggemm_fakes;

namespace {

std::string chosen(const ggemm_plan_desc& desc, const ggemm::DeviceInfo& device, int32_t arch) {
    ggemm_plan plan;
    const ggemm_status_t status = ggemm::build_plan(desc, device, ggemm::compiled_variants(arch), &plan);
    REQUIRE_MESSAGE(status == GGEMM_SUCCESS, std::string(ggemm::last_error()));
    CHECK(plan.variant.arch == arch);
    CHECK((plan.variant.launch != nullptr));
    CHECK(plan.grid % plan.variant.cluster_m == 0);
    return plan.variant.name;
}

}  // namespace

TEST_CASE("compiled variants: each architecture plans with its own kernels") {
    CHECK(ggemm::compiled_variants(90).count >= 1);
    CHECK(ggemm::compiled_variants(100).count >= 1);
    CHECK(chosen(valid_desc(), sm90_device(), 90).rfind("sm90_", 0) == 0);
    CHECK(chosen(valid_desc(), sm100_device(), 100).rfind("sm100_", 0) == 0);
}

TEST_CASE("compiled variants: SM100 CTA pairs (never run) only when asked for") {
    ggemm_plan_desc desc = valid_desc();
    const std::string single = chosen(desc, sm100_device(), 100);
    CHECK(single.find("_c2") == std::string::npos);
    desc.tile_m = 256;
    const std::string pair = chosen(desc, sm100_device(), 100);
    CHECK(pair.find("_c2") != std::string::npos);
}

TEST_CASE("compiled variants: on SM90 the suite's shapes get the widths measured best") {
    // At each case's own M (bench/moe_shapes.json): many waves, so the score alone chooses; with
    // 8 experts of 2048+ rows the 3-stage whole-tile kernel wins the tie at 256 wide.
    struct Shape {
        int64_t m, n, k;
        int32_t experts;
        const char* tma_store;    // bf16 D, no C
        const char* warp_stores;  // with C
    };
    const Shape shapes[] = {
        {32768, 4096, 7168, 8, "sm90_tmastore_whole_128x256x64_s3", "sm90_tma_wgmma_128x256x64_s4"},    // dsv3_fc1
        {32768, 7168, 2048, 8, "sm90_tmastore_whole_128x256x64_s3", "sm90_tma_wgmma_128x256x64_s4"},    // dsv3_fc2
        {17664, 28672, 4096, 8, "sm90_tmastore_whole_128x256x64_s3", "sm90_tma_wgmma_128x256x64_s4"},   // mixtral_fc1
        {148480, 1536, 2048, 128, "sm90_tmastore_halves_128x256x64_s4", "sm90_tma_wgmma_128x256x64_s4"},  // qwen3_fc1
        {148480, 2048, 768, 128, "sm90_tmastore_halves_128x256x64_s4", "sm90_tma_wgmma_128x256x64_s4"},   // qwen3_fc2
        {16384, 4096, 7168, 64, "sm90_tmastore_halves_128x256x64_s4", "sm90_tma_wgmma_128x256x64_s4"},   // decode_L64
        // gptoss_fc1: 5760 = 30 x 192
        {63232, 5760, 2880, 32, "sm90_tmastore_whole_128x192x64_s4", "sm90_tma_wgmma_128x192x64_s5"},
    };
    for (const Shape& shape : shapes) {
        ggemm_plan_desc desc = valid_desc();
        desc.m_capacity = shape.m;
        desc.n = shape.n;
        desc.k = shape.k;
        desc.num_experts = shape.experts;
        CAPTURE(shape.n);
        CHECK(chosen(desc, sm90_device(), 90) == shape.tma_store);
        desc.generate_c = 1;
        desc.c_dtype = GGEMM_DTYPE_FP32;
        CHECK(chosen(desc, sm90_device(), 90) == shape.warp_stores);
    }
}

TEST_CASE("compiled variants: a fused GLU forward with a bf16 D without C takes the TMA-store kernels") {
    // The fc1 cases (N is the pre-activation width); with C the math warps store (at most 192 wide:
    // the 256-wide warp-store kernel fuses no GLU); dGLU and N-major weights keep the warp stores.
    struct Shape {
        int64_t m, n, k;
        int32_t experts;
        const char* tma_store;
    };
    const Shape shapes[] = {
        {32768, 4096, 7168, 8, "sm90_tmastore_halves_128x256x64_s4_glu"},    // dsv3_fc1
        {17664, 28672, 4096, 8, "sm90_tmastore_halves_128x256x64_s4_glu"},   // mixtral_fc1
        {148480, 1536, 2048, 128, "sm90_tmastore_halves_128x256x64_s4_glu"},  // qwen3_fc1
        {63232, 5760, 2880, 32, "sm90_tmastore_whole_128x192x64_s4_glu"},    // gptoss_fc1: 30 x 192
    };
    for (const int32_t activation : {ggemm::kActivationSwiglu, ggemm::kActivationClampedGeglu}) {
        for (const Shape& shape : shapes) {
            ggemm_plan_desc desc = valid_desc();
            desc.activation = activation;
            desc.m_capacity = shape.m;
            desc.n = shape.n;
            desc.k = shape.k;
            desc.num_experts = shape.experts;
            CAPTURE(shape.n);
            CAPTURE(activation);
            CHECK(chosen(desc, sm90_device(), 90) == shape.tma_store);
            desc.bias_dtype = GGEMM_DTYPE_FP16;  // any bias
            CHECK(chosen(desc, sm90_device(), 90) == shape.tma_store);
            desc.generate_c = 1;
            CHECK(chosen(desc, sm90_device(), 90).rfind("sm90_tma_wgmma_128x192", 0) == 0);
            desc.generate_c = 0;
            desc.d_dtype = GGEMM_DTYPE_FP16;
            CHECK(chosen(desc, sm90_device(), 90).rfind("sm90_tma_wgmma_128x192", 0) == 0);
            desc.d_dtype = GGEMM_DTYPE_BF16;
            desc.weight_layout = GGEMM_WEIGHT_LAYOUT_N_MAJOR;
            CHECK(chosen(desc, sm90_device(), 90) == "sm90_tma_wgmma_128x192x64_s5_nmajor_glu");
        }
    }
    // Which TMA-store kernels fuse the forward: the GLU twins of the one-CTA K-major 256-wide one
    // with a buffer of half the tile, and of the 192-wide one.
    const ggemm::VariantList list = ggemm::compiled_variants(90);
    for (int i = 0; i < list.count; ++i) {
        const ggemm::KernelVariant& v = list.items[i];
        if (v.d_box_rows == 0) continue;
        CAPTURE(v.name);
        const std::string name = v.name;
        const bool fused =
            name == "sm90_tmastore_halves_128x256x64_s4_glu" || name == "sm90_tmastore_whole_128x192x64_s4_glu";
        CHECK(v.fused_glu == fused);
    }
}

TEST_CASE("compiled variants: the SM90 TMA-store variants and what they serve") {
    const ggemm::VariantList list = ggemm::compiled_variants(90);
    int tma_store = 0;
    for (int i = 0; i < list.count; ++i) {
        const ggemm::KernelVariant& v = list.items[i];
        CAPTURE(v.name);
        CHECK(v.smem_bytes <= 227 * 1024);
        const bool by_tma = std::string(v.name).rfind("sm90_tmastore_", 0) == 0;
        CHECK((v.d_box_rows > 0) == by_tma);
        if (!by_tma) {
            CHECK(v.max_experts == ggemm::kMaxExperts);
            continue;
        }
        ++tma_store;
        CHECK(v.d_box_cols == 64);  // one 128-byte swizzle row of bf16
        CHECK(v.d_box_rows == 64);  // one math warpgroup's rows
        CHECK(v.max_experts >= 256);
    }
    // three per weight layout, four clusters of two (test_sm90_cluster.cpp) and two GLU twins
    CHECK(tma_store == 12);

    // Other outputs keep the math warps' stores; so do more experts than the offsets copy holds.
    ggemm_plan_desc desc = valid_desc();
    desc.d_dtype = GGEMM_DTYPE_FP16;
    CHECK(chosen(desc, sm90_device(), 90) == "sm90_tma_wgmma_128x256x64_s4");
    desc = valid_desc();
    desc.num_experts = ggemm::kMaxExperts;
    ggemm_plan plan;
    REQUIRE(ggemm::build_plan(desc, sm90_device(), ggemm::compiled_variants(90), &plan) == GGEMM_SUCCESS);
    CHECK(plan.variant.max_experts >= ggemm::kMaxExperts);
    CHECK(std::string(plan.variant.name) != "sm90_tmastore_halves_128x256x64_s4");
}

TEST_CASE("compiled variants: each SM90 kernel that fuses the GLU has a twin without it, which plain plans take") {
    const ggemm::VariantList list = ggemm::compiled_variants(90);
    const std::string suffix = "_glu";
    int twins = 0;
    for (int i = 0; i < list.count; ++i) {
        const ggemm::KernelVariant& glu = list.items[i];
        const std::string name = glu.name;
        const bool named = name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
        CAPTURE(name);
        CHECK(glu.fused_glu == named);
        if (!glu.fused_glu) continue;
        const std::string plain_name = name.substr(0, name.size() - suffix.size());
        const ggemm::KernelVariant* plain = nullptr;
        for (int j = 0; j < list.count; ++j) {
            if (plain_name == list.items[j].name) plain = &list.items[j];
        }
        REQUIRE(plain != nullptr);
        CHECK_FALSE(plain->fused_glu);
        CHECK(plain->tile_m == glu.tile_m);
        CHECK(plain->tile_n == glu.tile_n);
        CHECK(plain->stages == glu.stages);
        CHECK(plain->cluster_m == glu.cluster_m);
        CHECK(plain->weight_layout == glu.weight_layout);
        CHECK(plain->d_box_rows == glu.d_box_rows);
        CHECK(plain->max_split_k == glu.max_split_k);
        ++twins;
    }
    CHECK(twins == 8);  // warp stores 192, 128, 64 of either weight layout; TMA stores 256 halves and 192
    // Without an activation, never a GLU kernel: one expert of 256 rows (narrow tiles) to 64
    // experts of 512, either weight layout, D by TMA or by the math warps.
    ggemm_plan_desc desc = valid_desc();
    for (const int32_t experts : {1, 64}) {
        for (const int64_t n : {1536, 2048, 4096, 5760, 7168}) {
            for (const int32_t layout : {GGEMM_WEIGHT_LAYOUT_K_MAJOR, GGEMM_WEIGHT_LAYOUT_N_MAJOR}) {
                for (const int32_t d_dtype : {GGEMM_DTYPE_BF16, GGEMM_DTYPE_FP32}) {
                    desc.num_experts = experts;
                    desc.m_capacity = experts == 1 ? 256 : 512 * experts;
                    desc.n = n;
                    desc.weight_layout = layout;
                    desc.d_dtype = d_dtype;
                    CAPTURE(experts);
                    CAPTURE(n);
                    CAPTURE(layout);
                    CAPTURE(d_dtype);
                    const std::string name = chosen(desc, sm90_device(), 90);
                    CAPTURE(name);
                    CHECK(name.find(suffix) == std::string::npos);
                    if (experts == 1 && n == 4096) CHECK(name.rfind("sm90_tma_wgmma_128x64x64_s8", 0) == 0);
                }
            }
        }
    }
}
