// The weight gradient on the GPU, through the public API only, against the fp64 reference
// (tests/support/wgrad_reference.h): every output dtype, dense and pointer outputs, accumulate
// on and off, alpha given or NULL, empty experts (zeros, or untouched when accumulating), one
// expert holding every row, P and Q tails at multiples of 8, both schedulers bitwise equal, graph
// replays with new offsets, bad offsets and output pointers skipped and reported, M = 0, and
// every byte outside the addressed outputs untouched; the TMA store path (a dense output
// overwritten, by default) bitwise equal to the register path (GGEMM_WGRAD_STORE=registers).
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/gpu_util.h"
#include "tests/support/wgrad_reference.h"

using namespace ggemm_test;

namespace {

// Bytes after each output (dense: after the whole tensor; pointers: after each expert's matrix)
// that must never change.
constexpr std::size_t kGuardBytes = 4096;

struct WgradCase {
    const char* label = "";
    int32_t experts = 4;
    int64_t p = 264;  // 2 full 128-row blocks + 8: a P tail inside a TMA box
    int64_t q = 392;  // one 256 block + 136: a Q tail that is not a multiple of 64
    int32_t out_dtype = GGEMM_DTYPE_FP32;
    int32_t output_mode = GGEMM_WGRAD_OUTPUT_DENSE;
    bool accumulate = false;
    int32_t scheduler = GGEMM_SCHEDULER_STATIC;
    bool alpha_null = false;
    float scale = 1.0f;  // of alpha and of the initial outputs: 1e-38 puts sums and old values near and below FLT_MIN
    std::vector<int32_t> offsets;  // explicit; M = m below
    int64_t m = 0;
    uint64_t seed = 1;
};

std::string describe(const WgradCase& c) {
    std::ostringstream text;
    text << c.label << ": L=" << c.experts << " P=" << c.p << " Q=" << c.q << " M=" << c.m
         << " out=" << dtype_name(c.out_dtype) << (c.output_mode == GGEMM_WGRAD_OUTPUT_DENSE ? " dense" : " pointers")
         << (c.accumulate ? " accumulate" : " overwrite")
         << (c.scheduler == GGEMM_SCHEDULER_STATIC ? " static" : " dynamic") << (c.alpha_null ? " alpha=NULL" : "")
         << (c.scale != 1.0f ? " scale=" + std::to_string(c.scale) : std::string()) << " offsets={";
    for (std::size_t g = 0; g < c.offsets.size(); ++g) text << (g ? "," : "") << c.offsets[g];
    text << "}";
    return text.str();
}

// Offsets of `experts` experts with 0..max_blocks blocks of 256 rows each (some empty), ending at M.
std::vector<int32_t> random_offsets(int32_t experts, int64_t max_blocks, uint64_t seed, int64_t* m) {
    Rng rng(seed);
    std::vector<int32_t> offsets;
    int64_t end = 0;
    for (int32_t g = 0; g < experts; ++g) {
        end += 256 * (rng.below(4) == 0 ? 0 : rng.between(1, max_blocks));
        offsets.push_back(static_cast<int32_t>(end));
    }
    *m = end;
    return offsets;
}

ggemm_wgrad_desc make_wgrad_desc(const WgradCase& c, int64_t m_capacity) {
    ggemm_wgrad_desc desc;
    REQUIRE(ggemm_wgrad_desc_init(&desc, sizeof desc) == GGEMM_SUCCESS);
    desc.m_capacity = m_capacity;
    desc.p = c.p;
    desc.q = c.q;
    desc.num_experts = c.experts;
    desc.out_dtype = c.out_dtype;
    desc.output_mode = c.output_mode;
    desc.accumulate = c.accumulate ? 1 : 0;
    desc.scheduler = c.scheduler;
    return desc;
}

// The host side of one case: inputs and the outputs' initial bytes.
struct WgradHost {
    std::vector<uint16_t> x1, x2;     // M x P, M x Q bf16
    std::vector<float> alpha;         // L
    std::vector<uint8_t> initial;     // L x P x Q of out_dtype + guard: what the outputs hold before
};

WgradHost make_host(const WgradCase& c) {
    WgradHost host;
    const std::size_t m = static_cast<std::size_t>(c.m);
    host.x1.resize(m * static_cast<std::size_t>(c.p));
    host.x2.resize(m * static_cast<std::size_t>(c.q));
    fill_uniform(host.x1.data(), host.x1.size(), kDTypeBF16, -1.f, 1.f, mix_seed(c.seed, 1));
    fill_uniform(host.x2.data(), host.x2.size(), kDTypeBF16, -1.f, 1.f, mix_seed(c.seed, 2));
    host.alpha.resize(static_cast<std::size_t>(c.experts));
    fill_uniform(host.alpha.data(), host.alpha.size(), kDTypeFP32, 0.25f * c.scale, 2.f * c.scale, mix_seed(c.seed, 3));
    const std::size_t elements = static_cast<std::size_t>(c.experts * c.p * c.q);
    host.initial.assign(elements * dtype_size(c.out_dtype) + kGuardBytes, kPoisonByte);
    // With accumulate the outputs start from values the kernel must add to; else from poison
    // (NaN), which any element the kernel should have written and did not would keep.
    if (c.accumulate) {
        fill_uniform(host.initial.data(), elements, c.out_dtype, -4.f * c.scale, 4.f * c.scale, mix_seed(c.seed, 4));
    }
    return host;
}

// Device buffers of a case. X1 and X2 have exactly M rows, so any read past M is an
// out-of-bounds access for compute-sanitizer.
struct WgradDevice {
    DeviceBuffer x1, x2, offsets, alpha, out, out_ptrs, status, workspace;
    std::vector<DeviceBuffer> experts;  // pointer mode: one allocation per expert (+ guard)

