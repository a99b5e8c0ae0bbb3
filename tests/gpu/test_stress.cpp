// Long and concurrent runs: one plan executed by many threads at once, and one captured graph
// replayed 10,000 times with offsets, data and weight pointers changed between replays.
#include <doctest/doctest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/gpu/runner.h"

using namespace ggemm_test;

namespace {

CaseConfig stress_config(const char* label, uint64_t seed) {
    CaseConfig config;
    config.label = label;
    config.num_experts = 8;
    config.layout = RowLayout::kRandom;
    config.max_tokens = 500;
    config.fixed_m = 8 * 512;  // every draw of 8 experts x at most 512 rows fits
    config.n = 264;
    config.k = 136;
    config.c_dtype = GGEMM_DTYPE_FP32;
    config.d_dtype = GGEMM_DTYPE_BF16;
    config.bias_dtype = GGEMM_DTYPE_BF16;
    config.generate_c = true;
    config.scheduler = GGEMM_SCHEDULER_DYNAMIC;
    config.sampled_rows_per_expert = 16;
    config.seed = seed;
    return config;
}

// What one thread of the concurrency test saw. Threads make raw CUDA and ggemm calls only:
// doctest's failing macros throw, which must not happen on a thread of our own.
struct ThreadRun {
    std::string first_error;
    int32_t rounds_equal_to_first = 0;
    std::vector<uint8_t> first_d, first_c;
    uint32_t first_status = 0;
};

void note(ThreadRun& run, const std::string& what) {
    if (run.first_error.empty()) run.first_error = what;
}

}  // namespace

TEST_CASE("concurrency: one plan executed by 8 threads at once; each with its own stream and workspace and data") {
    constexpr int kThreads = 8;
    constexpr int kRounds = 25;
    const CaseConfig base = stress_config("concurrent", 9000);
    // Discrete weights with the dynamic scheduler: each call uses its workspace for the tile
    // counter and the per-expert maps, so workspaces shared by mistake would show.
    Plan plan(make_desc(base, base.fixed_m, GGEMM_WEIGHTS_DISCRETE, GGEMM_SCHEDULER_DYNAMIC));
    std::vector<HostCase> cases;
    std::vector<std::unique_ptr<CaseBuffers>> buffers;
    std::vector<std::unique_ptr<Stream>> streams;
    std::vector<ggemm_args> thread_args;
    for (int t = 0; t < kThreads; ++t) {
        CaseConfig config = base;
        config.seed = mix_seed(9000, static_cast<uint64_t>(t));
        cases.push_back(make_case(config));
        buffers.push_back(std::make_unique<CaseBuffers>(cases.back(), false, true));
        buffers.back()->ensure_workspace(plan.workspace_size());
        streams.push_back(std::make_unique<Stream>());
        thread_args.push_back(buffers.back()->args(GGEMM_WEIGHTS_DISCRETE));
    }

    std::vector<ThreadRun> runs(kThreads);
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            ThreadRun& run = runs[static_cast<std::size_t>(t)];
            CaseBuffers& mine = *buffers[static_cast<std::size_t>(t)];
            const cudaStream_t stream = streams[static_cast<std::size_t>(t)]->get();
            const ggemm_args& args = thread_args[static_cast<std::size_t>(t)];
            if (cudaSetDevice(0) != cudaSuccess) note(run, "cudaSetDevice failed");
            ready.fetch_add(1);
            while (ready.load() < kThreads) {
            }
            std::vector<uint8_t> d(mine.d().bytes()), c(mine.c().bytes());
            for (int round = 0; round < kRounds; ++round) {
                const uint32_t sentinel = kStatusSentinel;
                if (cudaMemsetAsync(mine.d().get(), kPoisonByte, mine.d().bytes(), stream) != cudaSuccess ||
                    cudaMemsetAsync(mine.c().get(), kPoisonByte, mine.c().bytes(), stream) != cudaSuccess ||
                    cudaMemcpyAsync(args.device_status, &sentinel, 4, cudaMemcpyHostToDevice, stream) != cudaSuccess) {
                    note(run, "poisoning failed");
                }
                const ggemm_status_t status = ggemm_execute(plan.get(), &args, stream);
                if (status != GGEMM_SUCCESS) {
                    note(run, "round " + std::to_string(round) + ": " + ggemm_status_string(status) + ": " +
                                  last_error_message());
                }
                uint32_t word = 0;
                if (cudaStreamSynchronize(stream) != cudaSuccess ||
                    cudaMemcpy(d.data(), mine.d().get(), d.size(), cudaMemcpyDeviceToHost) != cudaSuccess ||
                    cudaMemcpy(c.data(), mine.c().get(), c.size(), cudaMemcpyDeviceToHost) != cudaSuccess ||
                    cudaMemcpy(&word, args.device_status, 4, cudaMemcpyDeviceToHost) != cudaSuccess) {
                    note(run, "round " + std::to_string(round) + ": a CUDA call failed");
                }
                if (round == 0) {
                    run.first_d = d;
                    run.first_c = c;
                    run.first_status = word;
                } else if (d == run.first_d && c == run.first_c && word == run.first_status) {
                    ++run.rounds_equal_to_first;
                }
            }
        });
    }
    for (std::thread& thread : threads) thread.join();

    for (int t = 0; t < kThreads; ++t) {
        const ThreadRun& run = runs[static_cast<std::size_t>(t)];
        const HostCase& host_case = cases[static_cast<std::size_t>(t)];
        CAPTURE(t);
        CHECK_MESSAGE(run.first_error.empty(), run.first_error);
        CHECK(run.rounds_equal_to_first == kRounds - 1);  // every round bitwise equal to its first
        DeviceOutputs outputs;
        outputs.c = run.first_c;
        outputs.d = run.first_d;
        outputs.status = run.first_status;
        const Problem problem = host_case.problem();
        std::string summary;
        verify_run("thread " + std::to_string(t), host_case, problem, reference_for(host_case, problem), outputs, 0, 0,
                   &summary);
        MESSAGE("thread " << t << ": " << kRounds << " rounds, " << summary);
    }
}

