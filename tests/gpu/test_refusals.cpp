// Refusals that need a real GPU to tell memory apart: host memory where device memory is
// required, and a workspace that is missing or too small. Each returns its status, and nothing
// is enqueued: outputs keep their poison and the status word keeps its sentinel.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "tests/gpu/runner.h"

using namespace ggemm_test;

namespace {

struct HostFree {
    void operator()(void* p) const { std::free(p); }
};

// Executes `args` expecting `expected`, then checks nothing was written or launched.
void expect_refusal(const std::string& what, CaseBuffers& buffers, const Stream& stream, ggemm_status_t expected,
                    const ggemm_plan_t plan, const ggemm_plan_desc* one_shot_desc, const ggemm_args& args) {
    buffers.poison(stream.get());
    const ggemm_status_t status = plan != nullptr ? ggemm_execute(plan, &args, stream.get())
                                                  : ggemm_grouped_gemm(one_shot_desc, &args, stream.get());
    const std::string message = last_error_message();
    CHECK_MESSAGE(status == expected, what << ": returned " << std::string(ggemm_status_string(status)) << ", expected "
                                           << std::string(ggemm_status_string(expected)) << "; message: " << message);
    CHECK_MESSAGE(!message.empty(), what << ": the refusal has no message");
    CHECK_LAUNCH();
    stream.synchronize();
    const DeviceOutputs outputs = buffers.download();
    CHECK_MESSAGE(count_unpoisoned(outputs.c.data(), outputs.c.size()) == 0, what << ": C was written");
    CHECK_MESSAGE(count_unpoisoned(outputs.d.data(), outputs.d.size()) == 0, what << ": D was written");
    CHECK_MESSAGE(outputs.status == kStatusSentinel, what << ": the status word changed, so something ran");
    MESSAGE(what << ": " << std::string(ggemm_status_string(status)) << " \"" << message << "\"");
}

}  // namespace

TEST_CASE("sanitizer: refusals: host pointers and a missing or small workspace write nothing") {
    for (int32_t mode : {GGEMM_WEIGHTS_DENSE, GGEMM_WEIGHTS_DISCRETE}) {
        CaseConfig config;
        config.label = mode == GGEMM_WEIGHTS_DENSE ? "refusals dense" : "refusals discrete";
        config.num_experts = 2;
        config.max_tokens = 600;
        config.n = 264;
        config.k = 72;
        config.generate_c = true;
        config.scheduler = GGEMM_SCHEDULER_DYNAMIC;  // needs a workspace (the tile counter)
        config.seed = 9000 + static_cast<uint64_t>(mode);
        const HostCase host_case = make_case(config);
        Stream stream;
        CaseBuffers buffers(host_case, mode == GGEMM_WEIGHTS_DENSE, mode == GGEMM_WEIGHTS_DISCRETE);
        const ggemm_plan_desc desc = make_desc(config, host_case.m, mode, config.scheduler);
        Plan plan(desc);
        const uint64_t workspace = plan.workspace_size();
        REQUIRE_MESSAGE(workspace >= 16, "a dynamic-scheduler plan needs a workspace, got " << workspace << " bytes");
        buffers.ensure_workspace(workspace);
        const std::string what = describe(config);

        // The same bytes as A, in pageable host memory (aligned, so only the memory kind is wrong).
        const std::size_t a_bytes = host_case.a.size() * sizeof(uint16_t);
        std::unique_ptr<void, HostFree> host_a(std::aligned_alloc(256, (a_bytes + 255) / 256 * 256));
        REQUIRE(host_a != nullptr);
        std::memcpy(host_a.get(), host_case.a.data(), a_bytes);
        ggemm_args args = buffers.args(mode);
        args.a = host_a.get();
        expect_refusal(what + ", host A", buffers, stream, GGEMM_ERROR_NOT_DEVICE_MEMORY, plan.get(), nullptr, args);
        expect_refusal(what + ", host A, one-shot", buffers, stream, GGEMM_ERROR_NOT_DEVICE_MEMORY, nullptr, &desc, args);

        const std::size_t d_bytes = buffers.d().bytes();
        std::unique_ptr<void, HostFree> host_d(std::aligned_alloc(256, (d_bytes + 255) / 256 * 256));
        REQUIRE(host_d != nullptr);
        std::memset(host_d.get(), kPoisonByte, d_bytes);
        args = buffers.args(mode);
        args.d = host_d.get();
        expect_refusal(what + ", host D", buffers, stream, GGEMM_ERROR_NOT_DEVICE_MEMORY, plan.get(), nullptr, args);
        CHECK_MESSAGE(count_unpoisoned(host_d.get(), d_bytes) == 0, what << ": the host D was written");

        args = buffers.args(mode);
        args.workspace_size = workspace - 1;
        expect_refusal(what + ", workspace one byte short", buffers, stream, GGEMM_ERROR_WORKSPACE, plan.get(), nullptr,
                       args);
        args = buffers.args(mode);
        args.workspace = nullptr;
        args.workspace_size = 0;
        expect_refusal(what + ", no workspace", buffers, stream, GGEMM_ERROR_WORKSPACE, plan.get(), nullptr, args);
        expect_refusal(what + ", no workspace, one-shot", buffers, stream, GGEMM_ERROR_WORKSPACE, nullptr, &desc, args);
    }
}