    WgradDevice(const WgradCase& c, const WgradHost& host, uint64_t workspace_bytes) {
        x1.assign(host.x1);
        x2.assign(host.x2);
        offsets.assign(c.offsets);
        alpha.assign(host.alpha);
        status.allocate(sizeof(uint32_t));
        if (workspace_bytes > 0) workspace.allocate(workspace_bytes);
        if (c.output_mode == GGEMM_WGRAD_OUTPUT_DENSE) {
            out.allocate(host.initial.size());
        } else {
            const std::size_t matrix = static_cast<std::size_t>(c.p * c.q) * dtype_size(c.out_dtype);
            std::vector<uint64_t> pointers;
            for (int32_t g = 0; g < c.experts; ++g) {
                experts.emplace_back(matrix + kGuardBytes);
                pointers.push_back(reinterpret_cast<uint64_t>(experts.back().get()));
            }
            out_ptrs.assign(pointers);
        }
    }

    // Every output byte back to the case's initial state; the status word to a sentinel.
    void reset(const WgradCase& c, const WgradHost& host) {
        if (c.output_mode == GGEMM_WGRAD_OUTPUT_DENSE) {
            out.upload(host.initial);
        } else {
            const std::size_t matrix = static_cast<std::size_t>(c.p * c.q) * dtype_size(c.out_dtype);
            for (int32_t g = 0; g < c.experts; ++g) {
                std::vector<uint8_t> bytes(host.initial.begin() + static_cast<std::ptrdiff_t>(g * matrix),
                                           host.initial.begin() + static_cast<std::ptrdiff_t>((g + 1) * matrix));
                bytes.resize(matrix + kGuardBytes, kPoisonByte);
                experts[static_cast<std::size_t>(g)].upload(bytes);
            }
        }
        const uint32_t sentinel = kStatusSentinel;
        status.upload(&sentinel, sizeof sentinel);
    }

    ggemm_wgrad_args args(const WgradCase& c) const {
        ggemm_wgrad_args a;
        REQUIRE(ggemm_wgrad_args_init(&a, sizeof a) == GGEMM_SUCCESS);
        a.m = c.m;
        a.x1 = x1.get();
        a.x2 = x2.get();
        a.padded_offsets = offsets.as<const int32_t>();
        a.alpha = c.alpha_null ? nullptr : alpha.as<const float>();
        a.out = c.output_mode == GGEMM_WGRAD_OUTPUT_DENSE ? out.get() : nullptr;
        a.out_ptrs = c.output_mode == GGEMM_WGRAD_OUTPUT_POINTERS ? out_ptrs.as<const uint64_t>() : nullptr;
        a.workspace = workspace.get();
        a.workspace_size = workspace.bytes();
        a.device_status = status.as<uint32_t>();
        return a;
    }

    // The outputs as one L x P x Q array + guard (pointer mode: each expert's guard checked here).
    std::vector<uint8_t> download(const WgradCase& c, const WgradHost& host, std::string* guard_problem) const {
        if (c.output_mode == GGEMM_WGRAD_OUTPUT_DENSE) return out.download();
        const std::size_t matrix = static_cast<std::size_t>(c.p * c.q) * dtype_size(c.out_dtype);
        std::vector<uint8_t> all;
        for (int32_t g = 0; g < c.experts; ++g) {
            const std::vector<uint8_t> bytes = experts[static_cast<std::size_t>(g)].download();
            all.insert(all.end(), bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(matrix));
            if (count_unpoisoned(bytes.data() + matrix, kGuardBytes) != 0 && guard_problem->empty())
                *guard_problem = "bytes past expert " + std::to_string(g) + "'s matrix changed";
        }
        all.insert(all.end(), host.initial.end() - static_cast<std::ptrdiff_t>(kGuardBytes), host.initial.end());
        return all;
    }

