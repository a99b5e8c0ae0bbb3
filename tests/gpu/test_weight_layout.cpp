// N-major weights on the GPU beyond the correctness matrix (tests/gpu/test_matrix.cpp runs every
// case of its table with N-major weights too): the N-major kernels against the K-major ones on the
// transposed copy of the same weights, the plan says which layout it reads, and small N-major cases
// for compute-sanitizer.
//
// Both kernels issue the same wgmma sequence over the same k16 slices in the same order; only
// where B comes from in shared memory differs (imm-trans-b). The results are expected to be bit
// for bit equal, and each is also checked against the fp64 reference, so a layout mistake shows
// as a reference failure of the N-major run with the K-major run passing.
#include <doctest/doctest.h>

#include <string>

#include "tests/gpu/runner.h"

using namespace ggemm_test;

namespace {

CaseConfig n_major_config(const char* label, int32_t experts, int64_t n, int64_t k, int32_t c_dtype, int32_t d_dtype,
                          int32_t bias_dtype, int32_t scheduler, uint64_t seed) {
    CaseConfig config;
    config.label = label;
    config.num_experts = experts;
    config.max_tokens = 700;
    config.n = n;
    config.k = k;
    config.c_dtype = c_dtype;
    config.d_dtype = d_dtype;
    config.bias_dtype = bias_dtype;
    config.generate_c = true;
    config.scheduler = scheduler;
    config.sampled_rows_per_expert = -1;
    config.weight_layout = GGEMM_WEIGHT_LAYOUT_N_MAJOR;
    config.seed = seed;
    return config;
}

// The N-major run (dense and discrete) and the K-major run on the transposed weights: each
// against the reference, then bitwise against each other.
void compare_layouts(const CaseConfig& config) {
    const HostCase n_major = make_case(config);
    const HostCase k_major = with_transposed_weights(n_major);
    const std::string what = describe(config) + " M=" + std::to_string(n_major.m);
    const Problem problem = n_major.problem();
    const Result reference = reference_for(n_major, problem);

    Stream stream;
    CaseBuffers n_buffers(n_major, true, true);
    CaseBuffers k_buffers(k_major, true, false);
    const DeviceOutputs n_dense = run_once(n_major, n_buffers, GGEMM_WEIGHTS_DENSE, config.scheduler, stream);
    const DeviceOutputs n_discrete = run_once(n_major, n_buffers, GGEMM_WEIGHTS_DISCRETE, config.scheduler, stream);
    const DeviceOutputs k_dense = run_once(k_major, k_buffers, GGEMM_WEIGHTS_DENSE, config.scheduler, stream);
    std::string n_summary, k_summary;
    const bool n_ok = verify_run(what + " [N-major dense]", n_major, problem, reference, n_dense, 0, 0, &n_summary);
    const bool k_ok =
        verify_run(what + " [K-major dense, transposed weights]", k_major, k_major.problem(), reference, k_dense, 0, 0,
                   &k_summary);
    verify_run(what + " [N-major discrete]", n_major, problem, reference, n_discrete, 0, 0, &n_summary);
    CHECK_MESSAGE(!(k_ok && !n_ok), what << ": the K-major kernel is right on these weights and the N-major one is "
                                         "not: the N-major B load or descriptor is wrong");
    same_bits(what + " N-major discrete vs N-major dense", n_discrete, n_dense);
    same_bits(what + " N-major vs K-major on the transposed weights", n_dense, k_dense);
    MESSAGE(what << ": N-major " << n_summary << "; K-major " << k_summary << "; compared bitwise");
}

}  // namespace

TEST_CASE("weight layout: N-major equals K-major on the transposed weights, every SM90 tile width") {
    const CaseConfig cases[] = {
        // N and K tails (N = 2056 is 8 past a multiple of 64 and of every width; K = 1032).
        n_major_config("layouts tails", 16, 2056, 1032, GGEMM_DTYPE_FP32, GGEMM_DTYPE_BF16, GGEMM_DTYPE_FP32,
                       GGEMM_SCHEDULER_STATIC, 8100),
        // N below one 64-column box, K below one k-block.
        n_major_config("layouts narrow", 7, 8, 8, GGEMM_DTYPE_BF16, GGEMM_DTYPE_FP16, GGEMM_DTYPE_NONE,
                       GGEMM_SCHEDULER_DYNAMIC, 8101),
        // N = 200: the second, third and fourth 64-column boxes partly or wholly past N.
        n_major_config("layouts partial boxes", 3, 200, 136, GGEMM_DTYPE_FP16, GGEMM_DTYPE_FP32, GGEMM_DTYPE_BF16,
                       GGEMM_SCHEDULER_DYNAMIC, 8102),
    };
    for (const CaseConfig& base : cases) {
        for (const int32_t tile_n : {256, 192, 128}) {
            CaseConfig config = base;
            config.tile_n = tile_n;
            compare_layouts(config);
        }
    }
}

TEST_CASE("weight layout: the plan of N-major weights runs an N-major kernel and says so") {
    CaseConfig config = n_major_config("describe", 4, 1024, 512, GGEMM_DTYPE_BF16, GGEMM_DTYPE_BF16, GGEMM_DTYPE_NONE,
                                       GGEMM_SCHEDULER_STATIC, 8200);
    const HostCase host_case = make_case(config);
    Plan plan(make_desc(config, host_case.m, GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_STATIC));
    const std::string text = plan.description();
    INFO(text);
    CHECK(text.find("_nmajor") != std::string::npos);
    CHECK(text.find("N-major weights") != std::string::npos);
    CHECK(text.find("reads N-major B") != std::string::npos);
}

TEST_CASE("sanitizer: N-major weights, small cases on every tile width, dense and discrete") {
    std::size_t index = 0;
    for (const int32_t tile_n : {256, 192, 128}) {
        for (const int32_t scheduler : {GGEMM_SCHEDULER_STATIC, GGEMM_SCHEDULER_DYNAMIC}) {
            CaseConfig config = n_major_config("san N-major", 5, 200, 72, GGEMM_DTYPE_BF16, GGEMM_DTYPE_FP32,
                                               GGEMM_DTYPE_FP16, scheduler, mix_seed(8300, index++));
            config.max_tokens = 400;
            config.tile_n = tile_n;
            const HostCase host_case = make_case(config);
            const Problem problem = host_case.problem();
            const Result reference = reference_for(host_case, problem);
            Stream stream;
            CaseBuffers buffers(host_case, true, true);
            const std::string what = describe(config) + " M=" + std::to_string(host_case.m);
            const DeviceOutputs dense = run_once(host_case, buffers, GGEMM_WEIGHTS_DENSE, scheduler, stream);
            const DeviceOutputs discrete = run_once(host_case, buffers, GGEMM_WEIGHTS_DISCRETE, scheduler, stream);
            std::string dense_summary, discrete_summary;
            verify_run(what + " dense", host_case, problem, reference, dense, 0, 0, &dense_summary);
            verify_run(what + " discrete", host_case, problem, reference, discrete, 0, 0, &discrete_summary);
            same_bits(what + " discrete vs dense", discrete, dense);
            MESSAGE(what << ": dense " << dense_summary << "; discrete " << discrete_summary);
        }
    }
}
