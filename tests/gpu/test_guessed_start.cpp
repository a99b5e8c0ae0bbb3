// A plain call of one expert, or of decode-sized segments, runs its SM90 variant's GuessedStart
// instance, whose producer loads its first tile before reading the offsets, as if the experts
// held equal segments of M (kernels/sm90/grouped_gemm_sm90.cuh). Every way the offsets can
// disagree with that guess: equal segments (every guess holds), a single expert's offset below M
// (CTAs whose guess names another tile, or none of this call's), zero (no tile), unequal and
// empty segments, misaligned and past M (the expert skipped, the status word says why). Each
// against the reference, with rows outside the segments and outside [0, M) untouched, and
// bitwise equal to the general instance (force_general_instance). Under compute-sanitizer too.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tests/gpu/runner.h"

using namespace ggemm_test;

namespace {

// The variants with a GuessedStart instance (src/variants_sm90.cuh, kHasGuessedStart).
constexpr const char* kVariants[] = {
    "sm90_tma_wgmma_128x128x64_s6",       "sm90_tma_wgmma_128x112x64_s6",      "sm90_tma_wgmma_128x64x64_s8",
    "sm90_tma_wgmma_128x32x64_s10",       "sm90_tma_wgmma_64x64x64_s12",       "sm90_tma_wgmma_64x128x64_s8",
    "sm90_tmastore_halves_128x256x64_s4", "sm90_tmastore_whole_128x256x64_s3", "sm90_tmastore_whole_128x192x64_s4",
};

struct Layout {
    const char* name;
    std::vector<int32_t> offsets;  // M is 1024
    uint32_t required;             // status bits the offsets must raise
};

}  // namespace

TEST_CASE("sanitizer: guessed start, offsets at, beside and past the guess") {
    constexpr int64_t kM = 1024;
    const Layout layouts[] = {
        {"one expert at M", {1024}, 0},
        {"one expert below M", {512}, 0},
        {"one expert, one segment", {256}, 0},
        {"one expert, empty", {0}, 0},
        {"one expert, misaligned", {700}, GGEMM_DEVICE_STATUS_OFFSET_MISALIGNED},
        {"one expert past M", {1280}, GGEMM_DEVICE_STATUS_OFFSET_PAST_M},
        {"four equal segments", {256, 512, 768, 1024}, 0},
        {"four, one empty", {512, 512, 768, 1024}, 0},
        {"two unequal", {256, 1024}, 0},
        {"three, one misaligned", {256, 700, 1024}, GGEMM_DEVICE_STATUS_OFFSET_MISALIGNED},
    };
    uint64_t seed = 31000;
    for (const char* variant : kVariants) {
        for (const Layout& layout : layouts) {
            ScopedKernel kernel(variant);
            CaseConfig config;
            config.label = layout.name;
            config.num_experts = static_cast<int32_t>(layout.offsets.size());
            config.layout = RowLayout::kExplicit;
            config.offsets = layout.offsets;
            config.fixed_m = kM;
            config.n = 520;  // a column tail on every tile width
            config.k = 520;  // more k-blocks than any ring has stages, and a K tail
            config.generate_c = false;
            config.c_buffer_when_unused = true;  // poisoned, checked untouched
            config.seed = ++seed;
            const HostCase host_case = make_case(config);
            const Problem problem = host_case.problem();
            const uint32_t allowed = offset_violations(host_case.offsets.data(), config.num_experts, host_case.m);
            REQUIRE((allowed & layout.required) == layout.required);
            const Result reference = reference_for(host_case, problem);
            const std::string name = planned_kernel(host_case, GGEMM_WEIGHTS_DENSE);
            CHECK_MESSAGE(name == variant, describe(config) << ": planned " << name << ", not " << variant);
            const std::string what = describe(config) + " " + name;
            Stream stream;
            CaseBuffers buffers(host_case, /*dense=*/true, /*discrete=*/false);
            const DeviceOutputs guessed =
                run_once(host_case, buffers, GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_STATIC, stream);
            DeviceOutputs general;
            {
                ScopedGeneralInstance forced;
                general = run_once(host_case, buffers, GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_STATIC, stream);
            }
            std::string summary;
            verify_run(what + " [guessed start]", host_case, problem, reference, guessed, layout.required, allowed,
                       &summary);
            MESSAGE(what << ": " << summary);
            verify_run(what + " [general instance]", host_case, problem, reference, general, layout.required,
                       allowed, &summary);
            same_bits(what + ": guessed start vs general instance", guessed, general);
        }
    }
}
