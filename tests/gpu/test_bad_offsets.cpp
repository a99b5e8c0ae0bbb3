// Offsets that are negative, misaligned, decreasing or past M: never an out-of-bounds access (run
// these under compute-sanitizer), rows outside [0, M) untouched, the offending experts skipped
// (their rows untouched), every other expert still correct, and the status word names the rule.
// With K-major and N-major weights.
#include <doctest/doctest.h>

#include "tests/gpu/runner.h"

using namespace ggemm_test;

TEST_CASE("sanitizer: bad offsets are skipped and reported in the device status word") {
    for (const BadOffsets& bad : bad_offset_cases()) {
        for (int32_t run = 0; run < 4; ++run) {
            const int32_t scheduler = run % 2 == 0 ? GGEMM_SCHEDULER_STATIC : GGEMM_SCHEDULER_DYNAMIC;
            CaseConfig config;
            config.weight_layout = run < 2 ? GGEMM_WEIGHT_LAYOUT_K_MAJOR : GGEMM_WEIGHT_LAYOUT_N_MAJOR;
            config.label = bad.name;
            config.num_experts = static_cast<int32_t>(bad.offsets.size());
            config.layout = RowLayout::kExplicit;
            config.offsets = bad.offsets;
            config.fixed_m = bad.m;
            config.n = 264;
            config.k = 72;
            config.c_dtype = GGEMM_DTYPE_FP16;
            config.d_dtype = GGEMM_DTYPE_BF16;
            config.bias_dtype = GGEMM_DTYPE_BF16;
            config.generate_c = true;
            config.scheduler = scheduler;
            config.seed = mix_seed(6000, static_cast<uint64_t>(run));
            const HostCase host_case = make_case(config);
            const Problem problem = host_case.problem();
            const uint32_t allowed = offset_violations(host_case.offsets.data(), config.num_experts, host_case.m);
            REQUIRE((allowed & bad.required) == bad.required);  // the table itself is right
            const Result reference = reference_for(host_case, problem);
            REQUIRE_FALSE(reference.rows.empty());  // some expert before the bad one is still checked

            Stream stream;
            CaseBuffers buffers(host_case, true, false);
            const std::string what = describe(config) + " M=" + std::to_string(host_case.m);
            const DeviceOutputs outputs = run_once(host_case, buffers, GGEMM_WEIGHTS_DENSE, scheduler, stream);
            std::string summary;
            verify_run(what, host_case, problem, reference, outputs, bad.required, allowed, &summary);
            MESSAGE(what << ": " << reference.rows.size() << " rows of valid experts checked; " << summary);
        }
    }
}
