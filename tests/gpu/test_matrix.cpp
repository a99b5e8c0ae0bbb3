// The correctness matrix: a covering set of shapes, row layouts, dtypes, bias, generate_c and
// schedulers (not the cartesian product: every value of every dimension appears, every C/D dtype
// pair with C generated, every bias dtype, both schedulers, both generate_c), each on fresh
// random data, in dense mode and again in discrete mode (bitwise equal to dense on the same
// weights), with K-major weights and again with N-major weights. "matrix: the case table
// covers ..." proves the covering claim.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <sstream>
#include <utility>

#include "kernels/common/tail_split.h"
#include "tests/gpu/runner.h"

using namespace ggemm_test;

namespace {

constexpr int32_t BF16 = GGEMM_DTYPE_BF16;
constexpr int32_t FP16 = GGEMM_DTYPE_FP16;
constexpr int32_t FP32 = GGEMM_DTYPE_FP32;
constexpr int32_t NONE = GGEMM_DTYPE_NONE;
constexpr int32_t STATIC = GGEMM_SCHEDULER_STATIC;
constexpr int32_t DYNAMIC = GGEMM_SCHEDULER_DYNAMIC;
constexpr int32_t K_MAJOR = GGEMM_WEIGHT_LAYOUT_K_MAJOR;
constexpr int32_t N_MAJOR = GGEMM_WEIGHT_LAYOUT_N_MAJOR;

CaseConfig shape(const char* label, int32_t experts, int64_t n, int64_t k, int32_t c_dtype, int32_t d_dtype,
                 int32_t bias_dtype, bool generate_c, int32_t scheduler) {
    CaseConfig config;
    config.label = label;
    config.num_experts = experts;
    config.n = n;
    config.k = k;
    config.c_dtype = c_dtype;
    config.d_dtype = d_dtype;
    config.bias_dtype = bias_dtype;
    config.generate_c = generate_c;
    config.scheduler = scheduler;
    return config;
}

CaseConfig random_rows(CaseConfig config, int64_t max_tokens, double empty_fraction = 0.25) {
    config.layout = RowLayout::kRandom;
    config.max_tokens = max_tokens;
    config.empty_fraction = empty_fraction;
    return config;
}

CaseConfig one_expert(CaseConfig config, int32_t expert, int64_t tokens) {
    config.layout = RowLayout::kOneExpert;
    config.full_expert = expert;
    config.tokens = tokens;
    return config;
}

CaseConfig with(CaseConfig config, int sampled_rows_per_expert, int64_t slack_rows, bool one_shot = false) {
    config.sampled_rows_per_expert = sampled_rows_per_expert;
    config.slack_rows = slack_rows;
    config.one_shot = one_shot;
    return config;
}

// Rough host cost per case on 16 cores: data generation (B up to 2.6 G elements for #4), the
// reference (sampled rows for the large N*K cases), the output checks. Full verification wherever
// the reference is cheap.
constexpr int kAllRows = -1;  // sampled_rows_per_expert: check every row

std::vector<CaseConfig> matrix_cases() {
    std::vector<CaseConfig> cases = {
        with(one_expert(shape("1 tiny", 1, 8, 8, BF16, BF16, NONE, true, STATIC), 0, 500), kAllRows, 256),
        with(random_rows(shape("2 small", 2, 264, 72, BF16, FP16, BF16, true, DYNAMIC), 1000), kAllRows, 256, true),
        with(random_rows(shape("3 mid", 7, 4096, 2880, BF16, FP32, FP16, true, STATIC), 1500), 32, 512),
        with(random_rows(shape("4 large", 64, 5760, 7168, FP16, BF16, FP32, true, DYNAMIC), 700), 16, 0),
        with(random_rows(shape("5 many experts", 256, 264, 2880, FP16, FP16, NONE, true, STATIC), 600), 16, 256),
        with(random_rows(shape("6 narrow", 1024, 8, 72, FP16, FP32, BF16, true, DYNAMIC), 300, 0.5), kAllRows, 256),
        with(random_rows(shape("7 short K", 1024, 264, 8, FP32, BF16, FP16, true, STATIC), 300, 0.5), kAllRows, 0,
             true),
        with(one_expert(shape("8 one expert", 7, 5760, 2880, FP32, FP16, FP32, true, DYNAMIC), 3, 3000), 64, 256),
        with(random_rows(shape("9 wide", 64, 4096, 72, FP32, FP32, NONE, true, STATIC), 800), kAllRows, 256),
        with(one_expert(shape("10 no C", 2, 5760, 72, BF16, BF16, NONE, false, DYNAMIC), 1, 2000), kAllRows, 256),
        with(random_rows(shape("11 no C, deep K", 256, 8, 7168, FP32, FP16, FP16, false, STATIC), 300, 0.5),
             kAllRows, 512, true),
        with(one_expert(shape("12 no C, one expert", 1, 4096, 8, FP16, FP32, BF16, false, DYNAMIC), 0, 2000),
             kAllRows, 0),
        with(one_expert(shape("13 no C, middle expert", 64, 264, 7168, BF16, BF16, FP32, false, STATIC), 37, 4000),
             kAllRows, 256),
        with(one_expert(shape("14 last expert of 1024", 1024, 264, 72, BF16, BF16, NONE, true, DYNAMIC), 1023, 1000),
             kAllRows, 512),
    };
    cases[10].c_buffer_when_unused = false;  // generate_c off with C = NULL
    return cases;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string case_text(const HostCase& host_case, const char* mode) {
    std::ostringstream text;
    text << "[" << mode << "] " << describe(host_case.config) << " M=" << host_case.m
         << " rows=" << host_case.rows_used() << " empty experts=" << host_case.empty_experts();
    return text.str();
}

// Dense: one run against the reference. Discrete: the same data in separate allocations, against
// the reference and bitwise against a dense run. tile_n overrides the planner's width.
void run_matrix_case(std::size_t index, bool discrete, int32_t tile_n = 0, int32_t weight_layout = K_MAJOR) {
    const std::vector<CaseConfig> cases = matrix_cases();
    REQUIRE(index < cases.size());
    CaseConfig config = cases[index];
    config.seed = mix_seed(discrete ? 2000 : 1000, index) + static_cast<uint64_t>(tile_n) +
                  static_cast<uint64_t>(weight_layout) * 7919;
    config.tile_n = tile_n;
    config.weight_layout = weight_layout;

    auto start = std::chrono::steady_clock::now();
    const HostCase host_case = make_case(config);
    const double make_seconds = seconds_since(start);
    const std::string what = case_text(host_case, discrete ? "discrete" : "dense");

    start = std::chrono::steady_clock::now();
    const Problem problem = host_case.problem();
    const Result reference = reference_for(host_case, problem);
    const double reference_seconds = seconds_since(start);

    start = std::chrono::steady_clock::now();
    Stream stream;
    CaseBuffers buffers(host_case, /*dense=*/true, /*discrete=*/discrete);
    const int32_t mode = discrete ? GGEMM_WEIGHTS_DISCRETE : GGEMM_WEIGHTS_DENSE;
    const DeviceOutputs outputs = run_once(host_case, buffers, mode, config.scheduler, stream);
    std::string summary;
    verify_run(what, host_case, problem, reference, outputs, 0, 0, &summary);
    if (discrete) {
        const DeviceOutputs dense = run_once(host_case, buffers, GGEMM_WEIGHTS_DENSE, config.scheduler, stream);
        if (same_bits(what + " discrete vs dense", outputs, dense)) summary += ", bitwise equal to dense";
    }
    MESSAGE(what << ": " << summary << " (inputs " << make_seconds << " s, reference " << reference_seconds
                 << " s, GPU+checks " << seconds_since(start) << " s)");
}

}  // namespace

TEST_CASE("matrix: the case table covers every dimension value, dtype pair, bias, scheduler and generate_c") {
    const std::vector<CaseConfig> cases = matrix_cases();
    std::set<int64_t> experts, n_values, k_values;
    std::set<std::pair<int32_t, int32_t>> generated_pairs;
    std::set<int32_t> bias_dtypes, schedulers, d_without_c;
    std::set<bool> generate_c;
    bool one_expert_layout = false, random_layout = false, one_shot = false, c_null = false;
    for (const CaseConfig& config : cases) {
        experts.insert(config.num_experts);
        n_values.insert(config.n);
        k_values.insert(config.k);
        if (config.generate_c) generated_pairs.insert({config.c_dtype, config.d_dtype});
        if (!config.generate_c) d_without_c.insert(config.d_dtype);
        bias_dtypes.insert(config.bias_dtype);
        schedulers.insert(config.scheduler);
        generate_c.insert(config.generate_c);
        one_expert_layout |= config.layout == RowLayout::kOneExpert && config.num_experts > 1;
        random_layout |= config.layout == RowLayout::kRandom;
        one_shot |= config.one_shot;
        c_null |= !config.generate_c && !config.c_buffer_when_unused;
    }
    CHECK(experts == std::set<int64_t>{1, 2, 7, 64, 256, 1024});
    CHECK(n_values == std::set<int64_t>{8, 264, 4096, 5760});
    CHECK(k_values == std::set<int64_t>{8, 72, 2880, 7168});
    CHECK(generated_pairs.size() == 9);
    CHECK(d_without_c == std::set<int32_t>{GGEMM_DTYPE_BF16, GGEMM_DTYPE_FP16, GGEMM_DTYPE_FP32});
    CHECK(bias_dtypes == std::set<int32_t>{NONE, BF16, FP16, FP32});
    CHECK(schedulers == std::set<int32_t>{STATIC, DYNAMIC});
    CHECK(generate_c.size() == 2);
    CHECK(one_expert_layout);
    CHECK(random_layout);
    CHECK(one_shot);
    CHECK(c_null);
    // Random layouts really contain empty experts (L >= 3 forces one) and M > rows used somewhere.
    const HostCase sample = make_case(cases[2]);
    CHECK(sample.empty_experts() >= 1);
    CHECK(sample.m > sample.rows_used());
}

// One named test case per row of the table, mode and layout, so a failure names its case.
#define GGEMM_MATRIX_CASE(number)                                                                       \
    TEST_CASE("matrix: dense weights, case " #number) { run_matrix_case(number - 1, false); }           \
    TEST_CASE("matrix: discrete weights, case " #number) { run_matrix_case(number - 1, true); }         \
    TEST_CASE("matrix: N-major dense weights, case " #number) {                                          \
        run_matrix_case(number - 1, false, 0, N_MAJOR);                                                 \
    }                                                                                                   \
    TEST_CASE("matrix: N-major discrete weights, case " #number) { run_matrix_case(number - 1, true, 0, N_MAJOR); }

GGEMM_MATRIX_CASE(1)
GGEMM_MATRIX_CASE(2)
GGEMM_MATRIX_CASE(3)
GGEMM_MATRIX_CASE(4)
GGEMM_MATRIX_CASE(5)
GGEMM_MATRIX_CASE(6)
GGEMM_MATRIX_CASE(7)
GGEMM_MATRIX_CASE(8)
GGEMM_MATRIX_CASE(9)
GGEMM_MATRIX_CASE(10)
GGEMM_MATRIX_CASE(11)
GGEMM_MATRIX_CASE(12)
GGEMM_MATRIX_CASE(13)
GGEMM_MATRIX_CASE(14)

TEST_CASE("matrix: every case number has a test case") { CHECK(matrix_cases().size() == 14); }

// The planner picks one tile width per shape; this runs every compiled SM90 width on three rows
// of the table: N = 264 (a last column tile mostly past N, with bias and generate_c, one-shot),
// N = 4096 with fp32 C and D, and K = 7168 on one middle expert. Each dense and discrete, with
// K-major and with N-major weights.
TEST_CASE("matrix: every SM90 tile width, cases 2, 9 and 13") {
    for (const int32_t weight_layout : {K_MAJOR, N_MAJOR}) {
        for (const int32_t tile_n : {256, 192, 128}) {
            for (const std::size_t index : {1u, 8u, 12u}) {
                CAPTURE(tile_n);
                CAPTURE(weight_layout);
                run_matrix_case(index, false, tile_n, weight_layout);
                run_matrix_case(index, true, tile_n, weight_layout);
            }
        }
    }
}

// The narrow tiles the fill rule takes for small calls, on the same rows: 64 wide with both
// weight layouts, 32 and 112 wide with K-major weights (an N-major box is 64 columns).
TEST_CASE("matrix: the 64-, 32- and 112-wide tiles, cases 2, 9 and 13") {
    for (const int32_t tile_n : {64, 32, 112}) {
        for (const int32_t weight_layout : {K_MAJOR, N_MAJOR}) {
            if ((tile_n == 32 || tile_n == 112) && weight_layout == N_MAJOR) continue;
            for (const std::size_t index : {1u, 8u, 12u}) {
                CAPTURE(tile_n);
                CAPTURE(weight_layout);
                run_matrix_case(index, false, tile_n, weight_layout);
                run_matrix_case(index, true, tile_n, weight_layout);
            }
        }
    }
}

// The last partial round of tiles cut into pieces along N (kernels/common/tail_split.h), on this
// GPU's SM count, for every SM90 tile width: M is searched so that at least one whole round of
// tiles runs before the pieces, with N = 520 so that some pieces start past N. Static and dynamic
// schedulers, dense and discrete weights (bitwise equal), K-major and N-major, every row against
// the reference.
TEST_CASE("matrix: the last round of tiles cut into pieces, every SM90 tile width") {
    int sm_count = 0;
    REQUIRE(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
    for (const int32_t weight_layout : {K_MAJOR, N_MAJOR}) {
        for (const int32_t tile_n : {256, 192, 128}) {
            const int64_t column_blocks = (520 + tile_n - 1) / tile_n;
            int64_t rows = 256;
            ggemm::TailSplit split{0, 1};
            for (;; rows += 256) {
                const int64_t tiles = rows / 128 * column_blocks;
                split = ggemm::choose_tail_split(tiles, sm_count, tile_n, ggemm::kMaxPieces);
                if (split.pieces > 1 && split.first_piece >= sm_count) break;
            }
            for (const int32_t scheduler : {STATIC, DYNAMIC}) {
                CaseConfig config = with(one_expert(shape("tail pieces", 3, 520, 72, BF16, BF16, NONE, false, scheduler),
                                                    1, rows),
                                         kAllRows, 0);
                config.tile_n = tile_n;
                config.weight_layout = weight_layout;
                config.seed = mix_seed(4000 + static_cast<uint64_t>(weight_layout),
                                       static_cast<std::size_t>(tile_n + scheduler));
                const HostCase host_case = make_case(config);
                REQUIRE(host_case.m == rows);  // every tile of M is real: the split lands on real tiles
                const Problem problem = host_case.problem();
                const Result reference = reference_for(host_case, problem);
                Stream stream;
                CaseBuffers buffers(host_case, /*dense=*/true, /*discrete=*/true);
                std::ostringstream what;
                what << case_text(host_case, "dense") << " tile_n=" << tile_n << " split at item " << split.first_piece
                     << " into " << split.pieces << " pieces";
                const DeviceOutputs dense = run_once(host_case, buffers, GGEMM_WEIGHTS_DENSE, scheduler, stream);
                std::string summary;
                verify_run(what.str(), host_case, problem, reference, dense, 0, 0, &summary);
                const DeviceOutputs discrete = run_once(host_case, buffers, GGEMM_WEIGHTS_DISCRETE, scheduler, stream);
                if (same_bits(what.str() + " discrete vs dense", discrete, dense)) summary += ", discrete bitwise equal";
                MESSAGE(what.str() << ": " << summary);
            }
        }
    }
}

TEST_CASE("sanitizer: small matrix, dense and discrete") {
    // Small enough to run under compute-sanitizer memcheck / racecheck in seconds.
    const CaseConfig small_cases[] = {
        random_rows(shape("san bias", 2, 264, 72, BF16, FP16, BF16, true, DYNAMIC), 600),
        with(random_rows(shape("san no C", 7, 136, 136, BF16, FP32, NONE, false, STATIC), 300), kAllRows, 256),
        one_expert(shape("san fp32 bias", 3, 8, 8, FP32, FP16, FP32, true, STATIC), 1, 300),
    };
    std::size_t index = 0;
    for (CaseConfig config : small_cases) {
        config.seed = mix_seed(3000, index++);
        if (index == 2) config.c_buffer_when_unused = false;
        const HostCase host_case = make_case(config);
        const Problem problem = host_case.problem();
        const Result reference = reference_for(host_case, problem);
        Stream stream;
        CaseBuffers buffers(host_case, true, true);
        const std::string what = case_text(host_case, "dense+discrete");
        const DeviceOutputs dense = run_once(host_case, buffers, GGEMM_WEIGHTS_DENSE, config.scheduler, stream);
        const DeviceOutputs discrete = run_once(host_case, buffers, GGEMM_WEIGHTS_DISCRETE, config.scheduler, stream);
        std::string dense_summary, discrete_summary;
        verify_run(what + " dense", host_case, problem, reference, dense, 0, 0, &dense_summary);
        verify_run(what + " discrete", host_case, problem, reference, discrete, 0, 0, &discrete_summary);
        same_bits(what + " discrete vs dense", discrete, dense);
        MESSAGE(what << ": dense " << dense_summary << "; discrete " << discrete_summary);
    }
}

TEST_CASE("sanitizer: every tile variant at N = 520 with both schedulers and weight modes") {
    // The tile widths the planner chooses from, each forced, and the 64-row tiles of one math
    // warpgroup: racecheck and synccheck must be clean on every variant, not only on the
    // planner's choice for the small cases above. K = 8
    // (one k-block a tile) lets the scheduling thread run ahead and reuse tile slots as soon as
    // they are released; K = 1032 keeps it waiting on them.
    std::size_t index = 0;
    const std::pair<int32_t, int64_t> shapes[] = {{64, 8}, {8, 1032}};  // experts, K
    for (const auto& [experts, k] : shapes) {
        const std::pair<int32_t, int32_t> tiles[] = {{0, 256}, {0, 192}, {0, 128}, {64, 128}, {64, 64}};  // tile_m, tile_n
        for (const auto& [tile_m, tile_n] : tiles) {
            for (int32_t scheduler : {STATIC, DYNAMIC}) {
                CaseConfig config = with(random_rows(shape("san tile", experts, 520, k, BF16, BF16, NONE, true, scheduler), 400),
                                         kAllRows, 256);
                config.tile_m = tile_m;
                config.tile_n = tile_n;
                config.seed = mix_seed(3100, index++);
                const HostCase host_case = make_case(config);
                const Problem problem = host_case.problem();
                const Result reference = reference_for(host_case, problem);
                Stream stream;
                CaseBuffers buffers(host_case, true, true);
                const std::string what = case_text(host_case, "dense+discrete");
                const DeviceOutputs dense = run_once(host_case, buffers, GGEMM_WEIGHTS_DENSE, scheduler, stream);
                const DeviceOutputs discrete = run_once(host_case, buffers, GGEMM_WEIGHTS_DISCRETE, scheduler, stream);
                std::string dense_summary, discrete_summary;
                verify_run(what + " dense", host_case, problem, reference, dense, 0, 0, &dense_summary);
                verify_run(what + " discrete", host_case, problem, reference, discrete, 0, 0, &discrete_summary);
                same_bits(what + " discrete vs dense", discrete, dense);
                MESSAGE(what << ": dense " << dense_summary << "; discrete " << discrete_summary);
            }
        }
}
}