    uint32_t status_word() const {
        uint32_t word = 0;
        CHECK_CUDA(cudaMemcpy(&word, status.get(), sizeof word, cudaMemcpyDeviceToHost));
        return word;
    }
};

// Judges one run's outputs expert by expert. Returns true when all pass.
bool verify_wgrad(const std::string& what, const WgradCase& c, const WgradHost& host, const std::vector<uint8_t>& got,
                  const std::vector<bool>* output_ok = nullptr) {
    const std::vector<WgradExpert> experts = wgrad_experts(c.offsets, c.m, c.accumulate, output_ok);
    const std::size_t size = dtype_size(c.out_dtype);
    const std::size_t matrix = static_cast<std::size_t>(c.p * c.q);
    const double tol = c.out_dtype == GGEMM_DTYPE_FP32 ? 1e-5 : 1e-2;
    bool ok = true;
    for (int32_t g = 0; g < c.experts; ++g) {
        const WgradExpert& e = experts[static_cast<std::size_t>(g)];
        const std::size_t first = static_cast<std::size_t>(g) * matrix;
        const uint8_t* got_bytes = got.data() + first * size;
        const uint8_t* initial = host.initial.data() + first * size;
        if (e.state == WgradExpertState::kUntouched) {
            if (std::memcmp(got_bytes, initial, matrix * size) != 0) {
                FAIL_CHECK(what << ": expert " << g << " must be left untouched (bad offsets or pointer, or empty "
                                << "with accumulate) but its output changed");
                ok = false;
            }
            continue;
        }
        if (e.state == WgradExpertState::kZeros) {
            for (std::size_t i = 0; i < matrix * size; ++i) {
                if (got_bytes[i] != 0) {
                    FAIL_CHECK(what << ": expert " << g << " is empty in overwrite mode and must be exact zeros; byte "
                                    << i << " is " << int(got_bytes[i]));
                    ok = false;
                    break;
                }
            }
            continue;
        }
        const double alpha = c.alpha_null ? 1.0 : host.alpha[static_cast<std::size_t>(g)];
        const std::vector<double> sum = wgrad_reference(host.x1.data(), host.x2.data(), c.p, c.q, e.begin, e.end, alpha);
        FrobeniusSum error;
        int64_t nonfinite = 0;
        for (std::size_t i = 0; i < matrix; ++i) {
            const double old = c.accumulate ? load_element(initial, i, c.out_dtype) : 0.0;
            if (!element_is_finite(got_bytes, i, c.out_dtype)) ++nonfinite;
            error.add(load_element(got_bytes, i, c.out_dtype), old + sum[i]);
        }
        if (nonfinite != 0 || !(error.relative() <= tol)) {
            FAIL_CHECK(what << ": expert " << g << " rows [" << e.begin << ", " << e.end << "): relative error "
                            << error.relative() << " (tolerance " << tol << "), " << nonfinite
                            << " non-finite elements (poison left where the kernel should have written?)");
            ok = false;
        }
    }
    const std::size_t guard = static_cast<std::size_t>(c.experts) * matrix * size;
    if (std::memcmp(got.data() + guard, host.initial.data() + guard, kGuardBytes) != 0) {
        FAIL_CHECK(what << ": bytes past the last expert's output changed");
        ok = false;
    }
    return ok;
}

// Plans, runs once, downloads. The plan's m_capacity is M + 512 (at least 256).
std::vector<uint8_t> run_wgrad(const WgradCase& c, const WgradHost& host, uint32_t* status,
                               std::string* guard_problem) {
    const ggemm_wgrad_desc desc = make_wgrad_desc(c, c.m + 512);
    ggemm_plan_t plan = nullptr;
    CHECK_GGEMM(ggemm_wgrad_plan_create(&plan, &desc));
    uint64_t workspace = 0;
    CHECK_GGEMM(ggemm_plan_workspace_size(plan, &workspace));
    WgradDevice device(c, host, workspace);
    device.reset(c, host);
    Stream stream;
    const ggemm_wgrad_args args = device.args(c);
    const ggemm_status_t executed = ggemm_wgrad_execute(plan, &args, stream.get());
    (void)ggemm_plan_destroy(plan);
    if (executed != GGEMM_SUCCESS) {
        FAIL("ggemm_wgrad_execute returned " << std::string(ggemm_status_string(executed)) << ": "
                                             << last_error_message());
    }
    CHECK_LAUNCH();
    stream.synchronize();
    *status = device.status_word();
    return device.download(c, host, guard_problem);
}

void run_and_verify(const WgradCase& c) {
    const WgradHost host = make_host(c);
    uint32_t status = 0;
    std::string guard_problem;
    const std::vector<uint8_t> got = run_wgrad(c, host, &status, &guard_problem);
    const std::string what = describe(c);
    CHECK_MESSAGE(guard_problem.empty(), what << ": " << guard_problem);
    CHECK_MESSAGE(status == 0, what << ": device status word is 0x" << std::hex << status << " for valid offsets");
    verify_wgrad(what, c, host, got);
}

}  // namespace

