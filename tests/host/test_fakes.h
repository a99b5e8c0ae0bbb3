// Fake devices, kernel variants and pointer oracles for the host tests of src/: everything the
// validation and planning code asks about, described as data, no GPU needed.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "ggemm.h"
#include "src/kernel_variant.h"
#include "src/device.h"
#include "src/error.h"
#include "src/plan.h"
#include "src/plan_cache.h"
#include "src/pointer_oracle.h"
#include "src/structs.h"

namespace ggemm_fakes {

// A Hopper like an H100/H200 SXM: 132 SMs, 227 KiB of opt-in shared memory per block.
inline ggemm::DeviceInfo sm90_device(int32_t count = 1) {
    ggemm::DeviceInfo device;
    device.present = true;
    device.count = count;
    device.ordinal = 0;
    device.cc_major = 9;
    device.cc_minor = 0;
    device.sm_count = 132;
    device.max_smem_optin = 232448;
    std::snprintf(device.name, sizeof device.name, "Fake H100");
    return device;
}

inline ggemm::DeviceInfo sm100_device() {
    ggemm::DeviceInfo device = sm90_device();
    device.cc_major = 10;
    device.sm_count = 148;
    std::snprintf(device.name, sizeof device.name, "Fake B200");
    return device;
}

inline ggemm::DeviceInfo absent_device() {
    ggemm::DeviceInfo device;
    std::snprintf(device.absence_reason, sizeof device.absence_reason, "no CUDA-capable device is detected");
    return device;
}

inline cudaError_t fake_launch(const ggemm::LaunchParams&, cudaStream_t) { return cudaSuccess; }

inline ggemm::KernelVariant variant(const char* name, int32_t arch, int32_t tile_m, int32_t tile_n,
                                    int32_t cluster_m, int32_t stages = 4, int32_t smem_bytes = 200000) {
    ggemm::KernelVariant v{};
    v.name = name;
    v.arch = arch;
    v.tile_m = tile_m;
    v.tile_n = tile_n;
    v.block_k = 64;
    v.stages = stages;
    v.cluster_m = cluster_m;
    v.a_box_rows = 64;
    v.b_box_rows = tile_n;
    v.max_tail_pieces = arch == 90 ? 4 : 1;
    v.smem_bytes = smem_bytes;
    v.threads = 384;
    v.prepare = nullptr;
    v.launch = &fake_launch;
    return v;
}

// Same tile_m and cluster, three widths: the planner's choice rests on N alone.
inline std::vector<ggemm::KernelVariant> width_variants() {
    return {variant("sm90_128x256_c1", 90, 128, 256, 1), variant("sm90_128x192_c1", 90, 128, 192, 1),
            variant("sm90_128x128_c1", 90, 128, 128, 1), variant("sm100_128x256_c1", 100, 128, 256, 1)};
}

// A richer SM90 set with tile_m 128/256 and clusters 1/2.
inline std::vector<ggemm::KernelVariant> mixed_variants() {
    return {variant("sm90_128x256_c1", 90, 128, 256, 1), variant("sm90_128x192_c2", 90, 128, 192, 2),
            variant("sm90_256x128_c2", 90, 256, 128, 2), variant("sm90_128x128_c1", 90, 128, 128, 1),
            variant("sm100_256x256_c2", 100, 256, 256, 2)};
}

inline ggemm::VariantList list_of(const std::vector<ggemm::KernelVariant>& variants) {
    ggemm::VariantList list;
    list.items = variants.data();
    list.count = static_cast<int>(variants.size());
    return list;
}

inline ggemm_plan_desc valid_desc() {
    ggemm_plan_desc desc;
    ggemm::init_plan_desc(&desc, sizeof desc);
    desc.m_capacity = 4096;
    desc.n = 4096;
    desc.k = 2048;
    desc.num_experts = 8;
    return desc;
}

// The one-shot cache's plan factory without a GPU: the real planner over a fake SM90 device
// and width_variants(). Install it with ScopedPlanFactory.
inline ggemm_status_t fake_plan_factory(const ggemm_plan_desc& desc, std::unique_ptr<ggemm_plan>* plan) {
    static const std::vector<ggemm::KernelVariant> variants = width_variants();
    auto built = std::make_unique<ggemm_plan>();
    const ggemm_status_t status = ggemm::build_plan(desc, sm90_device(), list_of(variants), built.get());
    if (status == GGEMM_SUCCESS) *plan = std::move(built);
    return status;
}

// Installs a plan factory in the cache for one scope, with an empty cache of the default
// capacity at both ends.
class ScopedPlanFactory {
public:
    explicit ScopedPlanFactory(ggemm::PlanFactory factory) : previous_(ggemm::set_plan_factory(factory)) {
        reset();
    }
    ~ScopedPlanFactory() {
        reset();
        ggemm::set_plan_factory(previous_);
    }
    ScopedPlanFactory(const ScopedPlanFactory&) = delete;
    ScopedPlanFactory& operator=(const ScopedPlanFactory&) = delete;

private:
    static void reset() {
        ggemm::plan_cache_clear();
        ggemm::plan_cache_set_capacity(ggemm::kDefaultPlanCacheCapacity);
    }
    ggemm::PlanFactory previous_;
};

// Memory as the tests say it is: address ranges with facts; anything else is pageable host.
class FakeOracle final : public ggemm::PointerOracle {
public:
    struct Region {
        uintptr_t begin, end;
        ggemm::PointerFacts facts;
    };

