// Bitwise reproducibility: repeated runs, the two schedulers, a plan and the one-shot call.
#include <doctest/doctest.h>

#include "tests/gpu/runner.h"

using namespace ggemm_test;

namespace {

void check_determinism(CaseConfig config) {
    const HostCase host_case = make_case(config);
    const std::string what = describe(config) + " M=" + std::to_string(host_case.m);
    const Problem problem = host_case.problem();
    const Result reference = reference_for(host_case, problem);
    Stream stream;
    CaseBuffers buffers(host_case, true, false);

    // The runs being equal proves little unless they are also right.
    const DeviceOutputs first = run_once(host_case, buffers, GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_STATIC, stream);
    std::string summary;
    verify_run(what + " static run 1", host_case, problem, reference, first, 0, 0, &summary);
    for (int run = 2; run <= 3; ++run) {
        const DeviceOutputs again = run_once(host_case, buffers, GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_STATIC, stream);
        same_bits(what + ": static run " + std::to_string(run) + " vs run 1", again, first);
    }
    for (int run = 1; run <= 3; ++run) {
        const DeviceOutputs dynamic = run_once(host_case, buffers, GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_DYNAMIC, stream);
        same_bits(what + ": dynamic run " + std::to_string(run) + " vs static", dynamic, first);
    }
    HostCase one_shot_case = host_case;
    one_shot_case.config.one_shot = true;
    const DeviceOutputs one_shot = run_once(one_shot_case, buffers, GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_STATIC, stream);
    same_bits(what + ": one-shot vs plan", one_shot, first);
    MESSAGE(what << ": 3 static, 3 dynamic, 1 one-shot run compared bitwise; " << summary);
}

}  // namespace

TEST_CASE("determinism: 3 runs bitwise identical, static == dynamic == one-shot") {
    // K-major weights, then the first case again with N-major weights.
    CaseConfig with_bias;
    with_bias.label = "determinism bias";
    with_bias.num_experts = 16;
    with_bias.max_tokens = 2000;
    with_bias.n = 2056;  // not a multiple of any tile width: a column tail
    with_bias.k = 1032;  // a K tail
    with_bias.c_dtype = GGEMM_DTYPE_FP32;
    with_bias.d_dtype = GGEMM_DTYPE_BF16;
    with_bias.bias_dtype = GGEMM_DTYPE_FP32;
    with_bias.generate_c = true;
    with_bias.sampled_rows_per_expert = 16;
    with_bias.seed = 4001;
    check_determinism(with_bias);
    CaseConfig n_major = with_bias;
    n_major.label = "determinism bias, N-major";
    n_major.weight_layout = GGEMM_WEIGHT_LAYOUT_N_MAJOR;
    n_major.seed = 4003;
    check_determinism(n_major);

    CaseConfig no_bias = with_bias;
    no_bias.label = "determinism no bias";
    no_bias.num_experts = 64;
    no_bias.max_tokens = 700;
    no_bias.n = 4096;
    no_bias.k = 7168;
    no_bias.c_dtype = GGEMM_DTYPE_FP16;
    no_bias.d_dtype = GGEMM_DTYPE_FP16;
    no_bias.bias_dtype = GGEMM_DTYPE_NONE;
    no_bias.sampled_rows_per_expert = 4;
    no_bias.seed = 4002;
    check_determinism(no_bias);
}
