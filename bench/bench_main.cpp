// ggemm_bench: Google Benchmark over the MoE shape suite (bench/moe_shapes.json).
//
//   suite/<case>/<scheduler>       device time of one grouped GEMM (bf16 D, no bias), CUDA events
//   epilogue/dsv3_fc1_L8/full      the same with bias, prob, fp32 C and bf16 D
//   host/execute/<case>/...        host CPU time of one ggemm_execute call, plan made once
//   host/grouped_gemm/<case>       the same through the one-shot call and its plan cache
//   host/execute_no_launch/<case>  ggemm_execute with M = 0 and no status word: every check and
//                                  pointer query of a call, without the launch
//   host/bare_launch/<case>        the same kernel launched with the same arguments, prepared once:
//                                  what ggemm_execute adds to a launch is host/execute minus this
//   host/execute_over_launch/<case>  the two in turn within each iteration, each call timed on its
//                                  own: counters execute_us, bare_launch_us and over_launch_us (the
//                                  median of the per-iteration differences)
//   host/parts/*                   the runtime calls inside one call, one by one (host_parts.cu)
//
// Device counters come from the median event time of the iterations: TFLOP/s = 2*M*N*K over
// padded rows (M = padded_offsets[-1]), GB/s = the fewest bytes a run must move.
//
// Flags besides Google Benchmark's:
//   --ggemm_shapes=PATH            the suite (default: bench/moe_shapes.json of the source tree)
//   --ggemm_scheduler=static|dynamic   scheduler of the suite/ and epilogue/ benchmarks
//   --ggemm_sets=N                 input sets to rotate over (default: enough to defeat the L2)
//   --ggemm_tile_m=N --ggemm_tile_n=N --ggemm_cluster_m=N   plan overrides (0 = planner's choice)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include "bench/device_fill.h"
#include "bench/host_parts.h"
#include "ggemm.h"
#include "bench/suite.h"
#include "bench/workload.h"

#ifndef GGEMM_BENCH_DEFAULT_SHAPES
#define GGEMM_BENCH_DEFAULT_SHAPES "bench/moe_shapes.json"
#endif

