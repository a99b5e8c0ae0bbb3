// SM90 clusters of two CTAs along M that multicast the weight tile (the _c2 variants), each run
// against the reference (poison kept outside the defined rows) and bitwise against its one-CTA
// twin on the same inputs: the CTAs of a cluster compute the two 128-row halves of a 256-row tile
// with the same wgmma sequence, so every output element comes out of the same k order (and, on an
// even grid, the last round is cut into pieces of the same widths: tests/host/test_sm90_cluster.cpp).
// Dense and discrete weights, both layouts, empty experts, odd numbers of 256-row segments, K and
// N tails, the last round cut into pieces. Plans take the cluster through desc->cluster_m = 2 and the
// exact variant through GGEMM_KERNEL (read at plan creation); each run checks the plan took it.
#include <doctest/doctest.h>

#include <cstdlib>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/common/tail_split.h"
#include "tests/gpu/runner.h"

using namespace ggemm_test;

namespace {

// A cluster variant and its one-CTA twin (same tile, stages and output design).
struct Twin {
    const char* one_cta;
    const char* cluster;
};
constexpr Twin kHalves = {"sm90_tmastore_halves_128x256x64_s4", "sm90_tmastore_halves_128x256x64_s4_c2"};
constexpr Twin kWhole256 = {"sm90_tmastore_whole_128x256x64_s3", "sm90_tmastore_whole_128x256x64_s3_c2"};
constexpr Twin kWhole192 = {"sm90_tmastore_whole_128x192x64_s4", "sm90_tmastore_whole_128x192x64_s4_c2"};
constexpr Twin kHalvesNMajor = {"sm90_tmastore_halves_128x256x64_s4_nmajor",
                                "sm90_tmastore_halves_128x256x64_s4_nmajor_c2"};

// One run of `kernel` (cluster_m: the plan's override), judged against the reference.
DeviceOutputs run_kernel(const char* kernel, int32_t cluster_m, HostCase& host_case, const Problem& problem,
                         const Result& reference, CaseBuffers& buffers, int32_t weight_mode, const Stream& stream,
                         const std::string& what) {
    ScopedKernel scoped(kernel);
    host_case.config.cluster_m = cluster_m;
    const std::string name = planned_kernel(host_case, weight_mode);
    CHECK_MESSAGE(name == kernel, what << ": planned " << name << ", not " << kernel);
    const DeviceOutputs outputs = run_once(host_case, buffers, weight_mode, GGEMM_SCHEDULER_STATIC, stream);
    std::string summary;
    verify_run(what + " " + name, host_case, problem, reference, outputs, 0, 0, &summary);
    MESSAGE(what << " " << name << ": " << summary);
    return outputs;
}

// Each twin's cluster variant against its one-CTA variant, dense and discrete weights.
void compare_twins(CaseConfig config, std::initializer_list<Twin> twins) {
    config.d_dtype = GGEMM_DTYPE_BF16;
    config.generate_c = false;
    config.scheduler = GGEMM_SCHEDULER_STATIC;
    config.split_k = 1;  // K in one piece for both twins (clusters never split it): the same sums
    HostCase host_case = make_case(config);
    const Problem problem = host_case.problem();
    const Result reference = reference_for(host_case, problem);
    Stream stream;
    CaseBuffers buffers(host_case, /*dense=*/true, /*discrete=*/true);
    for (const int32_t mode : {GGEMM_WEIGHTS_DENSE, GGEMM_WEIGHTS_DISCRETE}) {
        std::ostringstream text;
        text << "[" << (mode == GGEMM_WEIGHTS_DENSE ? "dense" : "discrete") << "] " << describe(config)
             << " M=" << host_case.m;
        const std::string what = text.str();
        for (const Twin& twin : twins) {
            const DeviceOutputs one =
                run_kernel(twin.one_cta, 0, host_case, problem, reference, buffers, mode, stream, what);
            const DeviceOutputs two =
                run_kernel(twin.cluster, 2, host_case, problem, reference, buffers, mode, stream, what);
            same_bits(what + " " + twin.cluster + " vs " + twin.one_cta, two, one);
        }
    }
}

CaseConfig case_of(const char* label, int32_t experts, int64_t n, int64_t k, int32_t bias_dtype, int64_t max_tokens,
                   uint64_t seed) {
    CaseConfig config;
    config.label = label;
    config.num_experts = experts;
    config.layout = RowLayout::kRandom;
    config.max_tokens = max_tokens;
    config.n = n;
    config.k = k;
    config.bias_dtype = bias_dtype;
    config.sampled_rows_per_expert = -1;  // every row
    config.slack_rows = 256;
    config.seed = seed;
    return config;
}

CaseConfig n_major(CaseConfig config) {
    config.weight_layout = GGEMM_WEIGHT_LAYOUT_N_MAJOR;
    return config;
}

}  // namespace

