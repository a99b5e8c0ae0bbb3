// dGLU (desc->glu_backward) on the GPU: d_pre (M x 2N, interleaved) and d_prob from the
// input-gradient GEMM R = alpha * dY @ B_g(^T) and the saved pre-activation, against the fp64
// reference of tests/support/glu_reference.h; both activations, non-default constants, every
// d_pre and pre-activation dtype, both weight layouts, dense and discrete weights (the same bits),
// N with a final 32-column block, pieces of the last round; static and dynamic schedulers and
// repeated runs bitwise equal; rows no expert computes (bad offsets among them) keep D's poison
// and get d_prob = 0. The kernels that load the pre-activation and store d_pre by TMA (bf16 both)
// against the reference and bitwise against the math warps' stores.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tests/gpu/runner.h"
#include "tests/support/glu_reference.h"

using namespace ggemm_test;

namespace {

struct DgluConfig {
    CaseConfig base;          // A = dY, B = the layer's weights, n = N (the activation's width)
    int32_t activation = GGEMM_ACTIVATION_SWIGLU;
    float scale = 1.702f, limit = 7.0f, offset = 1.0f;
    int32_t pre_dtype = GGEMM_DTYPE_BF16;
};

struct DgluOutputs {
    std::vector<uint8_t> d_pre;  // rows_allocated x 2N of d_dtype
    std::vector<uint8_t> d_prob; // rows_allocated fp32
    uint32_t status = 0;
};

// Runs dGLU once on fresh poisoned outputs (d_prob past M too), through a plan; with `graph`, the
// execute (its memset, GEMM and reduction) is captured into a CUDA graph and replayed twice, the
// outputs poisoned again before the second replay. Discrete weights: one allocation per expert.
DgluOutputs run_dglu(const DgluConfig& dglu, const HostCase& host_case, const std::vector<uint8_t>& pre,
                     int32_t scheduler, const Stream& stream, bool graph = false,
                     int32_t weight_mode = GGEMM_WEIGHTS_DENSE) {
    const CaseConfig& config = host_case.config;
    const int64_t rows_allocated = host_case.m + CaseBuffers::kGuardRows;
    ggemm_plan_desc desc = make_desc(config, host_case.m, weight_mode, scheduler);
    desc.generate_c = 0;
    desc.activation = dglu.activation;
    desc.glu_scale = dglu.scale;
    desc.glu_limit = dglu.limit;
    desc.glu_offset = dglu.offset;
    desc.glu_backward = 1;
    desc.glu_pre_dtype = dglu.pre_dtype;
    Plan plan(desc);
    DeviceBuffer a, b, b_ptrs, offsets, alpha, prob, pre_buffer, d_pre, d_prob, status, workspace;
    ExpertWeights experts;
    a.assign(host_case.a);
    if (weight_mode == GGEMM_WEIGHTS_DISCRETE) {
        experts.upload(host_case, mix_seed(config.seed, 5));
        b_ptrs.assign(experts.pointers());
    } else {
        b.assign(host_case.b);
    }
    offsets.assign(host_case.offsets);
    alpha.assign(host_case.alpha);
    prob.assign(host_case.prob);
    pre_buffer.assign(pre);
    d_pre.allocate(static_cast<std::size_t>(rows_allocated * 2 * config.n) * dtype_size(config.d_dtype));
    d_prob.allocate(static_cast<std::size_t>(rows_allocated) * sizeof(float));
    status.allocate(sizeof(uint32_t));
    workspace.allocate(plan.workspace_size());
    d_pre.fill(kPoisonByte, stream.get());
    d_prob.fill(kPoisonByte, stream.get());
    ggemm_args args;
    REQUIRE(ggemm_args_init(&args, sizeof args) == GGEMM_SUCCESS);
    args.m = host_case.m;
    args.a = a.get();
    args.b = b.get();  // NULL in discrete mode
    args.b_ptrs = b_ptrs.as<const uint64_t>();
    args.padded_offsets = offsets.as<int32_t>();
    args.alpha = config.null_alpha ? nullptr : alpha.as<float>();
    args.prob = config.null_prob ? nullptr : prob.as<float>();
    args.d = d_pre.get();
    args.glu_pre = pre_buffer.get();
    args.d_prob = d_prob.as<float>();
    args.workspace = workspace.get();
    args.workspace_size = workspace.bytes();
    args.device_status = status.as<uint32_t>();
    if (graph) {
        Graph captured;
        captured.begin_capture(stream.get());
        CHECK_GGEMM(ggemm_execute(plan.get(), &args, stream.get()));
        captured.end_capture(stream.get());
        captured.launch(stream.get());
        d_pre.fill(kPoisonByte, stream.get());
        d_prob.fill(kPoisonByte, stream.get());
        captured.launch(stream.get());
    } else {
        CHECK_GGEMM(ggemm_execute(plan.get(), &args, stream.get()));
    }
    CHECK_LAUNCH();
    stream.synchronize();
    DgluOutputs out;
    out.d_pre = d_pre.download();
    out.d_prob = d_prob.download();
    const std::vector<uint8_t> word = status.download();
    std::memcpy(&out.status, word.data(), sizeof out.status);
    return out;
}

void verify_dglu(const std::string& what, const HostCase& host_case, const Problem& problem, const DgluResult& reference,
                 const DgluOutputs& out, uint32_t status = 0) {
    const CaseConfig& config = host_case.config;
    const int64_t rows_allocated = host_case.m + CaseBuffers::kGuardRows;
    const std::vector<int32_t> owner = defined_rows(problem, rows_allocated);
    bool any_defined = false;
    for (const int32_t expert : owner) any_defined = any_defined || expert >= 0;
    const OutputCheck d = check_output("d_pre", out.d_pre.data(), rows_allocated, 2 * config.n, config.d_dtype,
                                       reference.d_pre, false, owner, !any_defined);
    CHECK_MESSAGE(d.ok(), what << ": " << d.summary());
    // d_prob: every row of M written (0 where no expert computes it), nothing past M.
    std::vector<float> d_prob(static_cast<std::size_t>(rows_allocated));
    std::memcpy(d_prob.data(), out.d_prob.data(), d_prob.size() * sizeof(float));
    FrobeniusSum error;
    for (std::size_t i = 0; i < reference.d_pre.rows.size(); ++i) {
        error.add(d_prob[static_cast<std::size_t>(reference.d_pre.rows[i])], reference.d_prob[i]);
    }
    int64_t undefined_nonzero = 0, past_m_written = 0;
    for (int64_t row = 0; row < rows_allocated; ++row) {
        if (row >= host_case.m) {
            past_m_written += count_unpoisoned(&d_prob[static_cast<std::size_t>(row)], sizeof(float)) != 0;
        } else if (owner[static_cast<std::size_t>(row)] < 0) {
            undefined_nonzero += d_prob[static_cast<std::size_t>(row)] != 0.0f;
        }
    }
    if (!reference.d_pre.rows.empty()) {
        CHECK_MESSAGE(error.relative() < 1e-4, what << ": d_prob relative error " << error.relative());
    }
    CHECK_MESSAGE(undefined_nonzero == 0, what << ": " << undefined_nonzero << " rows no expert computes have d_prob != 0");
    CHECK_MESSAGE(past_m_written == 0, what << ": " << past_m_written << " d_prob entries past M written");
    CHECK_MESSAGE(out.status == status, what << ": device status " << out.status << " (expected " << status << ")");
    MESSAGE(what << ": " << d.summary() << "; d_prob error " << error.relative());
}

// A dGLU case: the problem, a fresh random saved pre-activation, its fp64 reference and a label.
struct DgluCase {
    HostCase host_case;
    Problem problem;
    std::vector<uint8_t> pre;
    DgluResult reference;
    std::string what;
};

DgluCase make_dglu_case(const DgluConfig& dglu) {
    DgluCase c;
    c.host_case = make_case(dglu.base);
    c.problem = c.host_case.problem();
    const CaseConfig& config = c.host_case.config;
    c.pre.resize(static_cast<std::size_t>(c.host_case.m * 2 * config.n) * dtype_size(dglu.pre_dtype));
    // Pre-activations past the default limit of 7, so the clamps and both branches are exercised.
    fill_uniform(c.pre.data(), c.pre.size() / dtype_size(dglu.pre_dtype), dglu.pre_dtype, -9.0f, 9.0f,
                 mix_seed(config.seed, 77));
    GluParams params;
    params.activation = dglu.activation;
    params.scale = dglu.scale;
    params.limit = dglu.limit;
    params.offset = dglu.offset;
    const std::vector<int64_t> rows = reference_rows(c.host_case);
    c.reference = compute_dglu_reference(c.problem, params, c.pre.data(), dglu.pre_dtype, &rows);
    c.what = describe(config) + " dGLU " + (dglu.activation == GGEMM_ACTIVATION_SWIGLU ? "SwiGLU" : "GeGLU") +
             " pre=" + dtype_name(dglu.pre_dtype) + " M=" + std::to_string(c.host_case.m);
    return c;
}

void check_dglu_case(const DgluConfig& dglu) {
    const DgluCase c = make_dglu_case(dglu);
    const HostCase& host_case = c.host_case;
    const Problem& problem = c.problem;
    const std::vector<uint8_t>& pre = c.pre;
    const DgluResult& reference = c.reference;
    const std::string& what = c.what;
    Stream stream;
    const DgluOutputs first = run_dglu(dglu, host_case, pre, GGEMM_SCHEDULER_STATIC, stream);
    const DgluOutputs dynamic = run_dglu(dglu, host_case, pre, GGEMM_SCHEDULER_DYNAMIC, stream);
    const DgluOutputs again = run_dglu(dglu, host_case, pre, GGEMM_SCHEDULER_STATIC, stream);
    verify_dglu(what + " [static]", host_case, problem, reference, first);
    verify_dglu(what + " [dynamic]", host_case, problem, reference, dynamic);
    CHECK_MESSAGE(first.d_pre == dynamic.d_pre, what << ": d_pre differs between the schedulers");
    CHECK_MESSAGE(first.d_prob == dynamic.d_prob, what << ": d_prob differs between the schedulers");
    CHECK_MESSAGE(first.d_pre == again.d_pre, what << ": d_pre differs between two runs");
    CHECK_MESSAGE(first.d_prob == again.d_prob, what << ": d_prob differs between two runs");
}

DgluConfig dglu_config(const char* label, int32_t activation, int32_t experts, int64_t n, int64_t k, int32_t d_dtype,
                       int32_t pre_dtype, int32_t layout, uint64_t seed) {
    DgluConfig dglu;
    CaseConfig& config = dglu.base;
    config.label = label;
    config.num_experts = experts;
    config.max_tokens = 600;
    config.n = n;
    config.k = k;
    config.d_dtype = d_dtype;
    config.generate_c = false;
    config.c_buffer_when_unused = false;
    config.weight_layout = layout;
    config.sampled_rows_per_expert = 32;
    config.seed = seed;
    dglu.activation = activation;
    dglu.pre_dtype = pre_dtype;
    return dglu;
}

}  // namespace