    // A region added earlier answers first. With `one_mapping` the answers say the region is one
    // physical mapping, as the driver does (src/pointer_oracle.h).
    void add(uintptr_t begin, uintptr_t bytes, ggemm::PointerFacts::Kind kind, int32_t device = 0,
             bool one_mapping = false) {
        ggemm::PointerFacts facts;
        facts.kind = kind;
        facts.device = device;
        facts.runtime_error = kind == ggemm::PointerFacts::kUnknown ? "invalid argument" : "";
        if (one_mapping) {
            facts.mapping_begin = begin;
            facts.mapping_end = begin + bytes;
        }
        regions_.push_back({begin, begin + bytes, facts});
    }

    ggemm::PointerFacts query(const void* pointer) const noexcept override {
        ++queries;
        const auto address = reinterpret_cast<uintptr_t>(pointer);
        for (const Region& region : regions_)
            if (address >= region.begin && address < region.end) return region.facts;
        ggemm::PointerFacts facts;
        facts.kind = ggemm::PointerFacts::kPageableHost;
        return facts;
    }

    mutable int queries = 0;

private:
    std::vector<Region> regions_;
};

// Address ranges the fake oracle calls device memory of device 0, device 1, pinned host,
// managed and unknown.
constexpr uintptr_t kDevice0 = 0x7f0000000000;
constexpr uintptr_t kDevice1 = 0x7e0000000000;
constexpr uintptr_t kPinned = 0x7d0000000000;
constexpr uintptr_t kManaged = 0x7c0000000000;
constexpr uintptr_t kUnknown = 0x7b0000000000;
constexpr uintptr_t kPageable = 0x100000;
constexpr uintptr_t kRegionBytes = uintptr_t{1} << 36;

inline FakeOracle standard_oracle() {
    FakeOracle oracle;
    oracle.add(kDevice0, kRegionBytes, ggemm::PointerFacts::kDevice, 0);
    oracle.add(kDevice1, kRegionBytes, ggemm::PointerFacts::kDevice, 1);
    oracle.add(kPinned, kRegionBytes, ggemm::PointerFacts::kPinnedHost, 0);
    oracle.add(kManaged, kRegionBytes, ggemm::PointerFacts::kManaged, 0);
    oracle.add(kUnknown, kRegionBytes, ggemm::PointerFacts::kUnknown, -1);
    return oracle;
}

template <class T = void>
T* at(uintptr_t address) {
    return reinterpret_cast<T*>(address);
}

// Arguments that pass every check against a plan made from valid_desc() (dense, no bias, no C),
// each pointer in its own 1 GiB slice of device 0.
inline ggemm_args valid_args(int64_t m = 1024) {
    ggemm_args args;
    ggemm::init_args(&args, sizeof args);
    const uintptr_t slice = uintptr_t{1} << 30;
    args.m = m;
    args.a = at(kDevice0 + 1 * slice);
    args.b = at(kDevice0 + 2 * slice);
    args.padded_offsets = at<const int32_t>(kDevice0 + 3 * slice);
    args.alpha = at<const float>(kDevice0 + 4 * slice);
    args.prob = at<const float>(kDevice0 + 5 * slice);
    args.d = at(kDevice0 + 6 * slice);
    args.workspace = at(kDevice0 + 7 * slice);
    args.workspace_size = 1 << 20;
    args.device_status = at<uint32_t>(kDevice0 + 8 * slice);
    return args;
}

// True when the CUDA runtime initializes on this machine. Without a driver every runtime call,
// cudaGetLastError included, keeps answering the initialization error.
inline bool runtime_works() {
    int devices = 0;
    const bool works = cudaGetDeviceCount(&devices) == cudaSuccess;
    cudaGetLastError();
    return works;
}

inline bool message_contains(const char* text) {
    return std::strstr(ggemm::last_error(), text) != nullptr;
}

// True when device 0 is a GPU ggemm can plan for (SM90 or SM100). Otherwise the calling test
// prints one line saying it was skipped and why, with a running count of such skips.
inline bool usable_gpu(ggemm::DeviceInfo* device, const char* test) {
    static int skipped = 0;
    const char* reason = nullptr;
    char arch[96];
    if (ggemm::query_device(0, device) != GGEMM_SUCCESS) {
        reason = ggemm::last_error();
    } else if (!device->present) {
        reason = device->absence_reason;
    } else if (ggemm::arch_of(*device) == 0) {
        std::snprintf(arch, sizeof arch, "device 0 has compute capability %d.%d", device->cc_major,
                      device->cc_minor);
        reason = arch;
    }
    if (reason == nullptr) return true;
    ++skipped;
    MESSAGE("SKIPPED (GPU test " << skipped << " skipped in this run): " << std::string(test) << ": "
                                  << std::string(reason));
    return false;
}

}  // namespace ggemm_fakes