TEST_CASE("soak: ten thousand graph replays with new offsets and data and weight pointers; bad offsets injected and removed") {
    constexpr int kReplays = 10000;
    constexpr int kCheckEvery = 100;
    HostCase host_case = make_case(stress_config("soak", 9100));
    Stream stream;
    CaseBuffers buffers(host_case, false, true);  // weight set 0: the buffers' own allocations
    ExpertWeights other_set;                       // weight set 1
    other_set.upload(host_case, 9101);
    const std::vector<uint64_t> sets[2] = {buffers.expert_weights().pointers(), other_set.pointers()};
    Plan plan(make_desc(host_case.config, host_case.m, GGEMM_WEIGHTS_DISCRETE, GGEMM_SCHEDULER_DYNAMIC));
    buffers.ensure_workspace(plan.workspace_size());
    const ggemm_args args = buffers.args(GGEMM_WEIGHTS_DISCRETE);

    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    CHECK_CUDA(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeThreadLocal));
    const ggemm_status_t captured = ggemm_execute(plan.get(), &args, stream.get());
    CHECK_CUDA(cudaStreamEndCapture(stream.get(), &graph));
    CHECK_GGEMM(captured);
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));

    int checked = 0, injected = 0, status_errors = 0;
    uint64_t lcg = 12345;
    auto next_unit = [&lcg] {  // cheap values in [0, 1) for the per-replay alpha and prob
        lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<float>(lcg >> 40) / static_cast<float>(1ull << 24);
    };
    for (int replay = 1; replay <= kReplays; ++replay) {
        const bool full_check = replay % kCheckEvery == 0;
        const bool inject = replay % 1000 == 550;  // never a checked replay: those draw new data
        // The set the pointer array names: alternating, except on checked replays, which name
        // the set that received the latest weights (at the last full check) while the other
        // still holds older ones.
        const int set = (full_check || inject) ? (replay / kCheckEvery) % 2 : replay % 2;
        if (full_check) {
            refresh_case(host_case, mix_seed(9200, static_cast<uint64_t>(replay)), false);
            if (set == 0) {
                buffers.upload(host_case, true);
            } else {
                buffers.upload(host_case, false);
                other_set.upload(host_case, 9101);
            }
        } else {
            host_case.offsets = draw_offsets(host_case.config, mix_seed(9300, static_cast<uint64_t>(replay)));
            for (float& a : host_case.alpha) a = 0.25f + 1.75f * next_unit();
            for (float& p : host_case.prob) p = 0.05f + 0.95f * next_unit();
            if (inject) host_case.offsets[3] += 128;  // misaligned: experts 3 and 4 are skipped
            buffers.upload(host_case, false);
        }
        buffers.upload_weight_pointers(sets[set]);
        const uint32_t expected_bits = offset_violations(host_case.offsets.data(), host_case.config.num_experts, host_case.m);
        if (inject) {
            ++injected;
            CHECK_MESSAGE(expected_bits != 0, "replay " << replay << ": the injected offsets are valid");
        }

        if (full_check || inject) buffers.poison(stream.get());
        CHECK_CUDA(cudaGraphLaunch(exec, stream.get()));
        CHECK_LAUNCH();
        stream.synchronize();
        if (full_check || inject) {
            const DeviceOutputs outputs = buffers.download();
            const Problem problem = host_case.problem();
            std::string summary;
            const bool ok = verify_run("soak replay " + std::to_string(replay), host_case, problem,
                                       reference_for(host_case, problem), outputs, expected_bits, expected_bits, &summary);
            ++checked;
            if (!ok) break;
        } else {
            uint32_t word = 0;
            CHECK_CUDA(cudaMemcpy(&word, args.device_status, sizeof word, cudaMemcpyDeviceToHost));
            if (word != expected_bits) {
                ++status_errors;
                CHECK_MESSAGE(word == expected_bits, "replay " << replay << ": status word " << word << ", expected "
                                                               << expected_bits);
                if (status_errors > 5) break;
            }
        }
    }
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(graph));
    CHECK(checked == kReplays / kCheckEvery + injected);
    MESSAGE(kReplays << " replays, " << checked << " checked against the reference (" << injected
                     << " with bad offsets injected), status word read after every replay");
}