TEST_CASE("dglu: both activations against the fp64 reference, every dtype, both layouts, schedulers bitwise") {
    std::size_t index = 0;
    for (const int32_t activation : {GGEMM_ACTIVATION_SWIGLU, GGEMM_ACTIVATION_CLAMPED_GEGLU}) {
        // N = 352: five whole 64-column blocks of R and a last one of 32 columns.
        const DgluConfig cases[] = {
            dglu_config("dglu bf16", activation, 8, 512, 384, GGEMM_DTYPE_BF16, GGEMM_DTYPE_BF16,
                        GGEMM_WEIGHT_LAYOUT_N_MAJOR, mix_seed(9800, index++)),
            dglu_config("dglu fp32 tail", activation, 5, 352, 256, GGEMM_DTYPE_FP32, GGEMM_DTYPE_FP32,
                        GGEMM_WEIGHT_LAYOUT_N_MAJOR, mix_seed(9800, index++)),
            dglu_config("dglu fp16 K-major", activation, 6, 416, 200, GGEMM_DTYPE_FP16, GGEMM_DTYPE_FP16,
                        GGEMM_WEIGHT_LAYOUT_K_MAJOR, mix_seed(9800, index++)),
        };
        for (const DgluConfig& dglu : cases) check_dglu_case(dglu);
    }
}