namespace ggemm_bench {
namespace {

// The launch of the timed kernel is hidden behind this much queued GPU work (see gpu_busy_wait).
constexpr uint32_t kLeadNanoseconds = 50000;
// Host benchmark: the stream is drained every this many calls so the launch queue never fills
// (a full queue would make ggemm_execute block and count GPU time as host time).
constexpr int kDrainEvery = 64;
constexpr int kHostIterations = 4096;  // per repetition of a host/ benchmark
constexpr int kHostWarmUpCalls = 512;  // untimed, before each host/ benchmark
// Cases that also run under the other scheduler, and the case of the full-epilogue variant.
const char* const kDynamicCases[] = {"dsv3_fc1_L8", "qwen3_fc2_L128", "gptoss_fc1_L32"};
const char* const kEpilogueCase = "dsv3_fc1_L8";
const char* const kHostDynamicCase = "qwen3_fc1_L128";

struct Options {
    std::string shapes = GGEMM_BENCH_DEFAULT_SHAPES;
    Variant variant;  // scheduler and overrides of the suite/ benchmarks
};

cudaStream_t bench_stream() {
    static cudaStream_t stream = [] {
        cudaStream_t s = nullptr;
        check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
        return s;
    }();
    return stream;
}

// One workload lives at a time: Google Benchmark calls a benchmark function several times while
// it settles the iteration count, and re-creating gigabytes of inputs each time would dominate.
std::unique_ptr<Workload> g_workload;
std::string g_workload_key;

Workload& workload_for(const MoeCase& moe_case, const Variant& variant) {
    std::string key = moe_case.name + "/" + std::to_string(moe_case.m()) + "/" + variant.key();
    if (!g_workload || key != g_workload_key) {
        g_workload.reset();  // free the previous problem's memory first
        g_workload_key.clear();
        g_workload = std::make_unique<Workload>(moe_case, variant, bench_stream());
        g_workload_key = key;
        std::fprintf(stderr, "[ggemm_bench] %s: %d input sets; plan: %s\n", moe_case.name.c_str(),
                     g_workload->sets(), g_workload->plan_description().c_str());
    }
    return *g_workload;
}

class EventPair {
public:
    EventPair() {
        check_cuda(cudaEventCreate(&start), "cudaEventCreate");
        check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
    }
    ~EventPair() {
        cudaEventDestroy(start);
        cudaEventDestroy(stop);
    }
    cudaEvent_t start = nullptr;
    cudaEvent_t stop = nullptr;
};

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    size_t half = values.size() / 2;
    return values.size() % 2 ? values[half] : 0.5 * (values[half - 1] + values[half]);
}

std::string shape_label(const MoeCase& c, int sets) {
    return "M=" + std::to_string(c.m()) + " N=" + std::to_string(c.n) + " K=" + std::to_string(c.k) +
           " L=" + std::to_string(c.experts) + " sets=" + std::to_string(sets);
}

void run_device(benchmark::State& state, const MoeCase& moe_case, const Variant& variant) {
    Workload* workload = nullptr;
    std::unique_ptr<EventPair> events;
    try {
        workload = &workload_for(moe_case, variant);
        workload->warm_up(bench_stream());
        events = std::make_unique<EventPair>();
    } catch (const std::exception& error) {
        state.SkipWithError(error.what());
        return;
    }
    const cudaStream_t stream = bench_stream();
    std::vector<double> seconds;
    int set = 0;
    for (auto _ : state) {
        cudaError_t cuda = gpu_busy_wait(kLeadNanoseconds, stream);
        if (cuda == cudaSuccess) cuda = cudaEventRecord(events->start, stream);
        ggemm_status_t status = workload->execute(set, stream);
        if (cuda == cudaSuccess) cuda = cudaEventRecord(events->stop, stream);
        if (cuda == cudaSuccess) cuda = cudaEventSynchronize(events->stop);
        if (status != GGEMM_SUCCESS) {
            state.SkipWithError(("ggemm_execute: " + ggemm_error_text(status)).c_str());
            break;
        }
        float ms = 0.0f;
        if (cuda == cudaSuccess) cuda = cudaEventElapsedTime(&ms, events->start, events->stop);
        if (cuda != cudaSuccess) {
            state.SkipWithError((std::string("CUDA: ") + cudaGetErrorString(cuda)).c_str());
            break;
        }
        state.SetIterationTime(ms * 1e-3);
        seconds.push_back(ms * 1e-3);
        set = (set + 1) % workload->sets();
    }
    if (state.error_occurred() || seconds.empty()) return;

    const double t = median(seconds);
    state.counters["TFLOP/s"] = moe_case.flops() / t * 1e-12;
    state.counters["GB/s"] = workload->bytes_moved() / t * 1e-9;
    state.counters["median_us"] = t * 1e6;
    state.SetLabel(shape_label(moe_case, workload->sets()));
}

// The host side of a call: plan made once, each iteration one enqueue. The problem is the case's
// plan (N, K, L) called on 256 rows owned by expert 0. The GPU needs up to ~80 us for those rows
// (K = 7168), far more than the host's few us, so the timing pauses while the stream drains and
// the iteration count is fixed (kHostIterations): left to Google Benchmark, the count that fills
// the minimum CPU time made one repetition take seconds of wall time.
enum class HostCall {
    kExecute,   // ggemm_execute
    kOneShot,   // ggemm_grouped_gemm (plan cache)
    kNoLaunch,  // ggemm_execute with M = 0 and no status word: every check, no launch, no memset
    kBareLaunch,  // the plan's kernel, its launch prepared once (Workload::bare_launch)
};

// The workload of a host/ benchmark: the case's plan on 256 rows owned by expert 0, one input
// set, warmed up; nullptr (and the benchmark skipped) where that fails.
Workload* host_workload(benchmark::State& state, const MoeCase& moe_case, const Variant& variant, bool one_shot) {
    MoeCase probe = moe_case;
    std::fill(probe.padded_offsets.begin(), probe.padded_offsets.end(), 256);
    Variant single = variant;
    single.sets = 1;
    try {
        const cudaStream_t stream = bench_stream();
        Workload* workload = &workload_for(probe, single);
        workload->warm_up(stream);
        if (one_shot) check_ggemm(workload->execute_one_shot(0, stream), "ggemm_grouped_gemm (warm-up)");
        check_cuda(cudaStreamSynchronize(stream), "warm-up");
        return workload;
    } catch (const std::exception& error) {
        state.SkipWithError(error.what());
        return nullptr;
    }
}

std::string host_label(const MoeCase& moe_case, const Workload& workload) {
    const int32_t splits = workload.k_splits(0);
    return "plan N=" + std::to_string(moe_case.n) + " K=" + std::to_string(moe_case.k) +
           " L=" + std::to_string(moe_case.experts) + ", M=256 per call" +
           (splits > 1 ? ", K split " + std::to_string(splits) + " (with its counters' memset)" : "");
}

void run_host(benchmark::State& state, const MoeCase& moe_case, const Variant& variant, HostCall call_kind) {
    const bool one_shot = call_kind == HostCall::kOneShot;
    Workload* workload = host_workload(state, moe_case, variant, one_shot);
    if (workload == nullptr) return;
    const cudaStream_t stream = bench_stream();
    // Untimed calls first: without them the first host/ benchmarks of a process measured up to
    // ~35 % more (H200, 2026-11-30). Google Benchmark's MinWarmUpTime refuses a fixed
    // iteration count.
    for (int call = 0; call < kHostWarmUpCalls; ++call) {
        const ggemm_status_t status = one_shot ? workload->execute_one_shot(0, stream) : workload->execute(0, stream);
        if (status != GGEMM_SUCCESS) break;  // the timed loop reports it
        if ((call + 1) % kDrainEvery == 0) cudaStreamSynchronize(stream);
    }
    cudaStreamSynchronize(stream);
    int queued = 0;
    for (auto _ : state) {
        if (call_kind == HostCall::kBareLaunch) {
            const cudaError_t error = workload->bare_launch(0, stream);
            if (error != cudaSuccess) {
                state.SkipWithError((std::string("bare launch: ") + cudaGetErrorString(error)).c_str());
                break;
            }
        }
        ggemm_status_t status = call_kind == HostCall::kBareLaunch ? GGEMM_SUCCESS
                                : one_shot                          ? workload->execute_one_shot(0, stream)
                                : call_kind == HostCall::kNoLaunch  ? workload->execute_no_launch(0, stream)
                                                                    : workload->execute(0, stream);
        if (status != GGEMM_SUCCESS) {
            state.SkipWithError(ggemm_error_text(status).c_str());
            break;
        }
        if (++queued == kDrainEvery) {
            state.PauseTiming();
            cudaStreamSynchronize(stream);
            state.ResumeTiming();
            queued = 0;
        }
    }
    cudaError_t cuda = cudaStreamSynchronize(stream);
    if (!state.error_occurred() && cuda != cudaSuccess)
        state.SkipWithError((std::string("CUDA: ") + cudaGetErrorString(cuda)).c_str());
    state.SetLabel(host_label(moe_case, *workload));
}

// ggemm_execute and the bare launch of its kernel in turn, each call timed on its own by the
// host's steady clock, the order swapped every iteration: both see the same machine state
// (clock, caches, queue depth), which separate benchmarks minutes apart do not. The manual time
// of an iteration is the pair's; the counters are medians over the iterations.
void run_host_pair(benchmark::State& state, const MoeCase& moe_case, const Variant& variant) {
    using Clock = std::chrono::steady_clock;
    Workload* workload = host_workload(state, moe_case, variant, false);
    if (workload == nullptr) return;
    const cudaStream_t stream = bench_stream();
    for (int call = 0; call < kHostWarmUpCalls; ++call) {
        if (workload->execute(0, stream) != GGEMM_SUCCESS || workload->bare_launch(0, stream) != cudaSuccess) break;
        if ((call + 1) % (kDrainEvery / 2) == 0) cudaStreamSynchronize(stream);
    }
    cudaStreamSynchronize(stream);
    std::vector<double> execute_us, launch_us, over_us;
    bool execute_first = true;
    int queued = 0;
    for (auto _ : state) {
        double seconds[2] = {0.0, 0.0};  // execute, bare launch
        for (int call = 0; call < 2; ++call) {
            const bool execute = (call == 0) == execute_first;
            std::string error;
            const Clock::time_point start = Clock::now();
            if (execute) {
                const ggemm_status_t status = workload->execute(0, stream);
                if (status != GGEMM_SUCCESS) error = ggemm_error_text(status);
            } else {
                const cudaError_t cuda = workload->bare_launch(0, stream);
                if (cuda != cudaSuccess) error = std::string("bare launch: ") + cudaGetErrorString(cuda);
            }
            seconds[execute ? 0 : 1] = std::chrono::duration<double>(Clock::now() - start).count();
            if (!error.empty()) {
                state.SkipWithError(error.c_str());
                break;
            }
        }
        if (state.error_occurred()) break;
        execute_first = !execute_first;
        state.SetIterationTime(seconds[0] + seconds[1]);
        execute_us.push_back(seconds[0] * 1e6);
        launch_us.push_back(seconds[1] * 1e6);
        over_us.push_back((seconds[0] - seconds[1]) * 1e6);
        if ((queued += 2) >= kDrainEvery) {
            cudaStreamSynchronize(stream);  // outside both calls' timing
            queued = 0;
        }
    }
    const cudaError_t cuda = cudaStreamSynchronize(stream);
    if (!state.error_occurred() && cuda != cudaSuccess)
        state.SkipWithError((std::string("CUDA: ") + cudaGetErrorString(cuda)).c_str());
    if (state.error_occurred() || over_us.empty()) return;
    state.counters["execute_us"] = median(execute_us);
    state.counters["bare_launch_us"] = median(launch_us);
    state.counters["over_launch_us"] = median(over_us);
    state.SetLabel(host_label(moe_case, *workload));
}

bool parse_int_flag(const char* arg, const char* prefix, int32_t* value) {
    size_t len = std::strlen(prefix);
    if (std::strncmp(arg, prefix, len) != 0) return false;
    char* end = nullptr;
    long parsed = std::strtol(arg + len, &end, 10);
    if (end == arg + len || *end != '\0' || parsed < 0 || parsed > 1 << 20) {
        std::fprintf(stderr, "ggemm_bench: bad value in '%s'\n", arg);
        std::exit(2);
    }
    *value = static_cast<int32_t>(parsed);
    return true;
}

Options parse_options(int argc, char** argv) {
    Options options;
    for (int i = 1; i < argc; ++i) {
        const char* arg = argv[i];
        if (std::strncmp(arg, "--ggemm_shapes=", 15) == 0) {
            options.shapes = arg + 15;
        } else if (std::strcmp(arg, "--ggemm_scheduler=static") == 0) {
            options.variant.scheduler = GGEMM_SCHEDULER_STATIC;
        } else if (std::strcmp(arg, "--ggemm_scheduler=dynamic") == 0) {
            options.variant.scheduler = GGEMM_SCHEDULER_DYNAMIC;
        } else if (parse_int_flag(arg, "--ggemm_sets=", &options.variant.sets) ||
                   parse_int_flag(arg, "--ggemm_tile_m=", &options.variant.tile_m) ||
                   parse_int_flag(arg, "--ggemm_tile_n=", &options.variant.tile_n) ||
                   parse_int_flag(arg, "--ggemm_cluster_m=", &options.variant.cluster_m)) {
        } else {
            std::fprintf(stderr,
                         "ggemm_bench: unknown argument '%s'\n"
                         "  ggemm flags: --ggemm_shapes=PATH --ggemm_scheduler=static|dynamic --ggemm_sets=N\n"
                         "               --ggemm_tile_m=N --ggemm_tile_n=N --ggemm_cluster_m=N\n"
                         "  and Google Benchmark's (--help)\n",
                         arg);
            std::exit(2);
        }
    }
    return options;
}

const char* scheduler_name(int32_t scheduler) {
    return scheduler == GGEMM_SCHEDULER_DYNAMIC ? "dynamic" : "static";
}

void register_benchmarks(const std::vector<MoeCase>& suite, const Options& options) {
    auto add_device = [](const std::string& name, const MoeCase& c, const Variant& v) {
        benchmark::RegisterBenchmark(name.c_str(), [c, v](benchmark::State& state) { run_device(state, c, v); })
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
    };
    auto add_host = [](const std::string& name, const MoeCase& c, const Variant& v, HostCall call) {
        benchmark::RegisterBenchmark(name.c_str(),
                                     [c, v, call](benchmark::State& state) { run_host(state, c, v, call); })
            ->Iterations(kHostIterations)
            ->Unit(benchmark::kMicrosecond);
    };
    auto add_host_pair = [](const std::string& name, const MoeCase& c, const Variant& v) {
        benchmark::RegisterBenchmark(name.c_str(), [c, v](benchmark::State& state) { run_host_pair(state, c, v); })
            ->Iterations(kHostIterations)
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond);
    };
    const Variant& base = options.variant;
    const int32_t other = base.scheduler == GGEMM_SCHEDULER_STATIC ? GGEMM_SCHEDULER_DYNAMIC : GGEMM_SCHEDULER_STATIC;

