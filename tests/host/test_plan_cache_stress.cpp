// Eight threads against the plan cache at once: one-shot calls, plan create and destroy, cache
// clears, capacity changes and plan reads after a clear, each thread checking that the messages
// it reads are its own. Plans come from a fake factory (the real planner over a fake device), so
// one-shot calls reach execute on any machine; built with -fsanitize=thread by tests/fuzz, this
// is the race check of the cache.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "src/plan_cache.h"
#include "tests/host/test_fakes.h"

using namespace ggemm_fakes;

namespace {

constexpr int kThreads = 8;
constexpr int kRounds = 2000;

// What one thread saw go wrong, if anything (checked on the main thread: doctest's assertions
// are not meant to be called from many threads at once).
struct Report {
    int failures = 0;
    std::string first;

    void expect(bool ok, const std::string& what) {
        if (ok) return;
        if (failures++ == 0) first = what;
    }
};

void worker(int id, Report* report) {
    for (int round = 0; round < kRounds; ++round) {
        ggemm_plan_desc desc = valid_desc();
        desc.n = 1024 + 256 * ((id + round) % 6);  // six keys: hits, misses and evictions
        ggemm_args args = valid_args();
        switch ((id + round) % 6) {
            case 0: {
                // A refusal that needs the cached plan and carries this thread's own numbers.
                args.m = 256 * (id + 1) + 8;
                const ggemm_status_t status = ggemm_grouped_gemm(&desc, &args, nullptr);
                char expected[96];
                std::snprintf(expected, sizeof expected, "args->m must be a multiple of 256, got %lld",
                              static_cast<long long>(args.m));
                report->expect(status == GGEMM_ERROR_INVALID_SHAPE && message_contains(expected),
                               std::string("one-shot refusal: ") + ggemm::last_error());
                break;
            }
            case 1: {
                // Arguments that pass every field rule: the device questions decide.
                const ggemm_status_t status = ggemm_grouped_gemm(&desc, &args, nullptr);
                report->expect(status != GGEMM_SUCCESS && std::string(ggemm::last_error()).size() > 0,
                               "one-shot call with fake pointers must be refused with a message");
                break;
            }
            case 2: {
                ggemm::SharedPlan plan;
                report->expect(ggemm::cached_plan(desc, &plan) == GGEMM_SUCCESS, "cached_plan failed");
                ggemm::plan_cache_clear();
                // Still ours after the clear.
                report->expect(plan && plan->desc.n == desc.n && plan->description.size() > 100,
                               "a plan changed under its holder");
                break;
            }
            case 3: {
                report->expect(ggemm_plan_cache_set_capacity(static_cast<uint64_t>(round % 4)) == GGEMM_SUCCESS,
                               "set_capacity failed");
                uint64_t value = 0;
                report->expect(ggemm_plan_cache_size(&value) == GGEMM_SUCCESS, "cache_size failed");
                report->expect(ggemm_plan_cache_capacity(&value) == GGEMM_SUCCESS, "cache_capacity failed");
                break;
            }
            case 4: {
                // The real planner: on this machine it refuses with NO_DEVICE; with a GPU it may succeed.
                ggemm_plan_t plan = nullptr;
                const ggemm_status_t status = ggemm_plan_create(&plan, &desc);
                if (status == GGEMM_SUCCESS) {
                    report->expect(ggemm_plan_destroy(plan) == GGEMM_SUCCESS, "destroy failed");
                } else {
                    report->expect(plan == nullptr && std::string(ggemm::last_error()).size() > 0,
                                   "plan_create refusal without a message");
                }
                break;
            }
            default: {
                desc.k = 1001 + 8 * id;  // not a multiple of 8: this thread's own refusal
                uint64_t bytes = 0;
                const ggemm_status_t status = ggemm_workspace_size(&desc, &bytes);
                char expected[64];
                std::snprintf(expected, sizeof expected, "got %d", 1001 + 8 * id);
                report->expect(status == GGEMM_ERROR_INVALID_SHAPE && message_contains(expected),
                               std::string("workspace_size refusal: ") + ggemm::last_error());
                break;
            }
        }
    }
}

}  // namespace

TEST_CASE("plan cache stress: eight threads, one-shot calls, clears and capacity changes") {
    ScopedPlanFactory fake(&fake_plan_factory);
    std::vector<Report> reports(kThreads);
    std::vector<std::thread> threads;
    for (int id = 0; id < kThreads; ++id) threads.emplace_back(worker, id, &reports[id]);
    for (std::thread& thread : threads) thread.join();
    for (int id = 0; id < kThreads; ++id) {
        CAPTURE(id);
        CHECK_MESSAGE(reports[id].failures == 0, reports[id].first);
    }
    uint64_t count = 0;
    REQUIRE(ggemm_plan_cache_size(&count) == GGEMM_SUCCESS);
    CHECK(count <= 3);  // the last capacity set was at most 3
}
