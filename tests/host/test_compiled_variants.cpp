// The planner over the variants actually compiled into the library (not fakes): an SM90 device
// gets an sm_90a kernel, an SM100 device an sm_100a one, and on SM90 the suite's shapes get the
// tile widths measured best on an H200 (docs/PERFORMANCE.md, what was tried: tile widths), with TMA stores
// of D where the plan's outputs allow them (a bf16 D without C). SM100's
// tile-width table (src/heuristics.cpp) is an estimate never measured on SM100; no test pins it.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "kernels/common/contract.h"

#include "src/heuristics.h"
#include "src/plan.h"
#include "src/variants.h"
#include "src/workspace.h"
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

TEST_CASE("compiled variants: SM90's table is its families in order, every variant once") {
    // The families are defined beside their kernels (src/variants_sm90_*.cu); the table the
    // planner reads puts them together (src/variants_sm90.cpp).
    const ggemm::VariantList families[] = {ggemm::sm90_wide_variants(),    ggemm::sm90_narrow_variants(),
                                             ggemm::sm90_tma_store_variants(), ggemm::sm90_nmajor_variants(),
                                             ggemm::sm90_cluster_variants(), ggemm::sm90_dglu_variants(),
                                             ggemm::sm90_pingpong_variants()};
    const ggemm::VariantList table = ggemm::compiled_variants(90);
    CHECK(table.count == 27);
    std::set<std::string> names;
    int at = 0;
    for (const ggemm::VariantList& family : families) {
        CHECK(family.count > 0);
        for (int i = 0; i < family.count; ++i, ++at) {
            REQUIRE(at < table.count);
            CHECK(std::string(table.items[at].name) == family.items[i].name);
            CHECK((table.items[at].launch == family.items[i].launch));
            CHECK(table.items[at].arch == 90);
            names.insert(family.items[i].name);
        }
    }
    CHECK(at == table.count);
    CHECK(static_cast<int>(names.size()) == table.count);
}

TEST_CASE("compiled variants: with valid-row counts SM90's two-warpgroup kernels load A in half boxes") {
    // One box per math warpgroup (the second left out where its rows are all past the count):
    // every SM90 kernel of 128-row CTA tiles but the ping-pong ones, whose warpgroups each take
    // whole tiles (dGLU's through TMA, which refuses counts, and the plain ping-pong kernel).
    const ggemm::VariantList sm90 = ggemm::compiled_variants(90);
    int half_boxes = 0;
    for (int i = 0; i < sm90.count; ++i) {
        const ggemm::KernelVariant& v = sm90.items[i];
        CAPTURE(v.name);
        if (v.a_box_rows == 128 && !v.tma_dglu && !v.pingpong) {
            CHECK(v.a_box_rows_counted == 64);
            ++half_boxes;
        } else {
            CHECK(v.a_box_rows_counted == 0);
        }
    }
    CHECK(half_boxes > 0);
    const ggemm::VariantList sm100 = ggemm::compiled_variants(100);
    for (int i = 0; i < sm100.count; ++i) CHECK(sm100.items[i].a_box_rows_counted == 0);
}