TEST_CASE("cluster of two: bitwise equal to one CTA, N and K tails, bias, empty experts") {
    const int32_t NONE = GGEMM_DTYPE_NONE;
    CaseConfig cases[] = {
        case_of("c2 520 K tail", 7, 520, 72, NONE, 700, 19001),
        case_of("c2 520 bias", 7, 520, 1032, GGEMM_DTYPE_BF16, 700, 19002),
        case_of("c2 8 fp32 bias", 5, 8, 136, GGEMM_DTYPE_FP32, 400, 19003),
        case_of("c2 4096 fp16 bias", 8, 4096, 2880, GGEMM_DTYPE_FP16, 600, 19004),
        case_of("c2 264 deep K", 3, 264, 7168, NONE, 900, 19005),
        case_of("c2 2048 many experts", 256, 2048, 768, NONE, 200, 19006),
    };
    cases[3].sampled_rows_per_expert = 16;  // every row still compared bitwise
    cases[5].sampled_rows_per_expert = 4;
    for (const CaseConfig& config : cases) {
        // The large ones through the halves design only (the whole-tile one runs the same loads).
        if (config.sampled_rows_per_expert > 0) {
            compare_twins(config, {kHalves});
        } else {
            compare_twins(config, {kHalves, kWhole256});
        }
    }
    CaseConfig narrow = case_of("c2 5760 x 192", 8, 5760, 256, GGEMM_DTYPE_BF16, 500, 19007);
    narrow.tile_n = 192;
    narrow.sampled_rows_per_expert = 32;
    compare_twins(narrow, {kWhole192});
    narrow.n = 520;
    narrow.k = 1000;
    compare_twins(narrow, {kWhole192});
}

TEST_CASE("cluster of two: N-major weights") {
    compare_twins(n_major(case_of("c2 nmajor 520 K tail", 7, 520, 72, GGEMM_DTYPE_NONE, 700, 19011)), {kHalvesNMajor});
    compare_twins(n_major(case_of("c2 nmajor 264 bias", 5, 264, 1032, GGEMM_DTYPE_BF16, 700, 19012)), {kHalvesNMajor});
    CaseConfig wide = n_major(case_of("c2 nmajor 4096", 8, 4096, 2048, GGEMM_DTYPE_NONE, 600, 19013));
    wide.sampled_rows_per_expert = 16;
    compare_twins(wide, {kHalvesNMajor});
}

TEST_CASE("cluster of two: odd numbers of 256-row segments, empty experts, rows past the last expert") {
    CaseConfig config = case_of("c2 odd segments", 6, 520, 200, GGEMM_DTYPE_NONE, 0, 19021);
    config.layout = RowLayout::kExplicit;
    config.offsets = {256, 256, 1024, 1280, 1280, 2048};  // 1, 0, 3, 1, 0, 3 segments
    config.slack_rows = 768;
    compare_twins(config, {kHalves, kWhole256});
    compare_twins(n_major(config), {kHalvesNMajor});
}

// The last partial round of 256-row tiles over the clusters, cut into pieces along N.
TEST_CASE("cluster of two: the last round of tiles cut into pieces") {
    int sm_count = 0;
    REQUIRE(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
    const int32_t clusters = sm_count / 2;
    for (const int32_t tile_n : {256, 192}) {
        const int64_t column_blocks = (520 + tile_n - 1) / tile_n;
        int64_t rows = 256;
        for (;; rows += 256) {
            const ggemm::TailSplit split =
                ggemm::choose_tail_split(rows / 256 * column_blocks, clusters, tile_n, ggemm::kMaxPieces);
            if (split.pieces > 1 && split.first_piece >= clusters) break;
        }
        CaseConfig config = case_of("c2 tail pieces", 3, 520, 72, GGEMM_DTYPE_NONE, 0, 19100);
        config.layout = RowLayout::kOneExpert;
        config.full_expert = 1;
        config.tokens = rows;
        config.slack_rows = 0;
        config.tile_n = tile_n;
        config.seed += static_cast<uint64_t>(tile_n);
        if (tile_n == 256) {
            compare_twins(config, {kHalves, kWhole256});
            compare_twins(n_major(config), {kHalvesNMajor});
        } else {
            compare_twins(config, {kWhole192});
        }
    }
}

TEST_CASE("cluster of two: desc->cluster_m = 2 alone takes it; the dynamic scheduler is refused") {
    CaseConfig config = case_of("c2 plan", 4, 520, 136, GGEMM_DTYPE_NONE, 300, 19200);
    config.generate_c = false;
    config.cluster_m = 2;
    const HostCase host_case = make_case(config);
    const std::string planned = planned_kernel(host_case, GGEMM_WEIGHTS_DENSE);
    const bool cluster_kernel = planned.size() > 3 && planned.compare(planned.size() - 3, 3, "_c2") == 0;
    CHECK_MESSAGE(cluster_kernel, planned);
    ggemm_plan_desc desc = make_desc(config, host_case.m, GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_DYNAMIC);
    ggemm_plan_t plan = nullptr;
    CHECK(ggemm_plan_create(&plan, &desc) == GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK(plan == nullptr);
    char text[8192] = {};
    ggemm_last_error_message(text, sizeof text, nullptr);
    CHECK_MESSAGE(std::string(text).find("runs the static scheduler only") != std::string::npos, text);
}

TEST_CASE("sanitizer: clusters of two at N = 520 and N = 8, both weight modes and layouts") {
    // Small enough for compute-sanitizer: memcheck sees the multicast loads and the remote
    // barrier arrivals, synccheck the cluster barriers, racecheck the stage hand-offs.
    compare_twins(case_of("san c2", 5, 520, 136, GGEMM_DTYPE_NONE, 300, 19300), {kHalves});
    compare_twins(case_of("san c2 N=8", 3, 8, 72, GGEMM_DTYPE_BF16, 300, 19301), {kWhole256});
    compare_twins(n_major(case_of("san c2 nmajor", 4, 264, 200, GGEMM_DTYPE_NONE, 300, 19302)), {kHalvesNMajor});
}
