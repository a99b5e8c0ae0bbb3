// The SM90 kernel's two output designs side by side on the same inputs: the math warps' own
// stores (every dtype) and TMA stores of a bf16 D from a tile buffer, in halves of the tile
// (four stages) or whole (three stages at 256 columns, four at 192). Both run the same main loop
// and the same epilogue arithmetic, so D must be the same bits; each run is also checked against
// the reference, with poison kept outside the defined rows. GGEMM_KERNEL (read at plan creation)
// picks the design; each test checks the plan took it.
#include <doctest/doctest.h>

#include <cstdlib>
#include <sstream>
#include <string>

#include "kernels/common/tail_split.h"
#include "tests/gpu/runner.h"

using namespace ggemm_test;

namespace {

constexpr const char* kWarpStores = "sm90_tma_wgmma_";
constexpr const char* kHalves = "sm90_tmastore_halves_";
constexpr const char* kWhole = "sm90_tmastore_whole_";
constexpr const char* kPingPong = "sm90_tmastore_pingpong_";  // 128 wide: the warpgroups take whole tiles in turn

// One run of the case in `design`, dense or discrete, judged against the reference.
DeviceOutputs run_design(const char* design, const HostCase& host_case, const Problem& problem,
                         const Result& reference, CaseBuffers& buffers, int32_t weight_mode, int32_t scheduler,
                         const Stream& stream, const std::string& what) {
    ScopedKernel kernel(design);
    const std::string name = planned_kernel(host_case, weight_mode, scheduler);
    CHECK_MESSAGE(name.rfind(design, 0) == 0, what << ": planned " << name << ", not a " << design << " kernel");
    const DeviceOutputs outputs = run_once(host_case, buffers, weight_mode, scheduler, stream);
    std::string summary;
    verify_run(what + " " + name, host_case, problem, reference, outputs, 0, 0, &summary);
    MESSAGE(what << " " << name << ": " << summary);
    return outputs;
}

// Every TMA-store design against the math warps' stores, dense and discrete weights.
void compare_designs(CaseConfig config, std::initializer_list<const char*> designs) {
    config.d_dtype = GGEMM_DTYPE_BF16;
    config.generate_c = false;
    const HostCase host_case = make_case(config);
    const Problem problem = host_case.problem();
    const Result reference = reference_for(host_case, problem);
    Stream stream;
    CaseBuffers buffers(host_case, /*dense=*/true, /*discrete=*/true);
    for (const int32_t mode : {GGEMM_WEIGHTS_DENSE, GGEMM_WEIGHTS_DISCRETE}) {
        std::ostringstream text;
        text << "[" << (mode == GGEMM_WEIGHTS_DENSE ? "dense" : "discrete") << "] " << describe(config)
             << " M=" << host_case.m << " tile_n=" << config.tile_n;
        const std::string what = text.str();
        const DeviceOutputs warp =
            run_design(kWarpStores, host_case, problem, reference, buffers, mode, config.scheduler, stream, what);
        for (const char* design : designs) {
            const DeviceOutputs tma =
                run_design(design, host_case, problem, reference, buffers, mode, config.scheduler, stream, what);
            same_bits(what + " " + design + " vs warp stores", tma, warp);
        }
    }
}

CaseConfig case_of(const char* label, int32_t experts, int64_t n, int64_t k, int32_t bias_dtype, int32_t scheduler,
                   int64_t max_tokens, uint64_t seed) {
    CaseConfig config;
    config.label = label;
    config.num_experts = experts;
    config.layout = RowLayout::kRandom;
    config.max_tokens = max_tokens;
    config.n = n;
    config.k = k;
    config.bias_dtype = bias_dtype;
    config.scheduler = scheduler;
    config.sampled_rows_per_expert = -1;  // every row
    config.slack_rows = 256;
    config.seed = seed;
    return config;
}

}  // namespace