TEST_CASE("wgrad: every output dtype, dense and pointer outputs, accumulate on and off, both schedulers") {
    uint64_t seed = 100;
    for (int32_t dtype : {GGEMM_DTYPE_FP32, GGEMM_DTYPE_BF16, GGEMM_DTYPE_FP16}) {
        for (int32_t mode : {GGEMM_WGRAD_OUTPUT_DENSE, GGEMM_WGRAD_OUTPUT_POINTERS}) {
            for (bool accumulate : {false, true}) {
                for (int32_t scheduler : {GGEMM_SCHEDULER_STATIC, GGEMM_SCHEDULER_DYNAMIC}) {
                    WgradCase c;
                    c.label = "matrix";
                    c.experts = 5;
                    c.out_dtype = dtype;
                    c.output_mode = mode;
                    c.accumulate = accumulate;
                    c.scheduler = scheduler;
                    c.alpha_null = (seed % 3) == 0;
                    c.seed = ++seed;
                    c.offsets = random_offsets(c.experts, 4, c.seed, &c.m);
                    c.offsets[1] = c.offsets[0];  // expert 1 is always empty
                    for (std::size_t g = 2; g < c.offsets.size(); ++g)
                        c.offsets[g] = std::max(c.offsets[g], c.offsets[g - 1]);
                    c.m = c.offsets.back() + 256;  // rows past the last offset: never read into a sum
                    run_and_verify(c);
                }
            }
        }
    }
}

TEST_CASE("wgrad: one expert holding every row, small Q (the 128-wide tile), P and Q tails") {
    for (int64_t q : {int64_t{8}, int64_t{120}, int64_t{136}, int64_t{520}}) {
        WgradCase c;
        c.label = "one expert";
        c.experts = 6;
        c.p = 136;
        c.q = q;
        c.offsets = {0, 0, 2048, 2048, 2048, 2048};
        c.m = 2048;
        c.seed = 300 + static_cast<uint64_t>(q);
        run_and_verify(c);
        c.accumulate = true;
        c.out_dtype = GGEMM_DTYPE_BF16;
        run_and_verify(c);
    }
}

TEST_CASE("wgrad: static and dynamic schedulers and repeated runs are bitwise equal") {
    WgradCase c;
    c.label = "bitwise";
    c.experts = 7;
    c.p = 520;
    c.q = 776;
    c.out_dtype = GGEMM_DTYPE_FP32;
    c.seed = 400;
    c.offsets = random_offsets(c.experts, 8, c.seed, &c.m);
    const WgradHost host = make_host(c);
    std::vector<std::vector<uint8_t>> results;
    for (int32_t scheduler : {GGEMM_SCHEDULER_STATIC, GGEMM_SCHEDULER_DYNAMIC, GGEMM_SCHEDULER_STATIC}) {
        c.scheduler = scheduler;
        uint32_t status = 0;
        std::string guard_problem;
        results.push_back(run_wgrad(c, host, &status, &guard_problem));
        CHECK(guard_problem.empty());
    }
    verify_wgrad(describe(c), c, host, results[0]);
    CHECK_MESSAGE(results[0] == results[1], "static and dynamic schedulers differ bitwise: " << describe(c));
    CHECK_MESSAGE(results[0] == results[2], "two static runs differ bitwise: " << describe(c));
}

TEST_CASE("wgrad: M = 0 writes zeros in overwrite mode and nothing with accumulate") {
    for (bool accumulate : {false, true}) {
        WgradCase c;
        c.label = "M = 0";
        c.experts = 3;
        c.offsets = {0, 0, 0};
        c.m = 0;
        c.accumulate = accumulate;
        c.out_dtype = GGEMM_DTYPE_BF16;
        const WgradHost host = make_host(c);
        const ggemm_wgrad_desc desc = make_wgrad_desc(c, 256);
        ggemm_plan_t plan = nullptr;
        CHECK_GGEMM(ggemm_wgrad_plan_create(&plan, &desc));
        WgradDevice device(c, host, 0);
        device.reset(c, host);
        ggemm_wgrad_args args = device.args(c);
        args.x1 = nullptr;  // M = 0: no rows to read
        args.x2 = nullptr;
        Stream stream;
        const ggemm_status_t executed = ggemm_wgrad_execute(plan, &args, stream.get());
        (void)ggemm_plan_destroy(plan);
        REQUIRE_MESSAGE(executed == GGEMM_SUCCESS, last_error_message());
        stream.synchronize();
        std::string guard_problem;
        verify_wgrad(describe(c), c, host, device.download(c, host, &guard_problem));
        CHECK(device.status_word() == 0);
    }
}