TEST_CASE("dglu: every tile width, non-default clamped GeGLU constants") {
    std::size_t index = 0;
    for (const int32_t tile_n : {192, 128, 64}) {  // no fused epilogue in the 256-wide warp-store kernel
        DgluConfig dglu = dglu_config("dglu widths", GGEMM_ACTIVATION_CLAMPED_GEGLU, 5, 416, 136, GGEMM_DTYPE_BF16,
                                      GGEMM_DTYPE_FP32, GGEMM_WEIGHT_LAYOUT_N_MAJOR, mix_seed(9900, index++));
        dglu.base.tile_n = tile_n;
        dglu.scale = 1.0f;
        dglu.limit = 2.5f;
        dglu.offset = 0.5f;
        check_dglu_case(dglu);
    }
}

TEST_CASE("dglu: pieces of the last round (M = 3072, N = 1152: 144 tiles of 192 columns on 132 SMs)") {
    DgluConfig dglu = dglu_config("dglu pieces", GGEMM_ACTIVATION_SWIGLU, 4, 1152, 256, GGEMM_DTYPE_BF16,
                                  GGEMM_DTYPE_BF16, GGEMM_WEIGHT_LAYOUT_N_MAJOR, 9950);
    dglu.base.layout = RowLayout::kExplicit;
    dglu.base.offsets = {1024, 1024, 2048, 3072};
    dglu.base.fixed_m = 3072;
    dglu.base.tile_n = 192;
    check_dglu_case(dglu);
}

