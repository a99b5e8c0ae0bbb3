// Valid-row counts (args.valid_rows, docs/API.md "Valid-row counts"): only the first count rows of
// each segment are computed and written, the rest keep their poison bit for bit; counts outside
// [0, size] are clamped and flagged; both output designs (the math warps' stores and TMA stores,
// whose partly valid warpgroups fall back to masked stores), both schedulers bitwise equal,
// dense and discrete weights, K-major and N-major, graph replays with counts changed on the
// device, and the fixed-capacity layout of expert-parallel dispatch through the one-shot call.
#include <doctest/doctest.h>

#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/gpu/runner.h"

using namespace ggemm_test;

namespace {

struct Design {
    const char* prefix;  // GGEMM_KERNEL
    bool tma_store;      // needs a bf16 D and no C
};

constexpr Design kDesigns[] = {
    {"sm90_tma_wgmma_", false},
    {"sm90_tmastore_halves_", true},
    {"sm90_tmastore_whole_", true},
};

// Eight experts of 256 rows and one of 512, one empty expert, and a last segment past every
// offset's rows (M has 256 rows more than the offsets use): counts 0, 1, 63, 64, 65, 255, 256,
// 300 of 512, 0 for the empty one, 129 and 192.
const std::vector<int32_t> kOffsets = {256, 512, 768, 1024, 1280, 1536, 1792, 2304, 2304, 2560, 2816};
const std::vector<int32_t> kCounts = {0, 1, 63, 64, 65, 255, 256, 300, 0, 129, 192};

CaseConfig rows_config(const char* label, const Design& design, int32_t weight_layout, uint64_t seed) {
    CaseConfig config;
    config.label = label;
    config.layout = RowLayout::kExplicit;
    config.offsets = kOffsets;
    config.num_experts = static_cast<int32_t>(kOffsets.size());
    config.fixed_m = kOffsets.back() + 256;
    config.n = 520;  // two 256-column blocks and an 8-column tail
    config.k = 200;  // a K tail
    if (design.tma_store) {
        config.c_dtype = GGEMM_DTYPE_BF16;
        config.d_dtype = GGEMM_DTYPE_BF16;
        config.generate_c = false;
        config.c_buffer_when_unused = true;  // C must stay poisoned
        config.bias_dtype = GGEMM_DTYPE_FP32;
    } else {
        config.c_dtype = GGEMM_DTYPE_FP16;
        config.d_dtype = GGEMM_DTYPE_FP32;
        config.generate_c = true;
        config.bias_dtype = GGEMM_DTYPE_BF16;
    }
    config.weight_layout = weight_layout;
    config.seed = seed;
    return config;
}

HostCase case_with_counts(const CaseConfig& config, const std::vector<int32_t>& counts) {
    HostCase host_case = make_case(config);
    host_case.valid_rows = counts;
    return host_case;
}

// Runs once and judges against the reference of the counted rows; the status word must hold
// exactly the bits the offsets and counts call for.
DeviceOutputs run_checked(const std::string& what, const HostCase& host_case, CaseBuffers& buffers,
                          int32_t weight_mode, int32_t scheduler, const Stream& stream) {
    const Problem problem = host_case.problem();
    const Result reference = reference_for(host_case, problem);
    const uint32_t expected =
        offset_violations(host_case.offsets.data(), host_case.config.num_experts, host_case.m) |
        valid_rows_violations(problem);
    const DeviceOutputs outputs = run_once(host_case, buffers, weight_mode, scheduler, stream);
    std::string summary;
    verify_run(what, host_case, problem, reference, outputs, expected, expected, &summary);
    MESSAGE(what << ": " << reference.rows.size() << " rows checked; " << summary);
    return outputs;
}

// Runs the case on each scheduler, each judged by run_checked; their outputs must be equal bit
// for bit.
void check_both_schedulers(const std::string& what, const HostCase& host_case) {
    Stream stream;
    CaseBuffers buffers(host_case, true, false);
    const DeviceOutputs first =
        run_checked(what + " static", host_case, buffers, GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_STATIC, stream);
    const DeviceOutputs second =
        run_checked(what + " dynamic", host_case, buffers, GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_DYNAMIC, stream);
    CHECK(same_bits(what + " static vs dynamic", first, second));
}

}  // namespace

TEST_CASE("valid rows: counts 0, 1, 63, 64, 65, 255, 256 per expert, every output design, both schedulers") {
    for (const Design& design : kDesigns) {
        for (int32_t layout : {GGEMM_WEIGHT_LAYOUT_K_MAJOR, GGEMM_WEIGHT_LAYOUT_N_MAJOR}) {
            ScopedKernel kernel(design.prefix);
            const HostCase host_case = case_with_counts(
                rows_config("valid rows", design, layout, mix_seed(22000, static_cast<uint64_t>(layout))), kCounts);
            REQUIRE(valid_rows_violations(host_case.problem()) == 0u);
            check_both_schedulers(std::string(design.prefix) + " " + describe(host_case.config), host_case);
        }
    }
}

