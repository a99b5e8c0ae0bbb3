// The fused GLU forward (desc->activation) on the GPU: D = prob * act(gate, up), M x N/2, and the
// pre-activation C, against the fp64 reference of tests/support/glu_reference.h; dense, discrete
// and N-major weights, both schedulers (bitwise equal), every tile width and its N tail, pieces
// of the last round, empty experts, poisoned outputs, non-default clamped GeGLU constants, bad
// offsets (skipped and reported), graph replays with new offsets. A bf16
// D without C leaves through the TMA-store kernels (256 wide with a buffer of half the tile, and
// 192 wide): bitwise equal to the math warps' stores of the same inputs, N tails, pieces, valid-row
// counts; the 256-wide kernel's GLU instance bitwise equal to its general instance, with many
// tiles per SM.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tests/gpu/runner.h"
#include "tests/support/glu_reference.h"

using namespace ggemm_test;

namespace {

CaseConfig glu_config(const char* label, int32_t activation, int32_t experts, int64_t n, int64_t k, int32_t c_dtype,
                      int32_t d_dtype, int32_t bias_dtype, bool generate_c, uint64_t seed) {
    CaseConfig config;
    config.label = label;
    config.activation = activation;
    config.num_experts = experts;
    config.max_tokens = 600;
    config.n = n;
    config.k = k;
    config.c_dtype = c_dtype;
    config.d_dtype = d_dtype;
    config.bias_dtype = bias_dtype;
    config.generate_c = generate_c;
    config.sampled_rows_per_expert = 48;
    config.seed = seed;
    return config;
}

GluParams glu_params(const CaseConfig& config) {
    GluParams params;
    params.activation = config.activation;
    params.scale = config.glu_scale;
    params.limit = config.glu_limit;
    params.offset = config.glu_offset;
    return params;
}

// D (N/2 columns) and C (N columns, when written) against the reference; rows nobody defines,
// D's buffer past its M x N/2 part, and a C that is not written keep the poison; the status word
// holds exactly `status` (the bits the case's offsets call for).
bool verify_glu(const std::string& what, const HostCase& host_case, const Problem& problem, const GluResult& reference,
                const DeviceOutputs& outputs, std::string* summary, uint32_t status = 0) {
    const CaseConfig& config = host_case.config;
    const int64_t rows_allocated = host_case.m + CaseBuffers::kGuardRows;
    const std::vector<int32_t> owner = defined_rows(problem, rows_allocated);
    bool any_defined = false;
    for (const int32_t expert : owner) any_defined = any_defined || expert >= 0;
    bool ok = true;

    const OutputCheck d = check_output("D", outputs.d.data(), rows_allocated, config.n / 2, config.d_dtype,
                                       reference.d, false, owner, !any_defined);
    CHECK_MESSAGE(d.ok(), what << ": " << d.summary());
    ok = ok && d.ok();
    const std::size_t d_used = static_cast<std::size_t>(rows_allocated * (config.n / 2)) * dtype_size(config.d_dtype);
    const int64_t d_beyond = count_unpoisoned(outputs.d.data() + d_used, outputs.d.size() - d_used);
    CHECK_MESSAGE(d_beyond == 0, what << ": " << d_beyond << " bytes changed past D's M x N/2 elements");
    ok = ok && d_beyond == 0;
    *summary = d.summary();
    if (config.generate_c) {
        const OutputCheck c = check_output("C", outputs.c.data(), rows_allocated, config.n, config.c_dtype,
                                           reference.c, true, owner, !any_defined);
        CHECK_MESSAGE(c.ok(), what << ": " << c.summary());
        ok = ok && c.ok();
        *summary += "; " + c.summary();
    } else if (!outputs.c.empty()) {
        const int64_t changed = count_unpoisoned(outputs.c.data(), outputs.c.size());
        CHECK_MESSAGE(changed == 0, what << ": C is not generated but " << changed << " bytes of it changed");
        ok = ok && changed == 0;
    }
    CHECK_MESSAGE(outputs.status == status,
                  what << ": device status " << outputs.status << " (expected " << status << ")");
    return ok && outputs.status == status;
}

// Dense static, dense dynamic and discrete static runs under the current GGEMM_KERNEL: each
// against the reference (`kernel` prefixes the labels), and all three bitwise equal (the
// schedulers and weight modes change where a tile runs, not its math). Returns the dense static
// run; *summary gets its error summary.
DeviceOutputs check_three_runs(const HostCase& host_case, const Problem& problem, const GluResult& reference,
                               CaseBuffers& buffers, const Stream& stream, const std::string& what,
                               const std::string& kernel, std::string* summary) {
    const DeviceOutputs dense = run_once(host_case, buffers, GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_STATIC, stream);
    const DeviceOutputs dynamic = run_once(host_case, buffers, GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_DYNAMIC, stream);
    const DeviceOutputs discrete =
        run_once(host_case, buffers, GGEMM_WEIGHTS_DISCRETE, GGEMM_SCHEDULER_STATIC, stream);
    std::string ignored;
    verify_glu(what + " [" + kernel + "dense static]", host_case, problem, reference, dense, summary);
    verify_glu(what + " [" + kernel + "dense dynamic]", host_case, problem, reference, dynamic, &ignored);
    verify_glu(what + " [" + kernel + "discrete static]", host_case, problem, reference, discrete, &ignored);
    same_bits(what + " dynamic vs static", dynamic, dense);
    same_bits(what + " discrete vs dense", discrete, dense);
    return dense;
}

// A case's problem, its fp64 reference over the sampled rows, and its label.
struct GluExpectation {
    Problem problem;
    GluResult reference;
    std::string what;
};

GluExpectation expect_glu(const HostCase& host_case) {
    GluExpectation e{host_case.problem(), {}, describe(host_case.config) + " M=" + std::to_string(host_case.m)};
    const std::vector<int64_t> rows = reference_rows(host_case);
    e.reference = compute_glu_reference(e.problem, glu_params(host_case.config), &rows);
    return e;
}

void check_glu_host_case(const HostCase& host_case) {
    const GluExpectation e = expect_glu(host_case);
    Stream stream;
    CaseBuffers buffers(host_case, true, true);
    std::string summary;
    check_three_runs(host_case, e.problem, e.reference, buffers, stream, e.what, "", &summary);
    MESSAGE(e.what << ": " << summary << "; schedulers and weight modes bitwise equal");
}

void check_glu_case(const CaseConfig& config) { check_glu_host_case(make_case(config)); }

// The kernel with a GLU instance, which its calls with an activation and K unsplit run.
constexpr const char* kGluInstanceKernel = "sm90_tmastore_halves_128x256x64_s4";

// A bf16 D without C, any bias: the TMA-store kernel named by `tma_kernel` (a full name) against
// the reference, both schedulers and discrete weights bitwise equal to it, and bitwise equal to
// the 192-wide warp-store kernel's run of the same inputs (the same arithmetic in the same order);
// for kGluInstanceKernel, whose GLU instance (GluEpilogue) the call runs, also to its general
// instance's run.
void check_glu_tma_case(const char* tma_kernel, const HostCase& host_case) {
    const CaseConfig& config = host_case.config;
    REQUIRE(config.d_dtype == GGEMM_DTYPE_BF16);
    REQUIRE(!config.generate_c);
    const GluExpectation e = expect_glu(host_case);
    const Problem& problem = e.problem;
    const GluResult& reference = e.reference;
    const std::string& what = e.what;
    Stream stream;
    CaseBuffers buffers(host_case, true, true);
    DeviceOutputs by_warps;
    {
        ScopedKernel kernel("sm90_tma_wgmma_128x192x64_s5");
        const std::string name = planned_kernel(host_case, GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_STATIC);
        CHECK_MESSAGE(name == "sm90_tma_wgmma_128x192x64_s5", what << ": planned " << name);
        by_warps = run_once(host_case, buffers, GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_STATIC, stream);
    }
    ScopedKernel kernel(tma_kernel);
    const std::string name = planned_kernel(host_case, GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_STATIC);
    CHECK_MESSAGE(name == tma_kernel, what << ": planned " << name << ", not " << tma_kernel);
    std::string summary, ignored;
    verify_glu(what + " [warp stores]", host_case, problem, reference, by_warps, &ignored);
    const DeviceOutputs dense = check_three_runs(host_case, problem, reference, buffers, stream, what, name + " ",
                                                 &summary);
    same_bits(what + " " + name + " vs warp stores", dense, by_warps);
    if (name == kGluInstanceKernel) {
        // The call ran the kernel's GLU instance; its general instance must give the same bits.
        ScopedGeneralInstance general;
        const DeviceOutputs by_general = run_once(host_case, buffers, GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_STATIC, stream);
        same_bits(what + " " + name + " general vs GLU instance", by_general, dense);
    }
    MESSAGE(what << " " << name << ": " << summary << "; bitwise equal to the warp stores");
}

constexpr const char* kTmaGluKernels[] = {kGluInstanceKernel, "sm90_tmastore_whole_128x192x64_s4"};

}  // namespace

