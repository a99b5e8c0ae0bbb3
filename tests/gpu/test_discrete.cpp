// Discrete weights with a bad pointer entry: that expert's rows are skipped (left untouched), the
// others are correct, and the status word says why. The entry is never dereferenced: run under
// compute-sanitizer.
#include <doctest/doctest.h>

#include "tests/gpu/runner.h"

using namespace ggemm_test;

namespace {

// Expert 1 owns rows [256, 768) and gets the bad pointer; expert 2 is empty.
CaseConfig bad_pointer_config(const char* label, int32_t scheduler) {
    CaseConfig config;
    config.label = label;
    config.num_experts = 5;
    config.layout = RowLayout::kExplicit;
    config.offsets = {256, 768, 768, 1280, 1536};
    config.fixed_m = 1792;
    config.n = 264;
    config.k = 136;
    config.c_dtype = GGEMM_DTYPE_BF16;
    config.d_dtype = GGEMM_DTYPE_FP16;
    config.bias_dtype = GGEMM_DTYPE_FP32;
    config.generate_c = true;
    config.scheduler = scheduler;
    config.seed = 8000 + static_cast<uint64_t>(scheduler);
    return config;
}

// Runs the case with b_ptrs[bad_expert] replaced by bad_pointer; the reference skips that expert.
void run_with_bad_pointer(const char* label, int32_t bad_expert, bool null_pointer, uint32_t status_bit) {
    for (int32_t scheduler : {GGEMM_SCHEDULER_STATIC, GGEMM_SCHEDULER_DYNAMIC}) {
        const HostCase host_case = make_case(bad_pointer_config(label, scheduler));
        Stream stream;
        CaseBuffers buffers(host_case, false, true);
        std::vector<uint64_t> pointers = buffers.expert_weights().pointers();
        // Misaligned: 8 bytes into the right allocation, so reading N x K from there would also
        // run 8 bytes past its end.
        pointers[static_cast<std::size_t>(bad_expert)] = null_pointer ? 0 : pointers[static_cast<std::size_t>(bad_expert)] + 8;
        buffers.upload_weight_pointers(pointers);

        std::vector<const uint16_t*> host_experts;
        for (int32_t g = 0; g < host_case.config.num_experts; ++g) {
            host_experts.push_back(g == bad_expert ? nullptr
                                                   : host_case.b.data() + static_cast<std::size_t>(g) *
                                                                              static_cast<std::size_t>(host_case.config.n * host_case.config.k));
        }
        Problem problem = host_case.problem();
        problem.b = nullptr;
        problem.b_experts = host_experts.data();
        const Result reference = reference_for(host_case, problem);
        REQUIRE(reference.rows.size() == 1536 - 512);  // every expert but the bad one

        const std::string what = describe(host_case.config);
        const DeviceOutputs outputs = run_once(host_case, buffers, GGEMM_WEIGHTS_DISCRETE, scheduler, stream);
        std::string summary;
        verify_run(what, host_case, problem, reference, outputs, status_bit, status_bit, &summary);
        MESSAGE(what << ": expert " << bad_expert << " skipped; " << summary);
    }
}

}  // namespace

TEST_CASE("sanitizer: discrete weights, a null pointer for an expert with rows is skipped and reported") {
    run_with_bad_pointer("null b_ptrs entry", 1, true, GGEMM_DEVICE_STATUS_WEIGHT_PTR_NULL);
}

TEST_CASE("sanitizer: discrete weights, a misaligned pointer for an expert with rows is skipped and reported") {
    run_with_bad_pointer("misaligned b_ptrs entry", 1, false, GGEMM_DEVICE_STATUS_WEIGHT_PTR_MISALIGNED);
}
