// The two launch paths of the GEMM (kernels/common/launch.cuh): the driver's cuLaunchKernelEx,
// taken whenever the calling thread has a current context, and the runtime's, taken otherwise
// (a thread that has made no runtime call yet). Both must give the right result.
#include <doctest/doctest.h>

#include <thread>

#include "kernels/common/driver_launch.h"
#include "runner.h"

using namespace ggemm_test;

TEST_CASE("launch: the driver path where a context is current, the runtime's on a fresh thread, both right") {
    CaseConfig config;
    config.label = "launch paths";
    config.num_experts = 4;
    config.max_tokens = 700;
    config.n = 520;  // a column tail on every tile width
    config.k = 264;
    config.sampled_rows_per_expert = 0;  // every row
    config.seed = 7001;
    const HostCase host_case = make_case(config);
    const std::string what = describe(config) + " M=" + std::to_string(host_case.m);
    const Problem problem = host_case.problem();
    const Result reference = reference_for(host_case, problem);
    Stream stream;
    CaseBuffers buffers(host_case, true, false);
    std::string summary;

    // This thread has made runtime calls (the buffers): its context is current.
    const unsigned long long before = ggemm::driver_launch_fallbacks();
    const DeviceOutputs on_main = run_once(host_case, buffers, GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_STATIC, stream);
    verify_run(what + ", this thread", host_case, problem, reference, on_main, 0, 0, &summary);
    CHECK_MESSAGE(ggemm::driver_launch_fallbacks() == before, "the GEMM fell back to the runtime launch");

    // Fresh threads. The first call on one may take the runtime path (nothing has made a
    // context current there yet); after it, the runtime has, so the second takes the driver's.
    // The outputs are poisoned in stream order before the call that is judged.
    const ggemm_plan_desc desc = make_desc(config, host_case.m, GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_STATIC);
    Plan plan(desc);
    const ggemm_args args = buffers.args(GGEMM_WEIGHTS_DENSE);
    for (int calls = 1; calls <= 2; ++calls) {
        buffers.poison(stream.get());
        stream.synchronize();
        ggemm_status_t status[2] = {GGEMM_SUCCESS, GGEMM_SUCCESS};
        unsigned long long fallbacks[3] = {ggemm::driver_launch_fallbacks(), 0, 0};
        std::string message;
        std::thread worker([&] {
            for (int call = 0; call < calls && status[0] == GGEMM_SUCCESS; ++call) {
                if (call > 0) buffers.poison(stream.get());
                status[call] = ggemm_execute(plan.get(), &args, stream.get());
                if (status[call] != GGEMM_SUCCESS) message = last_error_message();
                fallbacks[call + 1] = ggemm::driver_launch_fallbacks();
            }
        });
        worker.join();
        const std::string where = what + ", fresh thread, " + std::to_string(calls) + " call(s)";
        CHECK_MESSAGE(status[0] == GGEMM_SUCCESS, where << ": " << message);
        CHECK_MESSAGE(status[1] == GGEMM_SUCCESS, where << ": " << message);
        CHECK_LAUNCH();
        CHECK_MESSAGE(fallbacks[1] - fallbacks[0] <= 1, where << ": the first call launched more than once");
        if (calls == 2) CHECK_MESSAGE(fallbacks[2] == fallbacks[1], where << ": the second call fell back");
        stream.synchronize();
        verify_run(where, host_case, problem, reference, buffers.download(), 0, 0, &summary);
    }
    MESSAGE(what << ": " << summary << "; runtime launches in this test: "
                 << ggemm::driver_launch_fallbacks() - before);
}