TEST_CASE("fused GLU: SwiGLU and clamped GeGLU against the fp64 reference, every output dtype, bias, C") {
    std::size_t index = 0;
    for (const int32_t activation : {GGEMM_ACTIVATION_SWIGLU, GGEMM_ACTIVATION_CLAMPED_GEGLU}) {
        const CaseConfig cases[] = {
            glu_config("glu bf16", activation, 8, 1024, 512, GGEMM_DTYPE_BF16, GGEMM_DTYPE_BF16, GGEMM_DTYPE_NONE,
                       true, mix_seed(9100, index++)),
            glu_config("glu fp16 bias", activation, 6, 768, 264, GGEMM_DTYPE_FP32, GGEMM_DTYPE_FP16, GGEMM_DTYPE_BF16,
                       true, mix_seed(9100, index++)),
            glu_config("glu fp32 bias", activation, 5, 512, 136, GGEMM_DTYPE_FP16, GGEMM_DTYPE_FP32, GGEMM_DTYPE_FP32,
                       true, mix_seed(9100, index++)),
            glu_config("glu no C", activation, 7, 640, 200, GGEMM_DTYPE_BF16, GGEMM_DTYPE_BF16, GGEMM_DTYPE_FP16,
                       false, mix_seed(9100, index++)),
        };
        for (const CaseConfig& config : cases) check_glu_case(config);
    }
}