TEST_CASE("dglu: a captured graph replays to the same bits as the eager call") {
    DgluConfig dglu = dglu_config("dglu graph", GGEMM_ACTIVATION_CLAMPED_GEGLU, 6, 288, 192, GGEMM_DTYPE_BF16,
                                  GGEMM_DTYPE_BF16, GGEMM_WEIGHT_LAYOUT_N_MAJOR, 9970);
    const HostCase host_case = make_case(dglu.base);
    std::vector<uint8_t> pre(static_cast<std::size_t>(host_case.m * 2 * dglu.base.n) * dtype_size(dglu.pre_dtype));
    fill_uniform(pre.data(), pre.size() / dtype_size(dglu.pre_dtype), dglu.pre_dtype, -9.0f, 9.0f, 9971);
    Stream stream;
    for (const int32_t scheduler : {GGEMM_SCHEDULER_STATIC, GGEMM_SCHEDULER_DYNAMIC}) {
        const DgluOutputs eager = run_dglu(dglu, host_case, pre, scheduler, stream);
        const DgluOutputs replayed = run_dglu(dglu, host_case, pre, scheduler, stream, true);
        CHECK(replayed.d_pre == eager.d_pre);
        CHECK(replayed.d_prob == eager.d_prob);
        CHECK(replayed.status == 0);
    }
}

