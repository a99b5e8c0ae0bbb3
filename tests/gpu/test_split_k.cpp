// Split-K on the GPU (kernels/common/split_k.h): correct against the fp64 reference for every
// output design, dtype, weight source and layout, K tails and empty experts, and with valid-row
// counts; bitwise equal across runs and between the two schedulers; right after graph replays
// with new offsets.
#include <doctest/doctest.h>

#include "tests/gpu/runner.h"

using namespace ggemm_test;

namespace {

// One expert or a few, 256-row segments: the calls split-K is for.
CaseConfig split_config(const char* label, int32_t split_k, int32_t tile_n, uint64_t seed) {
    CaseConfig config;
    config.label = label;
    config.num_experts = 3;
    config.layout = RowLayout::kRandom;
    config.max_tokens = 250;  // M <= 3 x 256 + 256 rows: within the partials' room (kSplitRowLimit)
    config.empty_fraction = 0.3;
    config.slack_rows = 256;
    config.n = 1032;  // a column tail at every width
    config.k = 1000;  // a K tail: 16 k-blocks, the last one partly past K
    config.c_dtype = GGEMM_DTYPE_FP32;
    config.d_dtype = GGEMM_DTYPE_BF16;
    config.bias_dtype = GGEMM_DTYPE_BF16;
    config.generate_c = true;
    config.split_k = split_k;
    config.tile_n = tile_n;
    config.sampled_rows_per_expert = 24;
    config.seed = seed;
    return config;
}

// A run right against the reference, two more bitwise equal, and the dynamic scheduler's equal too.
void check_split_case(const HostCase& host_case, int32_t weight_mode) {
    const CaseConfig& config = host_case.config;
    const std::string what = describe(config) + (weight_mode == GGEMM_WEIGHTS_DISCRETE ? " discrete" : " dense") +
                             " M=" + std::to_string(host_case.m) + (host_case.valid_rows.empty() ? "" : " counted");
    if (config.split_k >= 2) REQUIRE(host_case.m <= 1024);  // a call the plan splits
    const Problem problem = host_case.problem();
    const Result reference = reference_for(host_case, problem);
    Stream stream;
    CaseBuffers buffers(host_case, weight_mode == GGEMM_WEIGHTS_DENSE, weight_mode == GGEMM_WEIGHTS_DISCRETE);
    const DeviceOutputs first = run_once(host_case, buffers, weight_mode, GGEMM_SCHEDULER_STATIC, stream);
    std::string summary;
    verify_run(what + " static", host_case, problem, reference, first, 0, 0, &summary);
    const DeviceOutputs again = run_once(host_case, buffers, weight_mode, GGEMM_SCHEDULER_STATIC, stream);
    same_bits(what + ": static run 2 vs run 1", again, first);
    for (int run = 1; run <= 2; ++run) {
        const DeviceOutputs dynamic = run_once(host_case, buffers, weight_mode, GGEMM_SCHEDULER_DYNAMIC, stream);
        same_bits(what + ": dynamic run " + std::to_string(run) + " vs static", dynamic, first);
    }
    MESSAGE(what << ": right, and 2 static + 2 dynamic runs bitwise equal; " << summary);
}

void check_split(const CaseConfig& config, int32_t weight_mode) { check_split_case(make_case(config), weight_mode); }

// The plan's description says it splits K as asked.
void check_described(const CaseConfig& config, int64_t m) {
    Plan plan(make_desc(config, m, GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_STATIC));
    const std::string text = plan.description();
    CHECK_MESSAGE(text.find("split-K: K split " + std::to_string(config.split_k) + " ways") != std::string::npos, text);
}

}  // namespace