TEST_CASE("compiled variants: the ping-pong kernel serves decode layers of small K only") {
    const ggemm::VariantList sm90 = ggemm::compiled_variants(90);
    const ggemm::KernelVariant* pingpong = nullptr;
    for (int i = 0; i < sm90.count; ++i) {
        const ggemm::KernelVariant& v = sm90.items[i];
        CAPTURE(v.name);
        CHECK(v.pingpong == (std::string(v.name).find("pingpong") != std::string::npos));
        if (v.pingpong) pingpong = &v;
    }
    REQUIRE(pingpong != nullptr);
    CHECK(pingpong->proven);
    CHECK(pingpong->tile_n == 128);
    CHECK(pingpong->d_box_rows == 64);
    CHECK(pingpong->a_box_rows_counted == 0);  // its warpgroups take whole tiles: A in one box
    CHECK(pingpong->max_split_k == 1);
    CHECK_FALSE(pingpong->fused_glu);

    // The regime's edges: 256 rows an expert, K = 2048, four 128 x 128 tiles per CTA (528 on 132).
    const ggemm::PingPongRegime& r = ggemm::kPingPongRegime;
    CHECK(ggemm::pingpong_pays(*pingpong, 32 * 256, 32, 2048, 768, 132));
    CHECK(ggemm::pingpong_pays(*pingpong, 32 * 256, 32, 2048, r.max_k, 132));
    CHECK_FALSE(ggemm::pingpong_pays(*pingpong, 32 * 256, 32, 2048, r.max_k + 1, 132));
    CHECK_FALSE(ggemm::pingpong_pays(*pingpong, 32 * 512, 32, 2048, 768, 132));
    CHECK(ggemm::pingpong_pays(*pingpong, 66 * 256, 66, 128 * 4, 768, 132));       // 132 x 4 tiles
    CHECK_FALSE(ggemm::pingpong_pays(*pingpong, 66 * 256, 66, 128 * 3, 768, 132));  // 132 x 3
    CHECK_FALSE(ggemm::pingpong_pays(*pingpong, 256, 0, 2048, 768, 132));
    CHECK_FALSE(ggemm::pingpong_pays(*pingpong, 256, 1, 2048, 768, 0));

    // qwen3's second layer in decode (32 experts of 256 rows, K = 768) takes it; the same layer
    // with 512 rows an expert, K past 2048, or one expert of 256 rows (24 tiles) do not, and
    // describe says why.
    ggemm_plan_desc desc = valid_desc();
    desc.num_experts = 32;
    desc.m_capacity = 32 * 256;
    desc.n = 2048;
    desc.k = 768;
    CHECK(chosen(desc, sm90_device(), 90) == pingpong->name);
    for (const int variation : {0, 1, 2}) {
        ggemm_plan_desc other = desc;
        if (variation == 0) other.m_capacity = 32 * 512;
        if (variation == 1) other.k = 2880;
        if (variation == 2) {
            other.num_experts = 1;
            other.m_capacity = 256;
        }
        CAPTURE(variation);
        ggemm_plan plan;
        REQUIRE(ggemm::build_plan(other, sm90_device(), sm90, &plan) == GGEMM_SUCCESS);
        CHECK_FALSE(plan.variant.pingpong);
        CHECK(plan.description.find(std::string("excluded ") + pingpong->name + ": ping-pong, for m_capacity / L <= 256") !=
              std::string::npos);
    }
    // GGEMM_KERNEL naming it times it on any call; a prefix of every TMA-store variant leaves it
    // to its regime.
    ggemm_plan_desc large = desc;
    large.m_capacity = 32 * 2048;
    large.k = 7168;
    ggemm_plan plan;
    REQUIRE(ggemm::build_plan(large, sm90_device(), sm90, &plan, "sm90_tmastore_pingpong_") == GGEMM_SUCCESS);
    CHECK(std::string(plan.variant.name) == pingpong->name);
    REQUIRE(ggemm::build_plan(large, sm90_device(), sm90, &plan, "sm90_tmastore_") == GGEMM_SUCCESS);
    CHECK_FALSE(plan.variant.pingpong);
    REQUIRE(ggemm::build_plan(desc, sm90_device(), sm90, &plan, "sm90_tmastore_") == GGEMM_SUCCESS);
    CHECK(plan.variant.pingpong);
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
        {32768, 4096, 7168, 8, "sm90_tmastore_halves_128x256x64_s4"},    // dsv3_fc1
        {17664, 28672, 4096, 8, "sm90_tmastore_halves_128x256x64_s4"},   // mixtral_fc1
        {148480, 1536, 2048, 128, "sm90_tmastore_halves_128x256x64_s4"},  // qwen3_fc1
        {63232, 5760, 2880, 32, "sm90_tmastore_whole_128x192x64_s4"},    // gptoss_fc1: 30 x 192
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
            CHECK(chosen(desc, sm90_device(), 90) == "sm90_tma_wgmma_128x192x64_s5_nmajor");
        }
    }
    // Which TMA-store kernels fuse the forward: the one-CTA K-major 256-wide one with a buffer of
    // half the tile, and the 192-wide one.
    const ggemm::VariantList list = ggemm::compiled_variants(90);
    for (int i = 0; i < list.count; ++i) {
        const ggemm::KernelVariant& v = list.items[i];
        if (v.d_box_rows == 0) continue;
        CAPTURE(v.name);
        const std::string name = v.name;
        const bool fused = name == "sm90_tmastore_halves_128x256x64_s4" || name == "sm90_tmastore_whole_128x192x64_s4";
        CHECK(v.fused_glu == (fused || v.tma_dglu));
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
    // three per weight layout, four clusters of two (test_sm90_cluster.cpp), dGLU's two per
    // layout (K-major with the L2 prefetch, N-major with evict-first streams), one ping-pong
    CHECK(tma_store == 15);

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

TEST_CASE("compiled variants: dGLU with a bf16 pre-activation and d_pre takes the kernels that load and store by TMA") {
    // The backward of each fc1 case's activation (N: R's width, the forward's N / 2; K: the
    // second layer's hidden size), its weights as the second layer's forward stores them.
    struct Shape {
        int64_t m, n, k;
        int32_t experts;
    };
    const Shape shapes[] = {
        {32768, 2048, 7168, 8},    // dsv3
        {17664, 14336, 4096, 8},   // mixtral
        {148480, 768, 2048, 128},  // qwen3
        {63232, 2880, 2880, 32},   // gpt-oss
    };
    for (const int32_t layout : {GGEMM_WEIGHT_LAYOUT_N_MAJOR, GGEMM_WEIGHT_LAYOUT_K_MAJOR}) {
        for (const Shape& shape : shapes) {
            ggemm_plan_desc desc = valid_desc();
            desc.activation = GGEMM_ACTIVATION_SWIGLU;
            desc.glu_backward = 1;
            desc.glu_pre_dtype = GGEMM_DTYPE_BF16;
            desc.weight_layout = layout;
            desc.m_capacity = shape.m;
            desc.n = shape.n;
            desc.k = shape.k;
            desc.num_experts = shape.experts;
            CAPTURE(shape.n);
            CAPTURE(layout);
            // 192 columns of R: N-major weights with evict-first streams, K-major with the L2 prefetch.
            const bool n_major = layout == GGEMM_WEIGHT_LAYOUT_N_MAJOR;
            const std::string wide = n_major ? "sm90_tmastore_dglu_evictfirst_128x192x64_s4_nmajor"
                                             : "sm90_tmastore_dglu_128x192x64_s4";
            const std::string narrow = n_major ? "sm90_tmastore_dglu_evictfirst_128x128x64_s6_nmajor"
                                               : "sm90_tmastore_dglu_128x128x64_s6";
            CHECK(chosen(desc, sm90_device(), 90) == wide);
            desc.tile_n = 128;
            CHECK(chosen(desc, sm90_device(), 90) == narrow);
            desc.tile_n = 0;
            // Where 192 columns would leave a third of the tile idle, 128: R 256 wide.
            desc.n = 256;
            CHECK(chosen(desc, sm90_device(), 90) == narrow);
            desc.n = shape.n;
            // Any other pre-activation or d_pre dtype: the math warps' stores.
            desc.glu_pre_dtype = GGEMM_DTYPE_FP32;
            CHECK(chosen(desc, sm90_device(), 90).rfind("sm90_tma_wgmma_", 0) == 0);
            desc.glu_pre_dtype = GGEMM_DTYPE_BF16;
            desc.d_dtype = GGEMM_DTYPE_FP16;
            CHECK(chosen(desc, sm90_device(), 90).rfind("sm90_tma_wgmma_", 0) == 0);
            // Never without dGLU.
            desc.d_dtype = GGEMM_DTYPE_BF16;
            desc.glu_backward = 0;
            desc.activation = GGEMM_ACTIVATION_NONE;
            CHECK(chosen(desc, sm90_device(), 90).find("_dglu_") == std::string::npos);
            desc.activation = GGEMM_ACTIVATION_SWIGLU;
            desc.n = 2 * shape.n;  // the forward of the same layer: N is the pre-activation's width
            CHECK(chosen(desc, sm90_device(), 90).find("_dglu_") == std::string::npos);
        }
    }
}

TEST_CASE("compiled variants: dGLU on SM100 (never run) takes an SM100 kernel of its weight layout, one CTA or a pair") {
    for (const int32_t layout : {GGEMM_WEIGHT_LAYOUT_K_MAJOR, GGEMM_WEIGHT_LAYOUT_N_MAJOR}) {
        for (const int32_t pre_dtype : {GGEMM_DTYPE_BF16, GGEMM_DTYPE_FP16, GGEMM_DTYPE_FP32}) {
            ggemm_plan_desc desc = valid_desc();
            desc.activation = GGEMM_ACTIVATION_CLAMPED_GEGLU;
            desc.glu_backward = 1;
            desc.glu_pre_dtype = pre_dtype;
            desc.d_dtype = pre_dtype;
            desc.weight_layout = layout;
            desc.n = 2880 / 2;  // R's width (gpt-oss): a multiple of 32, its last 64-column block half full
            CAPTURE(layout);
            CAPTURE(pre_dtype);
            ggemm_plan plan;
            REQUIRE_MESSAGE(ggemm::build_plan(desc, sm100_device(), ggemm::compiled_variants(100), &plan) ==
                                GGEMM_SUCCESS,
                            std::string(ggemm::last_error()));
            const std::string name = plan.variant.name;
            CHECK(name.rfind("sm100_", 0) == 0);
            CHECK((name.find("_nmajor") != std::string::npos) == (layout == GGEMM_WEIGHT_LAYOUT_N_MAJOR));
            CHECK(name.find("_c2") == std::string::npos);
            CHECK(plan.description.find("activation: clamped GeGLU backward (dGLU) fused in the epilogue") !=
                  std::string::npos);
            CHECK(plan.description.find("compiled for sm_100a and checked on the CPU only, never run on an SM100 GPU") !=
                  std::string::npos);
            // The workspace: the plan's fields, then one fp32 partial per row and 64-column block of
            // R for m_capacity rows, whatever the tile width.
            const uint64_t partials = ggemm::glu_partials_bytes(desc.n, desc.m_capacity);
            CHECK(partials == (4ull * 23 * static_cast<uint64_t>(desc.m_capacity) + 127) / 128 * 128);
            CHECK(plan.workspace_bytes ==
                  ggemm::workspace_bytes(desc.weight_mode, desc.scheduler, desc.num_experts) + partials);
            // Every tile width, and a CTA pair when asked for (256 and 128 columns in either
            // layout, 192 K-major only: the pair of 192 has no N-major form).
            for (const int32_t tile_n : {128, 192, 256}) {
                desc.tile_n = tile_n;
                desc.tile_m = 0;
                REQUIRE_MESSAGE(ggemm::build_plan(desc, sm100_device(), ggemm::compiled_variants(100), &plan) ==
                                    GGEMM_SUCCESS,
                                std::string(ggemm::last_error()));
                CHECK(plan.variant.tile_n == tile_n);
                desc.tile_m = 256;
                const ggemm_status_t pair =
                    ggemm::build_plan(desc, sm100_device(), ggemm::compiled_variants(100), &plan);
                if (tile_n == 192 && layout == GGEMM_WEIGHT_LAYOUT_N_MAJOR) {
                    CHECK(pair == GGEMM_ERROR_UNSUPPORTED_CONFIG);
                } else {
                    REQUIRE_MESSAGE(pair == GGEMM_SUCCESS, std::string(ggemm::last_error()));
                    CHECK(plan.variant.cluster_m == 2);
                    CHECK(plan.workspace_bytes ==
                          ggemm::workspace_bytes(desc.weight_mode, desc.scheduler, desc.num_experts) + partials);
                }
            }
        }
    }
}