TEST_CASE("fused GLU: every tile width, N tails of whole 64-column blocks, N-major weights") {
    std::size_t index = 0;
    // N = 320 and 448 leave the last tile of each width partly past N; 64 is one block. The
    // 256-wide warp-store kernel fuses no GLU (a plan asking for it is refused, below).
    for (const int64_t n : {64, 320, 448}) {
        for (const int32_t tile_n : {192, 128, 64}) {
            for (const int32_t layout : {GGEMM_WEIGHT_LAYOUT_K_MAJOR, GGEMM_WEIGHT_LAYOUT_N_MAJOR}) {
                CaseConfig config = glu_config("glu widths", index % 2 ? GGEMM_ACTIVATION_SWIGLU
                                                                       : GGEMM_ACTIVATION_CLAMPED_GEGLU,
                                               5, n, 200, GGEMM_DTYPE_BF16, index % 3 ? GGEMM_DTYPE_BF16 : GGEMM_DTYPE_FP32,
                                               index % 2 ? GGEMM_DTYPE_FP32 : GGEMM_DTYPE_NONE, true,
                                               mix_seed(9200, index));
                config.tile_n = tile_n;
                config.weight_layout = layout;
                ++index;
                check_glu_case(config);
            }
        }
    }
}

TEST_CASE("fused GLU: pieces of the last round (M = 3072, N = 1152: 144 tiles of 192 columns on 132 SMs)") {
    // On a 132-SM H200 the 12 tiles of the last round run as 3 pieces of 64 columns each: pieces
    // start at columns 64 and 128 of their tile and hold one gate/up block each.
    for (const int32_t activation : {GGEMM_ACTIVATION_SWIGLU, GGEMM_ACTIVATION_CLAMPED_GEGLU}) {
        CaseConfig config = glu_config("glu pieces", activation, 4, 1152, 256, GGEMM_DTYPE_BF16, GGEMM_DTYPE_BF16,
                                       GGEMM_DTYPE_BF16, true, 9300 + static_cast<uint64_t>(activation));
        config.layout = RowLayout::kExplicit;
        config.offsets = {1024, 1024, 2048, 3072};  // expert 1 empty
        config.fixed_m = 3072;
        config.tile_n = 192;
        config.sampled_rows_per_expert = 64;
        check_glu_case(config);
    }
}

