// alpha and prob passed as NULL (every alpha, every prob 1). Each run is judged against the
// reference with ones and compared bit for bit with the same call given arrays of ones: the
// kernels either load 1 in place of the array or, for a plain epilogue without both, skip the
// multiplications (x * 1 is x exactly, so the bits cannot differ). Every output design of the
// plain epilogue and the general epilogue (C, bias); test_glu.cpp and test_dglu.cpp check the
// fused GLU forward and dGLU the same way.
#include <doctest/doctest.h>

#include <string>

#include "tests/gpu/runner.h"

using namespace ggemm_test;

namespace {

struct Nulls {
    bool alpha;
    bool prob;
};
constexpr Nulls kNullCombinations[] = {{true, true}, {true, false}, {false, true}};

// The case with alpha and/or prob NULL, then with arrays of ones, under the kernel prefix
// `design` (nullptr: the planner's choice); both against the reference, and the same bits.
void check_nulls(CaseConfig config, const char* design) {
    ScopedKernel kernel(design);
    for (const Nulls nulls : kNullCombinations) {
        config.null_alpha = nulls.alpha;
        config.null_prob = nulls.prob;
        const HostCase host_case = make_case(config);
        const Problem problem = host_case.problem();
        const Result reference = reference_for(host_case, problem);
        Stream stream;
        CaseBuffers buffers(host_case, /*dense=*/true, /*discrete=*/false);
        const std::string name = planned_kernel(host_case, GGEMM_WEIGHTS_DENSE, config.scheduler);
        if (design != nullptr) {
            CHECK_MESSAGE(name.rfind(design, 0) == 0, describe(config) << ": planned " << name << ", not " << design);
        }
        const std::string what = describe(config) + " " + name;
        const DeviceOutputs with_null = run_once(host_case, buffers, GGEMM_WEIGHTS_DENSE, config.scheduler, stream);
        buffers.pass_null(false, false);
        const DeviceOutputs with_ones = run_once(host_case, buffers, GGEMM_WEIGHTS_DENSE, config.scheduler, stream);
        std::string summary;
        verify_run(what + " [NULL]", host_case, problem, reference, with_null, 0, 0, &summary);
        MESSAGE(what << ": " << summary);
        verify_run(what + " [ones]", host_case, problem, reference, with_ones, 0, 0, &summary);
        same_bits(what + ": NULL vs ones", with_null, with_ones);
    }
}

CaseConfig null_case(const char* label, int64_t n, int64_t k, uint64_t seed) {
    CaseConfig config;
    config.label = label;
    config.num_experts = 6;
    config.max_tokens = 600;
    config.n = n;
    config.k = k;
    config.generate_c = false;
    config.c_buffer_when_unused = true;  // poisoned, checked untouched
    config.sampled_rows_per_expert = -1;
    config.seed = seed;
    return config;
}

}  // namespace

TEST_CASE("NULL alpha and prob: the plain epilogue in every output design, both schedulers") {
    uint64_t seed = 17000;
    for (const int32_t scheduler : {GGEMM_SCHEDULER_STATIC, GGEMM_SCHEDULER_DYNAMIC}) {
        for (const char* design :
             {"sm90_tma_wgmma_", "sm90_tmastore_halves_", "sm90_tmastore_whole_", "sm90_tmastore_pingpong_"}) {
            CaseConfig config = null_case("null plain", 520, 264, ++seed);
            config.scheduler = scheduler;
            check_nulls(config, design);
        }
    }
}

TEST_CASE("NULL alpha and prob: C, bias and other dtypes (the general epilogue)") {
    CaseConfig config = null_case("null C bias", 392, 136, 17100);
    config.generate_c = true;
    config.c_dtype = GGEMM_DTYPE_FP32;
    config.d_dtype = GGEMM_DTYPE_FP16;
    config.bias_dtype = GGEMM_DTYPE_BF16;
    check_nulls(config, nullptr);
    config = null_case("null fp32 D", 264, 72, 17101);
    config.d_dtype = GGEMM_DTYPE_FP32;
    config.scheduler = GGEMM_SCHEDULER_DYNAMIC;
    check_nulls(config, nullptr);
}