TEST_CASE("dglu: discrete weights give the dense bits, both layouts, the math warps' and TMA stores") {
    uint64_t seed = 9960;
    for (const bool by_tma : {false, true}) {
        for (const int32_t layout : {GGEMM_WEIGHT_LAYOUT_K_MAJOR, GGEMM_WEIGHT_LAYOUT_N_MAJOR}) {
            const DgluConfig dglu =
                dglu_config("dglu discrete", by_tma ? GGEMM_ACTIVATION_CLAMPED_GEGLU : GGEMM_ACTIVATION_SWIGLU, 5,
                            288, 200, GGEMM_DTYPE_BF16, by_tma ? GGEMM_DTYPE_BF16 : GGEMM_DTYPE_FP32, layout, ++seed);
            const DgluCase c = make_dglu_case(dglu);
            ScopedKernel kernel(by_tma ? "sm90_tmastore_dglu_" : "sm90_tma_wgmma_");
            Stream stream;
            for (const int32_t scheduler : {GGEMM_SCHEDULER_STATIC, GGEMM_SCHEDULER_DYNAMIC}) {
                const std::string what = c.what + (scheduler == GGEMM_SCHEDULER_STATIC ? " static" : " dynamic");
                const DgluOutputs dense = run_dglu(dglu, c.host_case, c.pre, scheduler, stream);
                const DgluOutputs discrete =
                    run_dglu(dglu, c.host_case, c.pre, scheduler, stream, false, GGEMM_WEIGHTS_DISCRETE);
                verify_dglu(what + " [dense]", c.host_case, c.problem, c.reference, dense);
                verify_dglu(what + " [discrete]", c.host_case, c.problem, c.reference, discrete);
                CHECK_MESSAGE(discrete.d_pre == dense.d_pre, what << ": d_pre differs between dense and discrete");
                CHECK_MESSAGE(discrete.d_prob == dense.d_prob, what << ": d_prob differs between dense and discrete");
            }
        }
    }
}

TEST_CASE("sanitizer: dglu, bad offsets are skipped and reported, math warps' and TMA stores") {
    // bad_offset_cases(): the offending experts' rows keep d_pre's poison and get d_prob = 0,
    // every other expert is right, the status word names exactly the rules broken; both
    // schedulers. An fp32 d_pre from an fp16 pre-activation (the math warps' stores) and bf16 both
    // (the kernels that load and store by TMA).
    uint64_t seed = 9980;
    for (const BadOffsets& bad : bad_offset_cases()) {
        for (const bool by_tma : {false, true}) {
            DgluConfig dglu = dglu_config(bad.name, by_tma ? GGEMM_ACTIVATION_SWIGLU : GGEMM_ACTIVATION_CLAMPED_GEGLU,
                                          static_cast<int32_t>(bad.offsets.size()), 160, 136,
                                          by_tma ? GGEMM_DTYPE_BF16 : GGEMM_DTYPE_FP32,
                                          by_tma ? GGEMM_DTYPE_BF16 : GGEMM_DTYPE_FP16, GGEMM_WEIGHT_LAYOUT_K_MAJOR,
                                          ++seed);
            dglu.base.layout = RowLayout::kExplicit;
            dglu.base.offsets = bad.offsets;
            dglu.base.fixed_m = bad.m;
            dglu.base.sampled_rows_per_expert = -1;
            const DgluCase c = make_dglu_case(dglu);
            const uint32_t status =
                offset_violations(c.host_case.offsets.data(), dglu.base.num_experts, c.host_case.m);
            REQUIRE((status & bad.required) == bad.required);
            REQUIRE_FALSE(c.reference.d_pre.rows.empty());  // some expert is still computed
            ScopedKernel kernel(by_tma ? "sm90_tmastore_dglu_" : "sm90_tma_wgmma_");
            Stream stream;
            for (const int32_t scheduler : {GGEMM_SCHEDULER_STATIC, GGEMM_SCHEDULER_DYNAMIC}) {
                const DgluOutputs out = run_dglu(dglu, c.host_case, c.pre, scheduler, stream);
                verify_dglu(c.what + (scheduler == GGEMM_SCHEDULER_STATIC ? " [static]" : " [dynamic]"), c.host_case,
                            c.problem, c.reference, out, status);
            }
        }
    }
}

TEST_CASE("sanitizer: dglu, small cases, both activations") {
    std::size_t index = 0;
    for (const int32_t activation : {GGEMM_ACTIVATION_SWIGLU, GGEMM_ACTIVATION_CLAMPED_GEGLU}) {
        DgluConfig dglu = dglu_config("san dglu", activation, 4, 160, 72, GGEMM_DTYPE_FP32, GGEMM_DTYPE_BF16,
                                      GGEMM_WEIGHT_LAYOUT_N_MAJOR, mix_seed(9990, index++));
        dglu.base.max_tokens = 300;
        check_dglu_case(dglu);
    }
}