TEST_CASE("split-K: every tile width, dtypes, bias and C, both weight sources, K and N tails") {
    uint64_t seed = 9100;
    for (const int32_t tile_n : {64, 128, 192, 256}) {
        for (const int32_t split_k : {2, 3, 8}) {
            CaseConfig config = split_config("split-K", split_k, tile_n, ++seed);
            check_described(config, 1024);
            check_split(config, GGEMM_WEIGHTS_DENSE);
        }
    }
    // Other outputs: fp16 C and D with fp32 bias; a bf16 D without C (the TMA-store kernels).
    CaseConfig fp16 = split_config("split-K fp16", 4, 0, 9201);
    fp16.c_dtype = GGEMM_DTYPE_FP16;
    fp16.d_dtype = GGEMM_DTYPE_FP16;
    fp16.bias_dtype = GGEMM_DTYPE_FP32;
    check_split(fp16, GGEMM_WEIGHTS_DENSE);
    check_split(fp16, GGEMM_WEIGHTS_DISCRETE);
    for (const int32_t tile_n : {192, 256}) {
        CaseConfig tma = split_config("split-K TMA-store D", 2, tile_n, 9210 + tile_n);
        tma.generate_c = false;
        tma.bias_dtype = GGEMM_DTYPE_NONE;
        check_split(tma, GGEMM_WEIGHTS_DENSE);
        tma.weight_layout = GGEMM_WEIGHT_LAYOUT_N_MAJOR;
        check_split(tma, GGEMM_WEIGHTS_DENSE);
    }
    // N-major weights, discrete; every expert empty but one; K a single k-block per split.
    CaseConfig n_major = split_config("split-K N-major", 3, 64, 9220);
    n_major.weight_layout = GGEMM_WEIGHT_LAYOUT_N_MAJOR;
    check_split(n_major, GGEMM_WEIGHTS_DISCRETE);
    CaseConfig one = split_config("split-K one expert", 2, 0, 9230);
    one.num_experts = 8;
    one.layout = RowLayout::kOneExpert;
    one.full_expert = 5;
    one.tokens = 200;
    check_split(one, GGEMM_WEIGHTS_DENSE);
    CaseConfig shallow = split_config("split-K shallow K", 3, 128, 9240);
    shallow.k = 136;  // three k-blocks, one per split, the last 8 deep
    check_split(shallow, GGEMM_WEIGHTS_DENSE);
}

TEST_CASE("split-K with valid-row counts: rows past each count untouched, both schedulers bitwise equal") {
    // 256-row segments (one empty) with counts 0, 1, 63, 64, 65, 129, 255 and 256: tiles wholly
    // past a count get no work item, a warpgroup whose rows all lie past it issues none of its
    // splits' MMAs, and the split that arrives last stores the valid rows only; through the math
    // warps' stores (128 wide, fp32 C) and TMA stores (256 wide, a bf16 D without C).
    struct Counted {
        std::vector<int32_t> offsets;
        std::vector<int32_t> counts;
    };
    const Counted layouts[] = {{{256, 512, 512, 768, 1024}, {1, 64, 0, 129, 256}},
                               {{256, 512, 768, 1024}, {0, 63, 65, 255}}};
    uint64_t seed = 9400;
    for (const Counted& layout : layouts) {
        for (const int32_t split_k : {2, 3}) {
            for (const bool tma_store : {false, true}) {
                CaseConfig config = split_config("split-K counts", split_k, tma_store ? 256 : 128, ++seed);
                config.layout = RowLayout::kExplicit;
                config.offsets = layout.offsets;
                config.num_experts = static_cast<int32_t>(layout.offsets.size());
                config.fixed_m = layout.offsets.back();
                config.sampled_rows_per_expert = -1;  // every row: those past a count keep their poison
                if (tma_store) {
                    config.generate_c = false;
                    config.c_buffer_when_unused = true;  // C must stay poisoned
                    config.bias_dtype = GGEMM_DTYPE_NONE;
                }
                check_described(config, config.fixed_m);
                HostCase host_case = make_case(config);
                host_case.valid_rows = layout.counts;
                REQUIRE(valid_rows_violations(host_case.problem()) == 0u);
                check_split_case(host_case, GGEMM_WEIGHTS_DENSE);
            }
        }
    }
}

