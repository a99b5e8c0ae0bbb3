// A plain call of one expert runs its SM90 variant's GuessedStart instance, whose producer loads
// its first tile before reading the offset, as if the expert held all M rows
// (kernels/sm90/grouped_gemm_sm90.cuh). Every way the offset can disagree with that guess: at M
// (every guess holds), below M (CTAs whose guess names another tile, or none of this call's),
// zero (no tile), misaligned and past M (the expert skipped, the status word says why). Each
// against the reference, with rows past the expert and outside [0, M) untouched, and bitwise
// equal to the general instance (force_general_instance). Under compute-sanitizer too.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tests/gpu/runner.h"

using namespace ggemm_test;

namespace {

// The variants with a GuessedStart instance (src/variants_sm90.cu, kHasGuessedStart).
constexpr const char* kVariants[] = {
    "sm90_tma_wgmma_128x128x64_s6", "sm90_tma_wgmma_128x112x64_s6", "sm90_tma_wgmma_128x64x64_s8",
    "sm90_tma_wgmma_128x32x64_s10", "sm90_tma_wgmma_64x64x64_s12",  "sm90_tma_wgmma_64x128x64_s8",
};

struct Offset {
    const char* name;
    int32_t offset;     // the expert's padded offset; M is 1024
    uint32_t required;  // status bits the offset must raise
};

}  // namespace

TEST_CASE("sanitizer: guessed start, a single expert's offset at, below and past the guess") {
    constexpr int64_t kM = 1024;
    const Offset offsets[] = {
        {"at M", 1024, 0},
        {"below M", 512, 0},
        {"one segment", 256, 0},
        {"empty", 0, 0},
        {"misaligned", 700, GGEMM_DEVICE_STATUS_OFFSET_MISALIGNED},
        {"past M", 1280, GGEMM_DEVICE_STATUS_OFFSET_PAST_M},
    };
    uint64_t seed = 31000;
    for (const char* variant : kVariants) {
        for (const Offset& offset : offsets) {
            ScopedKernel kernel(variant);
            CaseConfig config;
            config.label = offset.name;
            config.num_experts = 1;
            config.layout = RowLayout::kExplicit;
            config.offsets = {offset.offset};
            config.fixed_m = kM;
            config.n = 520;  // a column tail on every tile width
            config.k = 520;  // more k-blocks than any ring has stages, and a K tail
            config.generate_c = false;
            config.c_buffer_when_unused = true;  // poisoned, checked untouched
            config.seed = ++seed;
            const HostCase host_case = make_case(config);
            const Problem problem = host_case.problem();
            const uint32_t allowed = offset_violations(host_case.offsets.data(), 1, host_case.m);
            REQUIRE((allowed & offset.required) == offset.required);
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
            verify_run(what + " [guessed start]", host_case, problem, reference, guessed, offset.required, allowed,
                       &summary);
            MESSAGE(what << ": " << summary);
            verify_run(what + " [general instance]", host_case, problem, reference, general, offset.required,
                       allowed, &summary);
            same_bits(what + ": guessed start vs general instance", guessed, general);
        }
    }
}