namespace {

// The kernels that load the pre-activation and store d_pre by TMA, by name prefix: 128 and 192
// columns of R, K-major weights with the tile's L2 prefetch, N-major with evict-first streams.
struct DgluTmaKernel {
    const char* prefix;
    int32_t tile_n;
    int32_t weight_layout;
};
const DgluTmaKernel kDgluTmaKernels[] = {{"sm90_tmastore_dglu_128x128", 128, GGEMM_WEIGHT_LAYOUT_K_MAJOR},
                                         {"sm90_tmastore_dglu_128x192", 192, GGEMM_WEIGHT_LAYOUT_K_MAJOR},
                                         {"sm90_tmastore_dglu_evictfirst_128x128", 128, GGEMM_WEIGHT_LAYOUT_N_MAJOR},
                                         {"sm90_tmastore_dglu_evictfirst_128x192", 192, GGEMM_WEIGHT_LAYOUT_N_MAJOR}};

// dGLU through each of those kernels that can take the case (of tile width `tile_n`; 0: every
// width), against the reference and bitwise against the 128-wide kernel of the math warps'
// stores (the same arithmetic in the same order: d_prob's partials are per 64 columns of R
// whatever the tile width).
void check_dglu_tma_case(const DgluConfig& dglu, int32_t tile_n = 0) {
    const DgluCase c = make_dglu_case(dglu);
    const HostCase& host_case = c.host_case;
    const Problem& problem = c.problem;
    const std::vector<uint8_t>& pre = c.pre;
    const DgluResult& reference = c.reference;
    Stream stream;
    DgluOutputs by_warps;
    {
        ScopedKernel kernel("sm90_tma_wgmma_128x128x64_s6");
        by_warps = run_dglu(dglu, host_case, pre, GGEMM_SCHEDULER_STATIC, stream);
    }
    for (const DgluTmaKernel& kernel : kDgluTmaKernels) {
        if (tile_n != 0 && kernel.tile_n != tile_n) continue;
        if (kernel.weight_layout != dglu.base.weight_layout) continue;
        const std::string what = c.what + " through " + kernel.prefix;
        ScopedKernel scoped(kernel.prefix);  // a plan that cannot take it fails to be made
        const DgluOutputs first = run_dglu(dglu, host_case, pre, GGEMM_SCHEDULER_STATIC, stream);
        const DgluOutputs dynamic = run_dglu(dglu, host_case, pre, GGEMM_SCHEDULER_DYNAMIC, stream);
        const DgluOutputs replayed = run_dglu(dglu, host_case, pre, GGEMM_SCHEDULER_STATIC, stream, true);
        verify_dglu(what + " [static]", host_case, problem, reference, first);
        verify_dglu(what + " [dynamic]", host_case, problem, reference, dynamic);
        CHECK_MESSAGE(first.d_pre == by_warps.d_pre, what << ": d_pre differs from the math warps' stores");
        CHECK_MESSAGE(first.d_prob == by_warps.d_prob, what << ": d_prob differs from the math warps' stores");
        CHECK_MESSAGE(first.d_pre == dynamic.d_pre, what << ": d_pre differs between the schedulers");
        CHECK_MESSAGE(first.d_prob == dynamic.d_prob, what << ": d_prob differs between the schedulers");
        CHECK_MESSAGE(first.d_pre == replayed.d_pre, what << ": d_pre differs in a graph replay");
        CHECK_MESSAGE(first.d_prob == replayed.d_prob, what << ": d_prob differs in a graph replay");
    }
}

}  // namespace

