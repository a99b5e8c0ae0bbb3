// The execute path: kernel arguments (CPU), and on a GPU the real path with a fake kernel
// variant that records its launch: in-stream clears, refusals that enqueue nothing, launch
// errors, and the host cost of a call.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <cuda_runtime_api.h>
#include <vector>

#include "src/driver_launch.h"
#include "src/launch_test_hooks.h"
#include "src/workspace.h"
#include "src/execute.h"
#include "src/heuristics.h"
#include "src/plan.h"
#include "src/pointer_oracle.h"
#include "src/tensor_map.h"
#include "tests/host/test_fakes.h"

using namespace ggemm_fakes;

namespace {

int g_launches = 0;
ggemm::LaunchParams g_last;

cudaError_t recording_launch(const ggemm::LaunchParams& params, cudaStream_t) {
    ++g_launches;
    g_last = params;
    return cudaSuccess;
}

cudaError_t failing_launch(const ggemm::LaunchParams&, cudaStream_t) { return cudaErrorInvalidConfiguration; }

}  // namespace

TEST_CASE("kernel arguments from validated call arguments") {
    auto variants = width_variants();
    ggemm_plan_desc desc = valid_desc();
    desc.weight_mode = GGEMM_WEIGHTS_DISCRETE;
    desc.generate_c = 0;
    desc.bias_dtype = GGEMM_DTYPE_FP32;
    ggemm_plan plan;
    REQUIRE(ggemm::build_plan(desc, sm90_device(), list_of(variants), &plan) == GGEMM_SUCCESS);
    ggemm_args args = valid_args(2048);
    args.b = nullptr;
    args.b_ptrs = at<const uint64_t>(kDevice0 + 0x1000);
    args.c = at(kDevice0 + 0x2000);  // ignored: the plan does not write C
    args.bias = at(kDevice0 + 0x3000);
    const ggemm::KernelArgs kernel = ggemm::make_kernel_args(plan, args);
    CHECK(kernel.padded_offsets == args.padded_offsets);
    CHECK(kernel.alpha == args.alpha);
    CHECK(kernel.prob == args.prob);
    CHECK(kernel.bias == args.bias);
    CHECK(kernel.c == nullptr);
    CHECK(kernel.d == args.d);
    CHECK(reinterpret_cast<uintptr_t>(kernel.b_maps) ==
          reinterpret_cast<uintptr_t>(args.workspace) + ggemm::workspace_maps_offset());
    // The GEMM takes each expert's pointer status from the map builder's words in the
    // workspace, after the maps, inside the plan's workspace size; it never sees b_ptrs.
    CHECK(reinterpret_cast<uintptr_t>(kernel.weight_status) ==
          reinterpret_cast<uintptr_t>(args.workspace) + ggemm::workspace_maps_offset() + 8 * 128);
    CHECK(ggemm::workspace_weight_status_offset(8) + 8 * sizeof(uint32_t) <= plan.workspace_bytes);
    CHECK(kernel.tile_counter == nullptr);  // static scheduler: the counter is not used
    CHECK(kernel.device_status == args.device_status);
    CHECK(kernel.m == 2048);
    CHECK(kernel.n == 4096);
    CHECK(kernel.k == 2048);
    CHECK(kernel.num_experts == 8);
    CHECK(kernel.bias_dtype == GGEMM_DTYPE_FP32);
    CHECK(kernel.weight_mode == GGEMM_WEIGHTS_DISCRETE);

    desc = valid_desc();
    desc.generate_c = 1;
    REQUIRE(ggemm::build_plan(desc, sm90_device(), list_of(variants), &plan) == GGEMM_SUCCESS);
    args = valid_args();
    args.c = at(kDevice0 + 0x2000);
    const ggemm::KernelArgs dense = ggemm::make_kernel_args(plan, args);
    CHECK(dense.c == args.c);
    CHECK(dense.weight_status == nullptr);
    CHECK(dense.b_maps == nullptr);
    CHECK(dense.tile_counter == nullptr);  // static scheduler
    CHECK(dense.generate_c == 1);
}