TEST_CASE("wgrad graph: one capture replayed with new offsets and new data") {
    WgradCase c;
    c.label = "graph";
    c.experts = 6;
    c.p = 264;
    c.q = 520;
    c.out_dtype = GGEMM_DTYPE_FP32;
    c.accumulate = true;
    c.scheduler = GGEMM_SCHEDULER_DYNAMIC;
    c.m = 6 * 1024;
    c.offsets = {1024, 1024, 2048, 3072, 4096, 5120};
    c.seed = 500;
    WgradHost host = make_host(c);
    const ggemm_wgrad_desc desc = make_wgrad_desc(c, c.m);
    ggemm_plan_t plan = nullptr;
    CHECK_GGEMM(ggemm_wgrad_plan_create(&plan, &desc));
    uint64_t workspace = 0;
    CHECK_GGEMM(ggemm_plan_workspace_size(plan, &workspace));
    WgradDevice device(c, host, workspace);
    Stream stream;
    Graph graph;
    const ggemm_wgrad_args args = device.args(c);
    graph.begin_capture(stream.get());
    const ggemm_status_t captured = ggemm_wgrad_execute(plan, &args, stream.get());
    if (captured != GGEMM_SUCCESS) {
        cudaGraph_t partial = nullptr;
        (void)cudaStreamEndCapture(stream.get(), &partial);
        if (partial != nullptr) (void)cudaGraphDestroy(partial);
        (void)ggemm_plan_destroy(plan);
        FAIL("ggemm_wgrad_execute during capture returned " << std::string(ggemm_status_string(captured)) << ": "
                                                            << last_error_message());
    }
    graph.end_capture(stream.get());
    (void)ggemm_plan_destroy(plan);  // work already captured does not need the plan
    for (int replay = 0; replay < 3; ++replay) {
        if (replay > 0) {
            int64_t rows = 0;
            c.offsets = random_offsets(c.experts, 4, mix_seed(c.seed, static_cast<uint64_t>(replay)), &rows);
            c.seed = mix_seed(c.seed, 77);
            const WgradHost fresh = make_host(c);  // same M: new X1, X2, alpha and initial outputs
            host = fresh;
            device.x1.upload(host.x1);
            device.x2.upload(host.x2);
            device.alpha.upload(host.alpha);
            device.offsets.upload(c.offsets);
        }
        device.reset(c, host);
        graph.launch(stream.get());
        stream.synchronize();
        std::string guard_problem;
        const std::string what = describe(c) + " replay " + std::to_string(replay);
        verify_wgrad(what, c, host, device.download(c, host, &guard_problem));
        CHECK_MESSAGE(guard_problem.empty(), what << ": " << guard_problem);
        CHECK_MESSAGE(device.status_word() == 0, what << ": status 0x" << std::hex << device.status_word());
    }
}

