// CUDA graphs: one ggemm_execute captured once, replayed with new offsets, new data and (discrete
// mode) new weight pointers behind the same device pointers. Correct after every replay.
#include <doctest/doctest.h>

#include "tests/gpu/runner.h"

using namespace ggemm_test;

namespace {

CaseConfig graph_config(const char* label, int32_t scheduler, uint64_t seed,
                        int32_t weight_layout = GGEMM_WEIGHT_LAYOUT_K_MAJOR) {
    CaseConfig config;
    config.weight_layout = weight_layout;
    config.label = label;
    config.num_experts = 8;
    config.layout = RowLayout::kRandom;
    config.max_tokens = 1000;
    config.fixed_m = 8 * 1024;  // every draw of 8 experts x at most 1024 rows fits
    config.n = 1032;
    config.k = 520;
    config.c_dtype = GGEMM_DTYPE_BF16;
    config.d_dtype = GGEMM_DTYPE_FP32;
    config.bias_dtype = GGEMM_DTYPE_FP16;
    config.generate_c = true;
    config.scheduler = scheduler;
    config.sampled_rows_per_expert = 32;
    config.seed = seed;
    return config;
}

// Poisons, replays, downloads and judges against a fresh reference.
void replay_and_verify(const std::string& what, Graph& graph, CaseBuffers& buffers, const HostCase& host_case,
                       const Problem& problem, const Stream& stream) {
    buffers.poison(stream.get());
    graph.launch(stream.get());
    stream.synchronize();
    const DeviceOutputs outputs = buffers.download();
    const Result reference = reference_for(host_case, problem);
    std::string summary;
    verify_run(what, host_case, problem, reference, outputs, 0, 0, &summary);
    MESSAGE(what << ": rows used " << host_case.rows_used() << " of M=" << host_case.m << "; " << summary);
}

// Dense weights: one capture, three replays, each with new offsets and new data.
void replay_dense(int32_t weight_layout, int32_t scheduler) {
    const uint64_t stream_seed = static_cast<uint64_t>(scheduler + 2 * weight_layout);
    HostCase host_case = make_case(graph_config("graph dense", scheduler, 7000 + stream_seed, weight_layout));
    Stream stream;
    CaseBuffers buffers(host_case, true, false);
    Plan plan(make_desc(host_case.config, host_case.m, GGEMM_WEIGHTS_DENSE, scheduler));
    buffers.ensure_workspace(plan.workspace_size());
    Graph graph;
    capture_execute(graph, plan, buffers.args(GGEMM_WEIGHTS_DENSE), stream);

    std::vector<int32_t> previous_offsets;
    for (int replay = 1; replay <= 3; ++replay) {
        if (replay > 1) {
            refresh_case(host_case, mix_seed(7100 + stream_seed, static_cast<uint64_t>(replay)), false);
            buffers.upload(host_case);
            CHECK_MESSAGE(host_case.offsets != previous_offsets, "replay " << replay << " drew the same offsets");
        }
        previous_offsets = host_case.offsets;
        replay_and_verify(describe(host_case.config) + " replay " + std::to_string(replay), graph, buffers, host_case,
                          host_case.problem(), stream);
    }
}

// Discrete weights: b_ptrs pointed at other allocations, and old allocations given new weights,
// between replays.
void replay_discrete(int32_t weight_layout) {
    const int32_t scheduler = GGEMM_SCHEDULER_DYNAMIC;
    const uint64_t seed = 7200 + 10 * static_cast<uint64_t>(weight_layout);
    HostCase host_case = make_case(graph_config("graph discrete", scheduler, seed, weight_layout));
    Stream stream;
    CaseBuffers buffers(host_case, false, true);  // weight set 1: the buffers' own allocations
    Plan plan(make_desc(host_case.config, host_case.m, GGEMM_WEIGHTS_DISCRETE, scheduler));
    buffers.ensure_workspace(plan.workspace_size());
    Graph graph;
    capture_execute(graph, plan, buffers.args(GGEMM_WEIGHTS_DISCRETE), stream);
    const std::string what = describe(host_case.config);

    // Replay 1: weight set 1.
    replay_and_verify(what + " replay 1 (weight set 1)", graph, buffers, host_case, host_case.problem(), stream);

    // Replay 2: new data and offsets; b_ptrs now points at weight set 2 in other allocations.
    // Set 1 keeps the old weights, so a kernel that ignored the new pointers would be wrong.
    refresh_case(host_case, seed + 1, false);
    ExpertWeights second_set;
    second_set.upload(host_case, seed + 2);
    buffers.upload(host_case, /*with_weights=*/false);
    buffers.upload_weight_pointers(second_set.pointers());
    replay_and_verify(what + " replay 2 (weight set 2)", graph, buffers, host_case, host_case.problem(), stream);

    // Replay 3: back to set 1's allocations, now holding new weights.
    refresh_case(host_case, seed + 3, false);
    buffers.upload(host_case, /*with_weights=*/true);
    replay_and_verify(what + " replay 3 (weight set 1, new contents)", graph, buffers, host_case, host_case.problem(),
                      stream);
}

}  // namespace

TEST_CASE("graph: one capture replayed with new offsets and new data, both schedulers") {
    for (int32_t scheduler : {GGEMM_SCHEDULER_STATIC, GGEMM_SCHEDULER_DYNAMIC}) {
        replay_dense(GGEMM_WEIGHT_LAYOUT_K_MAJOR, scheduler);
    }
}

TEST_CASE("graph: N-major weights, one capture replayed with new offsets and new data, both schedulers") {
    for (int32_t scheduler : {GGEMM_SCHEDULER_STATIC, GGEMM_SCHEDULER_DYNAMIC}) {
        replay_dense(GGEMM_WEIGHT_LAYOUT_N_MAJOR, scheduler);
    }
}

TEST_CASE("graph: discrete weights, the pointer array changed to other weights between replays") {
    replay_discrete(GGEMM_WEIGHT_LAYOUT_K_MAJOR);
}

TEST_CASE("graph: N-major discrete weights, the pointer array changed to other weights between replays") {
    replay_discrete(GGEMM_WEIGHT_LAYOUT_N_MAJOR);
}
