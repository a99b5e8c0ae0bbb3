// No-ops: padded_offsets[L-1] == 0, and M == 0. Nothing may change.
#include <doctest/doctest.h>

#include "tests/gpu/runner.h"

using namespace ggemm_test;

TEST_CASE("sanitizer: no-ops: padded_offsets[L-1] == 0 and M == 0 change nothing") {
    for (int32_t scheduler : {GGEMM_SCHEDULER_STATIC, GGEMM_SCHEDULER_DYNAMIC}) {
        CAPTURE(scheduler);
        CaseConfig config;
        config.label = "all experts empty";
        config.num_experts = 3;
        config.layout = RowLayout::kExplicit;
        config.offsets = {0, 0, 0};
        config.fixed_m = 512;
        config.n = 264;
        config.k = 72;
        config.c_dtype = GGEMM_DTYPE_FP16;
        config.d_dtype = GGEMM_DTYPE_BF16;
        config.bias_dtype = GGEMM_DTYPE_BF16;
        config.generate_c = true;
        config.scheduler = scheduler;
        config.seed = 5001;
        const HostCase host_case = make_case(config);
        const Problem problem = host_case.problem();
        const Result reference = reference_for(host_case, problem);
        REQUIRE(reference.rows.empty());
        Stream stream;
        CaseBuffers buffers(host_case, true, true);

        // padded_offsets[L-1] == 0: a launch that does nothing, and clears the status word.
        for (int32_t mode : {GGEMM_WEIGHTS_DENSE, GGEMM_WEIGHTS_DISCRETE}) {
            const std::string what = describe(config) + (mode == GGEMM_WEIGHTS_DENSE ? " dense" : " discrete");
            const DeviceOutputs outputs = run_once(host_case, buffers, mode, scheduler, stream);
            std::string summary;
            verify_run(what, host_case, problem, reference, outputs, 0, 0, &summary);
            MESSAGE(what << ": " << summary);
        }

        // M == 0, through a plan and through the one-shot call.
        const ggemm_plan_desc desc = make_desc(config, host_case.m, GGEMM_WEIGHTS_DENSE, scheduler);
        Plan plan(desc);
        buffers.ensure_workspace(plan.workspace_size());
        buffers.poison(stream.get());
        ggemm_args args = buffers.args(GGEMM_WEIGHTS_DENSE);
        args.m = 0;
        CHECK_GGEMM(ggemm_execute(plan.get(), &args, stream.get()));
        CHECK_LAUNCH();
        uint64_t one_shot_workspace = 0;
        CHECK_GGEMM(ggemm_workspace_size(&desc, &one_shot_workspace));
        buffers.ensure_workspace(one_shot_workspace);
        args = buffers.args(GGEMM_WEIGHTS_DENSE);
        args.m = 0;
        CHECK_GGEMM(ggemm_grouped_gemm(&desc, &args, stream.get()));
        CHECK_LAUNCH();
        stream.synchronize();
        const DeviceOutputs outputs = buffers.download();
        CHECK_MESSAGE(count_unpoisoned(outputs.c.data(), outputs.c.size()) == 0, "M = 0 wrote C");
        CHECK_MESSAGE(count_unpoisoned(outputs.d.data(), outputs.d.size()) == 0, "M = 0 wrote D");
        MESSAGE("M = 0 (" << std::string(scheduler == GGEMM_SCHEDULER_STATIC ? "static" : "dynamic")
                          << "): C and D untouched; status word after: " << outputs.status);
    }
}