TEST_CASE("sanitizer: wgrad bad offsets and output pointers are skipped and reported") {
    struct Bad {
        const char* name;
        std::vector<int32_t> offsets;
        int64_t m;
        uint32_t required;
    };
    const Bad cases[] = {
        {"negative", {256, -256, 512, 768}, 1024, GGEMM_DEVICE_STATUS_OFFSET_NEGATIVE},
        {"misaligned", {256, 512, 700, 1024, 1280}, 1280, GGEMM_DEVICE_STATUS_OFFSET_MISALIGNED},
        {"decreasing", {256, 768, 512, 1024, 1280}, 1280, GGEMM_DEVICE_STATUS_OFFSET_DECREASING},
        {"past M", {256, 512, 1280}, 1024, GGEMM_DEVICE_STATUS_OFFSET_PAST_M},
        {"extreme", {256, 2147483392, INT32_MIN, 512}, 1024,
         GGEMM_DEVICE_STATUS_OFFSET_PAST_M | GGEMM_DEVICE_STATUS_OFFSET_NEGATIVE},
    };
    for (const Bad& bad : cases) {
        for (bool accumulate : {false, true}) {
            WgradCase c;
            c.label = bad.name;
            c.experts = static_cast<int32_t>(bad.offsets.size());
            c.p = 136;
            c.q = 264;
            c.offsets = bad.offsets;
            c.m = bad.m;
            c.accumulate = accumulate;
            c.out_dtype = GGEMM_DTYPE_BF16;
            c.scheduler = accumulate ? GGEMM_SCHEDULER_DYNAMIC : GGEMM_SCHEDULER_STATIC;
            c.seed = 600;
            const WgradHost host = make_host(c);
            uint32_t status = 0;
            std::string guard_problem;
            const std::vector<uint8_t> got = run_wgrad(c, host, &status, &guard_problem);
            const std::string what = describe(c);
            CHECK_MESSAGE(guard_problem.empty(), what << ": " << guard_problem);
            const uint32_t expected = offset_violations(c.offsets.data(), c.experts, c.m);
            CHECK_MESSAGE((status & bad.required) == bad.required,
                          what << ": status 0x" << std::hex << status << " lacks 0x" << bad.required);
            CHECK_MESSAGE(status == expected, what << ": status 0x" << std::hex << status << ", expected 0x" << expected);
            verify_wgrad(what, c, host, got);
        }
    }

    // Pointer mode: a NULL and a misaligned entry; those experts are skipped, the rest computed.
    WgradCase c;
    c.label = "bad output pointers";
    c.experts = 4;
    c.p = 136;
    c.q = 264;
    c.output_mode = GGEMM_WGRAD_OUTPUT_POINTERS;
    c.offsets = {256, 512, 768, 1024};
    c.m = 1024;
    c.seed = 700;
    const WgradHost host = make_host(c);
    const ggemm_wgrad_desc desc = make_wgrad_desc(c, c.m);
    ggemm_plan_t plan = nullptr;
    CHECK_GGEMM(ggemm_wgrad_plan_create(&plan, &desc));
    WgradDevice device(c, host, 0);
    device.reset(c, host);
    std::vector<uint64_t> pointers;
    for (const DeviceBuffer& expert : device.experts) pointers.push_back(reinterpret_cast<uint64_t>(expert.get()));
    pointers[1] = 0;
    pointers[2] += 8;
    device.out_ptrs.upload(pointers);
    Stream stream;
    const ggemm_wgrad_args args = device.args(c);
    const ggemm_status_t executed = ggemm_wgrad_execute(plan, &args, stream.get());
    (void)ggemm_plan_destroy(plan);
    REQUIRE_MESSAGE(executed == GGEMM_SUCCESS, last_error_message());
    stream.synchronize();
    CHECK(device.status_word() == (GGEMM_DEVICE_STATUS_OUTPUT_PTR_NULL | GGEMM_DEVICE_STATUS_OUTPUT_PTR_MISALIGNED));
    std::string guard_problem;
    const std::vector<bool> output_ok = {true, false, false, true};
    verify_wgrad(describe(c), c, host, device.download(c, host, &guard_problem), &output_ok);
    CHECK_MESSAGE(guard_problem.empty(), guard_problem);
}

namespace {

// Sends the plans created in its scope down the register store path (GGEMM_WGRAD_STORE).
struct ScopedRegisterStore {
    ScopedRegisterStore() { setenv("GGEMM_WGRAD_STORE", "registers", 1); }
    ~ScopedRegisterStore() { unsetenv("GGEMM_WGRAD_STORE"); }
    ScopedRegisterStore(const ScopedRegisterStore&) = delete;
    ScopedRegisterStore& operator=(const ScopedRegisterStore&) = delete;
};

// The first line of case c's plan description that starts with `key`.
std::string plan_line(const WgradCase& c, const char* key) {
    const ggemm_wgrad_desc desc = make_wgrad_desc(c, c.m + 512);
    ggemm_plan_t plan = nullptr;
    CHECK_GGEMM(ggemm_wgrad_plan_create(&plan, &desc));
    static char text[8192];
    const ggemm_status_t described = ggemm_plan_describe(plan, text, sizeof text, nullptr);
    (void)ggemm_plan_destroy(plan);
    REQUIRE(described == GGEMM_SUCCESS);
    const std::string all(text);
    const std::size_t at = all.find(key);
    REQUIRE_MESSAGE(at != std::string::npos, all);
    return all.substr(at, all.find('\n', at) - at);
}

std::string store_line(const WgradCase& c) { return plan_line(c, "store: "); }

// Runs c through the TMA store path (the default for a dense output overwritten) and the register
// path, checks both against the reference and requires them bitwise equal, guard bytes included.
void check_store_paths_agree(const WgradCase& c) {
    const std::string what = describe(c);
    INFO(what);
    REQUIRE_MESSAGE(store_line(c).rfind("store: TMA", 0) == 0, store_line(c));
    const WgradHost host = make_host(c);
    uint32_t tma_status = 0, register_status = 0;
    std::string tma_guard, register_guard;
    const std::vector<uint8_t> tma = run_wgrad(c, host, &tma_status, &tma_guard);
    std::vector<uint8_t> registers;
    {
        ScopedRegisterStore scoped;
        REQUIRE_MESSAGE(store_line(c).rfind("store: registers", 0) == 0, store_line(c));
        registers = run_wgrad(c, host, &register_status, &register_guard);
    }
    CHECK_MESSAGE(tma_guard.empty(), what << " (TMA store): " << tma_guard);
    CHECK_MESSAGE(tma_status == register_status, what << ": status 0x" << std::hex << tma_status << " vs 0x"
                                                     << register_status);
    CHECK_MESSAGE(tma_status == offset_violations(c.offsets.data(), c.experts, c.m), what);
    verify_wgrad(what + " (TMA store)", c, host, tma);
    CHECK_MESSAGE(tma == registers, what << ": the TMA and register store paths differ bitwise");
}

}  // namespace

