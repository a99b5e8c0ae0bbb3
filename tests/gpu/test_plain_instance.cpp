// A call with the plain epilogue (a bf16 D, no C, bias or activation) runs its SM90 variant's plain
// kernel instance, which compiles that epilogue alone (kernels/sm90/config_sm90.cuh,
// PlainEpilogue). The same call through the variant's general instance (force_general_instance)
// must give the same bits: both against the reference, then compared, for every SM90 variant
// that has both instances, with alpha and prob given and NULL, on both schedulers.
#include <doctest/doctest.h>

#include <string>

#include "tests/gpu/runner.h"

using namespace ggemm_test;

namespace {

// Every SM90 K-major variant but dGLU's, by its full name; the clusters of two run the static
// scheduler only.
constexpr const char* kVariants[] = {
    "sm90_tma_wgmma_128x256x64_s4",
    "sm90_tma_wgmma_128x192x64_s5",
    "sm90_tma_wgmma_128x128x64_s6",
    "sm90_tma_wgmma_128x112x64_s6",
    "sm90_tma_wgmma_128x64x64_s8",
    "sm90_tma_wgmma_128x32x64_s10",
    "sm90_tma_wgmma_64x64x64_s12",
    "sm90_tma_wgmma_64x128x64_s8",
    "sm90_tmastore_halves_128x256x64_s4",
    "sm90_tmastore_whole_128x256x64_s3",
    "sm90_tmastore_whole_128x192x64_s4",
    "sm90_tmastore_halves_128x256x64_s4_c2",
    "sm90_tmastore_whole_128x256x64_s3_c2",
    "sm90_tmastore_whole_128x192x64_s4_c2",
    "sm90_tmastore_pingpong_128x128x64_s6",
};

bool is_cluster(const std::string& name) { return name.size() > 3 && name.compare(name.size() - 3, 3, "_c2") == 0; }

}  // namespace

TEST_CASE("plain kernel instance: the general instance's bits, every SM90 variant, scales given and NULL") {
    uint64_t seed = 18000;
    for (const char* variant : kVariants) {
        for (const int32_t scheduler : {GGEMM_SCHEDULER_STATIC, GGEMM_SCHEDULER_DYNAMIC}) {
            if (scheduler == GGEMM_SCHEDULER_DYNAMIC && is_cluster(variant)) continue;
            for (const bool null_scales : {false, true}) {
                ScopedKernel kernel(variant);
                CaseConfig config;
                config.label = "plain instance";
                config.num_experts = 5;
                config.max_tokens = 700;
                config.n = 520;  // a column tail on every tile width
                config.k = 264;  // a K tail
                config.generate_c = false;
                config.c_buffer_when_unused = true;  // poisoned, checked untouched
                config.sampled_rows_per_expert = -1;
                config.scheduler = scheduler;
                config.null_alpha = null_scales;
                config.null_prob = null_scales;
                config.seed = ++seed;
                const HostCase host_case = make_case(config);
                const Problem problem = host_case.problem();
                const Result reference = reference_for(host_case, problem);
                const std::string name = planned_kernel(host_case, GGEMM_WEIGHTS_DENSE, scheduler);
                CHECK_MESSAGE(name == variant, describe(config) << ": planned " << name << ", not " << variant);
                const std::string what = describe(config) + " " + name + (null_scales ? " NULL scales" : "");
                Stream stream;
                CaseBuffers buffers(host_case, /*dense=*/true, /*discrete=*/false);
                const DeviceOutputs plain = run_once(host_case, buffers, GGEMM_WEIGHTS_DENSE, scheduler, stream);
                DeviceOutputs general;
                {
                    ScopedGeneralInstance forced;
                    general = run_once(host_case, buffers, GGEMM_WEIGHTS_DENSE, scheduler, stream);
                }
                std::string summary;
                verify_run(what + " [plain instance]", host_case, problem, reference, plain, 0, 0, &summary);
                MESSAGE(what << ": " << summary);
                verify_run(what + " [general instance]", host_case, problem, reference, general, 0, 0, &summary);
                same_bits(what + ": plain vs general instance", plain, general);
            }
        }
    }
}