TEST_CASE("kernel arguments: the last partial round of tiles is split along N on SM90 only") {
    auto variants = width_variants();
    ggemm_plan_desc desc = valid_desc();
    desc.m_capacity = 16384;
    ggemm_plan plan;
    REQUIRE(ggemm::build_plan(desc, sm90_device(), list_of(variants), &plan) == GGEMM_SUCCESS);
    REQUIRE(plan.variant.tile_n == 256);
    REQUIRE(plan.grid == 132);
    // M = 8704: 68 row blocks x 16 column blocks = 1088 tiles = 8 x 132 + 32: 32 tiles in the
    // last round, cut in halves on 64 CTAs (quarters would take 128, more than half the grid).
    ggemm_args args = valid_args(8704);
    ggemm::KernelArgs kernel = ggemm::make_kernel_args(plan, args);
    CHECK(kernel.tail.first_piece == 1056);
    CHECK(kernel.tail.pieces == 2);
    // M = 8448: 1056 tiles, whole rounds only.
    args = valid_args(8448);
    kernel = ggemm::make_kernel_args(plan, args);
    CHECK(kernel.tail.pieces == 1);
    // The SM100 kernels never cut a tile.
    REQUIRE(ggemm::build_plan(desc, sm100_device(), list_of(variants), &plan) == GGEMM_SUCCESS);
    REQUIRE(plan.variant.arch == 100);
    kernel = ggemm::make_kernel_args(plan, valid_args(8704));
    CHECK(kernel.tail.pieces == 1);
}

TEST_CASE("the planner's rounds are the rounds the kernel is dealt at M = m_capacity") {
    // The score's round use (src/heuristics.cpp) and make_kernel_args both deal tiles through
    // deal_tiles; this checks the rounds the score counts against the split the kernel is given,
    // over the plans of a grid of shapes on the compiled SM90 variants: one CTA and clusters of
    // two, last rounds whole and cut into 2-4 pieces.
    const ggemm::DeviceInfo device = sm90_device();
    int checked = 0;
    for (const int64_t m : {256, 512, 2048, 4352, 8192, 8704, 33024}) {
        for (const int64_t n : {1536, 2048, 2880, 4096, 5760, 7168}) {
            for (const int32_t cluster_m : {0, 2}) {
                ggemm_plan_desc desc = valid_desc();
                desc.m_capacity = m;
                desc.n = n;
                desc.cluster_m = cluster_m;
                ggemm_plan plan;
                if (ggemm::build_plan(desc, device, ggemm::compiled_variants(90), &plan) != GGEMM_SUCCESS) continue;
                if (plan.k_splits > 1) continue;
                CAPTURE(m);
                CAPTURE(n);
                CAPTURE(plan.variant.name);
                ggemm_args args = valid_args(m);
                const ggemm::KernelArgs kernel = ggemm::make_kernel_args(plan, args);
                const int64_t clusters = plan.grid / plan.variant.cluster_m;
                const int64_t tiles = m / plan.variant.tile_m * ((n + plan.variant.tile_n - 1) / plan.variant.tile_n);
                const double dealt = kernel.tail.pieces > 1
                                         ? static_cast<double>(kernel.tail.first_piece / clusters) + 1.0 / kernel.tail.pieces
                                         : static_cast<double>((tiles + clusters - 1) / clusters);
                const ggemm::VariantScore score = ggemm::score_variant(plan.variant, m, n, device.sm_count, 0);
                CHECK(score.rounds == doctest::Approx(dealt));
                ++checked;
            }
        }
    }
    CHECK(checked >= 70);
}

TEST_CASE("the driver launch declines what it cannot launch, and counts it") {
    // No kernel handle: declined whatever the driver, so the caller's runtime launch runs.
    void* params[1] = {nullptr};
    const ggemm::DriverLaunch no_kernel = {nullptr, dim3(1), dim3(32), 0, 1, nullptr, params};
    const unsigned long long before = ggemm::driver_launch_fallbacks();
    CHECK_FALSE(ggemm::driver_launch(no_kernel));
    CHECK(ggemm::driver_launch_fallbacks() == before + 1);
    // The test switch declines before anything reaches the driver.
    ggemm::force_runtime_launch(true);
    CHECK_FALSE(ggemm::driver_launch(no_kernel));
    ggemm::force_runtime_launch(false);
    CHECK(ggemm::driver_launch_fallbacks() == before + 2);
}