TEST_CASE("fused GLU: the 256-wide warp-store kernel is refused, saying why") {
    // With C: the 256-wide TMA-store kernel, which fuses the GLU of a bf16 D without C, is out too.
    CaseConfig config = glu_config("glu 256", GGEMM_ACTIVATION_SWIGLU, 2, 512, 64, GGEMM_DTYPE_BF16, GGEMM_DTYPE_BF16,
                                   GGEMM_DTYPE_NONE, true, 9350);
    config.tile_n = 256;
    const HostCase host_case = make_case(config);
    ggemm_plan_desc desc = make_desc(config, host_case.m, GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_STATIC);
    ggemm_plan_t plan = nullptr;
    CHECK(ggemm_plan_create(&plan, &desc) == GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK(plan == nullptr);
    CHECK(last_error_message().find("fuses no GLU epilogue") != std::string::npos);
}

TEST_CASE("fused GLU: valid-row counts, rows past each count untouched in C and D") {
    // Counts 0, 1, 63, 64, 65 and 256 of 256-row segments and 300 of a 512-row one: whole
    // warpgroups skipped, partly valid ones masked, every row checked (poison past the counts).
    std::size_t index = 0;
    for (const int32_t tile_n : {192, 128}) {
        for (const int32_t activation : {GGEMM_ACTIVATION_SWIGLU, GGEMM_ACTIVATION_CLAMPED_GEGLU}) {
            CaseConfig config = glu_config("glu counts", activation, 7, 320, 136, GGEMM_DTYPE_FP32, GGEMM_DTYPE_BF16,
                                           GGEMM_DTYPE_BF16, true, mix_seed(9800, index++));
            config.layout = RowLayout::kExplicit;
            config.offsets = {256, 512, 768, 1024, 1280, 1536, 2048};
            config.fixed_m = 2048;
            config.tile_n = tile_n;
            config.sampled_rows_per_expert = -1;
            HostCase host_case = make_case(config);
            host_case.valid_rows = {0, 1, 63, 64, 65, 256, 300};
            check_glu_host_case(host_case);
        }
    }
}

TEST_CASE("fused GLU: non-default clamped GeGLU constants, values past the limit") {
    // K = 512 with A, B in [-1, 1): pre-activations of a few units, so limit 2.5 clamps often.
    CaseConfig config = glu_config("glu constants", GGEMM_ACTIVATION_CLAMPED_GEGLU, 6, 512, 512, GGEMM_DTYPE_FP32,
                                   GGEMM_DTYPE_FP32, GGEMM_DTYPE_FP32, true, 9400);
    config.glu_scale = 1.0f;
    config.glu_limit = 2.5f;
    config.glu_offset = 0.5f;
    check_glu_case(config);
    // The constants matter: the default constants' reference must not match this run.
    const HostCase host_case = make_case(config);
    const Problem problem = host_case.problem();
    const std::vector<int64_t> rows = reference_rows(host_case);
    GluParams defaults;
    defaults.activation = GGEMM_ACTIVATION_CLAMPED_GEGLU;
    const GluResult other = compute_glu_reference(problem, defaults, &rows);
    const GluResult right = compute_glu_reference(problem, glu_params(config), &rows);
    CHECK(other.d.d != right.d.d);
}

TEST_CASE("fused GLU: no expert has rows: D and C keep the poison") {
    CaseConfig config = glu_config("glu empty", GGEMM_ACTIVATION_SWIGLU, 3, 256, 64, GGEMM_DTYPE_BF16, GGEMM_DTYPE_BF16,
                                   GGEMM_DTYPE_NONE, true, 9500);
    config.layout = RowLayout::kExplicit;
    config.offsets = {0, 0, 0};
    config.fixed_m = 512;
    check_glu_case(config);
}

TEST_CASE("sanitizer: fused GLU, bad offsets are skipped and reported, warp and TMA stores") {
    // bad_offset_cases(): the offending experts' rows keep their poison in C and D, every other
    // expert is right, and the status word names exactly the rules broken; both schedulers. The
    // math warps' stores (clamped GeGLU, fp16 C) and the GLU instance's TMA stores (SwiGLU, a
    // bf16 D without C).
    uint64_t seed = 9700;
    for (const BadOffsets& bad : bad_offset_cases()) {
        for (const bool tma_store : {false, true}) {
            const int32_t activation = tma_store ? GGEMM_ACTIVATION_SWIGLU : GGEMM_ACTIVATION_CLAMPED_GEGLU;
            CaseConfig config = glu_config(bad.name, activation, static_cast<int32_t>(bad.offsets.size()), 320, 136,
                                           tma_store ? GGEMM_DTYPE_BF16 : GGEMM_DTYPE_FP16, GGEMM_DTYPE_BF16,
                                           GGEMM_DTYPE_BF16, !tma_store, ++seed);
            config.layout = RowLayout::kExplicit;
            config.offsets = bad.offsets;
            config.fixed_m = bad.m;
            config.sampled_rows_per_expert = -1;  // every row: the skipped experts' keep their poison
            config.c_buffer_when_unused = tma_store;
            const HostCase host_case = make_case(config);
            const uint32_t status = offset_violations(host_case.offsets.data(), config.num_experts, host_case.m);
            REQUIRE((status & bad.required) == bad.required);
            const GluExpectation e = expect_glu(host_case);
            REQUIRE_FALSE(e.reference.d.rows.empty());  // some expert is still computed
            ScopedKernel kernel(tma_store ? kGluInstanceKernel : "sm90_tma_wgmma_");
            Stream stream;
            CaseBuffers buffers(host_case, true, false);
            for (const int32_t scheduler : {GGEMM_SCHEDULER_STATIC, GGEMM_SCHEDULER_DYNAMIC}) {
                const std::string name = planned_kernel(host_case, GGEMM_WEIGHTS_DENSE, scheduler);
                CHECK_MESSAGE(name.rfind(tma_store ? kGluInstanceKernel : "sm90_tma_wgmma_", 0) == 0,
                              e.what << ": planned " << name);
                const DeviceOutputs outputs = run_once(host_case, buffers, GGEMM_WEIGHTS_DENSE, scheduler, stream);
                std::string summary;
                const std::string what =
                    e.what + " " + name + (scheduler == GGEMM_SCHEDULER_STATIC ? " static" : " dynamic");
                verify_glu(what, host_case, e.problem, e.reference, outputs, &summary, status);
                MESSAGE(what << ": status " << outputs.status << "; " << summary);
            }
        }
    }
}

TEST_CASE("fused GLU: one graph capture replayed with new offsets and data, warp and TMA stores") {
    // Both schedulers; each replay's C and D against a fresh reference.
    for (const bool tma_store : {false, true}) {
        for (const int32_t scheduler : {GGEMM_SCHEDULER_STATIC, GGEMM_SCHEDULER_DYNAMIC}) {
            const int32_t activation = tma_store ? GGEMM_ACTIVATION_SWIGLU : GGEMM_ACTIVATION_CLAMPED_GEGLU;
            CaseConfig config = glu_config("glu graph", activation, 6, 576, 264,
                                           tma_store ? GGEMM_DTYPE_BF16 : GGEMM_DTYPE_FP32, GGEMM_DTYPE_BF16,
                                           GGEMM_DTYPE_FP16, !tma_store, mix_seed(9800, tma_store ? 1u : 0u));
            config.fixed_m = 6 * 768;  // every draw of 6 experts x at most 600 rows fits
            config.scheduler = scheduler;
            config.c_buffer_when_unused = tma_store;
            HostCase host_case = make_case(config);
            ScopedKernel kernel(tma_store ? kGluInstanceKernel : "sm90_tma_wgmma_");
            Stream stream;
            CaseBuffers buffers(host_case, true, false);
            Plan plan(make_desc(config, host_case.m, GGEMM_WEIGHTS_DENSE, scheduler));
            buffers.ensure_workspace(plan.workspace_size());
            Graph graph;
            capture_execute(graph, plan, buffers.args(GGEMM_WEIGHTS_DENSE), stream);
            for (int replay = 0; replay < 3; ++replay) {
                if (replay > 0) {  // new offsets and data behind the same pointers
                    refresh_case(host_case, mix_seed(9810, static_cast<uint64_t>(replay)), /*keep_offsets=*/false);
                    buffers.upload(host_case);
                }
                const GluExpectation e = expect_glu(host_case);
                buffers.poison(stream.get());
                graph.launch(stream.get());
                stream.synchronize();
                const DeviceOutputs outputs = buffers.download();
                std::string summary;
                const std::string what = e.what + (tma_store ? " TMA stores" : " warp stores") + " replay " +
                                         std::to_string(replay);
                verify_glu(what, host_case, e.problem, e.reference, outputs, &summary);
                MESSAGE(what << ": " << summary);
            }
        }
    }
}

TEST_CASE("fused GLU: the plan says which activation it fuses and refuses N that is not whole blocks") {
    CaseConfig config = glu_config("glu describe", GGEMM_ACTIVATION_CLAMPED_GEGLU, 4, 4096, 512, GGEMM_DTYPE_BF16,
                                   GGEMM_DTYPE_BF16, GGEMM_DTYPE_NONE, false, 9600);
    const HostCase host_case = make_case(config);
    ggemm_plan_desc desc = make_desc(config, host_case.m, GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_STATIC);
    // 4096 rows: 512 tiles of 128 x 256, enough that the score keeps the 256-wide tile (at 1792
    // rows 128 x 128 tiles, their last round cut in halves, score higher).
    desc.m_capacity = 4096;
    {
        Plan plan(desc);
        const std::string text = plan.description();
        INFO(text);
        CHECK(text.find("activation: clamped GeGLU fused in the epilogue") != std::string::npos);
        CHECK(text.find("s = 1.70200002, limit = 7, offset = 1") != std::string::npos);
        // A bf16 D without C takes a TMA-store kernel that fuses the GLU, whose D map is M x N/2
        // (N = 4096: enough tiles that the fill rule keeps the 256-wide tile; at N = 1024 it
        // chooses 128-wide tiles, stored by the math warps).
        CHECK(text.find("kernel: sm90_tmastore_halves_128x256x64_s4") != std::string::npos);
        CHECK(text.find("output: D (M x 2048, the activation's output) stored by TMA") != std::string::npos);
        CHECK(text.find("kernel instance: the GLU instance") != std::string::npos);
        CHECK(text.find("excluded sm90_tmastore_whole_128x256x64_s3: stores D with TMA and fuses no GLU epilogue") !=
              std::string::npos);
    }
    desc.n = 1056;  // a multiple of 32, not of 64
    ggemm_plan_t plan = nullptr;
    CHECK(ggemm_plan_create(&plan, &desc) == GGEMM_ERROR_INVALID_SHAPE);
    CHECK(last_error_message().find("must be a multiple of 64") != std::string::npos);
    CHECK(plan == nullptr);
}

TEST_CASE("fused GLU through TMA stores: bitwise equal to the math warps' stores, bias dtypes, N tails") {
    std::size_t index = 0;
    // N = 64: one block (a 32-column output, half an atom, ending at N/2); 320 and 448 leave
    // the last tile partly past N; 1152 = 6 x 192 (the 192-wide tile's second atom is half full
    // and copied by the warps, except in the last tile of a row, where a box is clipped at N/2).
    for (const int64_t n : {64, 320, 448, 1152}) {
        for (const char* kernel : kTmaGluKernels) {
            for (const int32_t bias : {GGEMM_DTYPE_NONE, GGEMM_DTYPE_BF16, GGEMM_DTYPE_FP16, GGEMM_DTYPE_FP32}) {
                const int32_t activation = index % 2 ? GGEMM_ACTIVATION_SWIGLU : GGEMM_ACTIVATION_CLAMPED_GEGLU;
                CaseConfig config = glu_config("glu tma", activation, 5, n, 200, GGEMM_DTYPE_BF16, GGEMM_DTYPE_BF16,
                                               bias, false, mix_seed(9800, index++));
                config.c_buffer_when_unused = true;  // C must stay poisoned
                check_glu_tma_case(kernel, make_case(config));
            }
        }
    }
}

TEST_CASE("fused GLU through TMA stores: pieces of the last round") {
    // On a 132-SM H200: N = 1216 (19 blocks; the last tile of a row partly past N) in tiles of
    // 256 is 5 per row block. M = 4096: 160 tiles, the last 28 as 2 pieces of 128 columns (one
    // whole atom each); M = 3584: 140 tiles, the last 8 as 4 pieces of 64 (half an atom each,
    // copied by the warps). In tiles of 192 (7 per row block), M = 3072 gives 168 tiles, the
    // last 36 whole; M = 2560: 140, the last 8 as 3 pieces of 64.
    struct Shape {
        const char* kernel;
        int64_t m;
    };
    const Shape shapes[] = {{kTmaGluKernels[0], 4096}, {kTmaGluKernels[0], 3584}, {kTmaGluKernels[1], 3072},
                            {kTmaGluKernels[1], 2560}};
    std::size_t index = 0;
    for (const Shape& shape : shapes) {
        for (const int32_t activation : {GGEMM_ACTIVATION_SWIGLU, GGEMM_ACTIVATION_CLAMPED_GEGLU}) {
            CaseConfig config = glu_config("glu tma pieces", activation, 4, 1216, 256, GGEMM_DTYPE_BF16,
                                           GGEMM_DTYPE_BF16, GGEMM_DTYPE_FP32, false, mix_seed(9850, index++));
            config.c_buffer_when_unused = true;
            config.layout = RowLayout::kExplicit;
            const int32_t quarter = static_cast<int32_t>(shape.m / 4 / 256 * 256);
            config.offsets = {quarter, quarter, 2 * quarter, static_cast<int32_t>(shape.m)};  // expert 1 empty
            config.fixed_m = shape.m;
            config.sampled_rows_per_expert = 64;
            check_glu_tma_case(shape.kernel, make_case(config));
        }
    }
}

TEST_CASE("fused GLU through TMA stores: many tiles per SM, K of 1 to 16 k-blocks, valid-row counts") {
    // In the GLU instance (256 wide) each tile's activation runs behind the next tile's first
    // MMAs when K is more than two k-blocks, and in the open before them otherwise. M = 8192,
    // N = 1536: 384 tiles of 256 or 512 of 192 on 132 SMs, three or four per SM, with one
    // expert empty.
    std::size_t index = 0;
    for (const int64_t k : {64, 128, 192, 1000}) {
        for (const char* kernel : kTmaGluKernels) {
            // Each kernel: both activations over the K values, with and without bias.
            const int32_t activation = index / 2 % 2 ? GGEMM_ACTIVATION_SWIGLU : GGEMM_ACTIVATION_CLAMPED_GEGLU;
            CaseConfig config = glu_config("glu instance", activation, 8, 1536, k, GGEMM_DTYPE_BF16, GGEMM_DTYPE_BF16,
                                           index % 3 == 0 ? GGEMM_DTYPE_FP32 : GGEMM_DTYPE_NONE, false,
                                           mix_seed(9870, index));
            ++index;
            config.c_buffer_when_unused = true;
            config.layout = RowLayout::kExplicit;
            config.offsets = {1024, 2048, 2048, 3072, 4096, 5120, 6144, 8192};  // expert 2 empty
            config.fixed_m = 8192;
            config.sampled_rows_per_expert = 32;
            check_glu_tma_case(kernel, make_case(config));
        }
    }
    // 24 experts of 512 rows, N = 1024 (N = 1152 in tiles of 192: the last tile of a row ends
    // inside its second atom): whole and partly valid warpgroups one after the other on the same
    // SM (a partly valid one takes the masked copies, after the previous tile's pending atom is
    // stored behind its MMAs).
    const int32_t pattern[] = {512, 300, 65, 64, 0, 1, 511, 256};
    for (const char* kernel : kTmaGluKernels) {
        const bool wide = std::string(kernel) == kTmaGluKernels[0];
        CaseConfig config = glu_config("glu instance counts", GGEMM_ACTIVATION_SWIGLU, 24, wide ? 1024 : 1152, 200,
                                       GGEMM_DTYPE_BF16, GGEMM_DTYPE_BF16, GGEMM_DTYPE_BF16, false,
                                       mix_seed(9880, wide ? 0 : 1));
        config.c_buffer_when_unused = true;
        config.layout = RowLayout::kExplicit;
        std::vector<int32_t> counts;
        for (int32_t g = 0; g < 24; ++g) {
            config.offsets.push_back(512 * (g + 1));
            counts.push_back(pattern[g % 8]);
        }
        config.fixed_m = 512 * 24;
        config.sampled_rows_per_expert = 32;
        HostCase host_case = make_case(config);
        host_case.valid_rows = counts;
        REQUIRE(valid_rows_violations(host_case.problem()) == 0u);
        check_glu_tma_case(kernel, host_case);
    }
}

TEST_CASE("fused GLU through TMA stores: valid-row counts (partly valid warpgroups copy with masked stores)") {
    // Counts 0, 1, 63, 64, 65, 255, 256, 300 of 512, 0 of an empty expert, 129 and 192.
    const std::vector<int32_t> offsets = {256, 512, 768, 1024, 1280, 1536, 1792, 2304, 2304, 2560, 2816};
    const std::vector<int32_t> counts = {0, 1, 63, 64, 65, 255, 256, 300, 0, 129, 192};
    std::size_t index = 0;
    for (const char* kernel : kTmaGluKernels) {
        for (const int32_t activation : {GGEMM_ACTIVATION_SWIGLU, GGEMM_ACTIVATION_CLAMPED_GEGLU}) {
            CaseConfig config = glu_config("glu tma counts", activation, static_cast<int32_t>(offsets.size()), 448, 200,
                                           GGEMM_DTYPE_BF16, GGEMM_DTYPE_BF16, GGEMM_DTYPE_BF16, false,
                                           mix_seed(9900, index++));
            config.c_buffer_when_unused = true;
            config.layout = RowLayout::kExplicit;
            config.offsets = offsets;
            config.fixed_m = offsets.back() + 256;  // a last segment past every offset's rows
            config.sampled_rows_per_expert = 64;
            HostCase host_case = make_case(config);
            host_case.valid_rows = counts;
            REQUIRE(valid_rows_violations(host_case.problem()) == 0u);
            check_glu_tma_case(kernel, host_case);
        }
    }
}

TEST_CASE("sanitizer: fused GLU through TMA stores, small cases, N tails and counts") {
    std::size_t index = 0;
    for (const char* kernel : kTmaGluKernels) {
        for (const int32_t activation : {GGEMM_ACTIVATION_SWIGLU, GGEMM_ACTIVATION_CLAMPED_GEGLU}) {
            CaseConfig config = glu_config("san glu tma", activation, 4, 320, 72, GGEMM_DTYPE_BF16, GGEMM_DTYPE_BF16,
                                           GGEMM_DTYPE_FP16, false, mix_seed(9950, index++));
            config.c_buffer_when_unused = true;
            config.max_tokens = 300;
            check_glu_tma_case(kernel, make_case(config));
        }
        CaseConfig config = glu_config("san glu tma counts", GGEMM_ACTIVATION_SWIGLU, 3, 448, 72, GGEMM_DTYPE_BF16,
                                       GGEMM_DTYPE_BF16, GGEMM_DTYPE_NONE, false, mix_seed(9950, index++));
        config.c_buffer_when_unused = true;
        config.layout = RowLayout::kExplicit;
        config.offsets = {256, 512, 768};
        config.fixed_m = 768;
        HostCase host_case = make_case(config);
        host_case.valid_rows = {65, 0, 200};
        check_glu_tma_case(kernel, host_case);
    }
}

TEST_CASE("sanitizer: fused GLU through TMA stores, several tiles per SM") {
    // M = 6144, N = 1536 (1344 in tiles of 192: the last tile of a row ends inside its second
    // atom): 288 or 336 tiles on 132 SMs; in the GLU instance the second round's tiles take the
    // first round's pending atoms behind their MMAs (K = 192: three k-blocks), and some
    // warpgroups are partly valid.
    for (const char* kernel : kTmaGluKernels) {
        const bool wide = std::string(kernel) == kTmaGluKernels[0];
        CaseConfig config = glu_config("san glu instance", GGEMM_ACTIVATION_CLAMPED_GEGLU, 6, wide ? 1536 : 1344,
                                       192, GGEMM_DTYPE_BF16, GGEMM_DTYPE_BF16, GGEMM_DTYPE_FP32, false,
                                       wide ? 9960 : 9961);
        config.c_buffer_when_unused = true;
        config.layout = RowLayout::kExplicit;
        config.offsets = {1024, 2048, 3072, 4096, 5120, 6144};
        config.fixed_m = 6144;
        config.sampled_rows_per_expert = 16;
        HostCase host_case = make_case(config);
        host_case.valid_rows = {1024, 700, 1024, 65, 1024, 1000};
        check_glu_tma_case(kernel, host_case);
    }
}

TEST_CASE("sanitizer: fused GLU, small cases, dense and discrete, both activations") {
    std::size_t index = 0;
    for (const int32_t activation : {GGEMM_ACTIVATION_SWIGLU, GGEMM_ACTIVATION_CLAMPED_GEGLU}) {
        for (const int32_t tile_n : {192, 128}) {
            CaseConfig config = glu_config("san glu", activation, 4, 320, 72, GGEMM_DTYPE_FP16, GGEMM_DTYPE_FP32,
                                           GGEMM_DTYPE_BF16, true, mix_seed(9700, index++));
            config.max_tokens = 300;
            config.tile_n = tile_n;
            check_glu_case(config);
        }
    }
}

TEST_CASE("fused GLU: NULL alpha and prob, bitwise equal to arrays of ones, warp and TMA stores") {
    struct Nulls {
        bool alpha, prob;
    };
    uint64_t seed = 17200;
    for (const char* design : {"sm90_tma_wgmma_128x192x64_s5", "sm90_tmastore_halves_128x256x64_s4"}) {
        for (const Nulls nulls : {Nulls{true, true}, Nulls{true, false}, Nulls{false, true}}) {
            CaseConfig config = glu_config("glu NULL scales", GGEMM_ACTIVATION_SWIGLU, 6, 512, 200, GGEMM_DTYPE_BF16,
                                           GGEMM_DTYPE_BF16, GGEMM_DTYPE_NONE, false, ++seed);
            config.null_alpha = nulls.alpha;
            config.null_prob = nulls.prob;
            ScopedKernel kernel(design);
            const HostCase host_case = make_case(config);
            const GluExpectation e = expect_glu(host_case);
            Stream stream;
            CaseBuffers buffers(host_case, true, true);
            std::string summary;
            const DeviceOutputs with_null =
                check_three_runs(host_case, e.problem, e.reference, buffers, stream, e.what, "", &summary);
            buffers.pass_null(false, false);
            const DeviceOutputs with_ones =
                run_once(host_case, buffers, GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_STATIC, stream);
            same_bits(e.what + " " + design + ": NULL vs ones", with_null, with_ones);
            MESSAGE(e.what << " " << design << ": " << summary << "; bitwise equal to arrays of ones");
        }
    }
}
