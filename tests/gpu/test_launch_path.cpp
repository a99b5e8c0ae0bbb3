// The GEMM's launch (src/launch.cuh) goes through the driver's cuLaunchKernelEx,
// also on a thread that has made no runtime call yet (no current context until execute makes
// one). The runtime's cudaLaunchKernelEx remains the path when the driver lacks the entry
// points; a test switch (force_runtime_launch) sends one call down it.
#include <doctest/doctest.h>

#include <thread>

#include "src/driver_launch.h"
#include "src/launch_test_hooks.h"
#include "tests/gpu/runner.h"

using namespace ggemm_test;

TEST_CASE("launch: the driver's launch on this thread and on a fresh one, the runtime's fallback, all right") {
    CaseConfig config;
    config.label = "launch";
    config.num_experts = 4;
    config.max_tokens = 700;
    config.n = 520;  // a column tail on every tile width
    config.k = 264;  // every row is checked (sampled_rows_per_expert -1, the default)
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

    // A fresh thread has no current context until something makes one current: execute does
    // (src/driver_api.h), before the driver encodes the maps and launches. The outputs are
    // poisoned first.
    const ggemm_plan_desc desc = make_desc(config, host_case.m, GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_STATIC);
    Plan plan(desc);
    const ggemm_args args = buffers.args(GGEMM_WEIGHTS_DENSE);
    buffers.poison(stream.get());
    stream.synchronize();
    ggemm_status_t status = GGEMM_ERROR_INTERNAL;
    std::string message;
    std::thread worker([&] {
        status = ggemm_execute(plan.get(), &args, stream.get());
        if (status != GGEMM_SUCCESS) message = last_error_message();
    });
    worker.join();
    CHECK_MESSAGE(status == GGEMM_SUCCESS, "on a fresh thread: " << message);
    CHECK_LAUNCH();
    CHECK_MESSAGE(ggemm::driver_launch_fallbacks() == before, "a GEMM fell back to the runtime launch");
    stream.synchronize();
    verify_run(what + ", fresh thread", host_case, problem, reference, buffers.download(), 0, 0, &summary);

    // The runtime's launch, as on a driver without cuLaunchKernelEx.
    buffers.poison(stream.get());
    ggemm::force_runtime_launch(true);
    const ggemm_status_t forced = ggemm_execute(plan.get(), &args, stream.get());
    ggemm::force_runtime_launch(false);
    CHECK_MESSAGE(forced == GGEMM_SUCCESS, "through the runtime: " << last_error_message());
    CHECK_LAUNCH();
    CHECK_MESSAGE(ggemm::driver_launch_fallbacks() == before + 1, "the forced call did not take the runtime path");
    stream.synchronize();
    verify_run(what + ", runtime launch", host_case, problem, reference, buffers.download(), 0, 0, &summary);
    MESSAGE(what << ": " << summary);
}