TEST_CASE("execute checks its arguments before any CUDA call") {
    // Without a driver every CUDA call fails: each refusal below must still name the argument,
    // not the runtime. With a GPU the same refusals come first as well.
    const std::vector<ggemm::KernelVariant> variants = width_variants();
    ggemm_plan plan;
    REQUIRE(ggemm::build_plan(valid_desc(), sm90_device(), list_of(variants), &plan) == GGEMM_SUCCESS);
    ggemm_args args = valid_args();
    args.m = 100;
    CHECK(ggemm_execute(&plan, &args, nullptr) == GGEMM_ERROR_INVALID_SHAPE);
    CHECK(message_contains("args->m must be a multiple of 256, got 100"));
    args = valid_args();
    args.a = nullptr;
    CHECK(ggemm_execute(&plan, &args, nullptr) == GGEMM_ERROR_NULL_ARGUMENT);
    CHECK(message_contains("args->a is NULL"));
    args = valid_args();
    args.d = at(kDevice0 + 8);
    CHECK(ggemm_execute(&plan, &args, nullptr) == GGEMM_ERROR_MISALIGNED);
    args = valid_args();
    args.b_ptrs = at<const uint64_t>(kDevice0);
    CHECK(ggemm_execute(&plan, &args, nullptr) == GGEMM_ERROR_WEIGHT_SOURCE);
    args = valid_args();
    args.struct_size = GGEMM_ARGS_MIN_SIZE + 4;
    CHECK(ggemm_execute(&plan, &args, nullptr) == GGEMM_ERROR_STRUCT_SIZE);
    CHECK(ggemm_execute(&plan, nullptr, nullptr) == GGEMM_ERROR_NULL_ARGUMENT);
    if (!runtime_works()) {
        // Arguments that pass every field rule reach the device questions, which fail here.
        args = valid_args();
        CHECK(ggemm_execute(&plan, &args, nullptr) == GGEMM_ERROR_CUDA);
        CHECK(message_contains("cudaGetDevice failed"));
    }
}

