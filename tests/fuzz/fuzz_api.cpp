// Fuzz target: the public C API (include/ggemm.h) with hostile inputs, on a machine that may
// have no GPU (then every CUDA call fails, and must fail cleanly). Each input is a sequence of
// calls: descriptors and argument structs of any size and content, the init calls, execute on
// plans built for a fake device, the one-shot calls with and without a fake plan factory, the
// host-side checks, describe and last-error copies into buffers of any size, status strings and
// the plan-cache calls. After every call: the status is a known code, a success leaves no
// message and a failure leaves one. Buffers are exactly as large as the call may use, so
// AddressSanitizer catches any access past them.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "tests/fuzz/fuzz_input.h"
#include "ggemm.h"
#include "src/error.h"
#include "src/plan.h"
#include "src/plan_cache.h"
#include "src/structs.h"

namespace {

using ggemm_fuzz::FuzzInput;

[[noreturn]] void violation(const char* call, ggemm_status_t status, const char* what) {
    std::fprintf(stderr, "API violation: %s returned %d (%s): %s; message: \"%s\"\n", call, status,
                 ggemm_status_string(status), what, ggemm::last_error());
    std::abort();
}

// The invariants every exported call keeps.
void expect_clean(const char* call, ggemm_status_t status) {
    if (std::strcmp(ggemm_status_string(status), "GGEMM_ERROR_UNKNOWN_STATUS") == 0)
        violation(call, status, "unknown status code");
    const char* message = ggemm::last_error();
    if (status == GGEMM_SUCCESS && message[0] != '\0') violation(call, status, "success left a message");
    if (status != GGEMM_SUCCESS && message[0] == '\0') violation(call, status, "failure without a message");
    if (status == GGEMM_ERROR_NO_DEVICE && std::strstr(message, "CUDA driver version is insufficient") != nullptr)
        violation(call, status, "the runtime's misleading no-driver text");
}

// A device and kernel variants like the SM90 ones, so that plans exist without a GPU.
ggemm::DeviceInfo fake_device() {
    ggemm::DeviceInfo device;
    device.present = true;
    device.count = 1;
    device.ordinal = 0;
    device.cc_major = 9;
    device.sm_count = 132;
    device.max_smem_optin = 232448;
    std::snprintf(device.name, sizeof device.name, "fuzz device");
    return device;
}

cudaError_t refusing_launch(const ggemm::LaunchParams&, cudaStream_t) { return cudaErrorInvalidConfiguration; }

ggemm::VariantList fake_variants() {
    static const ggemm::KernelVariant variants[] = {
        {"fuzz_128x256", 90, 128, 256, 64, 4, 1, 64, 256, 4, 200000, 384, nullptr, &refusing_launch},
        {"fuzz_128x128", 90, 128, 128, 64, 4, 1, 64, 128, 4, 200000, 384, nullptr, &refusing_launch},
        {"fuzz_256x128_c2", 90, 256, 128, 64, 4, 2, 64, 128, 1, 200000, 384, nullptr, &refusing_launch},
    };
    return {variants, 3};
}

ggemm_status_t fake_factory(const ggemm_plan_desc& desc, std::unique_ptr<ggemm_plan>* plan) {
    auto built = std::make_unique<ggemm_plan>();
    const ggemm_status_t status = ggemm::build_plan(desc, fake_device(), fake_variants(), built.get());
    if (status == GGEMM_SUCCESS) *plan = std::move(built);
    return status;
}

// A caller's struct of any size: the buffer holds exactly struct_size bytes when the library may
// read that many (at most 4096), else just the size field.
std::vector<unsigned char> sized_struct(FuzzInput& in, uint32_t known_size, uint32_t min_size) {
    uint32_t size;
    switch (in.below(4)) {
        case 0: size = known_size; break;
        case 1: size = min_size + in.below(known_size - min_size + 1); break;
        case 2: size = in.below(8192); break;
        default: size = in.take<uint32_t>(); break;
    }
    std::vector<unsigned char> bytes(size >= 4 && size <= 4096 ? size : 4);
    in.fill(bytes.data(), bytes.size());
    if (in.below(4) != 0) {  // mostly a real descriptor's values, the rest as the input says
        for (std::size_t i = 4; i < bytes.size(); ++i) bytes[i] = i < known_size ? bytes[i] & 0x07 : 0;
    }
    std::memcpy(bytes.data(), &size, sizeof size);
    return bytes;
}

// A descriptor with mostly valid values, some hostile.
ggemm_plan_desc plausible_desc(FuzzInput& in) {
    ggemm_plan_desc desc;
    ggemm::init_plan_desc(&desc, sizeof desc);
    desc.m_capacity = in.flip() ? int64_t{in.below(64) + 1} * 256 : in.take<int64_t>();
    desc.n = in.flip() ? int64_t{in.below(1024) + 1} * 8 : in.take<int64_t>();
    desc.k = in.flip() ? int64_t{in.below(1024) + 1} * 8 : in.take<int64_t>();
    desc.num_experts = in.flip() ? static_cast<int32_t>(in.below(64) + 1) : in.take<int32_t>();
    desc.weight_mode = static_cast<int32_t>(in.below(3));
    desc.bias_dtype = static_cast<int32_t>(in.below(5));
    desc.generate_c = static_cast<int32_t>(in.below(3));
    desc.scheduler = static_cast<int32_t>(in.below(3));
    desc.tile_m = in.flip() ? 0 : static_cast<int32_t>(in.below(3)) * 128;
    desc.tile_n = in.flip() ? 0 : static_cast<int32_t>(in.below(5)) * 64;
    desc.cluster_m = in.flip() ? 0 : static_cast<int32_t>(in.below(3));
    desc.sm_margin = in.flip() ? 0 : static_cast<int32_t>(in.below(200)) - 10;
    return desc;
}

// Arguments with pointers that are NULL, aligned or not; never dereferenced by the library.
ggemm_args plausible_args(FuzzInput& in) {
    ggemm_args args;
    ggemm::init_args(&args, sizeof args);
    const auto pointer = [&]() -> void* {
        const uint32_t choice = in.below(4);
        if (choice == 0) return nullptr;
        const uintptr_t base = uintptr_t{0x7f0000000000} + (uintptr_t{in.below(1024)} << 20);
        return reinterpret_cast<void*>(choice == 1 ? base + in.below(16) : base);
    };
    args.m = in.flip() ? int64_t{in.below(64)} * 256 : in.take<int64_t>();
    args.a = pointer();
    args.b = pointer();
    args.b_ptrs = static_cast<const uint64_t*>(pointer());
    args.padded_offsets = static_cast<const int32_t*>(pointer());
    args.alpha = static_cast<const float*>(pointer());
    args.prob = static_cast<const float*>(pointer());
    args.bias = pointer();
    args.c = pointer();
    args.d = pointer();
    args.workspace = pointer();
    args.workspace_size = in.flip() ? in.below(4096) : in.take<uint64_t>();
    args.device_status = static_cast<uint32_t*>(pointer());
    if (in.below(8) == 0) args.reserved0 = in.take<uint32_t>();
    return args;
}

// Copies text out through a copy-semantics call into a buffer of the size the input picks.
template <class Call>
void copy_out(FuzzInput& in, const char* name, Call call) {
    const uint32_t size = in.below(300);
    const bool null_buffer = in.below(8) == 0;
    std::vector<char> buffer(size);
    uint64_t required = 0;
    char* target = null_buffer ? nullptr : buffer.data();
    const ggemm_status_t status = call(size == 0 ? nullptr : target, size, in.flip() ? &required : nullptr);
    if (status == GGEMM_SUCCESS && size > 0 && std::memchr(buffer.data(), '\0', size) == nullptr)
        violation(name, status, "copied text not terminated inside the buffer");
    if (status != GGEMM_SUCCESS && !(null_buffer && size > 0)) violation(name, status, "copy refused");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    FuzzInput in(data, size);
    std::vector<std::unique_ptr<ggemm_plan>> plans;  // built for the fake device
    for (int call = 0; call < 32 && !in.empty(); ++call) {
        switch (in.below(12)) {
            case 0: {
                auto desc = sized_struct(in, sizeof(ggemm_plan_desc), GGEMM_PLAN_DESC_MIN_SIZE);
                const auto* user = reinterpret_cast<const ggemm_plan_desc*>(desc.data());
                ggemm_plan_t plan = nullptr;
                ggemm_status_t status = ggemm_plan_create(&plan, user);
                expect_clean("ggemm_plan_create", status);
                if (status == GGEMM_SUCCESS) expect_clean("ggemm_plan_destroy", ggemm_plan_destroy(plan));
                uint64_t bytes = 0;
                expect_clean("ggemm_workspace_size", ggemm_workspace_size(user, &bytes));
                break;
            }
            case 1: {
                auto args = sized_struct(in, sizeof(ggemm_args), GGEMM_ARGS_MIN_SIZE);
                const ggemm_plan_desc desc = plausible_desc(in);
                expect_clean("ggemm_grouped_gemm",
                             ggemm_grouped_gemm(&desc, reinterpret_cast<const ggemm_args*>(args.data()), nullptr));
                break;
            }
            case 2: {
                auto plan = std::make_unique<ggemm_plan>();
                if (ggemm::build_plan(plausible_desc(in), fake_device(), fake_variants(), plan.get()) == GGEMM_SUCCESS)
                    plans.push_back(std::move(plan));
                break;
            }
            case 3: {
                ggemm_plan* plan = plans.empty() || in.below(8) == 0 ? nullptr : plans[in.below(plans.size())].get();
                const ggemm_args args = plausible_args(in);
                expect_clean("ggemm_execute", ggemm_execute(plan, &args, nullptr));
                uint64_t bytes = 0;
                expect_clean("ggemm_plan_workspace_size", ggemm_plan_workspace_size(plan, in.flip() ? &bytes : nullptr));
                if (plan != nullptr)
                    copy_out(in, "ggemm_plan_describe", [&](char* b, uint64_t s, uint64_t* r) {
                        return ggemm_plan_describe(plan, b, s, r);
                    });
                break;
            }
            case 4: {
                const ggemm_plan_desc desc = plausible_desc(in);
                const ggemm_args args = plausible_args(in);
                expect_clean("ggemm_grouped_gemm", ggemm_grouped_gemm(&desc, &args, nullptr));
                break;
            }
            case 5: {
                const uint32_t bytes = in.flip() ? in.below(200) : in.take<uint32_t>();
                std::vector<unsigned char> buffer(bytes >= 1 && bytes <= 4096 ? bytes : 1);
                const bool null_struct = in.below(8) == 0;
                void* target = null_struct ? nullptr : buffer.data();
                if (in.flip()) {
                    expect_clean("ggemm_plan_desc_init", ggemm_plan_desc_init(static_cast<ggemm_plan_desc*>(target), bytes));
                } else {
                    expect_clean("ggemm_args_init", ggemm_args_init(static_cast<ggemm_args*>(target), bytes));
                }
                break;
            }
            case 6: {
                const int32_t count = in.flip() ? static_cast<int32_t>(in.below(40)) : in.take<int32_t>();
                std::vector<int32_t> offsets(count >= 1 && count <= 1024 ? count : 1);
                for (int32_t& v : offsets) v = in.flip() ? static_cast<int32_t>(in.below(16)) * 256 : in.take<int32_t>();
                const int64_t m = in.flip() ? int64_t{in.below(32)} * 256 : in.take<int64_t>();
                expect_clean("ggemm_check_offsets",
                             ggemm_check_offsets(in.below(16) == 0 ? nullptr : offsets.data(), count, m));
                break;
            }
            case 7: {
                const int32_t count = in.flip() ? static_cast<int32_t>(in.below(40)) : in.take<int32_t>();
                std::vector<uint64_t> pointers(count >= 1 && count <= 1024 ? count : 1);
                for (uint64_t& p : pointers) p = in.flip() ? uint64_t{in.below(1024)} << 12 : in.take<uint64_t>();
                const int32_t device = in.flip() ? static_cast<int32_t>(in.below(5)) - 3 : in.take<int32_t>();
                expect_clean("ggemm_check_weight_pointers",
                             ggemm_check_weight_pointers(in.below(16) == 0 ? nullptr : pointers.data(), count, device));
                break;
            }
            case 8:
                copy_out(in, "ggemm_last_error_message", [](char* b, uint64_t s, uint64_t* r) {
                    return ggemm_last_error_message(b, s, r);
                });
                break;
            case 9: {
                const char* name = ggemm_status_string(in.take<int32_t>());
                if (name == nullptr || name[0] == '\0') violation("ggemm_status_string", 0, "empty name");
                break;
            }
            case 10: {
                uint64_t value = 0;
                switch (in.below(5)) {
                    case 0: expect_clean("ggemm_plan_cache_clear", ggemm_plan_cache_clear()); break;
                    case 1: expect_clean("ggemm_plan_cache_set_capacity", ggemm_plan_cache_set_capacity(in.below(6))); break;
                    case 2: expect_clean("ggemm_plan_cache_capacity", ggemm_plan_cache_capacity(in.flip() ? &value : nullptr)); break;
                    default: expect_clean("ggemm_plan_cache_size", ggemm_plan_cache_size(in.flip() ? &value : nullptr)); break;
                }
                break;
            }
            default:
                ggemm::set_plan_factory(in.flip() ? &fake_factory : nullptr);
                break;
        }
    }
    // Every input starts from the same library state.
    ggemm::set_plan_factory(nullptr);
    ggemm::plan_cache_set_capacity(ggemm::kDefaultPlanCacheCapacity);
    ggemm::plan_cache_clear();
    return 0;
}