TEST_CASE("wgrad store paths: TMA stores equal register stores bitwise (dtypes, tails, empty and skipped experts)") {
    uint64_t seed = 800;
    for (int32_t dtype : {GGEMM_DTYPE_FP32, GGEMM_DTYPE_BF16, GGEMM_DTYPE_FP16}) {
        // P tails inside the first and the second math warpgroup's rows (P % 128 = 8 and 72) and
        // one that leaves the second warpgroup no rows (P = 64); Q tails inside an atom of either
        // width (Q % 64 = 8, Q % 32 = 24) and a Q below one atom (8). The last: 256-wide tiles, more
        // of them than CTAs, so a CTA's next tile stores the atoms its last one held back.
        const int64_t shapes[][2] = {{264, 392}, {200, 520}, {136, 8}, {64, 120}, {392, 136}, {1000, 1024}};
        for (const auto& shape : shapes) {
            for (int32_t scheduler : {GGEMM_SCHEDULER_STATIC, GGEMM_SCHEDULER_DYNAMIC}) {
                WgradCase c;
                c.label = "store paths";
                c.experts = 5;
                c.p = shape[0];
                c.q = shape[1];
                c.out_dtype = dtype;
                c.scheduler = scheduler;
                c.alpha_null = (seed % 4) == 0;
                c.seed = ++seed;
                c.offsets = random_offsets(c.experts, 4, c.seed, &c.m);
                c.offsets[2] = c.offsets[1];  // expert 2 is always empty: exact zeros
                for (std::size_t g = 3; g < c.offsets.size(); ++g)
                    c.offsets[g] = std::max(c.offsets[g], c.offsets[g - 1]);
                c.m = c.offsets.back() + 256;
                check_store_paths_agree(c);
            }
        }
        // Skipped experts: a misaligned and a decreasing offset leave experts 1 and 2 untouched.
        WgradCase c;
        c.label = "store paths, bad offsets";
        c.experts = 5;
        c.p = 200;
        c.q = 392;
        c.out_dtype = dtype;
        c.offsets = {256, 700, 512, 1024, 1280};
        c.m = 1536;
        c.seed = ++seed;
        check_store_paths_agree(c);
    }
}

TEST_CASE("wgrad fp32 accumulate: TMA reduce-adds equal the register path's adds bitwise, subnormals included") {
    uint64_t seed = 850;
    for (float scale : {1.0f, 1e-38f}) {
        for (int32_t scheduler : {GGEMM_SCHEDULER_STATIC, GGEMM_SCHEDULER_DYNAMIC}) {
            WgradCase c;
            c.label = "fp32 accumulate store paths";
            c.experts = 5;
            c.p = 200;
            c.q = 392;
            c.accumulate = true;
            c.scale = scale;
            c.scheduler = scheduler;
            c.seed = ++seed;
            c.offsets = random_offsets(c.experts, 4, c.seed, &c.m);
            c.offsets[2] = c.offsets[1];  // expert 2 is empty: with accumulate, left untouched
            for (std::size_t g = 3; g < c.offsets.size(); ++g) c.offsets[g] = std::max(c.offsets[g], c.offsets[g - 1]);
            c.m = c.offsets.back() + 256;
            check_store_paths_agree(c);
        }
    }
}