TEST_CASE("dglu through TMA: bitwise equal to the math warps' stores, both activations and layouts, N tails") {
    std::size_t index = 0;
    for (const int32_t activation : {GGEMM_ACTIVATION_SWIGLU, GGEMM_ACTIVATION_CLAMPED_GEGLU}) {
        // N = 352: two whole 128-column tiles and a last one of 96 (three atoms); N = 288: a last
        // tile of one 32-column block; K = 72 and 40: k-blocks past K zero-filled, K under two k-blocks.
        const DgluConfig cases[] = {
            dglu_config("dglu tma", activation, 8, 512, 384, GGEMM_DTYPE_BF16, GGEMM_DTYPE_BF16,
                        GGEMM_WEIGHT_LAYOUT_N_MAJOR, mix_seed(9700, index++)),
            dglu_config("dglu tma tail", activation, 5, 352, 72, GGEMM_DTYPE_BF16, GGEMM_DTYPE_BF16,
                        GGEMM_WEIGHT_LAYOUT_N_MAJOR, mix_seed(9700, index++)),
            dglu_config("dglu tma K-major", activation, 6, 288, 40, GGEMM_DTYPE_BF16, GGEMM_DTYPE_BF16,
                        GGEMM_WEIGHT_LAYOUT_K_MAJOR, mix_seed(9700, index++)),
        };
        for (const DgluConfig& dglu : cases) check_dglu_tma_case(dglu);
    }
}

TEST_CASE("dglu through TMA: pieces of the last round (N = 1152, 144 tiles on 132 SMs: M = 2048 at 128 columns, 3072 at 192)") {
    // K of 4 and 10 k-blocks; the last 12 tiles are cut into pieces of 64 columns.
    struct Pieces {
        int64_t k;
        uint64_t seed;
    };
    for (const int32_t tile_n : {128, 192}) {
        for (const Pieces p : {Pieces{256, 9750}, Pieces{640, 9770}}) {
            DgluConfig dglu = dglu_config("dglu tma pieces", GGEMM_ACTIVATION_SWIGLU, 4, 1152, p.k, GGEMM_DTYPE_BF16,
                                          GGEMM_DTYPE_BF16, GGEMM_WEIGHT_LAYOUT_N_MAJOR, p.seed);
            dglu.base.layout = RowLayout::kExplicit;
            dglu.base.offsets = tile_n == 192 ? std::vector<int32_t>{1024, 1024, 2048, 3072}
                                              : std::vector<int32_t>{512, 512, 1280, 2048};
            dglu.base.fixed_m = dglu.base.offsets.back();
            check_dglu_tma_case(dglu, tile_n);
        }
    }
}

TEST_CASE("dglu through TMA: several tiles per SM, K of 8 to 17 k-blocks, both activations and layouts") {
    // M = 8192, N = 1536: 768 tiles of 128 columns (512 of 192) on 132 SMs, three to six per SM,
    // one expert empty: each warpgroup's buffer takes a tile's pre-activation while the previous
    // tile's d_pre may still be leaving it, tile after tile, the pre-activation barrier's phase
    // with it.
    std::size_t index = 0;
    for (const int64_t k : {512, 576, 640, 1088}) {
        for (const int32_t layout : {GGEMM_WEIGHT_LAYOUT_N_MAJOR, GGEMM_WEIGHT_LAYOUT_K_MAJOR}) {
            const int32_t activation = index % 2 ? GGEMM_ACTIVATION_SWIGLU : GGEMM_ACTIVATION_CLAMPED_GEGLU;
            DgluConfig dglu = dglu_config("dglu tma rounds", activation, 8, 1536, k, GGEMM_DTYPE_BF16, GGEMM_DTYPE_BF16,
                                          layout, mix_seed(9760, index++));
            dglu.base.layout = RowLayout::kExplicit;
            dglu.base.offsets = {1024, 2048, 2048, 3072, 4096, 5120, 6144, 8192};  // expert 2 empty
            dglu.base.fixed_m = 8192;
            check_dglu_tma_case(dglu);
        }
    }
}

