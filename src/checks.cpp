// ggemm_check_offsets and ggemm_check_weight_pointers.
#include "src/checks.h"

#include "src/device.h"
#include "src/error.h"
#include "src/validate.h"

namespace ggemm {

namespace {

ggemm_status_t check_num_experts(int32_t num_experts) {
    if (num_experts < 1 || num_experts > kMaxExperts) {
        return fail(GGEMM_ERROR_INVALID_SHAPE, "num_experts must be in 1..%d, got %d", kMaxExperts,
                    num_experts);
    }
    return GGEMM_SUCCESS;
}

}  // namespace

ggemm_status_t check_offsets(const int32_t* host_offsets, int32_t num_experts, int64_t m) noexcept {
    if (host_offsets == nullptr) return fail(GGEMM_ERROR_NULL_ARGUMENT, "host_offsets is NULL");
    ggemm_status_t status = check_num_experts(num_experts);
    if (status != GGEMM_SUCCESS) return status;
    if (m < 0 || m % kSegmentAlignment != 0) {
        return fail(GGEMM_ERROR_INVALID_SHAPE, "m must be a non-negative multiple of %lld, got %lld",
                    static_cast<long long>(kSegmentAlignment), static_cast<long long>(m));
    }
    // The same rules, in the same order, as the kernel's GGEMM_DEVICE_STATUS_OFFSET_* bits.
    for (int32_t expert = 0; expert < num_experts; ++expert) {
        const int32_t end = host_offsets[expert];
        if (end < 0) {
            return fail(GGEMM_ERROR_BAD_OFFSETS, "padded_offsets[%d] = %d is negative", expert, end);
        }
        if (end % kSegmentAlignment != 0) {
            return fail(GGEMM_ERROR_BAD_OFFSETS, "padded_offsets[%d] = %d is not a multiple of %lld",
                        expert, end, static_cast<long long>(kSegmentAlignment));
        }
        if (expert > 0 && end < host_offsets[expert - 1]) {
            return fail(GGEMM_ERROR_BAD_OFFSETS,
                        "padded_offsets[%d] = %d is less than padded_offsets[%d] = %d (offsets are "
                        "cumulative row ends and must not decrease)",
                        expert, end, expert - 1, host_offsets[expert - 1]);
        }
        if (end > m) {
            return fail(GGEMM_ERROR_BAD_OFFSETS, "padded_offsets[%d] = %d is past M = %lld", expert,
                        end, static_cast<long long>(m));
        }
    }
    return GGEMM_SUCCESS;
}

ggemm_status_t check_weight_pointers(const uint64_t* host_ptrs, int32_t num_experts, int32_t device,
                                     const PointerOracle& oracle) noexcept {
    if (host_ptrs == nullptr) return fail(GGEMM_ERROR_NULL_ARGUMENT, "host_ptrs is NULL");
    const ggemm_status_t status = check_num_experts(num_experts);
    if (status != GGEMM_SUCCESS) return status;
    for (int32_t expert = 0; expert < num_experts; ++expert) {
        const uint64_t address = host_ptrs[expert];
        if (address == 0) {
            return fail(GGEMM_ERROR_BAD_WEIGHT_POINTERS, "b_ptrs[%d] is NULL", expert);
        }
        if (address % kDataAlignment != 0) {
            return fail(GGEMM_ERROR_BAD_WEIGHT_POINTERS, "b_ptrs[%d] = 0x%llx is not %llu-byte aligned",
                        expert, static_cast<unsigned long long>(address),
                        static_cast<unsigned long long>(kDataAlignment));
        }
        if (device == GGEMM_DEVICE_ANY) continue;
        const PointerFacts facts = oracle.query(reinterpret_cast<const void*>(address));
        if (!is_memory_of_device(facts, device)) {
            char what[160];
            describe_memory(facts, what, sizeof what);
            return fail(GGEMM_ERROR_BAD_WEIGHT_POINTERS,
                        "b_ptrs[%d] = 0x%llx is %s; it must be device memory of device %d (or managed memory)",
                        expert, static_cast<unsigned long long>(address), what, device);
        }
    }
    return GGEMM_SUCCESS;
}

}  // namespace ggemm

extern "C" {

GGEMM_API ggemm_status_t ggemm_check_offsets(const int32_t* host_offsets, int32_t num_experts, int64_t m) {
    return ggemm::guarded("ggemm_check_offsets",
                          [&] { return ggemm::check_offsets(host_offsets, num_experts, m); });
}

GGEMM_API ggemm_status_t ggemm_check_weight_pointers(const uint64_t* host_ptrs, int32_t num_experts,
                                                     int32_t device) {
    return ggemm::guarded("ggemm_check_weight_pointers", [&] {
        if (device < 0 && device != GGEMM_DEVICE_ANY) {
            return ggemm::fail(GGEMM_ERROR_INVALID_VALUE,
                               "device = %d is neither a CUDA device ordinal (>= 0) nor "
                               "GGEMM_DEVICE_ANY (%d, check NULL entries and alignment only)",
                               device, GGEMM_DEVICE_ANY);
        }
        // NULL entries and alignment first: they need no device.
        ggemm_status_t status = ggemm::check_weight_pointers(host_ptrs, num_experts, GGEMM_DEVICE_ANY,
                                                             ggemm::cuda_pointer_oracle());
        if (status != GGEMM_SUCCESS || device == GGEMM_DEVICE_ANY) return status;
        // Residency questions need a runtime that knows the device.
        ggemm::DeviceInfo info;
        status = ggemm::query_device(device, &info);
        if (status != GGEMM_SUCCESS) return status;
        if (!info.present) {
            return ggemm::fail(GGEMM_ERROR_NO_DEVICE,
                               "no CUDA device is available: %s (device = %d; pass device = "
                               "GGEMM_DEVICE_ANY to check only NULL and alignment)",
                               info.absence_reason, device);
        }
        if (device >= info.count) {
            return ggemm::fail(GGEMM_ERROR_INVALID_VALUE,
                               "device = %d is not a CUDA device ordinal: %d visible (0..%d), or "
                               "GGEMM_DEVICE_ANY",
                               device, info.count, info.count - 1);
        }
        return ggemm::check_weight_pointers(host_ptrs, num_experts, device, ggemm::cuda_pointer_oracle());
    });
}

}  // extern "C"