TEST_CASE("wgrad store paths: pointer outputs and 16-bit accumulate keep the register path") {
    WgradCase c;
    c.experts = 2;
    c.offsets = {256, 512};
    c.m = 512;
    c.output_mode = GGEMM_WGRAD_OUTPUT_POINTERS;
    CHECK(store_line(c).rfind("store: registers", 0) == 0);
    c.output_mode = GGEMM_WGRAD_OUTPUT_DENSE;
    c.accumulate = true;
    CHECK(store_line(c).rfind("store: TMA", 0) == 0);
    for (int32_t dtype : {GGEMM_DTYPE_BF16, GGEMM_DTYPE_FP16}) {
        c.out_dtype = dtype;
        CHECK(store_line(c).rfind("store: registers", 0) == 0);
    }
    c.accumulate = false;
    CHECK(store_line(c).rfind("store: TMA", 0) == 0);
}

TEST_CASE("sanitizer: wgrad TMA store path with P and Q tails and an empty expert") {
    struct Output {
        int32_t dtype;
        bool accumulate;  // fp32 only: the path's reduce-add form
    };
    // Q = 120 runs the 128-wide tile, Q = 392 the 256-wide one (16-bit: two atoms held back, one
    // in the Q tail's tile).
    for (const int64_t q : {120, 392}) {
        for (const Output output : {Output{GGEMM_DTYPE_FP32, false}, Output{GGEMM_DTYPE_BF16, false},
                                    Output{GGEMM_DTYPE_FP16, false}, Output{GGEMM_DTYPE_FP32, true}}) {
            const int32_t dtype = output.dtype;
            WgradCase c;
            c.label = "sanitizer TMA store";
            c.accumulate = output.accumulate;
            c.experts = 3;
            c.p = 200;
            c.q = q;
            c.out_dtype = dtype;
            c.offsets = {256, 256, 768};
            c.m = 1024;
            c.seed = 900 + static_cast<uint64_t>(dtype) + (output.accumulate ? 10 : 0) + static_cast<uint64_t>(q);
            REQUIRE(store_line(c).rfind("store: TMA", 0) == 0);
            run_and_verify(c);
        }
    }
}

TEST_CASE("wgrad: 256 experts on the 256-wide kernel (two staging atoms), 257 on a narrower one") {
    // The 256-wide kernel's shared copy of the offsets holds 256 experts (its second staging atom
    // takes the room): one more and the planner takes the 128-wide tile, as wide over Q = 256.
    for (int32_t experts : {256, 257}) {
        WgradCase c;
        c.label = "many experts";
        c.experts = experts;
        c.p = 72;
        c.q = 256;
        c.out_dtype = GGEMM_DTYPE_BF16;
        c.seed = 900 + static_cast<uint64_t>(experts);
        int32_t end = 0;
        for (int32_t g = 0; g < experts; ++g) {
            if (g % 5 == 0 || g == experts - 1) end += 256;  // every fifth expert and the last hold rows
            c.offsets.push_back(end);
        }
        c.m = end;
        const std::string chosen = plan_line(c, "  chosen");
        CHECK_MESSAGE(chosen.find(experts == 256 ? "128x256x64" : "128x128x64") != std::string::npos, chosen);
        run_and_verify(c);
        c.out_dtype = GGEMM_DTYPE_FP32;
        c.accumulate = true;
        run_and_verify(c);
    }
}

TEST_CASE("wgrad: 1024 experts of uneven rows, both schedulers bitwise equal (the SM90 order's longest sort)") {
    // Experts of 0-3 segments in no order of size, and one bad offset: the SM90 kernel sorts all
    // 1024 by their rows before its first load and deals the slots in that order.
    WgradCase c;
    c.label = "1024 uneven experts";
    c.experts = 1024;
    c.p = 40;
    c.q = 136;
    c.out_dtype = GGEMM_DTYPE_FP32;
    c.seed = 1100;
    int32_t end = 0;
    for (int32_t g = 0; g < c.experts; ++g) {
        end += 256 * static_cast<int32_t>((g * 7 + g / 5) % 4);
        c.offsets.push_back(end);
    }
    c.offsets[600] = c.offsets[599] + 100;  // misaligned: experts 600 and 601 are skipped
    c.m = end;
    const WgradHost host = make_host(c);
    std::vector<std::vector<uint8_t>> results;
    for (int32_t scheduler : {GGEMM_SCHEDULER_STATIC, GGEMM_SCHEDULER_DYNAMIC}) {
        c.scheduler = scheduler;
        uint32_t status = 0;
        std::string guard_problem;
        results.push_back(run_wgrad(c, host, &status, &guard_problem));
        CHECK(guard_problem.empty());
        CHECK((status & GGEMM_DEVICE_STATUS_OFFSET_MISALIGNED) != 0);
    }
    verify_wgrad(describe(c), c, host, results[0]);
    CHECK_MESSAGE(results[0] == results[1], "static and dynamic schedulers differ bitwise: " << describe(c));
}