TEST_CASE("dglu through TMA: several tiles per SM, K of 1 to 8 k-blocks (the stage ring's depth and under)") {
    // M = 8192, N = 1536: 768 tiles (512 of 192 columns) on 132 SMs, three to six per SM. With as
    // many k-blocks per tile as stages (six at 128 columns, four at 192) or fewer, a stage's fills
    // belong to different tiles one after another: each tile's reader must take its own fill,
    // never the one before it.
    std::size_t index = 0;
    for (const int64_t k : {64, 256, 320, 384, 448, 512}) {
        const int32_t activation = index % 2 ? GGEMM_ACTIVATION_SWIGLU : GGEMM_ACTIVATION_CLAMPED_GEGLU;
        const int32_t layout = index % 3 ? GGEMM_WEIGHT_LAYOUT_N_MAJOR : GGEMM_WEIGHT_LAYOUT_K_MAJOR;
        DgluConfig dglu = dglu_config("dglu tma shallow rounds", activation, 8, 1536, k, GGEMM_DTYPE_BF16,
                                      GGEMM_DTYPE_BF16, layout, mix_seed(9780, index++));
        dglu.base.layout = RowLayout::kExplicit;
        dglu.base.offsets = {1024, 2048, 2048, 3072, 4096, 5120, 6144, 8192};  // expert 2 empty
        dglu.base.fixed_m = 8192;
        check_dglu_tma_case(dglu);
    }
}

TEST_CASE("sanitizer: dglu through TMA, small cases, both activations") {
    std::size_t index = 0;
    for (const int32_t activation : {GGEMM_ACTIVATION_SWIGLU, GGEMM_ACTIVATION_CLAMPED_GEGLU}) {
        DgluConfig dglu = dglu_config("san dglu tma", activation, 4, 160, 72, GGEMM_DTYPE_BF16, GGEMM_DTYPE_BF16,
                                      GGEMM_WEIGHT_LAYOUT_N_MAJOR, mix_seed(9790, index++));
        dglu.base.max_tokens = 300;
        check_dglu_tma_case(dglu);
    }
}

TEST_CASE("sanitizer: dglu through TMA, several tiles per SM") {
    // M = 4096, N = 1024: 256 tiles of 128 columns on 132 SMs, two per SM on most (192 tiles of
    // 192 columns, the last column of them 64 wide); K = 640 (ten k-blocks).
    DgluConfig dglu = dglu_config("san dglu tma rounds", GGEMM_ACTIVATION_CLAMPED_GEGLU, 4, 1024, 640,
                                  GGEMM_DTYPE_BF16, GGEMM_DTYPE_BF16, GGEMM_WEIGHT_LAYOUT_N_MAJOR, 9795);
    dglu.base.layout = RowLayout::kExplicit;
    dglu.base.offsets = {1024, 2048, 3072, 4096};
    dglu.base.fixed_m = 4096;
    dglu.base.sampled_rows_per_expert = 16;
    check_dglu_tma_case(dglu);
}

TEST_CASE("dglu: NULL alpha and prob, bitwise equal to arrays of ones") {
    struct Nulls {
        bool alpha, prob;
    };
    uint64_t seed = 17300;
    for (const int32_t tile_n : {128, 192}) {  // 128: the kernels through TMA; 192: the math warps' stores
        for (const Nulls nulls : {Nulls{true, true}, Nulls{true, false}, Nulls{false, true}}) {
            DgluConfig dglu = dglu_config("dglu NULL scales", GGEMM_ACTIVATION_SWIGLU, 6, 512, 256, GGEMM_DTYPE_BF16,
                                          GGEMM_DTYPE_BF16, GGEMM_WEIGHT_LAYOUT_N_MAJOR, ++seed);
            dglu.base.tile_n = tile_n;
            dglu.base.null_alpha = nulls.alpha;
            dglu.base.null_prob = nulls.prob;
            check_dglu_case(dglu);
            const DgluCase c = make_dglu_case(dglu);
            HostCase with_ones = c.host_case;  // alpha and prob already all ones
            with_ones.config.null_alpha = false;
            with_ones.config.null_prob = false;
            Stream stream;
            const DgluOutputs null_run = run_dglu(dglu, c.host_case, c.pre, GGEMM_SCHEDULER_STATIC, stream);
            const DgluOutputs ones_run = run_dglu(dglu, with_ones, c.pre, GGEMM_SCHEDULER_STATIC, stream);
            CHECK_MESSAGE(null_run.d_pre == ones_run.d_pre, c.what << ": d_pre differs between NULL and ones");
            CHECK_MESSAGE(null_run.d_prob == ones_run.d_prob, c.what << ": d_prob differs between NULL and ones");
        }
    }
}