    for (const MoeCase& c : suite) add_device("suite/" + c.name + "/" + scheduler_name(base.scheduler), c, base);
    for (const MoeCase& c : suite) {
        for (const char* name : kDynamicCases) {
            if (c.name != name) continue;
            Variant v = base;
            v.scheduler = other;
            add_device("suite/" + c.name + "/" + scheduler_name(other), c, v);
        }
    }
    // Discrete weights on every case, to compare with the dense suite/ numbers of the same run.
    for (const MoeCase& c : suite) {
        Variant v = base;
        v.discrete = true;
        add_device("discrete/" + c.name + "/" + scheduler_name(base.scheduler), c, v);
    }
    for (const MoeCase& c : suite) {
        if (c.name != kEpilogueCase) continue;
        Variant v = base;
        v.full_epilogue = true;
        add_device("epilogue/" + c.name + "/full/" + scheduler_name(base.scheduler), c, v);
    }
    // Host time: no plan overrides, the planner's own choice is what users get.
    Variant host_static;
    Variant host_dynamic;
    host_dynamic.scheduler = GGEMM_SCHEDULER_DYNAMIC;
    // Each case's execute next to its bare launch, so the pair is measured minutes apart at most.
    for (const MoeCase& c : suite) {
        add_host("host/execute/" + c.name + "/static", c, host_static, HostCall::kExecute);
        add_host("host/bare_launch/" + c.name + "/static", c, host_static, HostCall::kBareLaunch);
    }
    for (const MoeCase& c : suite) add_host_pair("host/execute_over_launch/" + c.name + "/static", c, host_static);
    for (const MoeCase& c : suite) {
        if (c.name == kHostDynamicCase) {
            add_host("host/execute/" + c.name + "/dynamic", c, host_dynamic, HostCall::kExecute);
        }
        if (c.name == kEpilogueCase) {
            add_host("host/grouped_gemm/" + c.name + "/static", c, host_static, HostCall::kOneShot);
            add_host("host/execute_no_launch/" + c.name + "/static", c, host_static, HostCall::kNoLaunch);
        }
    }
    register_host_parts();
}

}  // namespace
}  // namespace ggemm_bench