TEST_CASE("valid rows: the 64-row tiles of one math warpgroup, both schedulers") {
    // Each 64-row tile lies wholly before a count, wholly past it (no MMA, no store) or is cut by
    // it (63, 65, 129, 255, 300); both dtype sets: the general instance and the plain one.
    for (const char* variant : {"sm90_tma_wgmma_64x64x64_s12", "sm90_tma_wgmma_64x128x64_s8"}) {
        for (const bool plain_dtypes : {false, true}) {
            ScopedKernel kernel(variant);
            const Design design = {variant, plain_dtypes};  // tma_store's dtypes: bf16 D, no C
            CaseConfig config = rows_config("valid rows, 64-row tiles", design, GGEMM_WEIGHT_LAYOUT_K_MAJOR,
                                            mix_seed(22050, plain_dtypes ? 1u : 0u));
            if (plain_dtypes) config.bias_dtype = GGEMM_DTYPE_NONE;  // the plain epilogue's call
            const HostCase host_case = case_with_counts(config, kCounts);
            check_both_schedulers(std::string(variant) + " " + describe(host_case.config), host_case);
        }
    }
}

TEST_CASE("valid rows: the ping-pong kernel, whose warpgroups take whole tiles, both schedulers") {
    // A tile's halves are stored in turn: wholly valid (boxes), cut by the count (masked copies:
    // 63, 65, 129, 255, 300) or wholly past it (not stored); with bias (the general instance) and
    // without (the plain one).
    for (const bool plain_dtypes : {false, true}) {
        ScopedKernel kernel("sm90_tmastore_pingpong_");
        const Design design = {"sm90_tmastore_pingpong_", true};
        CaseConfig config = rows_config("valid rows, ping-pong", design, GGEMM_WEIGHT_LAYOUT_K_MAJOR,
                                        mix_seed(22070, plain_dtypes ? 1u : 0u));
        if (plain_dtypes) config.bias_dtype = GGEMM_DTYPE_NONE;
        const HostCase host_case = case_with_counts(config, kCounts);
        check_both_schedulers(std::string(design.prefix) + " " + describe(host_case.config), host_case);
    }
}

TEST_CASE("valid rows: counts that fill every segment give the bits of a call without counts") {
    for (const Design& design : kDesigns) {
        ScopedKernel kernel(design.prefix);
        HostCase host_case =
            case_with_counts(rows_config("full counts", design, GGEMM_WEIGHT_LAYOUT_K_MAJOR, 22100), kCounts);
        for (size_t g = 0; g < kOffsets.size(); ++g) host_case.valid_rows[g] = kOffsets[g] - (g == 0 ? 0 : kOffsets[g - 1]);
        Stream stream;
        CaseBuffers with_counts(host_case, true, false);
        const std::string what = std::string(design.prefix) + " " + describe(host_case.config);
        const DeviceOutputs counted =
            run_checked(what + " full counts", host_case, with_counts, GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_STATIC, stream);
        HostCase plain = host_case;
        plain.valid_rows.clear();
        CaseBuffers without_counts(plain, true, false);
        const DeviceOutputs uncounted =
            run_checked(what + " no counts", plain, without_counts, GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_STATIC, stream);
        CHECK(same_bits(what + " full counts vs none", counted, uncounted));
    }
}

TEST_CASE("valid rows: discrete weights give the dense bits") {
    for (const Design& design : kDesigns) {
        ScopedKernel kernel(design.prefix);
        const HostCase host_case =
            case_with_counts(rows_config("discrete", design, GGEMM_WEIGHT_LAYOUT_N_MAJOR, 22200), kCounts);
        Stream stream;
        CaseBuffers buffers(host_case, true, true);
        const std::string what = std::string(design.prefix) + " " + describe(host_case.config);
        const DeviceOutputs dense =
            run_checked(what + " dense", host_case, buffers, GGEMM_WEIGHTS_DENSE, GGEMM_SCHEDULER_DYNAMIC, stream);
        const DeviceOutputs discrete =
            run_checked(what + " discrete", host_case, buffers, GGEMM_WEIGHTS_DISCRETE, GGEMM_SCHEDULER_DYNAMIC, stream);
        CHECK(same_bits(what + " dense vs discrete", dense, discrete));
    }
}