TEST_CASE("TMA-store output: bitwise equal to the math warps' stores, N tails, bias, both schedulers") {
    const int32_t STATIC = GGEMM_SCHEDULER_STATIC, DYNAMIC = GGEMM_SCHEDULER_DYNAMIC;
    CaseConfig cases[] = {
        case_of("tma 520", 7, 520, 72, GGEMM_DTYPE_NONE, STATIC, 700, 15001),
        case_of("tma 520 bias", 7, 520, 1032, GGEMM_DTYPE_BF16, DYNAMIC, 700, 15002),
        case_of("tma 8 fp32 bias", 5, 8, 136, GGEMM_DTYPE_FP32, STATIC, 400, 15003),
        case_of("tma 4096 fp16 bias", 16, 4096, 2880, GGEMM_DTYPE_FP16, DYNAMIC, 600, 15004),
        case_of("tma 264 deep K", 3, 264, 7168, GGEMM_DTYPE_NONE, DYNAMIC, 900, 15005),
        case_of("tma 2048 many experts", 256, 2048, 768, GGEMM_DTYPE_NONE, STATIC, 200, 15006),
    };
    // The reference of the large ones on sampled rows (every row is still compared bitwise).
    cases[3].sampled_rows_per_expert = 16;
    cases[5].sampled_rows_per_expert = 4;
    for (const CaseConfig& config : cases) compare_designs(config, {kHalves, kWhole, kPingPong});
    // 192 columns: the whole-tile design only (no halves variant at that width).
    CaseConfig narrow = case_of("tma 5760 x 192", 8, 5760, 256, GGEMM_DTYPE_BF16, STATIC, 500, 15007);
    narrow.tile_n = 192;
    narrow.sampled_rows_per_expert = 32;
    compare_designs(narrow, {kWhole});
    narrow.scheduler = DYNAMIC;
    narrow.n = 520;
    compare_designs(narrow, {kWhole});
}

// The last partial round cut into pieces along N (kernels/common/tail_split.h): pieces of 128
// and 64 columns go through the TMA-store epilogue with fewer column atoms than the buffer.
TEST_CASE("TMA-store output: the last round of tiles cut into pieces") {
    int sm_count = 0;
    REQUIRE(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
    for (const int32_t tile_n : {256, 192, 128}) {
        const int64_t column_blocks = (520 + tile_n - 1) / tile_n;
        int64_t rows = 256;
        for (;; rows += 256) {
            const ggemm::TailSplit split =
                ggemm::choose_tail_split(rows / 128 * column_blocks, sm_count, tile_n, ggemm::kMaxPieces);
            if (split.pieces > 1 && split.first_piece >= sm_count) break;
        }
        for (const int32_t scheduler : {GGEMM_SCHEDULER_STATIC, GGEMM_SCHEDULER_DYNAMIC}) {
            CaseConfig config = case_of("tma tail pieces", 3, 520, 72, GGEMM_DTYPE_NONE, scheduler, 0, 15100);
            config.layout = RowLayout::kOneExpert;
            config.full_expert = 1;
            config.tokens = rows;
            config.slack_rows = 0;
            config.tile_n = tile_n;
            config.seed += static_cast<uint64_t>(tile_n + scheduler);
            if (tile_n == 256) {
                compare_designs(config, {kHalves, kWhole});
            } else if (tile_n == 128) {
                compare_designs(config, {kPingPong});
            } else {
                compare_designs(config, {kWhole});
            }
        }
    }
}

TEST_CASE("sanitizer: TMA-store variants at N = 520 and N = 8, both schedulers and weight modes") {
    // Small enough for compute-sanitizer: racecheck sees the buffer handed between the warps'
    // stmatrix writes and the TMA stores' reads, synccheck the warpgroup barriers.
    uint64_t seed = 15200;
    for (const int64_t n : {520, 8}) {
        for (const int32_t scheduler : {GGEMM_SCHEDULER_STATIC, GGEMM_SCHEDULER_DYNAMIC}) {
            const int32_t bias = scheduler == GGEMM_SCHEDULER_STATIC ? GGEMM_DTYPE_NONE : GGEMM_DTYPE_BF16;
            compare_designs(case_of("san tma", 5, n, 136, bias, scheduler, 300, seed++), {kHalves, kWhole, kPingPong});
        }
    }
}