TEST_CASE("the real pointer oracle leaves no runtime error behind") {
    std::vector<char> host(64);
    const ggemm::PointerFacts facts = ggemm::cuda_pointer_oracle().query(host.data());
    // Without a GPU the runtime cannot answer; with one, ordinary memory is unknown to it.
    CHECK((facts.kind == ggemm::PointerFacts::kPageableHost || facts.kind == ggemm::PointerFacts::kUnknown));
    CHECK_FALSE(ggemm::is_memory_of_device(facts, 0));
    if (facts.kind == ggemm::PointerFacts::kUnknown) CHECK(std::strlen(facts.runtime_error) > 0);
    if (runtime_works()) CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("the real pointer oracle on a GPU") {
    ggemm::DeviceInfo device;
    if (!usable_gpu(&device, "the real pointer oracle")) return;
    void* on_device = nullptr;
    void* pinned = nullptr;
    void* managed = nullptr;
    REQUIRE(cudaMalloc(&on_device, 4096) == cudaSuccess);
    REQUIRE(cudaMallocHost(&pinned, 4096) == cudaSuccess);
    REQUIRE(cudaMallocManaged(&managed, 4096) == cudaSuccess);
    std::vector<char> pageable(4096);
    const ggemm::CudaPointerOracle& oracle = ggemm::cuda_pointer_oracle();
    CHECK(oracle.query(on_device).kind == ggemm::PointerFacts::kDevice);
    CHECK(oracle.query(on_device).device == 0);
    CHECK(oracle.query(static_cast<char*>(on_device) + 100).kind == ggemm::PointerFacts::kDevice);
    CHECK(oracle.query(pinned).kind == ggemm::PointerFacts::kPinnedHost);
    CHECK(oracle.query(managed).kind == ggemm::PointerFacts::kManaged);
    CHECK(oracle.query(pageable.data()).kind == ggemm::PointerFacts::kPageableHost);
    void* freed = nullptr;
    REQUIRE(cudaMalloc(&freed, 1 << 21) == cudaSuccess);
    REQUIRE(cudaFree(freed) == cudaSuccess);
    CHECK_MESSAGE(oracle.query(freed).kind != ggemm::PointerFacts::kDevice, "a freed allocation is not device memory");

    // The mapping an answer gives holds the pointer; memory CUDA does not know has none.
    const auto inside = [](const ggemm::PointerFacts& facts, const void* pointer) {
        const auto address = reinterpret_cast<uintptr_t>(pointer);
        return facts.mapping_begin <= address && address < facts.mapping_end;
    };
    const void* known[] = {on_device, static_cast<char*>(on_device) + 100, pinned, managed};
    for (const void* pointer : known)
        CHECK_MESSAGE(inside(oracle.query(pointer), pointer), pointer << " lies in the mapping its answer gives");
    const void* unknown[] = {pageable.data(), freed};
    for (const void* pointer : unknown) {
        const ggemm::PointerFacts facts = oracle.query(pointer);
        CHECK_MESSAGE(facts.mapping_end == facts.mapping_begin, pointer << " has no mapping");
    }

    // The oracle asks the driver first; the runtime's answer is the reference.
    const void* pointers[] = {on_device, static_cast<char*>(on_device) + 100, pinned, managed, pageable.data(), freed};
    for (const void* pointer : pointers) {
        ggemm::PointerFacts from_driver;
        REQUIRE_MESSAGE(ggemm::query_pointer_with_driver(pointer, &from_driver), "the driver answered for " << pointer);
        const ggemm::PointerFacts from_runtime = ggemm::query_pointer_with_runtime(pointer);
        CHECK_MESSAGE(from_driver.kind == from_runtime.kind, pointer << ": driver kind " << from_driver.kind
                                                                     << ", runtime kind " << from_runtime.kind);
        if (from_runtime.kind == ggemm::PointerFacts::kDevice) CHECK(from_driver.device == from_runtime.device);
    }
    CHECK(cudaGetLastError() == cudaSuccess);
    cudaFree(on_device);
    cudaFreeHost(pinned);
    cudaFree(managed);
}

TEST_CASE("the calling thread's device: the driver's quick answer agrees with the runtime's") {
    ggemm::DeviceInfo device;
    if (!usable_gpu(&device, "the calling thread's device")) return;
    REQUIRE(cudaSetDevice(0) == cudaSuccess);
    REQUIRE(cudaFree(nullptr) == cudaSuccess);  // a context is current from here on
    CHECK(device.driver_handle >= 0);
    int runtime_device = -1;
    REQUIRE(cudaGetDevice(&runtime_device) == cudaSuccess);

    ggemm::ThreadDevice quick;
    REQUIRE(ggemm::current_device(device, &quick) == GGEMM_SUCCESS);
    CHECK(quick.context_current);
    CHECK(quick.device == runtime_device);

    // A device the driver names differently (or not at all) gets the runtime's answer.
    ggemm::DeviceInfo other = device;
    other.ordinal = 1;
    other.driver_handle = device.driver_handle + 1;
    ggemm::DeviceInfo unnamed = device;
    unnamed.driver_handle = -1;
    for (const ggemm::DeviceInfo& expected : {other, unnamed}) {
        ggemm::ThreadDevice slow;
        REQUIRE(ggemm::current_device(expected, &slow) == GGEMM_SUCCESS);
        CHECK_FALSE(slow.context_current);
        CHECK(slow.device == runtime_device);
        CHECK(ggemm::make_context_current(slow) == GGEMM_SUCCESS);
    }
    CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("execute on a GPU with a recording fake kernel") {
    ggemm::DeviceInfo device;
    if (!usable_gpu(&device, "execute with a fake kernel")) return;
    REQUIRE(cudaSetDevice(0) == cudaSuccess);
    std::vector<ggemm::KernelVariant> variants = {variant("fake_recording", ggemm::arch_of(device), 128, 128, 1)};
    variants[0].launch = &recording_launch;

    const int64_t m = 512, n = 256, k = 128;
    const int32_t experts = 4;
    ggemm_plan_desc desc = valid_desc();
    desc.m_capacity = 1024;
    desc.n = n;
    desc.k = k;
    desc.num_experts = experts;
    desc.scheduler = GGEMM_SCHEDULER_DYNAMIC;
    ggemm_plan plan;
    REQUIRE(ggemm::build_plan(desc, device, list_of(variants), &plan) == GGEMM_SUCCESS);
    REQUIRE(ggemm::resolve_tensor_map_encoder() == GGEMM_SUCCESS);

    void *a, *b, *offsets, *alpha, *prob, *d, *workspace, *status, *b_ptrs;
    REQUIRE(cudaMalloc(&a, m * k * 2) == cudaSuccess);
    REQUIRE(cudaMalloc(&b, experts * n * k * 2) == cudaSuccess);
    REQUIRE(cudaMalloc(&offsets, 256) == cudaSuccess);
    REQUIRE(cudaMalloc(&alpha, 256) == cudaSuccess);
    REQUIRE(cudaMalloc(&prob, m * 4) == cudaSuccess);
    REQUIRE(cudaMalloc(&d, m * n * 2) == cudaSuccess);
    REQUIRE(cudaMalloc(&workspace, 4096) == cudaSuccess);
    REQUIRE(cudaMalloc(&status, 256) == cudaSuccess);
    REQUIRE(cudaMalloc(&b_ptrs, 256) == cudaSuccess);
    cudaStream_t stream;
    REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);

    ggemm_args args;
    ggemm::init_args(&args, sizeof args);
    args.m = m;
    args.a = a;
    args.b = b;
    args.padded_offsets = static_cast<const int32_t*>(offsets);
    args.alpha = static_cast<const float*>(alpha);
    args.prob = static_cast<const float*>(prob);
    args.d = d;
    args.workspace = workspace;
    args.workspace_size = 4096;
    args.device_status = static_cast<uint32_t*>(status);

    auto poison = [&] {
        REQUIRE(cudaMemset(status, 0xff, 4) == cudaSuccess);
        REQUIRE(cudaMemset(workspace, 0xff, 4096) == cudaSuccess);
        REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    };
    auto read_status = [&] {
        uint32_t word = 0;
        REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
        REQUIRE(cudaMemcpy(&word, status, 4, cudaMemcpyDeviceToHost) == cudaSuccess);
        return word;
    };
    auto counter_is_zero = [&] {
        unsigned char bytes[ggemm::kWorkspaceCounterBytes];
        REQUIRE(cudaMemcpy(bytes, workspace, sizeof bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
        for (unsigned char byte : bytes)
            if (byte != 0) return false;
        return true;
    };

    SUBCASE("a valid dense call zeroes the tile counter, leaves the status word to the kernel, launches once") {
        poison();
        g_launches = 0;
        CHECK(ggemm::execute_plan(plan, &args, desc.m_capacity, stream) == GGEMM_SUCCESS);
        CHECK(g_launches == 1);
        CHECK(g_last.grid == plan.grid);
        CHECK(g_last.grid == device.sm_count);
        CHECK(g_last.args.m == m);
        CHECK(g_last.args.n == n);
        CHECK(g_last.args.k == k);
        CHECK(g_last.args.tile_counter == workspace);
        CHECK(g_last.args.b_maps == nullptr);
        CHECK(g_last.args.device_status == status);
        CHECK(g_last.args.weight_mode == ggemm::kDense);
        CHECK(read_status() == 0xffffffffu);  // no memset: the GEMM kernel writes the word whole
        CHECK(counter_is_zero());
    }
    SUBCASE("M = 0 clears the status word and launches nothing") {
        poison();
        g_launches = 0;
        args.m = 0;
        CHECK(ggemm::execute_plan(plan, &args, desc.m_capacity, stream) == GGEMM_SUCCESS);
        CHECK(g_launches == 0);
        CHECK(read_status() == 0);
        CHECK_FALSE(counter_is_zero());
    }
    SUBCASE("a refused call enqueues nothing") {
        poison();
        g_launches = 0;
        std::vector<char> host(m * k * 2);
        args.a = host.data();
        CHECK(ggemm::execute_plan(plan, &args, desc.m_capacity, stream) == GGEMM_ERROR_NOT_DEVICE_MEMORY);
        CHECK(message_contains("args->a = "));
        CHECK(message_contains("host memory unknown to CUDA"));
        CHECK(g_launches == 0);
        CHECK(read_status() == 0xffffffffu);
        CHECK_FALSE(counter_is_zero());
        CHECK(cudaGetLastError() == cudaSuccess);
    }
    SUBCASE("the public entry point runs the same path") {
        g_launches = 0;
        CHECK(ggemm_execute(&plan, &args, stream) == GGEMM_SUCCESS);
        CHECK(g_launches == 1);
        ggemm_args too_big = args;
        too_big.m = 2048;
        CHECK(ggemm_execute(&plan, &too_big, stream) == GGEMM_ERROR_INVALID_SHAPE);
        CHECK(message_contains("args->m = 2048 is larger than m_capacity = 1024"));
    }
    SUBCASE("discrete weights: per-expert maps live in the workspace after the counter") {
        ggemm_plan_desc discrete_desc = desc;
        discrete_desc.weight_mode = GGEMM_WEIGHTS_DISCRETE;
        discrete_desc.scheduler = GGEMM_SCHEDULER_STATIC;
        ggemm_plan discrete;
        REQUIRE(ggemm::build_plan(discrete_desc, device, list_of(variants), &discrete) == GGEMM_SUCCESS);
        poison();
        g_launches = 0;
        args.b = nullptr;
        args.b_ptrs = static_cast<const uint64_t*>(b_ptrs);
        CHECK(ggemm::execute_plan(discrete, &args, discrete_desc.m_capacity, stream) == GGEMM_SUCCESS);
        CHECK(g_launches == 1);
        CHECK(g_last.b_ptrs == b_ptrs);
        CHECK(reinterpret_cast<char*>(g_last.args.b_maps) == static_cast<char*>(workspace) + 128);
        CHECK(read_status() == 0);         // cleared: the map builder ORs into it
        CHECK_FALSE(counter_is_zero());    // the static scheduler reads no counter
    }
    SUBCASE("the weight map is reused only for the same plan and weights") {
        auto b_map_bytes = [&] {
            g_launches = 0;
            REQUIRE(ggemm::execute_plan(plan, &args, desc.m_capacity, stream) == GGEMM_SUCCESS);
            REQUIRE(g_launches == 1);
            return std::vector<unsigned char>(reinterpret_cast<const unsigned char*>(&g_last.b_map),
                                              reinterpret_cast<const unsigned char*>(&g_last.b_map) + 128);
        };
        auto fresh_map_bytes = [&](const ggemm_plan& p, const void* weights) {
            CUtensorMap map;
            REQUIRE(ggemm::encode_tensor_map(ggemm::b_dense_map_shape(weights, p.desc.n, p.desc.k,
                                                                      p.desc.num_experts, p.variant),
                                             "B", &map) == GGEMM_SUCCESS);
            return std::vector<unsigned char>(reinterpret_cast<const unsigned char*>(&map),
                                              reinterpret_cast<const unsigned char*>(&map) + 128);
        };
        void* other_b = nullptr;
        REQUIRE(cudaMalloc(&other_b, experts * n * k * 2) == cudaSuccess);
        const auto first = b_map_bytes();
        CHECK(first == fresh_map_bytes(plan, b));
        CHECK(b_map_bytes() == first);  // same plan, same weights: the cached map
        args.b = other_b;
        const auto moved = b_map_bytes();
        CHECK(moved == fresh_map_bytes(plan, other_b));
        CHECK(moved != first);
        args.b = b;
        CHECK(b_map_bytes() == first);
        // Another plan (other N) with the same weights encodes its own map.
        ggemm_plan_desc narrower = desc;
        narrower.n = n / 2;
        ggemm_plan other_plan;
        REQUIRE(ggemm::build_plan(narrower, device, list_of(variants), &other_plan) == GGEMM_SUCCESS);
        CHECK(other_plan.serial != plan.serial);
        g_launches = 0;
        REQUIRE(ggemm::execute_plan(other_plan, &args, narrower.m_capacity, stream) == GGEMM_SUCCESS);
        const std::vector<unsigned char> narrower_map(reinterpret_cast<const unsigned char*>(&g_last.b_map),
                                                      reinterpret_cast<const unsigned char*>(&g_last.b_map) + 128);
        CHECK(narrower_map == fresh_map_bytes(other_plan, b));
        CHECK(narrower_map != first);
        REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
        cudaFree(other_b);
    }
    SUBCASE("a failing launch is GGEMM_ERROR_CUDA naming the kernel") {
        std::vector<ggemm::KernelVariant> failing = {variants[0]};
        failing[0].name = "fake_failing";
        failing[0].launch = &failing_launch;
        ggemm_plan bad;
        REQUIRE(ggemm::build_plan(desc, device, list_of(failing), &bad) == GGEMM_SUCCESS);
        CHECK(ggemm::execute_plan(bad, &args, desc.m_capacity, stream) == GGEMM_ERROR_CUDA);
        CHECK(message_contains("launching kernel fake_failing"));
        CHECK(message_contains("cudaErrorInvalidConfiguration"));
    }
    cudaStreamDestroy(stream);
    for (void* pointer : {a, b, offsets, alpha, prob, d, workspace, status, b_ptrs}) cudaFree(pointer);
}

TEST_CASE("plain_epilogue is plain_output without bias, for every output the contract allows") {
    static int storage;
    for (const bool c : {false, true}) {
        for (const int32_t d_dtype : {ggemm::kBF16, ggemm::kFP16, ggemm::kFP32}) {
            for (const int32_t activation :
                 {ggemm::kActivationNone, ggemm::kActivationSwiglu, ggemm::kActivationClampedGeglu}) {
                for (const int32_t glu_backward : {0, 1}) {
                    for (const bool tma_store : {false, true}) {
                        for (const bool bias : {false, true}) {
                            ggemm::KernelArgs args{};
                            args.c = c ? &storage : nullptr;
                            args.bias = bias ? &storage : nullptr;
                            args.d_dtype = d_dtype;
                            args.activation = activation;
                            args.glu_backward = glu_backward;
                            CAPTURE(c);
                            CAPTURE(d_dtype);
                            CAPTURE(activation);
                            CAPTURE(glu_backward);
                            CAPTURE(tma_store);
                            CAPTURE(bias);
                            CHECK(ggemm::plain_epilogue(args, tma_store) ==
                                  (!bias && ggemm::plain_output(c, d_dtype, activation, glu_backward, tma_store)));
                        }
                    }
                }
            }
        }
    }
    // The plain case itself, and what each departure from it does.
    CHECK(ggemm::plain_output(false, ggemm::kBF16, ggemm::kActivationNone, 0, false));
    CHECK_FALSE(ggemm::plain_output(true, ggemm::kBF16, ggemm::kActivationNone, 0, false));
    CHECK_FALSE(ggemm::plain_output(false, ggemm::kFP32, ggemm::kActivationNone, 0, false));
    CHECK(ggemm::plain_output(false, ggemm::kFP32, ggemm::kActivationNone, 0, true));
    CHECK_FALSE(ggemm::plain_output(false, ggemm::kBF16, ggemm::kActivationSwiglu, 0, true));
    CHECK_FALSE(ggemm::plain_output(false, ggemm::kBF16, ggemm::kActivationNone, 1, true));
}