TEST_CASE("sanitizer: valid-row counts outside their segment are clamped and flagged") {
    // Counts past the segment (by one, by far, INT32_MAX), negative ones (INT32_MIN too), an
    // expert with bad offsets (its count is not judged unless negative), and sound ones between.
    const std::vector<int32_t> offsets = {256, 512, 768, 1024, 1280, 1000, 1536, 1792};
    const std::vector<int32_t> counts = {257, 9999, -1, INT32_MIN, INT32_MAX, 5000, 77, 200};
    for (const Design& design : {kDesigns[0], kDesigns[1]}) {
        for (int32_t scheduler : {GGEMM_SCHEDULER_STATIC, GGEMM_SCHEDULER_DYNAMIC}) {
            ScopedKernel kernel(design.prefix);
            CaseConfig config = rows_config("clamped counts", design, GGEMM_WEIGHT_LAYOUT_K_MAJOR,
                                            mix_seed(22300, static_cast<uint64_t>(scheduler)));
            config.offsets = offsets;
            config.num_experts = static_cast<int32_t>(offsets.size());
            config.fixed_m = 2048;
            config.n = 136;
            config.k = 72;
            const HostCase host_case = case_with_counts(config, counts);
            REQUIRE(valid_rows_violations(host_case.problem()) == GGEMM_DEVICE_STATUS_VALID_ROWS_CLAMPED);
            REQUIRE((offset_violations(offsets.data(), config.num_experts, host_case.m) &
                     GGEMM_DEVICE_STATUS_OFFSET_MISALIGNED) != 0u);
            Stream stream;
            CaseBuffers buffers(host_case, true, true);
            const std::string what = std::string(design.prefix) + " " + describe(config);
            run_checked(what + " dense", host_case, buffers, GGEMM_WEIGHTS_DENSE, scheduler, stream);
            run_checked(what + " discrete", host_case, buffers, GGEMM_WEIGHTS_DISCRETE, scheduler, stream);
        }
    }
}

TEST_CASE("sanitizer: valid rows, the fixed-capacity expert-parallel layout through the one-shot call") {
    // (L, capacity, K) with capacity 512: offsets capacity * (g + 1), counts per expert.
    constexpr int32_t kExperts = 8;
    constexpr int32_t kCapacity = 512;
    std::vector<int32_t> offsets;
    for (int32_t g = 0; g < kExperts; ++g) offsets.push_back(kCapacity * (g + 1));
    const std::vector<int32_t> counts = {3, 0, 512, 129, 64, 1, 383, 256};
    for (const Design& design : kDesigns) {
        ScopedKernel kernel(design.prefix);
        CaseConfig config = rows_config("expert-parallel layout", design, GGEMM_WEIGHT_LAYOUT_K_MAJOR, 22400);
        config.offsets = offsets;
        config.num_experts = kExperts;
        config.fixed_m = int64_t{kExperts} * kCapacity;
        config.n = 1024;
        config.k = 256;
        config.one_shot = true;
        const HostCase host_case = case_with_counts(config, counts);
        // GGEMM_KERNEL is no part of the cache key: the cache must not serve another design's plan.
        CHECK_GGEMM(ggemm_plan_cache_clear());
        Stream stream;
        CaseBuffers buffers(host_case, true, false);
        run_checked(std::string(design.prefix) + " " + describe(config), host_case, buffers, GGEMM_WEIGHTS_DENSE,
                    GGEMM_SCHEDULER_STATIC, stream);
    }
}

TEST_CASE("valid rows: one graph capture replayed with counts changed on the device") {
    for (const Design& design : {kDesigns[0], kDesigns[2]}) {
        for (int32_t scheduler : {GGEMM_SCHEDULER_STATIC, GGEMM_SCHEDULER_DYNAMIC}) {
            ScopedKernel kernel(design.prefix);
            HostCase host_case = case_with_counts(
                rows_config("graph", design, GGEMM_WEIGHT_LAYOUT_K_MAJOR, mix_seed(22500, static_cast<uint64_t>(scheduler))),
                kCounts);
            Stream stream;
            CaseBuffers buffers(host_case, true, false);
            Plan plan(make_desc(host_case.config, host_case.m, GGEMM_WEIGHTS_DENSE, scheduler));
            buffers.ensure_workspace(plan.workspace_size());
            Graph graph;
            capture_execute(graph, plan, buffers.args(GGEMM_WEIGHTS_DENSE), stream);

            Rng rng(mix_seed(22600, static_cast<uint64_t>(scheduler)));
            for (int replay = 0; replay < 4; ++replay) {
                if (replay > 0) {  // new counts and new data behind the same pointers
                    refresh_case(host_case, mix_seed(22700, static_cast<uint64_t>(replay)), /*keep_offsets=*/true);
                    for (size_t g = 0; g < kOffsets.size(); ++g) {
                        const int64_t size = kOffsets[g] - (g == 0 ? 0 : kOffsets[g - 1]);
                        host_case.valid_rows[g] = static_cast<int32_t>(rng.between(0, size));
                    }
                    buffers.upload(host_case);
                }
                const Problem problem = host_case.problem();
                const Result reference = reference_for(host_case, problem);
                buffers.poison(stream.get());
                graph.launch(stream.get());
                stream.synchronize();
                const DeviceOutputs outputs = buffers.download();
                std::string summary;
                const std::string what = std::string(design.prefix) + " " + describe(host_case.config) + " replay " +
                                         std::to_string(replay);
                verify_run(what, host_case, problem, reference, outputs, 0, 0, &summary);
                MESSAGE(what << ": " << summary);
            }
        }
    }
}