int main(int argc, char** argv) {
    using namespace ggemm_bench;
    // Listing the benchmarks needs no GPU (Initialize consumes the flag, so look first).
    bool listing = false;
    for (int i = 1; i < argc; ++i)
        listing |= std::strcmp(argv[i], "--benchmark_list_tests") == 0 ||
                   std::strcmp(argv[i], "--benchmark_list_tests=true") == 0;
    benchmark::Initialize(&argc, argv);
    Options options = parse_options(argc, argv);
    std::vector<MoeCase> suite;
    try {
        suite = load_suite(options.shapes);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "ggemm_bench: %s\n", error.what());
        return 1;
    }
    int device_count = 0;
    if (!listing) {
        if (cudaGetDeviceCount(&device_count) != cudaSuccess || device_count == 0) {
            std::fprintf(stderr, "ggemm_bench: no CUDA device; nothing was measured\n");
            return 1;
        }
        cudaDeviceProp prop{};
        if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) benchmark::AddCustomContext("device", prop.name);
    }
    benchmark::AddCustomContext("ggemm_version", std::to_string(ggemm_version()));
    benchmark::AddCustomContext("shapes", options.shapes);
    register_benchmarks(suite, options);
    benchmark::RunSpecifiedBenchmarks();
    g_workload.reset();
    ggemm_plan_cache_clear();
    benchmark::Shutdown();
    return 0;
}