TEST_CASE("split-K: the planner's own choice on a one-expert decode call keeps K whole") {
    // 256 x 2048 x 7168, one expert: the fill model takes narrower tiles and leaves K whole unless
    // desc->split_k asks (src/fill.cpp), and the result is right.
    CaseConfig decode = split_config("split-K chosen", 0, 0, 9300);
    decode.num_experts = 1;
    decode.layout = RowLayout::kOneExpert;
    decode.full_expert = 0;
    decode.tokens = 200;
    decode.slack_rows = 0;
    decode.n = 2048;
    decode.k = 7168;
    decode.generate_c = false;
    decode.bias_dtype = GGEMM_DTYPE_NONE;
    decode.sampled_rows_per_expert = 32;
    const HostCase host_case = make_case(decode);
    Plan plan(make_desc(decode, host_case.m, GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_STATIC));
    // The same plan is pinned on the CPU (tests/host/test_fill.cpp).
    CHECK_MESSAGE(plan.description().find("so the fill model chooses") != std::string::npos, plan.description());
    CHECK_MESSAGE(plan.description().find("split-K: none") != std::string::npos, plan.description());
    check_split(decode, GGEMM_WEIGHTS_DENSE);
}

TEST_CASE("split-K: graph replays with new offsets and data stay right (counters cleared each call)") {
    for (const int32_t scheduler : {GGEMM_SCHEDULER_STATIC, GGEMM_SCHEDULER_DYNAMIC}) {
        CaseConfig config = split_config("split-K graph", 3, 64, 9400 + static_cast<uint64_t>(scheduler));
        config.fixed_m = 1024;
        config.scheduler = scheduler;
        HostCase host_case = make_case(config);
        Stream stream;
        CaseBuffers buffers(host_case, true, false);
        Plan plan(make_desc(config, host_case.m, GGEMM_WEIGHTS_DENSE, scheduler));
        buffers.ensure_workspace(plan.workspace_size());
        Graph graph;
        capture_execute(graph, plan, buffers.args(GGEMM_WEIGHTS_DENSE), stream);
        DeviceOutputs first_outputs;
        for (int replay = 1; replay <= 3; ++replay) {
            if (replay > 1) {
                refresh_case(host_case, mix_seed(9500, static_cast<uint64_t>(replay + 10 * scheduler)), false);
                buffers.upload(host_case);
            }
            buffers.poison(stream.get());
            graph.launch(stream.get());
            stream.synchronize();
            const DeviceOutputs outputs = buffers.download();
            const Problem problem = host_case.problem();
            const Result reference = reference_for(host_case, problem);
            std::string summary;
            const std::string what = describe(config) + " replay " + std::to_string(replay);
            verify_run(what, host_case, problem, reference, outputs, 0, 0, &summary);
            MESSAGE(what << ": " << summary);
            if (replay == 1) first_outputs = outputs;
        }
        // The same inputs again: the counters left by three replays do not change a bit.
        const HostCase original = make_case(config);
        buffers.upload(original);
        buffers.poison(stream.get());
        graph.launch(stream.get());
        stream.synchronize();
        same_bits(describe(config) + ": replay 4 (replay 1's inputs) vs replay 1", buffers.download(), first_outputs);
    }
}

TEST_CASE("sanitizer: split-K at N = 136 and K = 200, both schedulers and weight modes") {
    uint64_t seed = 9600;
    for (const int32_t tile_n : {64, 256}) {
        for (const int32_t split_k : {2, 4}) {
            CaseConfig config = split_config("sanitizer split-K", split_k, tile_n, ++seed);
            config.n = 136;
            config.k = 200;  // four k-blocks, the last 8 deep
            config.sampled_rows_per_expert = -1;
            check_split(config, GGEMM_WEIGHTS_DENSE);
            check_split(config, GGEMM_WEIGHTS_DISCRETE);
        }
    }
}
